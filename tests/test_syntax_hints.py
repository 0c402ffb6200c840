"""Hints from the syntax stage to the index stage (``Rule.syntax_hints``): a rule names the
classes or callees its ``ast`` filter kept the file for, and its index stage judges only those,
so a file kept for one class is not parsed with libcst because of another."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sampler_lint.rules import sl105_unsharded_iterable_dataset as sl105

from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.analysis.vocabulary import Vocabulary
from sampler_lint.engine import registry, runner
from sampler_lint.engine.linter import LintOptions
from sampler_lint.engine.runner import build_index
from sampler_lint.engine.survey import Collectors, survey_source
from sampler_lint.rule import Rule
from tests.test_prefilter_runs import _findings

# A training script in the shape of diffusers' dreambooth ones: a dataset class that keeps
# public attributes it never reads (the syntax stage of SL401 cannot tell it is no sampler), a
# bucketing batch sampler that checks its arguments in `__init__` (branches, yet every read
# there follows its assignment), and a loader built from both, handed to `accelerator.prepare`.
SCRIPT = '''\
import random

from accelerate import Accelerator
from torch.utils.data import BatchSampler, DataLoader, Dataset


class Pictures(Dataset):
    def __init__(self, root, size):
        self.root = root
        self.size = size

    def __len__(self):
        return len(self.root)


class BucketBatchSampler(BatchSampler):
    def __init__(self, dataset, batch_size, seed=None):
        if batch_size <= 0:
            raise ValueError(batch_size)
        self.dataset = dataset
        self.batch_size = batch_size
        self.generator = random.Random(seed)
        self.total = len(self.dataset) // self.batch_size

    def __iter__(self):
        order = list(range(len(self.dataset)))
        self.generator.shuffle(order)
        yield from (order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size))

    def __len__(self):
        return self.total


def main(args):
    accelerator = Accelerator()
    pictures = Pictures(args.root, args.size)
    batches = BucketBatchSampler(pictures, batch_size=args.batch_size)
    loader = DataLoader(pictures, batch_sampler=batches)
    return accelerator.prepare(loader)
'''

# What each hinting rule must still catch: a sampler that reads an attribute `__init__` assigns
# on one branch only; a loader whose batch sampler draws from a project sampler that shards by
# rank, handed to `prepare`.
FLAGGED = '''\
from accelerate import Accelerator
from torch.utils.data import BatchSampler, DataLoader, Sampler


class Shards(Sampler):
    def __init__(self, data, rank, world_size, shuffle):
        if shuffle:
            self.seed = 0
        self.data = data
        self.rank = rank
        self.world_size = world_size
        self.start = self.seed + self.rank

    def __iter__(self):
        return iter(range(self.rank, len(self.data), self.world_size))


def main(args, data):
    accelerator = Accelerator()
    order = Shards(data, args.rank, args.world_size, True)
    loader = DataLoader(data, batch_sampler=BatchSampler(order, 8, False))
    return accelerator.prepare(loader)
'''


def _classes(hints: frozenset[tuple[object, ...]] | None) -> set[object]:
    """The class names of SL401's hints (each names a class, then what it spells)."""
    return {hint[0] for hint in hints or ()}


def _kept(path: Path, text: str, index: ProjectIndex) -> tuple[str, ...]:
    """The rules left for ``path`` after every pre-filter stage of a default run."""
    lint = LintOptions(rules=registry.all_rules(), options={}, vocabulary=Vocabulary())
    collectors = Collectors.for_rules(tuple(lint.rules))
    survey = survey_source(text.encode(), str(path), lint, collectors)
    job = runner._Job(path, str(path), 0)
    left = runner._index_stage(survey, job, lint, index)
    return left.rules or ()


