"""Digests of questions about names carried across runs (engine/carried.py): after any change, a
warm run's digests are those a run without a cache makes, and a change to files that do not
answer a question does not send the run looking for its name in every file again."""

from __future__ import annotations

import random
from pathlib import Path
from unittest import mock

import pytest

from sampler_lint.analysis import batch_samplers, rank_split, sampler_family, worker_epochs
from sampler_lint.engine import carried, demand, registry
from sampler_lint.engine.cache import Cache, digest
from sampler_lint.engine.demand import DemandIndex, Source, is_facts
from sampler_lint.engine.sources import read_source
from sampler_lint.engine.survey import Collectors, survey_source

COLLECTORS = Collectors.for_rules(tuple(registry.all_rules()))

# Each file of the project in turn takes one of these texts (None: the file is removed).
VARIANTS: dict[str, list[str | None]] = {
    "base.py": [
        "from torch.utils.data import DistributedSampler as DS\nclass QShuf(DS): pass\n",
        "from torch.utils.data import DistributedSampler\nclass QShuf(DistributedSampler):\n"
        "    def set_epoch(self, epoch):\n        self.epoch = epoch\n",
        "from torch.utils.data import Sampler\nclass QShuf(Sampler): pass\n",
        None,
    ],
    "middle.py": [
        "from base import QShuf\nclass QMid(QShuf): pass\n",
        "from base import QShuf\n# a comment that changes nothing\nclass QMid(QShuf): pass\n",
        "from torch.utils.data import BatchSampler\nclass QMid(BatchSampler):\n"
        "    def __iter__(self):\n        yield [1]\n",
        None,
    ],
    "top.py": [
        "from middle import QMid\nclass QTop(QMid): pass\nclass QLow(QTop): pass\n",
        "from middle import QMid\nclass QTop(QMid):\n    def __init__(self, rank):\n"
        "        self.rank = rank\n",
        "x = 1\n",
        None,
    ],
    "other.py": [
        "from torch.utils.data import Sampler\nclass QPlain(Sampler): pass\n"
        "class QTop(QPlain): pass\n",
        "from torch.utils.data import DistributedSampler\nclass QPlain(DistributedSampler):"
        " pass\n",
        None,
    ],
    "train.py": [
        "from top import QTop\nfrom torch.utils.data import DataLoader\n"
        "def main(d):\n    return DataLoader(d, batch_sampler=QTop(d))\n",
        "from middle import QMid\nfrom torch.utils.data import DataLoader\n"
        "def main(d):\n    s = QMid(d)\n    return DataLoader(d, sampler=s, shuffle=True)\n",
        "print('no loader here')\n",
    ],
    "loader.py": [
        "import torch\nclass Lines(torch.utils.data.IterableDataset): pass\n"
        "class Shards(Lines):\n    epoch = 0\n",
        "import torch\nclass Lines(torch.utils.data.IterableDataset):\n"
        "    def __iter__(self):\n        yield 1\n",
        None,
    ],
    "plain.py": [
        "from torch.utils.data import DataLoader\nloader = DataLoader(range(4), shuffle=True)\n",
        "from torch.utils.data import DataLoader\nloader = DataLoader(range(8), shuffle=True)\n",
        None,
    ],
    "late.py": [
        None,
        "from base import QShuf\nclass QLate(QShuf): pass\nclass QTop(QLate): pass\n",
        "import torch\nclass QLate(torch.utils.data.DistributedSampler): pass\n",
    ],
}
NAMES = ("QShuf", "QMid", "QTop", "QLow", "QPlain", "QLate", "Lines", "Shards")


def _write(root: Path, texts: dict[str, str | None]) -> list[Path]:
    for name, text in texts.items():
        path = root / name
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text)
    return sorted(root.glob("*.py"))  # the project's files, now


def _sources(files: list[Path]) -> list[Source]:
    """The index's files as a whole-project run makes them: surveyed, with their contents."""
    sources = []
    for path in files:
        data = path.read_bytes()
        survey = survey_source(data, str(path), None, COLLECTORS, gather=False)
        if survey.deferred:
            sources.append(Source(path, str(path), survey.deferred, digest(data)))
    return sources


