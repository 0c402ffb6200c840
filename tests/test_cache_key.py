"""Cache-key completeness: after a cached run, changing any setting that can change a result gives
exactly the output of a ``--no-cache`` run with that setting. Each change is also shown to matter
(its output differs from the base run's), so that a key ignoring it would be caught.

The project is the fixtures (data-driven: new fixtures join) plus one file that only a configured
vocabulary flags."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from unittest import mock

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures"
VOCABULARY_ONLY = (
    "def shard(x, n_ranks, my_rank):\n"
    "    return x.split(x.size(0) // n_ranks)[my_rank]\n"
)
BASE_CONFIG = '[project]\nname = "demo"\n\n[tool.sampler-lint]\nselect = ["ALL"]\n'

JSON = ["--output-format", "json"]
SARIF = ["--output-format", "sarif"]
# (name, extra configuration lines, the base run's arguments, the changed run's arguments)
VARIANTS: list[tuple[str, str, list[str], list[str]]] = [
    ("rule option", 'split-fix = "ceil"\n', JSON, JSON),  # only the fix's edits change
    ("another rule option", "strict-seed = true\n", [], []),
    ("vocabulary", 'world-size-names = ["n_ranks"]\nrank-names = ["my_rank"]\n', [], []),
    ("selection", "", [], ["--select", "SL1"]),
    ("ignore", "", [], ["--ignore", "SL2"]),
    ("per-file ignores", '[tool.sampler-lint.per-file-ignores]\n"SL1*/*" = ["SL1"]\n', [], []),
    ("json after concise", "", [], JSON),  # the concise run computed no edits
    ("sarif after concise", "", [], SARIF),
    ("unsafe fixes", "", [], ["--unsafe-fixes"]),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cache-key")
    for source in FIXTURES.glob("SL*/*.py"):
        if not source.name.endswith(".fixed.py"):
            target = root / source.parent.name / source.name
            target.parent.mkdir(exist_ok=True)
            shutil.copyfile(source, target)
    (root / "vocabulary_only.py").write_text(VOCABULARY_ONLY)
    return root


def _cache(root: Path) -> Path:
    return root.parent / f"{root.name}-cache"


def _warm(root: Path, args: list[str]) -> None:
    """A fresh cache filled by a base run (configuration without changes) with ``args``; the
    base runs are made once and copied."""
    warm = root.parent / f"{root.name}-warm-{'-'.join(args) or 'concise'}"
    if not warm.exists():
        shutil.rmtree(_cache(root), ignore_errors=True)  # nothing of another test's runs
        _run(root, "", args, cache=True)
        shutil.copytree(_cache(root), warm)
    shutil.rmtree(_cache(root), ignore_errors=True)
    shutil.copytree(warm, _cache(root))


def _run(root: Path, config: str, args: list[str], cache: bool) -> str:
    (root / "pyproject.toml").write_text(BASE_CONFIG + config)
    caching = ["--cache-dir", str(_cache(root))] if cache else ["--no-cache"]
    format_given = "--output-format" in args
    result = CliRunner().invoke(main, [
        "check", "--jobs", "1", "--exit-zero", *caching,
        *([] if format_given else ["--output-format", "concise"]), *args, str(root),
    ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


_BASES: dict[tuple[str, ...], str] = {}


@pytest.mark.parametrize(
    ("name", "config", "base_args", "args"), VARIANTS, ids=[v[0] for v in VARIANTS]
)
def test_a_changed_setting_is_never_served_from_the_cache(
    project: Path, name: str, config: str, base_args: list[str], args: list[str]
) -> None:
    _warm(project, base_args)
    cached = _run(project, config, args, cache=True)
    uncached = _run(project, config, args, cache=False)
    assert cached == uncached, f"{name}: the cache served a result computed for other settings"
    if args in (JSON, SARIF) and base_args != args:
        _assert_has_edits(uncached, args[1])
    else:
        if tuple(base_args) not in _BASES:
            _BASES[tuple(base_args)] = _run(project, "", base_args, cache=False)
        base = _BASES[tuple(base_args)]
        assert uncached != base, f"{name}: this change does not change the output"


def _assert_has_edits(output: str, output_format: str) -> None:
    data = json.loads(output)
    if output_format == "json":
        assert any((f.get("fix") or {}).get("edits") for f in data)
    else:
        results = data["runs"][0]["results"]
        assert any(r.get("fixes") for r in results)


def test_no_prefilter_after_a_filtered_run_parses_every_file(project: Path) -> None:
    """The pre-filter is sound, so its switch cannot change the findings; what it must change is
    the work: ``--no-prefilter`` (the check that the filter hides nothing) is never answered from
    results a filtered run stored."""
    import libcst

    _warm(project, [])
    base = _run(project, "", [], cache=True)
    real = libcst.parse_module
    with mock.patch("sampler_lint.engine.linter.cst.parse_module", side_effect=real) as parse:
        cached = _run(project, "", ["--no-prefilter"], cache=True)
    assert cached == base == _run(project, "", ["--no-prefilter"], cache=False)
    assert parse.call_count >= len(list(project.rglob("*.py")))

