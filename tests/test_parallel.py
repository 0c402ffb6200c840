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


def test_survey_workers_only_survey_and_the_lint_results_stay_free_of_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Survey workers forked before libcst is imported survey only (a file they linted made each
    import it on its own); the files they would have linted, whose rules never read the index,
    are linted by the lint workers, and their cached results depend on no fact (a warm run
    gathers nothing for them, a changed fact elsewhere does not re-lint them)."""
    _tree(tmp_path, 2 * PARALLEL_THRESHOLD + 5)  # SL101 / SL102: rules that read no index
    for n in range(4):  # SL301 asks the index about these, so some facts are gathered
        (tmp_path / f"seeded_{n}.py").write_text(SEEDED.format(n=n))
    survey_writes: list[Any] = []
    make_pool = runner._pool

    def recording_pool(jobs: int, work: int, initializer: Any, *initargs: Any, **kw: Any) -> Any:
        if initializer is runner._init_survey_worker:
            survey_writes.append(initargs[2])  # lints, collectors, write, gather
        return make_pool(jobs, work, initializer, *initargs, **kw)

    monkeypatch.setattr(runner, "_pool", recording_pool)
    monkeypatch.setattr(runner, "_workers_have_libcst", lambda: False)  # a run's first project
    args = ["check", "--isolated", "--extend-select", "SL102", "--output-format", "json",
            "--jobs", "2", str(tmp_path)]
    cold = CliRunner().invoke(main, args)
    assert cold.exit_code == 1, cold.output
    assert survey_writes == [None]  # a pool that surveys and lints nothing
    assert json.loads(cold.stdout) == _check(tmp_path, 1)
    gathered: list[str] = []
    gather = runner.DemandIndex._gather

    def recording_gather(self: Any, collector: Any, *rest: Any) -> str:
        gathered.append(collector.name)
        return gather(self, collector, *rest)

    monkeypatch.setattr(runner.DemandIndex, "_gather", recording_gather)
    warm = CliRunner().invoke(main, args)
    assert warm.exit_code == 1 and json.loads(warm.stdout) == json.loads(cold.stdout)
    assert gathered == []
    # A change to another file's facts re-lints the files that read them, not these.
    (tmp_path / "seeded_0.py").write_text(SEEDED.format(n=0).replace("seed=3", "seed=seed"))
    checked: list[str] = []
    check_file = runner.check_file

    def recording_check(path: Path, *rest: Any, **kw: Any) -> Any:
        checked.append(path.name)
        return check_file(path, *rest, **kw)

    monkeypatch.setattr(runner, "check_file", recording_check)
    CliRunner().invoke(main, [*args[:-3], "--jobs", "1", str(tmp_path)])
    assert not [name for name in checked if name.startswith("module_")], checked
    # Once libcst is imported (a run's later projects), forked survey workers lint too.
    monkeypatch.setattr(runner, "_workers_have_libcst", lambda: True)
    survey_writes.clear()
    again = CliRunner().invoke(main, [*args[:-1], "--no-cache", str(tmp_path)])
    assert survey_writes == [False] and json.loads(again.stdout) == _check(tmp_path, 1)
