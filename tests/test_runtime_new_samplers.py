"""Runtime proof for SL403 with real torch: a sampler that seeds a generator and draws without it
ignores its seed and `set_epoch`, and ranks with per-rank global seeds overlap; after the fix the
ranks partition the data and the epoch reshuffles."""

from __future__ import annotations

from typing import Any

import pytest

from sampler_lint.api import lint_code

torch = pytest.importorskip("torch")

SAMPLER = """\
import torch


class ShardSampler:
    def __init__(self, n, rank, num_replicas, seed=0):
        self.n, self.rank, self.num_replicas, self.seed = n, rank, num_replicas, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        order = torch.randperm(self.n).tolist()
        return iter(order[self.rank :: self.num_replicas])
"""


def _draw(source: str, rank: int, epoch: int, global_seed: int) -> list[int]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<sampler>", "exec"), namespace)
    sampler = namespace["ShardSampler"](64, rank, 2, seed=7)
    sampler.set_epoch(epoch)
    torch.manual_seed(global_seed)  # augmentation seeds are often per rank: seed + rank
    return list(sampler)


def test_sl403_unused_generator_breaks_the_partition_until_fixed() -> None:
    assert [f.code for f in lint_code(SAMPLER, select=["SL403"]).findings] == ["SL403"]
    fixed = lint_code(SAMPLER, select=["SL403"], fix=True).fixed
    assert fixed is not None and "generator=g" in fixed

    # Buggy: ranks seeded differently overlap; the same global seed replays the same "epoch".
    rank0, rank1 = _draw(SAMPLER, 0, 0, 100), _draw(SAMPLER, 1, 0, 101)
    assert set(rank0) & set(rank1)
    assert _draw(SAMPLER, 0, 0, 100) == _draw(SAMPLER, 0, 1, 100)

    # Fixed: a partition whatever the global seeds, and a new order each epoch.
    rank0, rank1 = _draw(fixed, 0, 0, 100), _draw(fixed, 1, 0, 101)
    assert not set(rank0) & set(rank1) and len(rank0) + len(rank1) == 64
    assert _draw(fixed, 0, 0, 100) != _draw(fixed, 0, 1, 100)
