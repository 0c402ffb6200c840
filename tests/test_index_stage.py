"""The third pre-filter stage (``Rule.may_match_index``, given the index and the file's code):
it drops the files the project shows a rule cannot flag, and keeps every file it could."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sampler_lint.engine import demand, registry, runner
from sampler_lint.engine.config import ConfigResolver, RawSettings
from sampler_lint.engine.runner import build_index
from tests.test_prefilter_runs import _findings

SAMPLERS = (
    "from torch.utils.data import DistributedSampler\n\n\n"
    "class EvenShards(DistributedSampler):\n    pass\n"
)
BUILDS_IT = "from samplers import EvenShards\n\n\ndef make(ds):\n    return EvenShards(ds)\n"
BUILDS_ANOTHER = "def make(ds):\n    return Buckets(ds, shuffle=True)\n"


def _project(root: Path, files: dict[str, str]) -> list[Path]:
    for name, text in files.items():
        (root / name).write_text(text)
    return sorted(root / name for name in files)


def test_seed_rules_keep_only_files_that_name_a_distributed_subclass(tmp_path: Path) -> None:
    builds_torch = (
        "from torch.utils.data import DistributedSampler\n\n\n"
        "def make(ds):\n    return DistributedSampler(ds)\n"
    )
    files = _project(tmp_path, {
        "samplers.py": SAMPLERS, "train.py": BUILDS_IT, "other.py": BUILDS_ANOTHER,
        "torch_built.py": builds_torch,
    })
    index = build_index(files, registry.all_rules())
    rules = registry.rules_by_code()
    for code in ("SL301", "SL302"):
        rule = rules[code]
        assert rule.may_match_index(index, str(tmp_path / "train.py"), BUILDS_IT), code
        # A class-like call, but of no subclass of DistributedSampler the project defines.
        assert not rule.may_match_index(index, str(tmp_path / "other.py"), BUILDS_ANOTHER), code
        # The module that defines the subclass (`class EvenShards(...)`) builds none.
        assert not rule.may_match_index(index, str(tmp_path / "samplers.py"), SAMPLERS), code
        # torch's own class, built by name.
        assert rule.may_match_index(index, str(tmp_path / "torch_built.py"), builds_torch), code


def test_epoch_rule_without_persistent_workers_needs_lightning(tmp_path: Path) -> None:
    dataset = (
        "from torch.utils.data import Sampler\n\n\nclass Batches(Sampler):\n"
        "    def set_epoch(self, epoch):\n        self.epoch = epoch\n\n"
        "    def __iter__(self):\n        yield [self.epoch]\n"
    )
    loop = (
        "from torch.utils.data import DataLoader\n\n\ndef run(ds, epochs):\n"
        "    loader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
        "    for epoch in range(epochs):\n        ds.set_epoch(epoch)\n"
    )
    files = _project(tmp_path, {"batches.py": dataset, "train.py": loop})
    rule = registry.rules_by_code()["SL204"]
    index = build_index(files, registry.all_rules())
    # No file imports Lightning: only the persistent-workers shape is left, and it needs the
    # word in the file.
    assert not rule.may_match_index(index, str(tmp_path / "batches.py"), dataset)
    assert rule.may_match_index(index, str(tmp_path / "train.py"), loop)
    files += _project(tmp_path, {"module.py": "import lightning as L\n"})
    with_lightning = build_index(files, registry.all_rules())
    assert rule.may_match_index(with_lightning, str(tmp_path / "batches.py"), dataset)


def test_iterable_dataset_rule_keeps_only_classes_some_loader_runs(tmp_path: Path) -> None:
    streams = (
        "from torch.utils.data import IterableDataset\n\n\n"
        "class Lines(IterableDataset):\n    def __iter__(self):\n"
        "        yield from self.lines\n\n\n"
        "class \\\n        Unused(IterableDataset):\n    def __iter__(self):\n        yield 1\n"
    )
    unused = (
        "from torch.utils.data import IterableDataset\n\n\n"
        "class Spare(IterableDataset):\n    def __iter__(self):\n        yield 1\n"
    )
    train = (
        "from torch.utils.data import DataLoader\nfrom streams import Lines\n\n"
        "loader = DataLoader(Lines(), num_workers=4)\n"
    )
    files = _project(tmp_path, {"streams.py": streams, "spare.py": unused, "train.py": train})
    rule = registry.rules_by_code()["SL105"]
    index = build_index(files, registry.all_rules())
    assert rule.may_match_index(index, str(tmp_path / "streams.py"), streams)
    assert not rule.may_match_index(index, str(tmp_path / "spare.py"), unused)
    # The class statement continued by a backslash is still read.
    moved = streams.replace("class Lines", "class Kept").replace("Unused", "Lines")
    assert rule.may_match_index(index, str(tmp_path / "streams.py"), moved)


def test_iterable_dataset_rule_asks_only_about_classes_deriving_from_iterable_dataset(
    tmp_path: Path,
) -> None:
    # Under another name, through a module, with a type argument: each is still asked about;
    # a class with another base is not (the visitor skips it first).
    from rules.sl105_unsharded_iterable_dataset import _iterable_classes

    code = (
        "import torch.utils.data as tud\n"
        "from torch.utils.data import IterableDataset as Stream\n\n\n"
        "class Aliased(Stream):\n    pass\n\n\n"
        "class Dotted(tud.IterableDataset):\n    pass\n\n\n"
        "class Typed(tud.IterableDataset[int]):\n    pass\n\n\n"
        "class Mapped(tud.Dataset):\n    pass\n\n\n"
        "def make():\n    class Inner(Stream):\n        pass\n    return Inner\n"
    )
    assert _iterable_classes(code) == {"Aliased", "Dotted", "Typed", "Inner"}
    # Code Python cannot parse: every class its text names.
    assert _iterable_classes("class Broken(:\nclass Other(Stream): pass\n") == {"Broken", "Other"}
    train = (
        "from torch.utils.data import DataLoader\nfrom streams import Aliased, Mapped\n\n"
        "a = DataLoader(Aliased(), num_workers=4)\nb = DataLoader(Mapped(), num_workers=4)\n"
    )
    files = _project(tmp_path, {"streams.py": code, "train.py": train})
    rule = registry.rules_by_code()["SL105"]
    index = build_index(files, registry.all_rules())
    assert rule.may_match_index(index, str(tmp_path / "streams.py"), code)
    only_mapped = code.replace("class Aliased(Stream)", "class Aliased(tud.Dataset)")
    assert not rule.may_match_index(index, str(tmp_path / "streams.py"), only_mapped)


def test_only_rules_with_an_index_stage_make_the_engine_read_the_file_again() -> None:
    rules = registry.rules_by_code()
    assert rules["SL301"].has_index_stage() and rules["SL105"].has_index_stage()
    assert not rules["SL101"].has_index_stage()  # reads no index: the default stage


def test_hardcoded_seed_rule_keeps_named_samplers_only_where_the_seed_may_be_fixed(
    tmp_path: Path,
) -> None:
    head = (
        "import torch\nfrom torch.utils.data import DistributedSampler\n\n"
        "def main(args, ds):\n    torch.manual_seed(args.seed)\n    net = Net()\n"
    )
    texts = {
        "from_args.py": head + "    return DistributedSampler(ds, seed=args.seed)\n",
        "in_order.py": head + "    return DistributedSampler(ds, shuffle=False)\n",
        "literal.py": head + "    return DistributedSampler(ds, seed=3)\n",
        "default.py": head + "    return DistributedSampler(ds)\n",
        "global_seed.py": "import os\nos.environ['PL_GLOBAL_SEED'] = '1'\n" + head
        + "    return DistributedSampler(ds)\n",
    }
    files = _project(tmp_path, texts)
    index = build_index(files, registry.all_rules())
    rules = registry.rules_by_code()
    kept = {
        name for name, text in texts.items()
        if rules["SL301"].may_match_index(index, str(tmp_path / name), text)
    }
    assert kept == {"literal.py", "default.py"}
    # SL302 judges seeds that are there: every file that builds one by name stays for it.
    assert all(
        rules["SL302"].may_match_index(index, str(tmp_path / name), text)
        for name, text in texts.items()
    )
    # And a run finds what a run without any pre-filter finds.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'seeds'\n")
    found = _findings(tmp_path, "--select", "SL301")
    assert found == _findings(tmp_path, "--select", "SL301", "--no-prefilter")
    assert {name for name, *_ in found} == {"literal.py", "default.py"}


def test_whether_a_file_builds_a_named_sampler_reads_that_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pre-commit run over one file: SL301's and SL302's question (does this file build
    DistributedSampler by name?) parses that file, not every file that builds one."""
    builds = "from torch.utils.data import DistributedSampler\n\n"
    _project(tmp_path, {
        "pyproject.toml": "[project]\nname = 'many'\n",
        "train.py": builds + "def make(ds):\n    return DistributedSampler(ds, seed=3)\n",
        **{f"other{n}.py": builds + f"order = DistributedSampler(data, seed={n})\n"
           for n in range(5)},
    })
    parsed: list[str] = []
    collect = demand._collect

    def recording(data: bytes, fact_path: str, collectors: list[Any]) -> list[Any]:
        parsed.append(Path(fact_path).name)
        return collect(data, fact_path, collectors)

    monkeypatch.setattr(demand, "_collect", recording)
    monkeypatch.chdir(tmp_path)
    options = runner.RunOptions(jobs=1, use_cache=False)
    resolver = ConfigResolver(RawSettings(select=("SL301", "SL302")), isolated=True)
    result = runner.run([Path("train.py")], resolver, options)
    assert [r.filename for r in result.results] == ["train.py"]
    assert not any(name.startswith("other") for name in parsed), parsed


