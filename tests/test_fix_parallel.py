"""``--fix`` in worker processes (the default on any real repository) does exactly what it does in
one process: every file written, the same bytes, and a fixed count that is the truth.

The files are the fixtures themselves (every ``tests/fixtures/<CODE>/*.py``, new ones included),
copied often enough that two jobs really go through the process pools."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from sampler_lint.api import lint_code
from sampler_lint.cli import main
from sampler_lint.engine.runner import PARALLEL_THRESHOLD

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIXED = re.compile(r"\((\d+) fixed")


def _originals() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("SL*/*.py") if not p.name.endswith(".fixed.py"))


def _tree(root: Path) -> dict[Path, bytes]:
    originals = _originals()
    copies = -(-2 * PARALLEL_THRESHOLD // len(originals)) + 1  # well past the pool threshold
    written: dict[Path, bytes] = {}
    for copy in range(copies):
        for source in originals:
            # One folder per copy and fixture: the copies are separate modules of one project.
            target = root / f"copy{copy}" / source.parent.name / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            written[target.relative_to(root)] = source.read_bytes()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    assert len(written) > 2 * PARALLEL_THRESHOLD
    return written


def _findings(root: Path) -> int:
    result = CliRunner().invoke(main, [
        "check", "--isolated", "--no-cache", "--select", "ALL", "--unsafe-fixes",
        "--output-format", "json", "--exit-zero", "--jobs", "1", str(root),
    ])
    assert result.exit_code == 0, result.output
    return len(json.loads(result.stdout))


def _fix(root: Path, jobs: int) -> int:
    result = CliRunner().invoke(main, [
        "check", "--isolated", "--no-cache", "--select", "ALL", "--fix", "--unsafe-fixes",
        "--exit-zero", "--jobs", str(jobs), str(root),
    ])
    assert result.exit_code == 0, result.output
    match = FIXED.search(result.output)
    return int(match.group(1)) if match else 0


def test_fix_in_two_processes_writes_what_one_process_writes(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    originals = _tree(one)
    _tree(two)
    before = _findings(one)
    fixed_one = _fix(one, 1)
    fixed_two = _fix(two, 2)

    changed = [name for name, data in originals.items() if (one / name).read_bytes() != data]
    assert changed, "the fixtures hold fixable findings: something must be written"
    for name in originals:
        assert (two / name).read_bytes() == (one / name).read_bytes(), name

    # Every file a fix changes on its own was written (its project may change the details).
    fixable: dict[bytes, bool] = {}
    for name, data in originals.items():
        if data not in fixable:
            alone = lint_code(data, select=["ALL"], fix=True, unsafe_fixes=True, path=str(name))
            fixable[data] = alone.fixed is not None
        if fixable[data]:
            assert name in changed, f"{name} is fixable but was not written"
    # The count is the truth: the findings that are gone from the files as written.
    after = _findings(two)
    assert fixed_one == fixed_two == before - after > 0
