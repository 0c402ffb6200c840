"""Paths of several projects named together (two repositories side by side) are linted one
project at a time: each file gets the findings it gets when its project is linted alone, and
nothing of one project answers a question about another."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main
from sampler_lint.engine.config import ConfigResolver, RawSettings
from sampler_lint.engine.runner import RunOptions, RunResult, run

SUBCLASS = (
    "from torch.utils.data import DistributedSampler\n"
    "class ShardSampler(DistributedSampler):\n    pass\n"
)
# An unseeded ShardSampler is SL301's only where the project defines ShardSampler as a
# DistributedSampler: in `a`, not in `b`.
CALLER = (
    "from torch.utils.data import DistributedSampler\n"
    "from shard import ShardSampler\n"
    "def main(data, seed):\n    return ShardSampler(data)\n"
)
BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
FIXED = "def f(x, world_size, rank):\n    return x.tensor_split(world_size)[rank]\n"


def _repos(root: Path) -> tuple[Path, Path]:
    a, b = root / "a", root / "b"
    for repo in (a, b):
        (repo / ".git").mkdir(parents=True)
        (repo / "train.py").write_text(CALLER)
    (a / "shard.py").write_text(SUBCLASS)
    (b / "split.py").write_text(BUGGY)
    return a, b


def _findings(result: RunResult) -> list[tuple[str, str, int]]:
    return sorted(
        (str(Path(r.filename).resolve()), f.code, f.location.line)
        for r in result.results for f in r.findings
    )


def _run(paths: list[Path], **options: object) -> RunResult:
    return run(paths, ConfigResolver(RawSettings(), isolated=True),
               RunOptions(use_cache=False, **options))  # type: ignore[arg-type]


@pytest.mark.parametrize("jobs", [1, 2])
def test_projects_named_together_get_the_findings_they_get_alone(
    tmp_path: Path, jobs: int
) -> None:
    a, b = _repos(tmp_path)
    alone = _findings(_run([a], jobs=jobs)) + _findings(_run([b], jobs=jobs))
    together = _findings(_run([a, b], jobs=jobs))
    assert together == sorted(alone)
    # The subclass in `a` makes `a`'s call a finding and not `b`'s.
    codes = {(Path(path).parent.name, code) for path, code, _ in together}
    assert ("a", "SL301") in codes and ("b", "SL301") not in codes
    assert ("b", "SL101") in codes
    # Files named from both projects, interleaved, are linted alike.
    named = _run([a / "train.py", b / "train.py", a / "shard.py", b / "split.py"], jobs=jobs)
    assert _findings(named) == together
    assert {Path(path).resolve() for path in named.project} == {
        path.resolve() for repo in (a, b) for path in repo.glob("*.py")
    }


def test_fixes_over_two_projects_and_a_missing_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _repos(tmp_path)
    (a / "split.py").write_text(BUGGY)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--isolated", "--fix", "--unsafe-fixes", "--select",
               "SL101", "a", "missing.py", "b"],
        catch_exceptions=False,
    )
    assert result.exit_code == 2, result.output  # the missing path is an error
    assert "missing.py" in result.stderr
    assert (a / "split.py").read_text() == FIXED and (b / "split.py").read_text() == FIXED
    assert "Found 2 errors (2 fixed, 0 remaining)." in result.stdout, result.stdout


def test_each_project_keeps_its_own_cache(tmp_path: Path) -> None:
    a, b = _repos(tmp_path)
    run([a, b], ConfigResolver(RawSettings(), isolated=True), RunOptions(jobs=1))
    assert (a / ".sampler_lint_cache").is_dir() and (b / ".sampler_lint_cache").is_dir()
    assert not (tmp_path / ".sampler_lint_cache").exists()