def _ask(index: DemandIndex, files: list[Path]) -> list[object]:
    """Questions about names, as rules ask them; their answers."""
    answers: list[object] = [
        sampler_family.project_subclass_names(index, "DistributedSampler"),
        sampler_family.project_subclass_names(index, "BatchSampler"),
    ]
    for name in NAMES:
        answers += [
            sampler_family.shards_by_rank(index, name), rank_split.class_is_split(index, name)
        ]
        for path in files[:2]:
            answers += [
                sampler_family.torch_bases_of(index, name, str(path)),
                worker_epochs.find_epoch_class(index, name, str(path)),
            ]
    for fact in index.get(sampler_family.FACT):
        answers.append(batch_samplers.shape_of(index, fact))
    return answers


class Run:
    """One run of the index over the project's files as they are, with the caches kept in
    ``folder`` (as the runner keeps them: the snapshot, then the caches saved)."""

    def __init__(
        self, folder: Path, files: list[Path], sources: list[Source] | None = None
    ) -> None:
        self.facts = Cache(folder, "facts", is_facts)
        self.digests = Cache(folder, "digests", is_facts)
        self.sources = _sources(files) if sources is None else sources
        self.index = DemandIndex(
            self.sources, COLLECTORS.collectors, self.facts, digests=self.digests
        )

    def finish(self) -> None:
        self.index.keep_snapshot()
        self.facts.save()
        self.digests.save()


def _cold(files: list[Path], names: list[str]) -> tuple[str, ...]:
    return DemandIndex(_sources(files), COLLECTORS.collectors).digests(names)


def _keyed(index: DemandIndex) -> set[str]:
    return {name for name in index.gathered if "[" in name and not name.endswith("[/]")}


def _project(root: Path) -> list[Path]:
    return _write(root, {name: texts[0] for name, texts in VARIANTS.items()})


