"""Worker processes change nothing but the time: the same findings in the same order, and the same
project index, whatever ``--jobs`` says."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from sampler_lint.analysis.index import FactCollector
from sampler_lint.cli import main
from sampler_lint.engine import runner
from sampler_lint.engine.runner import PARALLEL_THRESHOLD, build_index
from sampler_lint.rule import Rule, Severity

SHARD = "def shard_{n}(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
CHUNK = "def chunk_{n}(x, world_size, rank):\n    return x.chunk(world_size)[rank]\n"
CLASS = "from torch.utils.data import Sampler\n\n\nclass Sampler{n}(Sampler):\n    pass\n"


def _tree(root: Path, files: int) -> None:
    for n in range(files):
        package = root / f"pkg{n % 7}"
        package.mkdir(exist_ok=True)
        body = (SHARD, CHUNK, CLASS, "x = {n}\n")[n % 4].format(n=n)
        (package / f"module_{n}.py").write_text(body)


def _check(root: Path, jobs: int) -> Any:
    runner = CliRunner()
    result = runner.invoke(
        main,
        ["check", "--no-cache", "--isolated", "--extend-select", "SL102", "--output-format", "json",
         "--jobs", str(jobs), str(root)],
    )
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)


def test_findings_are_identical_in_one_process_and_in_two(tmp_path: Path) -> None:
    files = 2 * PARALLEL_THRESHOLD + 5  # enough that two jobs really use worker processes
    _tree(tmp_path, files)
    single, parallel = _check(tmp_path, 1), _check(tmp_path, 2)
    assert parallel == single
    # The SL101 and SL102 files (n % 4 in 0, 1), one finding each.
    assert len(single) == sum(1 for n in range(files) if n % 4 < 2)


def _classes(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    return {"classes": [
        (node.name, path) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
    ]}


class _UsesIndex(Rule):
    """Stands for any rule that collects facts: the classes of every file mentioning one."""

    code: ClassVar[str] = "SLX900"
    name: ClassVar[str] = "uses-index"
    severity: ClassVar[Severity] = Severity.WARNING
    collectors: ClassVar[tuple[FactCollector, ...]] = (
        FactCollector("classes", (("class ",),), _classes),
    )


def test_project_index_is_identical_in_one_process_and_in_two(tmp_path: Path) -> None:
    _tree(tmp_path, 3 * PARALLEL_THRESHOLD)
    files = sorted(tmp_path.rglob("*.py"))
    single = build_index(files, [_UsesIndex], jobs=1)
    parallel = build_index(files, [_UsesIndex], jobs=2)
    assert dict(parallel.facts) == dict(single.facts)
    classes = sum(1 for n in range(len(files)) if n % 4 == 2)
    assert len(single.get("classes")) == classes


SEEDED = (
    "from torch.utils.data import DistributedSampler\n\n\n"
    "def make_{n}(dataset, seed):\n    return DistributedSampler(dataset, seed=3)\n"
)


def test_workers_lint_while_the_index_stage_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lint pool starts as soon as enough files wait for it, before the index stage has
    judged the last file, and the findings are those of one process; a file named on the
    command line that cannot be parsed, whose options are made after the workers started, is
    linted in this process (SL001), not handed to a worker that never saw them."""
    for n in range(2 * PARALLEL_THRESHOLD):
        (tmp_path / f"seeded_{n:03}.py").write_text(SEEDED.format(n=n))
    broken = tmp_path / "zz_broken.py"
    broken.write_text("def f(:\n    pass\n")
    stages: list[int] = []
    started_at: list[int] = []
    index_stage, start = runner._index_stage, runner._LintStream._start

    def counting_stage(*args: Any) -> Any:
        stages.append(1)
        return index_stage(*args)

    def recording_start(self: Any) -> None:
        started_at.append(len(stages))
        start(self)

    monkeypatch.setattr(runner, "_index_stage", counting_stage)
    monkeypatch.setattr(runner._LintStream, "_start", recording_start)
    args = ["check", "--no-cache", "--isolated", "--select", "SL301,SL001", "--output-format",
            "json", str(tmp_path), str(broken)]
    parallel = CliRunner().invoke(main, [*args, "--jobs", "2"])
    assert started_at and started_at[0] < len(stages) - PARALLEL_THRESHOLD, (started_at, stages)
    single = CliRunner().invoke(main, [*args, "--jobs", "1"])
    assert parallel.exit_code == single.exit_code == 1, parallel.output
    assert json.loads(parallel.stdout) == json.loads(single.stdout)
    codes = [finding["code"] for finding in json.loads(single.stdout)]
    assert codes.count("SL301") == 2 * PARALLEL_THRESHOLD and codes.count("SL001") == 1