def test_a_file_kept_for_one_class_is_not_kept_for_another(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    summary = SyntaxSummary(ast.parse(SCRIPT))
    rules = registry.rules_by_code()
    # The syntax stage keeps the file, for the dataset (SL401) and for the dataset the batch
    # sampler draws from (SL504), and says so.
    assert rules["SL401"].may_match(summary) and rules["SL504"].may_match(summary)
    assert _classes(rules["SL401"].syntax_hints(summary)) == {"Pictures"}
    assert rules["SL504"].syntax_hints(summary) == frozenset({"Pictures"})
    # The index shows Pictures is no sampler and does not shard: neither rule is left.
    index = build_index([script], registry.all_rules())
    kept = _kept(script, SCRIPT, index)
    assert "SL401" not in kept and "SL504" not in kept
    # Without the hints the index stage would have kept SL401 for the batch sampler.
    assert rules["SL401"].may_match_index(index, str(script), SCRIPT)


def test_the_hinted_rules_still_flag_what_they_flag(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(FLAGGED)
    (tmp_path / "script.py").write_text(SCRIPT)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'hints'\n")
    found = _findings(tmp_path, "--select", "SL401,SL504")
    assert found == _findings(tmp_path, "--select", "SL401,SL504", "--no-prefilter")
    assert {(name, code) for name, code, *_ in found} == {
        ("train.py", "SL401"), ("train.py", "SL504")
    }
    summary = SyntaxSummary(ast.parse(FLAGGED))
    assert _classes(registry.rules_by_code()["SL401"].syntax_hints(summary)) == {"Shards"}
    assert registry.rules_by_code()["SL504"].syntax_hints(summary) == frozenset({"Shards"})


def test_a_distributed_sampler_needs_no_hint() -> None:
    """A candidate the index need not judge: no narrowing (``None``), so the stage keeps it."""
    code = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "loader = DataLoader(ds, sampler=DistributedSampler(ds))\n"
        "loader = accelerator.prepare(loader)\n"
    )
    summary = SyntaxSummary(ast.parse(code))
    rule = registry.rules_by_code()["SL504"]
    assert rule.may_match(summary) and rule.syntax_hints(summary) is None


def test_a_seed_given_to_something_else_is_not_kept(tmp_path: Path) -> None:
    """SL302: a rank-dependent seed handed to a project class that is no DistributedSampler
    (a data augmenter) leaves nothing to judge, though the file builds a DistributedSampler by
    name with a shared seed and a subclass of it exists."""
    (tmp_path / "samplers.py").write_text(
        "from torch.utils.data import DistributedSampler\n\n\n"
        "class EvenShards(DistributedSampler):\n    pass\n"
    )
    text = (
        "from torch.utils.data import DistributedSampler\n"
        "from samplers import EvenShards\n\n\n"
        "class Augment:\n    def __init__(self, seed):\n        self.seed = seed\n\n\n"
        "def make(ds, args, rank):\n"
        "    noise = Augment(seed=args.seed + rank)\n"
        "    return DistributedSampler(ds, seed=args.seed), EvenShards(ds), noise\n"
    )
    script = tmp_path / "train.py"
    script.write_text(text)
    rule = registry.rules_by_code()["SL302"]
    summary = SyntaxSummary(ast.parse(text))
    assert rule.may_match(summary) and rule.syntax_hints(summary) == frozenset({"Augment"})
    index = build_index([tmp_path / "samplers.py", script], registry.all_rules())
    assert "SL302" not in _kept(script, text, index)
    assert rule.may_match_index(index, str(script), text)  # what the stage said without hints
    # The same seed given to the subclass is kept, and flagged.
    flagged = text.replace("EvenShards(ds)", "EvenShards(ds, seed=args.seed + rank)")
    script.write_text(flagged)
    assert "SL302" in _kept(script, flagged, index)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'seeds'\n")
    found = _findings(tmp_path, "--select", "SL302")
    assert found == _findings(tmp_path, "--select", "SL302", "--no-prefilter")
    assert [(name, code) for name, code, *_ in found] == [("train.py", "SL302")]


SL202_TRAIN = """\
from torch.utils.data import DataLoader
from samplers import ShardSampler


def train(ds, epochs, step):
    sampler = ShardSampler(ds)
    loader = DataLoader(ds, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            step(batch)
"""


def test_a_loader_kept_for_a_sampler_class_asks_the_index_about_that_class(
    tmp_path: Path,
) -> None:
    """SL202: a loader's `...Sampler` is judged by name: a project subclass of
    DistributedSampler is kept (and flagged), another sampler is not, whatever else the file
    names."""
    (tmp_path / "samplers.py").write_text(
        "from torch.utils.data import DistributedSampler, Sampler\n\n\n"
        "class ShardSampler(DistributedSampler):\n    pass\n\n\n"
        "class PlainSampler(Sampler):\n    def __iter__(self):\n        yield 0\n"
    )
    plain = SL202_TRAIN.replace("ShardSampler", "PlainSampler") + (
        "\n\ndef check(s):\n    from torch.utils.data import DistributedSampler\n"
        "    return isinstance(s, DistributedSampler)\n"
    )
    (tmp_path / "train.py").write_text(SL202_TRAIN)
    (tmp_path / "plain.py").write_text(plain)
    files = [tmp_path / name for name in ("samplers.py", "train.py", "plain.py")]
    index = build_index(files, registry.all_rules())
    rule = registry.rules_by_code()["SL202"]
    assert rule.syntax_hints(SyntaxSummary(ast.parse(plain))) == frozenset(
        {(False, ("PlainSampler",), None)}
    )
    assert "SL202" not in _kept(tmp_path / "plain.py", plain, index)
    assert rule.may_match_index(index, str(tmp_path / "plain.py"), plain)  # without hints
    assert "SL202" in _kept(tmp_path / "train.py", SL202_TRAIN, index)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'epochs'\n")
    found = _findings(tmp_path, "--select", "SL202")
    assert found == _findings(tmp_path, "--select", "SL202", "--no-prefilter")
    assert [(name, code) for name, code, *_ in found] == [("train.py", "SL202")]


SL202_MAIN = """\
from torch.utils.data import DataLoader, DistributedSampler
from {module} import {function}


def main(ds):
    order = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=order)
    {function}(loader, 3)
"""


def test_a_loader_handed_to_an_imported_function_asks_the_index_about_it(
    tmp_path: Path,
) -> None:
    """SL202: a loader whose epoch loop can only be in an imported function is kept where the
    index shows that function goes round the epochs with it, and only there."""
    (tmp_path / "loops.py").write_text(
        "def run(train_loader, epochs):\n    for epoch in range(epochs):\n"
        "        for batch in train_loader:\n            pass\n"
    )
    (tmp_path / "peeks.py").write_text(
        "def show(train_loader, n):\n    print(next(iter(train_loader)))\n"
    )
    trains = SL202_MAIN.format(module="loops", function="run")
    peeks = SL202_MAIN.format(module="peeks", function="show")
    (tmp_path / "train.py").write_text(trains)
    (tmp_path / "peek.py").write_text(peeks)
    files = [tmp_path / name for name in ("loops.py", "peeks.py", "train.py", "peek.py")]
    index = build_index(files, registry.all_rules())
    rule = registry.rules_by_code()["SL202"]
    assert rule.syntax_hints(SyntaxSummary(ast.parse(peeks))) == frozenset(
        {(True, (), ("show",))}
    )
    assert "SL202" in _kept(tmp_path / "train.py", trains, index)
    assert "SL202" not in _kept(tmp_path / "peek.py", peeks, index)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'epochs'\n")
    found = _findings(tmp_path, "--select", "SL202")
    assert found == _findings(tmp_path, "--select", "SL202", "--no-prefilter")
    assert [(name, code) for name, code, *_ in found] == [("train.py", "SL202")]


def test_a_class_with_a_base_of_its_own_is_no_sampler_wrapper() -> None:
    """SL202's wrapper shape wants plain bases (the base may set the epoch): a class deriving
    from a project stream, keeping a DistributedSampler, leaves the rule nothing."""
    code = (
        "from torch.utils.data import DistributedSampler\n"
        "class Batches(Stream):\n    def __init__(self, ds):\n"
        "        self.order = DistributedSampler(ds)\n"
        "    def __iter__(self):\n        return iter(self.order)\n"
    )
    assert not registry.rules_by_code()["SL202"].may_match(SyntaxSummary(ast.parse(code)))
    assert not _findings_of(code, "SL202")
    plain = code.replace("(Stream)", "(object)")
    assert registry.rules_by_code()["SL202"].may_match(SyntaxSummary(ast.parse(plain)))
    assert _findings_of(plain, "SL202") == ["SL202"]


def _findings_of(code: str, rule: str) -> list[str]:
    from sampler_lint.api import lint_code

    return [f.code for f in lint_code(code, select=[rule], use_prefilter=False).findings]


def test_a_name_given_to_two_classes_is_always_a_suspect() -> None:
    """SL401 looks a class's facts up by name: whichever class of that name the facts are, the
    name goes to the index stage. A class without bases is no sampler: not judged at all (it
    used to be, against the facts of the sampler of the same name)."""
    code = (
        "from torch.utils.data import Dataset, Sampler\n"
        "class Pictures(Dataset):\n    def __init__(self, root):\n        self.root = root\n"
        "class S(Sampler):\n    num_samples = 0\n"
        "class S:\n    def __len__(self):\n        return self.num_sample\n"
    )
    hints = registry.rules_by_code()["SL401"].syntax_hints(SyntaxSummary(ast.parse(code)))
    # The class without bases is never judged; the sampler S is, with its attributes.
    assert hints == frozenset({("Pictures", ("root",), ("root",), False), ("S", (), (), False)})
    assert _findings_of(code, "SL401") == []


# Sampler classes the index stage of SL401 can now judge from what the syntax stage saw (the
# shapes of Lightning's tests and samplers): nothing to report, so no libcst parse.
SL401_NOTHING_TO_REPORT = {
    # A public attribute the class keeps for its callers, no near miss of what its base reads.
    "kept for callers": "from torch.utils.data import BatchSampler\n"
    "class Tagged(BatchSampler):\n    def __init__(self, *args, extra_arg, **kwargs):\n"
    "        super().__init__(*args, **kwargs)\n        self.extra_arg = extra_arg\n",
    # Reads only what torch's DistributedSampler assigns.
    "reads torch's attributes": "from torch.utils.data import DistributedSampler\n"
    "class Unrepeated(DistributedSampler):\n    def __iter__(self):\n"
    "        order = list(range(len(self.dataset)))\n"
    "        return iter(order[self.rank:len(order):self.num_replicas])\n",
}

# Sampler classes it must keep (each flagged, with and without the pre-filters).
SL401_STILL_FLAGGED = {
    # A write one letter from what the base reads: the override torch never sees.
    "write near a base read": "from torch.utils.data import BatchSampler\n"
    "class Sized(BatchSampler):\n    def __init__(self, sampler, size):\n"
    "        super().__init__(sampler, size, False)\n        self.batchsize = size\n",
    # The second class of a name is judged against the first one's facts: what it assigns
    # itself is unknown there.
    "second class of a name": "from torch.utils.data import Sampler\n"
    "class S(Sampler):\n    def __init__(self, n):\n        self.n = n\n"
    "    def __len__(self):\n        return self.n\n"
    "if FAST:\n    class S(Sampler):\n        def __init__(self, m):\n"
    "            self.num_samples = m\n"
    "        def __len__(self):\n            return self.num_sample\n",
    # Read in a tuple target and a loop target (libcst counts both as reads).
    "read through targets": "from torch.utils.data import Sampler\n"
    "class T(Sampler):\n    def __init__(self, n):\n        self.n_items = n\n"
    "    def __iter__(self):\n        self.first, self.last = 0, self.n_itmes\n"
    "        for self.cursor in range(self.n_items):\n            yield self.cursor\n",
}


@pytest.mark.parametrize("name", sorted(SL401_NOTHING_TO_REPORT))
def test_sl401_index_stage_judges_the_attributes_it_was_told(tmp_path: Path, name: str) -> None:
    code = SL401_NOTHING_TO_REPORT[name]
    script = tmp_path / "samplers.py"
    script.write_text(code)
    rule = registry.rules_by_code()["SL401"]
    summary = SyntaxSummary(ast.parse(code))
    assert rule.may_match(summary), "the syntax stage alone cannot tell"
    index = build_index([script], registry.all_rules())
    assert rule.may_match_index(index, str(script), code), "a sampler: kept without hints"
    assert "SL401" not in _kept(script, code, index)
    assert _findings_of(code, "SL401") == []


@pytest.mark.parametrize("name", sorted(SL401_STILL_FLAGGED))
def test_sl401_index_stage_keeps_what_the_rule_flags(tmp_path: Path, name: str) -> None:
    code = SL401_STILL_FLAGGED[name]
    (tmp_path / "samplers.py").write_text(code)
    index = build_index([tmp_path / "samplers.py"], registry.all_rules())
    assert "SL401" in _kept(tmp_path / "samplers.py", code, index)
    found = _findings(tmp_path, "--select", "SL401")
    assert found and found == _findings(tmp_path, "--select", "SL401", "--no-prefilter")


# SL502 in a Lightning project: a test file's batch sampler draws from its sampler, and a
# dataset beside it iterates on its own (Lightning's test_data.py): the syntax stage hands on
# only the dataset, which the index shows is no batch sampler.
SL502_DRAWN = """\
import lightning as L
from torch.utils.data import BatchSampler, Dataset


class Numbers(Dataset):
    def __iter__(self):
        yield 1


class Chunks(BatchSampler):
    def __iter__(self):  # draws through a helper
        return self._batches()

    def _batches(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
        yield batch
"""

# What the visitor reads is the body: a word of the signature, or a helper's name that is no
# method of the class, draws nothing.
SL502_IGNORES = """\
import lightning as L
from torch.utils.data import BatchSampler


class OneLine(BatchSampler):
    def __iter__(self, rank=0): yield [0, 1]


class Helped(BatchSampler):
    def __iter__(self):
        yield from self.sampler_free()

    def sampler_free(self):
        yield [2, 3]
"""


def test_sl502_hands_on_only_classes_that_may_ignore_their_sampler(tmp_path: Path) -> None:
    script = tmp_path / "test_data.py"
    script.write_text(SL502_DRAWN)
    rule = registry.rules_by_code()["SL502"]
    summary = SyntaxSummary(ast.parse(SL502_DRAWN)).given(SL502_DRAWN, Vocabulary(), {})
    assert rule.syntax_hints(summary) == frozenset({"Numbers"})
    index = build_index([script], registry.all_rules())
    assert rule.may_match_index(index, str(script), SL502_DRAWN), "kept without the hints"
    assert "SL502" not in _kept(script, SL502_DRAWN, index)
    assert _findings_of(SL502_DRAWN, "SL502") == []


def test_sl502_syntax_stage_reads_the_body_as_the_visitor_does(tmp_path: Path) -> None:
    rule = registry.rules_by_code()["SL502"]
    summary = SyntaxSummary(ast.parse(SL502_IGNORES)).given(SL502_IGNORES, Vocabulary(), {})
    assert rule.syntax_hints(summary) == frozenset({"OneLine", "Helped"})
    (tmp_path / "samplers.py").write_text(SL502_IGNORES)
    found = _findings(tmp_path, "--select", "SL502")
    assert [(name, code, line) for name, code, line, _ in found] == [
        ("samplers.py", "SL502", 6), ("samplers.py", "SL502", 10)
    ]
    assert found == _findings(tmp_path, "--select", "SL502", "--no-prefilter")


# SL301 where the file spells no seed at all (Lightning's tests build `DistributedSampler(ds,
# num_replicas=2, rank=0)` in test functions): only a seed key of a namespace a function around
# the sampler holds, declared in a related file, can make it a finding.
SL301_NO_SEED_WORD = """\
from torch.utils.data import DistributedSampler

from options import parse


def test_order(tmp_path):
    args = parse()
    dataset = list(range(10))
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0)
    assert len(sampler) == 5, args
"""
SL301_OPTIONS = """\
import argparse


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()
"""


def _sl301_kept(tmp_path: Path, options: dict[str, object] | None) -> tuple[bool, object]:
    script = tmp_path / "test_order.py"
    rule = registry.rules_by_code()["SL301"]
    summary = SyntaxSummary(ast.parse(SL301_NO_SEED_WORD)).given(
        SL301_NO_SEED_WORD, Vocabulary(), options
    )
    hints = rule.syntax_hints(summary)
    index = build_index(sorted(tmp_path.glob("*.py")), registry.all_rules())
    if hints is None:
        return rule.may_match_index(index, str(script), SL301_NO_SEED_WORD), hints
    kept = rule.may_match_index(index, str(script), SL301_NO_SEED_WORD, hints=hints)
    return kept, hints


def test_sl301_without_a_seed_word_asks_only_about_held_namespaces(tmp_path: Path) -> None:
    (tmp_path / "test_order.py").write_text(SL301_NO_SEED_WORD)
    (tmp_path / "options.py").write_text(SL301_OPTIONS.replace('"--seed"', '"--epochs"'))
    kept, hints = _sl301_kept(tmp_path, {})
    assert hints == frozenset({(
        "DistributedSampler", True, False, ("args", "dataset", "sampler", "tmp_path"),
        ("options", "options.parse", "torch.utils.data",
         "torch.utils.data.DistributedSampler"),
    )})
    assert not kept, "no namespace it holds has a seed key"
    assert _findings(tmp_path, "--select", "SL301", "--no-prefilter") == []
    # Unknown options, or strict mode (every script reported): no narrowing.
    assert _sl301_kept(tmp_path, None) == (True, None)
    assert _sl301_kept(tmp_path, {"strict-seed": True}) == (True, None)


def test_sl301_without_a_seed_word_keeps_a_key_declared_in_an_imported_module(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_order.py").write_text(SL301_NO_SEED_WORD)
    (tmp_path / "options.py").write_text(SL301_OPTIONS)
    kept, hints = _sl301_kept(tmp_path, {})
    assert hints is not None and kept
    found = _findings(tmp_path, "--select", "SL301")
    assert [(name, code, line) for name, code, line, _ in found] == [("test_order.py", "SL301", 9)]
    assert found == _findings(tmp_path, "--select", "SL301", "--no-prefilter")


@pytest.mark.parametrize("shape", ["in a class", "in a factory"])
def test_sl301_keeps_a_sampler_built_where_its_seed_may_be_local(
    tmp_path: Path, shape: str
) -> None:
    code = {
        "in a class": SL301_NO_SEED_WORD.replace(
            "def test_order(tmp_path):\n", "class Case(Base):\n  def test_order(self):\n"
        ),
        "in a factory": "from torch.utils.data import DistributedSampler\n\n"
        "def make(datasets):\n    return [DistributedSampler(ds) for ds in datasets]\n",
    }[shape]
    script = tmp_path / "test_order.py"
    script.write_text(code)
    rule = registry.rules_by_code()["SL301"]
    summary = SyntaxSummary(ast.parse(code)).given(code, Vocabulary(), {})
    hints = rule.syntax_hints(summary)
    assert hints is not None and {hint[:3] for hint in hints} == {
        ("DistributedSampler", True, True)
    }
    index = build_index([script], registry.all_rules())
    assert rule.may_match_index(index, str(script), code, hints=hints)


def test_sl301_judges_only_the_calls_that_build_samplers(tmp_path: Path) -> None:
    """A class-like call in a class (a model's layer) says nothing of the sampler a test
    function builds: the file is still narrowed (Lightning's test_wrappers.py)."""
    code = SL301_NO_SEED_WORD + (
        "\n\nclass Model(Module):\n    def __init__(self):\n        self.layer = Linear(2, 2)\n"
    )
    script = tmp_path / "test_order.py"
    script.write_text(code)
    (tmp_path / "options.py").write_text(SL301_OPTIONS.replace('"--seed"', '"--epochs"'))
    rule = registry.rules_by_code()["SL301"]
    summary = SyntaxSummary(ast.parse(code)).given(code, Vocabulary(), {})
    hints = rule.syntax_hints(summary)
    assert hints is not None and ("Linear", False, True) in {hint[:3] for hint in hints}
    index = build_index(sorted(tmp_path.glob("*.py")), registry.all_rules())
    assert not rule.may_match_index(index, str(script), code, hints=hints)
    # Were Linear a project subclass of DistributedSampler, the class would keep the file.
    (tmp_path / "layers.py").write_text(
        "from torch.utils.data import DistributedSampler\n\n"
        "class Linear(DistributedSampler):\n    pass\n"
    )
    index = build_index(sorted(tmp_path.glob("*.py")), registry.all_rules())
    assert rule.may_match_index(index, str(script), code, hints=hints)


def test_sl301_does_not_narrow_a_file_that_spells_a_seed() -> None:
    code = SL301_NO_SEED_WORD + "# the order is fixed by SEED\n"
    summary = SyntaxSummary(ast.parse(code)).given(code, Vocabulary(), {})
    assert registry.rules_by_code()["SL301"].syntax_hints(summary) is None


DATAMODULE = """\
from torch.utils.data import DataLoader


class DataModule:
    def __init__(self, args):
        self.args = args

    def train_dataloaders(self, cuts):
        sampler = BucketSampler(cuts, shuffle=True)
        return DataLoader(cuts, sampler=sampler, batch_size=None)
"""

RECIPE = """\
from datamodule import DataModule


def run(args, cuts, model):
    data = DataModule(args)
    train_dl = data.train_dataloaders(cuts)
    for epoch in range(args.epochs):
        train_dl.sampler.set_epoch(epoch)
        for batch in train_dl:
            model(batch)
"""


def test_a_loader_the_project_builds_with_a_sampler_needs_no_libcst(tmp_path: Path) -> None:
    """SL201 (icefall's recipes): the loader comes from a data module of another file, built with
    `sampler=`; where it comes from is read from this file's `ast` at the syntax stage, and the
    index tells it cannot carry a batch sampler. Built with `batch_sampler=`, it is kept and
    flagged."""
    (tmp_path / "datamodule.py").write_text(DATAMODULE)
    (tmp_path / "recipe.py").write_text(RECIPE)
    files = [tmp_path / "datamodule.py", tmp_path / "recipe.py"]
    rule = registry.rules_by_code()["SL201"]
    summary = SyntaxSummary(ast.parse(RECIPE))
    summary.source = RECIPE
    hints = rule.syntax_hints(summary)
    assert hints is not None and len(hints) == 1
    index = build_index(files, registry.all_rules())
    assert "SL201" not in _kept(tmp_path / "recipe.py", RECIPE, index)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'recipes'\n")
    assert _findings(tmp_path, "--select", "SL201") == []
    assert _findings(tmp_path, "--select", "SL201", "--no-prefilter") == []
    batches = DATAMODULE.replace("sampler=sampler, batch_size=None", "batch_sampler=sampler")
    (tmp_path / "datamodule.py").write_text(batches)
    index = build_index(files, registry.all_rules())
    assert "SL201" in _kept(tmp_path / "recipe.py", RECIPE, index)
    found = _findings(tmp_path, "--select", "SL201")
    assert found == _findings(tmp_path, "--select", "SL201", "--no-prefilter")
    assert [(name, code) for name, code, *_ in found] == [("recipe.py", "SL201")]


def test_tuple_hints_survive_the_survey_cache(tmp_path: Path) -> None:
    """SL201's hints are tuples of origins: the survey holding them is written to the cache and
    read back equal, and the cache's shape check accepts it (a miss would re-survey the file
    on every warm run)."""
    from sampler_lint.engine.cache import decode, encode
    from sampler_lint.engine.survey import is_survey

    lint = LintOptions(rules=registry.all_rules(), options={}, vocabulary=Vocabulary())
    collectors = Collectors.for_rules(tuple(lint.rules))
    survey = survey_source(RECIPE.encode(), str(tmp_path / "recipe.py"), lint, collectors)
    hinted = dict(survey.hints)
    assert "SL201" in hinted and all(type(hint) is tuple for hint in hinted["SL201"])
    again = decode(encode(survey))
    assert again == survey and is_survey(again)
    assert not is_survey(replace(survey, hints=(("SL201", (object(),)),)))


def test_an_alias_or_a_one_line_suite_leaves_sl201_unhinted() -> None:
    rule = registry.rules_by_code()["SL201"]
    for code in (
        "def f(dl, n):\n    s = dl.sampler\n    for e in range(n):\n        s.set_epoch(e)\n",
        "def f(ds, c, n):\n    if c: dl = make(ds)\n    dl.sampler.set_epoch(n)\n",
    ):
        summary = SyntaxSummary(ast.parse(code))
        summary.source = code
        assert rule.may_match(summary) and rule.syntax_hints(summary) is None


@pytest.mark.parametrize(
    "code", ["SL105", "SL201", "SL202", "SL301", "SL302", "SL401", "SL502", "SL504"]
)
def test_hinting_rules_take_hints_in_their_index_stage(code: str) -> None:
    rule = registry.rules_by_code()[code]
    assert rule.gives_hints() and rule.has_index_stage()


def test_rules_without_hints_are_asked_as_before() -> None:
    """A third-party rule's ``may_match_index`` without ``hints`` is never given the keyword."""
    assert not Rule.gives_hints()
    assert not registry.rules_by_code()["SL303"].gives_hints()


ITERABLES = """\
import torch.utils.data as tud
from torch.utils.data import IterableDataset as Streams


class Lines(tud.IterableDataset):
    def __iter__(self):
        yield from open(self.path)


class Tokens(Streams[int]):
    def __iter__(self):
        yield 1


class IterableDataset:  # a look-alike of the project's own, not torch's
    pass


class Mapped(Lines):
    def __iter__(self):
        yield 2
"""


def test_sl105_hints_name_the_classes_its_index_stage_parsed_the_file_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The survey's parse names the IterableDataset classes that walk a finite source, so the
    index stage, given them, does not parse the file again, and asks about those alone (without
    hints it asks about every class derived from IterableDataset)."""
    rule = registry.rules_by_code()["SL105"]
    hints = rule.syntax_hints(SyntaxSummary(ast.parse(ITERABLES)))
    asked: list[str] = []

    def loaders_of(index: ProjectIndex, name: str, path: str) -> list[object]:
        asked.append(name)
        return []

    monkeypatch.setattr(sl105, "loaders_of", loaders_of)
    assert not rule.may_match_index(ProjectIndex(), "/p/data.py", ITERABLES)
    assert set(asked) == {"Lines", "Tokens"}
    assert hints == {"Lines"}  # `Tokens` yields a constant: it walks nothing
    asked.clear()
    monkeypatch.setattr(sl105.ast, "parse", None)  # the hints spare the parse
    assert not rule.may_match_index(ProjectIndex(), "/p/data.py", ITERABLES, hints=hints)
    assert set(asked) == hints


@pytest.mark.parametrize(("body", "walks"), [
    ("        with open(self.path) as lines:\n            for line in lines:\n"
     "                yield line\n", True),
    ("        return iter(self.files)\n", True),
    ("        for index in range(len(self.rows)):\n            yield self.rows[index]\n", True),
    ("        for _ in range(8):\n            yield torch.randn(3)\n", False),  # a generator
    ("        while True:\n            for name in self.files:\n                yield name\n",
     False),  # a stream
    ("        for item in self.stream:\n            yield item\n", False),  # a wrapper
    ("        return iter(self.head)\n", True),  # a slice of a parameter
    ("        for name in self.files:\n            self.seen = name\n        yield 0\n",
     False),  # the loop yields nothing
    ("        info = get_worker_info()\n        return iter(self.files)\n", False),
])
def test_sl105_syntax_stage_keeps_only_classes_that_walk_a_finite_source(
    body: str, walks: bool
) -> None:
    """The survey's parse judges the walk as the lint pass does: a file whose classes only
    generate, stream or delegate asks the index nothing and is not linted for SL105."""
    text = (
        "import torch\nfrom torch.utils.data import IterableDataset\n\n\n"
        "class Stream(IterableDataset):\n    def __init__(self, path, files, rows):\n"
        "        self.path = path\n        self.files = files\n        self.rows = rows\n"
        "        self.stream = files\n        self.head = files[:4]\n\n"
        "    def __iter__(self):\n" + body
    )
    rule = registry.rules_by_code()["SL105"]
    summary = SyntaxSummary(ast.parse(text)).given(text, Vocabulary(), None)
    assert rule.may_match(summary) is walks
    assert rule.syntax_hints(summary) == ({"Stream"} if walks else set())


def test_sl105_judges_each_class_of_a_name_on_its_own(tmp_path: Path) -> None:
    """Two classes of one name (one per branch): the lint pass reads the walk of each from the
    ``ast`` tree, the n-th class of the name there for the n-th libcst visits."""
    (tmp_path / "data.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader, IterableDataset\n\n"
        "if torch.cuda.is_available():\n"
        "    class Lines(IterableDataset):\n"
        "        def __iter__(self):\n"
        "            for _ in range(4):\n"
        "                yield torch.randn(2)\n"
        "else:\n"
        "    class Lines(IterableDataset):\n"
        "        def __iter__(self):\n"
        "            with open('train.txt') as lines:\n"
        "                yield from lines\n\n"
        "loader = DataLoader(Lines(), num_workers=4)\n"
    )
    assert _findings(tmp_path) == [("data.py", "SL105", 11, 13)]


# A factory of a project sampler that names no distributed sampler: only the index can tell
# that `Shuffled` is one.
SHUFFLED_FACTORY = (
    "from samplers import Shuffled\n\n\n"
    "def make_sampler(dataset, seed):\n    return Shuffled(dataset)\n"
)
SHUFFLED = (
    "from torch.utils.data import DistributedSampler\n\n\n"
    "class Shuffled(DistributedSampler):\n    pass\n"
)


def _survey_parses(monkeypatch: pytest.MonkeyPatch, text: str, path: Path) -> tuple[Any, int]:
    """The survey of ``text`` with SL301 and SL302 on, and how many ``ast`` parses it made."""
    from sampler_lint.engine import survey as survey_module

    parses: list[str] = []
    parse = ast.parse

    def counting(source: str, *args: Any, **kwargs: Any) -> ast.Module:
        parses.append(source)
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(survey_module.ast, "parse", counting)
    rules = registry.rules_by_code()
    lint = LintOptions(
        rules=[rules["SL301"], rules["SL302"]], options={}, vocabulary=Vocabulary()
    )
    collectors = Collectors.for_rules(tuple(lint.rules))
    try:
        return survey_source(text.encode(), str(path), lint, collectors, gather=False), len(parses)
    finally:
        monkeypatch.setattr(survey_module.ast, "parse", parse)


def test_a_file_that_names_no_distributed_sampler_is_not_parsed_for_the_seed_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SL301 and SL302 (``Rule.parse_for``) leave a file that spells no distributed sampler to
    their index stage, unparsed: there only a project subclass can match, and the index stage
    reads that from the text. Spelled, the file is parsed and narrowed as before."""
    survey, parses = _survey_parses(monkeypatch, SHUFFLED_FACTORY, tmp_path / "factory.py")
    assert parses == 0 and survey.rules == ("SL301", "SL302") and survey.hints == ()
    named = SHUFFLED_FACTORY.replace("Shuffled(dataset)", "DistributedSampler(dataset)")
    survey, parses = _survey_parses(monkeypatch, named, tmp_path / "named.py")
    assert parses == 1 and survey.rules == ("SL301",)  # SL302's syntax stage: no seed given


@pytest.mark.parametrize("defined", [True, False])
def test_an_unparsed_factory_of_a_project_sampler_is_judged_by_the_index(
    tmp_path: Path, defined: bool
) -> None:
    """The index stage keeps the unparsed factory where the project makes `Shuffled` a
    DistributedSampler (and SL301 flags it, with the pre-filters as without), and drops it
    where it does not."""
    (tmp_path / "factory.py").write_text(SHUFFLED_FACTORY)
    (tmp_path / "samplers.py").write_text(
        SHUFFLED if defined else "class Shuffled:\n    pass\n"
    )
    index = build_index(sorted(tmp_path.glob("*.py")), registry.all_rules())
    kept = _kept(tmp_path / "factory.py", SHUFFLED_FACTORY, index)
    assert ("SL301" in kept) is defined
    found = _findings(tmp_path, "--select", "SL301,SL302")
    assert found == _findings(tmp_path, "--select", "SL301,SL302", "--no-prefilter")
    assert [code for _, code, *_ in found] == (["SL301"] if defined else [])


def test_seed_rules_that_skip_a_parse_judge_the_text_in_their_index_stage() -> None:
    """A rule that names words to parse for (``Rule.parse_for``) judges the files it was not
    parsed for in its index stage: it has one, and it reads hints only when it gave them."""
    for rule in registry.all_rules():
        if rule.parse_for:
            assert rule.has_syntax_filter and rule.has_index_stage(), rule.code


def test_the_survey_reads_dataset_loaders_only_where_sl105_is_left(tmp_path: Path) -> None:
    """The facts of which loaders a file builds on which datasets (SL105's collector) cost
    about a third of a parse, and SL105 asks about few files (those spelling a class whose
    `__iter__` walks a finite source): the survey reads them from its parse only where SL105 is
    left for the file, which its own class then asks about first."""
    rules = registry.rules_by_code()
    lint = LintOptions(
        rules=[rules["SL105"], rules["SL301"]], options={}, vocabulary=Vocabulary()
    )
    collectors = Collectors.for_rules(tuple(lint.rules))
    builder = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "from lines import Lines\n\n"
        "sampler = DistributedSampler(Lines('a.txt'), seed=3)\n"
        "loader = DataLoader(Lines('a.txt'), sampler=sampler, num_workers=4)\n"
    )
    walking = (
        "from torch.utils.data import IterableDataset\n\n\n"
        "class Lines(IterableDataset):\n"
        "    def __init__(self, files):\n        self.files = files\n\n"
        "    def __iter__(self):\n        for name in self.files:\n            yield name\n"
    )
    read = {}
    for name, text in (("train.py", builder), ("lines.py", walking)):
        survey = survey_source(text.encode(), str(tmp_path / name), lint, collectors, gather=False)
        assert survey.rules, name  # parsed by the syntax stage
        read[name] = {collector for collector, _ in survey.read}
    assert "dataset loaders" not in read["train.py"]
    assert "dataset loaders" in read["lines.py"]
    # The builder is read when SL105 asks about `Lines`: flagged as without the pre-filters.
    (tmp_path / "train.py").write_text(builder)
    (tmp_path / "lines.py").write_text(walking)
    found = _findings(tmp_path, "--select", "SL105")
    assert [code for _, code, *_ in found] == ["SL105"]
    assert found == _findings(tmp_path, "--select", "SL105", "--no-prefilter")
