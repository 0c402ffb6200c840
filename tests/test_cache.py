"""The persistent cache: a second run over an unchanged project parses nothing, any change that
matters re-lints, and corrupt or foreign cache files are ignored."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import pytest
from click.testing import CliRunner

from sampler_lint import cache as cache_module
from sampler_lint.cli import main

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"


def run(project: Path, *args: str) -> tuple[int, str]:
    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(
            main, ["check", "--output-format", "concise", "--jobs", "1", *args],
            catch_exceptions=False,
        )
    finally:
        os.chdir(cwd)
    return result.exit_code, result.stdout


@pytest.fixture
def repo(project: Path) -> Path:
    (project / "a.py").write_text(BUGGY)
    (project / "b.py").write_text("x = 1\n")
    return project


def _parses(project: Path, *args: str) -> tuple[int, str, int]:
    import libcst

    real = libcst.parse_module
    with mock.patch("sampler_lint.linter.cst.parse_module", side_effect=real) as parse:
        code, out = run(project, *args)
    return code, out, parse.call_count


def test_second_run_parses_nothing_and_reports_the_same(repo: Path) -> None:
    code1, out1, parsed1 = _parses(repo, ".")
    code2, out2, parsed2 = _parses(repo, ".")
    assert parsed1 == 1 and parsed2 == 0
    assert (code1, out1) == (code2, out2) == (1, out1)
    assert "a.py:2:12: SL101" in out1
    assert (repo / ".sampler_lint_cache" / ".gitignore").read_text().endswith("*\n")


def test_a_changed_file_is_linted_again(repo: Path) -> None:
    run(repo, ".")
    (repo / "a.py").write_text("import os\n" + BUGGY)
    code, out, parsed = _parses(repo, ".")
    assert parsed == 1 and "a.py:3:12: SL101" in out and code == 1


def test_a_changed_configuration_is_linted_again(repo: Path) -> None:
    run(repo, ".")
    code, out, _ = _parses(repo, ".", "--ignore", "SL101")
    assert code == 0 and "SL101" not in out


def test_no_cache_neither_reads_nor_writes(repo: Path) -> None:
    run(repo, ".", "--no-cache")
    assert not (repo / ".sampler_lint_cache").exists()
    _, _, parsed = _parses(repo, ".", "--no-cache")
    assert parsed == 1


def test_cache_dir_option(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    elsewhere = tmp_path_factory.mktemp("cache")
    run(repo, ".", "--cache-dir", str(elsewhere))
    assert (elsewhere / "results.pickle").exists()
    assert not (repo / ".sampler_lint_cache").exists()


@pytest.mark.parametrize(
    "content",
    [b"garbage", cache_module._HEADER + b"not a pickle", b"sampler-lint-cache\n0.0.1\n" + b"x"],
)
def test_corrupt_or_foreign_cache_is_ignored(repo: Path, content: bytes) -> None:
    run(repo, ".")
    (repo / ".sampler_lint_cache" / "results.pickle").write_bytes(content)
    code, out, parsed = _parses(repo, ".")
    assert parsed == 1 and code == 1 and "SL101" in out


def test_fixing_never_uses_the_cache(repo: Path) -> None:
    run(repo, ".")
    _, _, parsed = _parses(repo, ".", "--fix", "--unsafe-fixes")
    assert parsed >= 1
    assert "tensor_split" in (repo / "a.py").read_text()
    code, out, _ = _parses(repo, ".")
    assert code == 0 and "SL101" not in out


SAMPLER = (
    "from torch.utils.data import Sampler\n\n\n"
    "class Chunks(Sampler):\n"
    "    def __init__(self, sizes):\n"
    "        self.sizes = sizes\n\n"
    "    def __iter__(self):\n"
    "        yield from self.sizes\n\n"
    "    def __len__(self):\n"
    "        return len(self.sizes)\n\n\n"
    "loader = DataLoader(data, batch_sampler=Chunks([1, 2]))\n"
)


def _parsed_files(project: Path, *args: str) -> tuple[str, list[str]]:
    from sampler_lint import linter

    real = linter.parse
    with mock.patch("sampler_lint.linter.parse", side_effect=real) as parse:
        _, out = run(project, *args)
    return out, sorted(Path(call.args[0]).name for call in parse.call_args_list)


def test_a_change_relints_only_what_depends_on_it(project: Path) -> None:
    (project / "a.py").write_text(BUGGY)  # SL101: reads nothing from other files
    (project / "s.py").write_text(SAMPLER)  # SL501: reads the project's trainer settings
    trainer = project / "t.py"
    trainer.write_text("import lightning as L\n\ntrainer = L.Trainer(devices=2)\n")
    out, parsed = _parsed_files(project, ".")
    assert parsed == ["a.py", "s.py"] and "s.py:4:7: SL501" in out

    # A change that leaves t.py's facts as they were re-lints nothing else.
    trainer.write_text("import lightning as L\n\n# two GPUs\ntrainer = L.Trainer(devices=2)\n")
    out, parsed = _parsed_files(project, ".")
    assert parsed == [] and "s.py:4:7: SL501" in out

    # A change to facts s.py reads (the trainer's switches) re-lints s.py, and only s.py.
    trainer.write_text(
        "import lightning as L\n\ntrainer = L.Trainer(use_distributed_sampler=True)\n"
    )
    out, parsed = _parsed_files(project, ".")
    assert parsed == ["s.py"] and "s.py:4:7: SL501" in out and "a.py:2:12: SL101" in out

    # Turning injection off: the whole index shows SL501 cannot fire; s.py is not even parsed.
    trainer.write_text(
        "import lightning as L\n\ntrainer = L.Trainer(use_distributed_sampler=False)\n"
    )
    out, parsed = _parsed_files(project, ".")
    assert parsed == [] and "SL501" not in out and "a.py:2:12: SL101" in out


def test_a_stale_noqa_is_reported_where_no_rule_looks(project: Path) -> None:
    # No rule's pre-filter wants this file; its stale suppression is still reported.
    (project / "quiet.py").write_text("total = 1  # noqa: SL101\n")
    code, out = run(project, ".", "--no-cache")
    assert code == 1 and "quiet.py:1:12: SL002" in out
