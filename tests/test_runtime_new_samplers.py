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


LOCAL_RANK_SCRIPT = """\
import os

import torch.distributed as dist
from torch.utils.data import DistributedSampler


def indices(dataset):
    local_rank = int(os.environ["LOCAL_RANK"])
    device = f"cuda:{local_rank}"
    world_size = int(os.environ["WORLD_SIZE"])
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=local_rank, shuffle=False)
    return device, list(sampler)
"""


class _ProcessGroup:
    """Stands in for an initialised torch.distributed of one process: ``get_rank`` only."""

    def __init__(self, rank: int) -> None:
        self.rank = rank

    def get_rank(self) -> int:
        return self.rank


def _job(source: str, nodes: int, gpus: int, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every index every process of a ``nodes`` x ``gpus`` job reads, as torchrun sets them up."""
    seen: list[int] = []
    for node in range(nodes):
        for local in range(gpus):
            monkeypatch.setenv("LOCAL_RANK", str(local))
            monkeypatch.setenv("RANK", str(node * gpus + local))
            monkeypatch.setenv("WORLD_SIZE", str(nodes * gpus))
            namespace: dict[str, Any] = {}
            exec(compile(source, "<script>", "exec"), namespace)
            namespace["dist"] = _ProcessGroup(node * gpus + local)
            seen += namespace["indices"](list(range(32)))[1]
    return seen


def test_sl404_local_rank_reads_node_zero_shards_until_fixed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert [f.code for f in lint_code(LOCAL_RANK_SCRIPT, select=["SL404"]).findings] == ["SL404"]
    fixed = lint_code(LOCAL_RANK_SCRIPT, select=["SL404"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None and "rank=dist.get_rank()" in fixed

    # One machine: local rank == global rank, the fix changes nothing.
    assert sorted(_job(LOCAL_RANK_SCRIPT, 1, 4, monkeypatch)) == list(range(32))
    assert _job(fixed, 1, 4, monkeypatch) == _job(LOCAL_RANK_SCRIPT, 1, 4, monkeypatch)
    # Two machines: half the data read twice, half never; fixed: every index once.
    buggy = _job(LOCAL_RANK_SCRIPT, 2, 2, monkeypatch)
    assert len(set(buggy)) == 16 and len(buggy) == 32
    assert sorted(_job(fixed, 2, 2, monkeypatch)) == list(range(32))


DOUBLE_SHARDED = """\
import torch.utils.data as data
from accelerate.data_loader import prepare_data_loader


def shard(dataset, world, rank):
    sampler = data.DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=False)
    loader = data.DataLoader(dataset, batch_size=2, sampler=sampler)
    sampler.set_epoch(0)
    return prepare_data_loader(loader, num_processes=world, process_index=rank)
"""


def _seen(source: str, world: int) -> list[list[int]]:
    """What each of ``world`` processes reads, as accelerate's prepare sets its loader up."""
    per_process = []
    for rank in range(world):
        namespace: dict[str, Any] = {}
        exec(compile(source, "<script>", "exec"), namespace)
        loader = namespace["shard"](list(range(16)), world, rank)
        per_process.append([int(i) for batch in loader for i in batch])
    return per_process


def test_sl504_prepare_shards_a_distributed_sampler_again_until_fixed() -> None:
    pytest.importorskip("accelerate")
    assert [f.code for f in lint_code(DOUBLE_SHARDED, select=["SL504"]).findings] == ["SL504"]
    fixed = lint_code(DOUBLE_SHARDED, select=["SL504"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None and "sampler=" not in fixed.split("loader =")[1].split("\n")[0]

    buggy = _seen(DOUBLE_SHARDED, 2)
    assert sum(len(p) for p in buggy) == 8  # 1/W^2 each: half the data is never read
    healed = _seen(fixed, 2)
    assert sorted(i for p in healed for i in p) == list(range(16))


CONSTANT_WORKER_SEED = """\
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Noise(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        return float(np.random.rand())  # a random augmentation


def seed_worker(worker_id):
    np.random.seed(7 + worker_id)


def epochs(count):
    torch.manual_seed(0)
    loader = DataLoader(Noise(), batch_size=None, num_workers=2, worker_init_fn=seed_worker,
                        multiprocessing_context="fork")
    return [sorted(float(x) for x in loader) for _ in range(count)]
"""


def test_sl303_constant_worker_seed_replays_each_epoch_until_fixed() -> None:
    pytest.importorskip("numpy")  # the script draws with numpy (CI has it with accelerate)
    found = lint_code(CONSTANT_WORKER_SEED, select=["SL303"]).findings
    assert [f.code for f in found] == ["SL303"]
    fixed = lint_code(CONSTANT_WORKER_SEED, select=["SL303"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None and "torch.initial_seed() % 2**32" in fixed

    def run(source: str) -> list[list[float]]:
        namespace: dict[str, Any] = {}
        exec(compile(source, "<script>", "exec"), namespace)
        result: list[list[float]] = namespace["epochs"](2)
        return result

    first, second = run(CONSTANT_WORKER_SEED)
    assert first == second  # the same augmentations every epoch
    first, second = run(fixed)
    assert first != second
    assert run(fixed) == [first, second]  # and still reproducible from the main seed


OWNED_RNG = """\
import numpy as np
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 4

    def __getitem__(self, index):
        return float(self.rng.random())


def draws():
    loader = DataLoader(Noisy(), batch_size=None, num_workers=2, multiprocessing_context="fork")
    return [float(x) for x in loader]
"""


def test_sl304_every_worker_draws_the_same_numbers() -> None:
    pytest.importorskip("numpy")  # the dataset draws with numpy (CI has it with accelerate)
    assert [f.code for f in lint_code(OWNED_RNG, select=["SL304"]).findings] == ["SL304"]
    namespace: dict[str, Any] = {}
    exec(compile(OWNED_RNG, "<script>", "exec"), namespace)
    values = namespace["draws"]()
    # Workers take items in turn (0, 1, 0, 1): each worker's n-th draw is the other's.
    assert values[0] == values[1] and values[2] == values[3] and values[0] != values[2]
