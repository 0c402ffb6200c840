"""Runtime proof, with real torch, for the seed shapes of issue 15: a project subclass of
DistributedSampler ignores the run's seed until SL301's fix passes it; a seed reassigned with the
rank breaks the partition until SL302's fix; SL401's must-assign finding is a real
AttributeError."""

from __future__ import annotations

from typing import Any

import pytest

from sampler_lint.api import lint_code

torch = pytest.importorskip("torch")

SUBCLASS = """\
from torch.utils.data import DistributedSampler


class EvenShards(DistributedSampler):
    def __len__(self):
        return self.num_samples - self.num_samples % 2


def main(dataset, seed, rank):
    sampler = EvenShards(dataset, num_replicas=2, rank=rank)
    return list(sampler)
"""

REASSIGNED = """\
from torch.utils.data import DistributedSampler


def main(dataset, base_seed, rank):
    seed = base_seed
    if rank >= 0:
        seed = seed * 10 + rank
    return list(DistributedSampler(dataset, num_replicas=2, rank=rank, seed=seed))
"""

PARTIAL_INIT = """\
from torch.utils.data import Sampler


class Shard(Sampler):
    def __init__(self, items, hosts=None):
        self.items = list(items)
        if hosts is None:
            self.hosts = 2
        self.share = self.items[:: self.hosts]
"""


def _run(source: str, seed: int, rank: int) -> list[int]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<script>", "exec"), namespace)
    return [int(i) for i in namespace["main"](list(range(64)), seed, rank)]


def test_project_subclass_ignores_the_seed_until_fixed() -> None:
    assert [f.code for f in lint_code(SUBCLASS, select=["SL301"]).findings] == ["SL301"]
    fixed = lint_code(SUBCLASS, select=["SL301"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None and "seed=seed" in fixed
    assert _run(SUBCLASS, 1, 0) == _run(SUBCLASS, 2, 0)
    assert _run(fixed, 1, 0) != _run(fixed, 2, 0)


def test_reassigned_rank_seed_overlaps_until_fixed() -> None:
    assert [f.code for f in lint_code(REASSIGNED, select=["SL302"]).findings] == ["SL302"]
    fixed = lint_code(REASSIGNED, select=["SL302"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None and "seed=base_seed)" in fixed
    buggy = [set(_run(REASSIGNED, 5, rank)) for rank in (0, 1)]
    assert buggy[0] | buggy[1] != set(range(64))
    good = [set(_run(fixed, 5, rank)) for rank in (0, 1)]
    assert not good[0] & good[1] and good[0] | good[1] == set(range(64))


def test_attribute_assigned_on_some_paths_raises() -> None:
    assert [f.code for f in lint_code(PARTIAL_INIT, select=["SL401"]).findings] == ["SL401"]
    namespace: dict[str, Any] = {}
    exec(compile(PARTIAL_INIT, "<script>", "exec"), namespace)
    assert namespace["Shard"](range(8)).share == [0, 2, 4, 6]
    with pytest.raises(AttributeError):
        namespace["Shard"](range(8), hosts=4)
