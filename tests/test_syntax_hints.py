"""Hints from the syntax stage to the index stage (``Rule.syntax_hints``): a rule names the
classes or callees its ``ast`` filter kept the file for, and its index stage judges only those,
so a file kept for one class is not parsed with libcst because of another."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

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
    assert rules["SL401"].syntax_hints(summary) == frozenset({"Pictures"})
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
    assert registry.rules_by_code()["SL401"].syntax_hints(summary) == frozenset({"Shards"})
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


@pytest.mark.parametrize("code", ["SL401", "SL504"])
def test_hinting_rules_take_hints_in_their_index_stage(code: str) -> None:
    rule = registry.rules_by_code()[code]
    assert rule.gives_hints() and rule.has_index_stage()


def test_rules_without_hints_are_asked_as_before() -> None:
    """A third-party rule's ``may_match_index`` without ``hints`` is never given the keyword."""
    assert not Rule.gives_hints()
    assert not registry.rules_by_code()["SL301"].gives_hints()