def test_a_one_file_run_scans_each_file_once_per_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pre-commit run over a sampler factory asks, name by name, which project files may hold
    each of its parameters' seed keys (``rank+utils``, ``world_size+utils``, ...): each is a
    scan of every file, and what one scan learnt (does this file spell ``utils``? does it pass
    the seed collector's pre-filter?) is not asked of the file again."""
    factory = (
        "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
        "def build_loader(dataset, batch_size, workers, drop_last, world_size, rank):\n"
        "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)\n"
        "    return DataLoader(dataset, batch_size=batch_size, sampler=sampler,\n"
        "                      num_workers=workers, drop_last=drop_last)\n"
    )
    _project(tmp_path, {
        "pyproject.toml": "[project]\nname = 'many'\n",
        "utils.py": factory,
        **{f"task{n}.py": f"import utils\n\nseed = {n}\nrank = world_size = 1\n"
           for n in range(6)},
    })
    spelled: dict[tuple[int, str], int] = {}
    passed: dict[tuple[str, int], int] = {}
    spells_word, passes = demand._spells_word, demand._passes

    def counting_spells(data: bytes, name: str) -> bool:
        spelled[id(data), name] = spelled.get((id(data), name), 0) + 1
        return spells_word(data, name)

    def counting_passes(collector: Any, data: bytes) -> bool:
        passed[collector.name, id(data)] = passed.get((collector.name, id(data)), 0) + 1
        return passes(collector, data)

    monkeypatch.setattr(demand, "_spells_word", counting_spells)
    monkeypatch.setattr(demand, "_passes", counting_passes)
    monkeypatch.chdir(tmp_path)
    options = runner.RunOptions(jobs=1, use_cache=False)
    resolver = ConfigResolver(RawSettings(select=("SL301",)), isolated=True)
    result = runner.run([Path("utils.py")], resolver, options)
    assert [f.code for r in result.results for f in r.findings] == ["SL301"]
    assert len({name for _, name in spelled}) >= 3, spelled  # several names were asked about
    assert max(spelled.values()) == 1, spelled
    assert max(passed.values()) == 1, passed


def test_the_progress_line_says_reading_then_indexing_then_linting(tmp_path: Path) -> None:
    """What a long run's bar says: every file read, then the files some rule wants judged by
    the index stage (where a large project's questions are asked), then those kept, linted;
    never going back."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(
        "from torch.utils.data import DistributedSampler\n"
        "sampler = DistributedSampler(data, seed=0)\n"
    )
    (tmp_path / "plain.py").write_text("x = 1\n")
    calls: list[tuple[int, int, str]] = []
    runner.run([tmp_path], ConfigResolver(RawSettings(), isolated=True),
               runner.RunOptions(use_cache=False, jobs=1),
               progress=lambda done, total, doing: calls.append((done, total, doing)))
    stages = list(dict.fromkeys(doing for _, _, doing in calls))
    assert stages == ["reading 2 files", "indexing 1 file", "linting 1"]
    assert [done for done, _, _ in calls] == sorted(done for done, _, _ in calls)
    assert calls[-1][0] == calls[-1][1]  # the last call ends the bar
