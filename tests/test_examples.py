"""The bundled examples/ are the first thing a new user lints: each file shows exactly the
findings its docstring promises, with the repository's own configuration and with every rule on,
and every fix leaves code that still compiles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

ROOT = Path(__file__).resolve().parent.parent

EXPECTED = {
    ("bucket_sampler.py", "SL401", 29),
    ("lightning_data.py", "SL501", 13),
    ("lightning_data.py", "SL503", 48),
    ("seeds.py", "SL301", 21),
    ("seeds.py", "SL302", 22),
    ("train_ddp.py", "SL101", 17),
    ("train_imagenet.py", "SL202", 13),
    ("trainer_loop.py", "SL201", 14),
}


def _findings(args: list[str]) -> set[tuple[str, str, int]]:
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "json", "--exit-zero", *args]
    )
    assert result.exit_code == 0, result.output
    return {
        (Path(f["filename"]).name, f["code"], f["location"]["row"])
        for f in json.loads(result.stdout)
    }


@pytest.mark.parametrize("extra", [[], ["--isolated", "--select", "ALL"]])
def test_examples_show_exactly_the_intended_findings(
    extra: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert _findings([*extra, "examples/"]) == EXPECTED


def test_every_example_docstring_names_its_rules() -> None:
    for path in sorted((ROOT / "examples").glob("*.py")):
        promised = {code for name, code, _ in EXPECTED if name == path.name}
        assert promised, f"{path.name} shows no finding"
        head = path.read_text(encoding="utf-8").split('"""')[1]
        for code in promised:
            assert code in head, (path.name, code)


def test_fixing_the_examples_leaves_only_what_has_no_fix(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--isolated", "--fix", "--unsafe-fixes", "examples/"]
    )
    assert result.exit_code == 1
    left = _findings(["--isolated", "examples/"])
    assert left == {("lightning_data.py", "SL501", 13)}
    for path in (tmp_path / "examples").glob("*.py"):
        compile(path.read_text(encoding="utf-8"), str(path), "exec")
