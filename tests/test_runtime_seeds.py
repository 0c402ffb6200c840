"""Runtime proof for SL301 and SL302 with real torch: with the flagged code two user seeds give
the same order and per-rank seeds break the partition; the fixed code does neither."""

from __future__ import annotations

from typing import Any

import pytest

from sampler_lint.api import lint_code

torch = pytest.importorskip("torch")

HARDCODED = """\
import torch
from torch.utils.data import DistributedSampler


def main(dataset, seed, rank):
    torch.manual_seed(seed)
    sampler = DistributedSampler(dataset, num_replicas=2, rank=rank, shuffle=True)
    return list(sampler)
"""

RANK_SEED = """\
from torch.utils.data import DistributedSampler


def main(dataset, seed, rank):
    sampler = DistributedSampler(dataset, num_replicas=2, rank=rank, seed=seed + rank)
    return list(sampler)
"""


def _run(source: str, seed: int, rank: int) -> list[int]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<script>", "exec"), namespace)
    return [int(i) for i in namespace["main"](list(range(64)), seed, rank)]


def test_hardcoded_seed_ignores_the_user_seed_until_fixed() -> None:
    assert [f.code for f in lint_code(HARDCODED, select=["SL301"]).findings] == ["SL301"]
    fixed = lint_code(HARDCODED, select=["SL301"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None and "seed=seed" in fixed
    assert _run(HARDCODED, 1, 0) == _run(HARDCODED, 2, 0)
    assert _run(fixed, 1, 0) != _run(fixed, 2, 0)


def test_rank_dependent_seed_overlaps_until_fixed() -> None:
    assert [f.code for f in lint_code(RANK_SEED, select=["SL302"]).findings] == ["SL302"]
    fixed = lint_code(RANK_SEED, select=["SL302"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None and "seed=seed)" in fixed
    buggy = [set(_run(RANK_SEED, 5, rank)) for rank in (0, 1)]
    assert buggy[0] & buggy[1]  # the two ranks see some of the same samples...
    assert buggy[0] | buggy[1] != set(range(64))  # ...and some samples nobody sees
    good = [set(_run(fixed, 5, rank)) for rank in (0, 1)]
    assert not good[0] & good[1]
    assert good[0] | good[1] == set(range(64))