@pytest.mark.parametrize("most_changed", [carried.MOST_CHANGED, 1])
@pytest.mark.parametrize("seed", range(6))
def test_after_any_edits_warm_digests_are_those_of_a_run_without_a_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, most_changed: int
) -> None:
    monkeypatch.setattr(carried, "MOST_CHANGED", most_changed)
    root, folder = tmp_path / "project", tmp_path / "cache"
    root.mkdir()
    files = _project(root)
    first = Run(folder, files)
    _ask(first.index, files)
    names = sorted(_keyed(first.index))
    first.index.digests(names)
    first.finish()
    assert names
    chosen = random.Random(seed)
    for _ in range(12):
        edits = {
            name: chosen.choice(VARIANTS[name])
            for name in chosen.sample(sorted(VARIANTS), chosen.randint(1, 3))
        }
        files = _write(root, edits)
        warm = Run(folder, files)
        # Some runs ask only some questions: the others' entries are then stamped with an
        # older state than the snapshot's.
        some = chosen.random() < 0.5
        asked = sorted(chosen.sample(names, len(names) // 2)) if some else names
        got = warm.index.digests(asked)
        assert got == _cold(files, asked), edits
        if not some:
            # The rules of this run ask their questions (the files that answer each known from
            # its carried digest), which may name new classes.
            cold = DemandIndex(_sources(files), COLLECTORS.collectors)
            assert _ask(warm.index, files) == _ask(cold, files), edits
            names = sorted(set(names) | _keyed(warm.index))
            assert warm.index.digests(names) == cold.digests(names), edits
        warm.finish()


def _warmed(root: Path, folder: Path) -> tuple[list[Path], list[str], tuple[str, ...]]:
    files = _project(root)
    first = Run(folder, files)
    _ask(first.index, files)
    names = sorted(_keyed(first.index))
    made = first.index.digests(names)
    first.finish()
    return files, names, made


class Changed:
    """A warm run's digests after ``edits`` to a warmed project, with what it searched and
    parsed for them, and the digests before and without a cache."""

    def __init__(self, tmp_path: Path, edits: dict[str, str | None]) -> None:
        self.root = tmp_path / "project"
        self.root.mkdir()
        _, names, self.before = _warmed(self.root, tmp_path / "cache")
        files = _write(self.root, edits)
        warm = Run(tmp_path / "cache", files)
        with mock.patch.object(DemandIndex, "_find_holders") as self.scan, \
                mock.patch.object(demand, "_collect", side_effect=demand._collect) as parse:
            self.got = warm.index.digests(names)
        self.parsed = {call.args[1] for call in parse.call_args_list}
        self.cold = _cold(files, names)
        self.sources = {source.fact_path for source in _sources(files)}


def test_a_change_to_a_file_that_answers_no_question_looks_for_no_name(tmp_path: Path) -> None:
    # Still a file of the index (it passes pre-filters), but it spells none of the names.
    run = Changed(tmp_path, {"plain.py": VARIANTS["plain.py"][1]})
    assert str(run.root / "plain.py") in run.sources
    run.scan.assert_not_called()
    assert not run.parsed
    assert run.got == run.before == run.cold


def test_a_changed_file_that_answers_a_question_is_read_alone(tmp_path: Path) -> None:
    run = Changed(tmp_path, {"base.py": VARIANTS["base.py"][1]})
    run.scan.assert_not_called()
    assert run.parsed == {str(run.root / "base.py")}
    assert run.got != run.before and run.got == run.cold


def test_a_removed_file_that_answered_a_question_is_left_out_without_a_search(
    tmp_path: Path,
) -> None:
    run = Changed(tmp_path, {"other.py": None})
    run.scan.assert_not_called()
    assert run.got != run.before and run.got == run.cold


def test_past_many_changed_files_digests_are_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkout of another branch changes most files: each question would look at each of them.
    monkeypatch.setattr(carried, "MOST_CHANGED", 1)
    root = tmp_path / "project"
    root.mkdir()
    _warmed(root, tmp_path / "cache")
    files = _write(root, {"plain.py": None, "top.py": VARIANTS["top.py"][1]})
    warm = Run(tmp_path / "cache", files)
    with mock.patch.object(carried.CarriedDigests, "_parts_now") as merge:
        warm.index.digests(["sampler classes[class QShuf]"])
    merge.assert_not_called()


def test_a_file_whose_pre_filters_changed_is_a_changed_file(tmp_path: Path) -> None:
    # The collectors a file is read for come from the survey (its pre-filters): were they to
    # change with its content the same, the questions it answered are made again.
    root = tmp_path / "project"
    root.mkdir()
    files, _, _ = _warmed(root, tmp_path / "cache")
    question = "sampler classes[class QShuf]"
    sources = [
        Source(s.path, s.fact_path, tuple(c for c in s.collectors or () if c != "sampler classes"),
               s.content) if s.path.name == "base.py" else s
        for s in _sources(files)
    ]
    got = Run(tmp_path / "cache", files, sources).index.digests([question])
    assert got == DemandIndex(sources, COLLECTORS.collectors).digests([question])


def test_a_new_subclass_in_a_new_file_changes_the_answer(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    files, names, before = _warmed(root, tmp_path / "cache")
    question = "sampler classes[bases DistributedSampler]"
    assert question in names
    files = _write(root, {"late.py": VARIANTS["late.py"][2]})
    got = Run(tmp_path / "cache", files).index.digests(names)
    assert got == _cold(files, names)
    changed = dict(zip(got[0::2], got[1::2], strict=True))
    assert changed[question] != dict(zip(before[0::2], before[1::2], strict=True))[question]


def test_nothing_is_carried_when_a_file_s_content_is_not_known(tmp_path: Path) -> None:
    # A one-file run does not read the project's other files: no state to carry digests by.
    root = tmp_path / "project"
    root.mkdir()
    files = _project(root)
    sources = [Source(s.path, s.fact_path, None) for s in _sources(files)]
    cache = Cache(tmp_path / "cache", "digests", is_facts)
    index = DemandIndex(sources, COLLECTORS.collectors, cache, digests=cache)
    _ask(index, files)
    index.digests(sorted(_keyed(index)))
    index.keep_snapshot()
    assert not any("carried" in value or "snapshot" in value for _, value in index.fresh)
    assert cache.get(carried.SNAPSHOT_KEY) is None


def test_digests_stamped_in_another_process_keep_the_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    files = _project(root)
    worker = Run(tmp_path / "cache", files)
    _ask(worker.index, files)
    worker.index.digests(sorted(_keyed(worker.index)))
    main = Run(tmp_path / "cache", files)
    main.index.keep_snapshot()
    assert carried.SNAPSHOT_KEY not in main.digests.new  # nothing stamped: nothing kept
    main.index.keep(worker.index.fresh)
    main.finish()
    snapshot = Cache(tmp_path / "cache", "digests", is_facts).get(carried.SNAPSHOT_KEY)
    assert snapshot is not None and len(snapshot["snapshot"]) == 1 + 2 * len(_sources(files))


# A sampler of the project's own class that drops the seed in scope: whether that is SL301 is a
# question about the class (does it derive from DistributedSampler?), which base.py answers.
USER = """from base import QShuf


def make(ds, seed):
    sampler = QShuf(ds, shuffle=True)
    return sampler

"""


def _check(project: Path, *args: str) -> str:
    import os

    from click.testing import CliRunner

    from sampler_lint.cli import main

    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(
            main, ["check", "--isolated", "--output-format", "concise", "--jobs", "2", *args, "."],
            catch_exceptions=False,
        )
    finally:
        os.chdir(cwd)
    return result.stdout


def test_warm_runs_over_two_processes_report_what_a_run_without_a_cache_does(
    project: Path,
) -> None:
    # Two large files, linted in worker processes when both changed, ask about a class of the
    # project; then the files that answer it change, one by one.
    _write(project, {name: texts[0] for name, texts in VARIANTS.items()})
    users = [project / "user_a.py", project / "user_b.py"]
    padding = "".join(f"def helper_{n}(x):\n    return x + {n}\n\n" for n in range(1400))
    for path in users:
        path.write_text(
            USER + padding
        )
    assert sum(len(path.read_bytes()) for path in users) >= 64 * 1024  # a pool's worth
    assert _check(project) == _check(project, "--no-cache")
    snapshot = Cache(project / ".sampler_lint_cache", "digests", is_facts).get(carried.SNAPSHOT_KEY)
    assert snapshot is not None
    for path in users:
        path.write_text(path.read_text() + "# changed\n")
    assert _check(project) == _check(project, "--no-cache")
    assert "user_a.py:5:15: SL301" in _check(project)
    for edits in ({"base.py": VARIANTS["base.py"][2]}, {"late.py": VARIANTS["late.py"][1]},
                  {"base.py": VARIANTS["base.py"][1]}, {"top.py": VARIANTS["top.py"][2]}):
        _write(project, edits)
        assert _check(project) == _check(project, "--no-cache"), edits
    assert "user_a.py:5:15: SL301" in _check(project)


def test_a_warm_index_reads_cached_facts_without_reading_the_files(tmp_path: Path) -> None:
    # A whole collector, or a question about one file: each file's facts come from the cache by
    # its known content, and the file itself is not read.
    root = tmp_path / "project"
    root.mkdir()
    files = _project(root)
    first = Run(tmp_path / "cache", files)
    made = first.index.digests(["sampler classes"])
    first.finish()
    warm = Run(tmp_path / "cache", files)
    with mock.patch("sampler_lint.engine.demand.read_source", side_effect=read_source) as read:
        assert warm.index.gather("sampler classes") == made[1]
        warm.index.get_for(sampler_family.FACT, str(root / "base.py"))
    read.assert_not_called()


def test_what_a_worker_remembers_while_reading_its_digests_reaches_the_main_process(
    tmp_path: Path,
) -> None:
    # A lint worker hands the main process its fresh cache entries with each result's reads:
    # those its digests() call made (a digest remembered, a carried digest stamped) go with
    # them, not with its next result (after its last one, never).
    from sampler_lint.engine.runner import _index_reads

    root = tmp_path / "project"
    root.mkdir()
    files = _project(root)
    worker = Run(tmp_path / "cache", files)
    sampler_family.project_subclass_names(worker.index, "DistributedSampler")
    worker.index.fresh = []  # handed over with an earlier result
    pairs, fresh = _index_reads(worker.index)
    assert "sampler classes[bases DistributedSampler]" in pairs
    assert any("carried" in value for _, value in fresh)
    assert any("digest" in value for _, value in fresh)
