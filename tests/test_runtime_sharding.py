"""Runtime proof for SL101, SL102 and SL103: run the buggy code and the code the linter's own fix
produces, with real torch, for several (n, world size) pairs. The buggy forms drop indices, raise,
or give fewer parts than ranks; the fixed forms use every index exactly once in exactly W parts."""

from __future__ import annotations

from typing import Any

import pytest

from sampler_lint.api import lint_code

torch = pytest.importorskip("torch")

SHAPES = [(9, 4), (10, 4), (4097, 4), (3, 4), (11, 4), (100, 8), (55, 8), (8, 8)]

SL101 = "def shard(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
SL102 = "def shard(x, world_size, rank):\n    return x.chunk(world_size)[rank]\n"
SL103 = (
    "def shard(x, world_size, rank):\n"
    "    per = len(x) // world_size\n"
    "    return x[rank * per:(rank + 1) * per]\n"
)


def _function(code: str) -> Any:
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(code, "<shard>", "exec"), namespace)
    return namespace["shard"]


def _fixed(code: str, rule: str) -> str:
    result = lint_code(code, select=[rule], fix=True, unsafe_fixes=True)
    assert [f.code for f in lint_code(code, select=[rule]).findings] == [rule]
    assert result.fixed is not None
    return result.fixed


def _parts(shard: Any, n: int, world_size: int) -> list[list[int]] | None:
    """Every rank's share, or None when some rank raises."""
    x = torch.arange(n)
    try:
        return [shard(x, world_size, rank).tolist() for rank in range(world_size)]
    except (IndexError, RuntimeError):
        return None


def _covers_exactly_once(parts: list[list[int]] | None, n: int, world_size: int) -> bool:
    if parts is None or len(parts) != world_size:
        return False
    flat = [i for part in parts for i in part]
    return sorted(flat) == list(range(n))


@pytest.mark.parametrize(("rule", "code"), [("SL101", SL101), ("SL102", SL102), ("SL103", SL103)])
@pytest.mark.parametrize(("n", "world_size"), SHAPES)
def test_fix_shards_every_index_exactly_once(rule: str, code: str, n: int, world_size: int) -> None:
    fixed = _function(_fixed(code, rule))
    parts = _parts(fixed, n, world_size)
    assert _covers_exactly_once(parts, n, world_size)
    assert parts is not None
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize(("n", "world_size"), [(9, 4), (10, 4), (4097, 4), (11, 4), (55, 8)])
def test_floor_split_drops_the_tail(n: int, world_size: int) -> None:
    parts = _parts(_function(SL101), n, world_size)
    assert parts is not None
    used = sum(len(p) for p in parts)
    assert used == n - n % world_size  # the tail never reaches any rank
    assert len(torch.arange(n).split(n // world_size)) > world_size


def test_floor_split_raises_with_fewer_items_than_ranks() -> None:
    assert _parts(_function(SL101), 3, 4) is None


@pytest.mark.parametrize(("n", "world_size"), [(9, 4), (3, 4), (41, 8)])
def test_chunk_gives_fewer_parts_than_ranks(n: int, world_size: int) -> None:
    assert len(torch.arange(n).chunk(world_size)) < world_size
    assert _parts(_function(SL102), n, world_size) is None


def test_chunk_with_1024_ranks() -> None:
    assert len(torch.arange(50_000).chunk(1024)) == 1021


@pytest.mark.parametrize(("n", "world_size"), [(10, 4), (4097, 4), (55, 8)])
def test_floor_slice_drops_the_tail(n: int, world_size: int) -> None:
    parts = _parts(_function(SL103), n, world_size)
    assert parts is not None
    assert sum(len(p) for p in parts) == n - n % world_size


def test_ceil_split_option_uses_everything_but_can_leave_ranks_empty() -> None:
    fixed = lint_code(
        SL101, select=["SL101"], fix=True, unsafe_fixes=True, options={"split-fix": "ceil"}
    ).fixed
    assert fixed is not None and "math.ceil" in fixed
    shard = _function(fixed)
    assert _covers_exactly_once(_parts(shard, 12, 4), 12, 4)
    assert _parts(shard, 9, 4) is None  # 3 chunks of 3 for 4 ranks: why ceil is not the default


def test_drop_last_does_not_keep_ranks_in_step_after_the_fix() -> None:
    """What SL101's docs and risk line say: after the tensor_split fix the parts differ by one,
    and `drop_last=True` on each rank's loader can still give different step counts (4,095 items,
    4 ranks, batch 1,024: 1, 1, 1, 0 batches), which hangs DDP's all-reduce. Padding every rank
    to the same size, as DistributedSampler does, keeps them in step."""
    from torch.utils.data import DataLoader, DistributedSampler

    fixed = _function(_fixed(SL101, "SL101"))
    data = torch.arange(4095)
    steps = [
        len(DataLoader(fixed(data, 4, rank), batch_size=1024, drop_last=True)) for rank in range(4)
    ]
    assert steps == [1, 1, 1, 0]
    padded = [
        len(DataLoader(data, batch_size=1024, drop_last=True,
                       sampler=DistributedSampler(data, num_replicas=4, rank=rank)))
        for rank in range(4)
    ]
    assert len(set(padded)) == 1
