"""Runtime proof for SL201 with real torch: with a DistributedSampler inside a batch sampler, the
sampler-only call repeats one order every epoch; the code the linter's fix writes reshuffles."""

from __future__ import annotations

from typing import Any

import pytest

from sampler_lint.api import lint_code

torch = pytest.importorskip("torch")
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler  # noqa: E402

BUGGY = """\
from torch.utils.data import DistributedSampler


def start_epoch(dataloader, epoch):
    if isinstance(dataloader.sampler, DistributedSampler):
        dataloader.sampler.set_epoch(epoch)
"""


def _orders(source: str, loader: Any) -> list[list[int]]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<train>", "exec"), namespace)
    orders = []
    for epoch in range(3):
        namespace["start_epoch"](loader, epoch)
        orders.append([int(i) for batch in loader for i in torch.as_tensor(batch).reshape(-1)])
    return orders


def _loader() -> Any:
    dataset = torch.arange(32)
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)
    return DataLoader(dataset, batch_sampler=BatchSampler(sampler, 4, drop_last=False))


def test_the_flagged_code_repeats_one_order_and_the_fix_reshuffles() -> None:
    result = lint_code(BUGGY, select=["SL201"], fix=True, unsafe_fixes=True)
    assert [f.code for f in lint_code(BUGGY, select=["SL201"]).findings] == ["SL201"]
    assert result.fixed is not None

    before = _orders(BUGGY, _loader())
    assert before[0] == before[1] == before[2]  # every epoch the same order

    after = _orders(result.fixed, _loader())
    assert after[0] != after[1] and after[1] != after[2]
    assert after[0] == before[0]  # epoch 0 unchanged: only the missing reshuffle is added
    for order in after:  # still this rank's half, each index once
        assert len(order) == len(set(order)) == 16


def test_a_loader_built_with_sampler_is_unchanged_by_the_fix() -> None:
    result = lint_code(BUGGY, select=["SL201"], fix=True, unsafe_fixes=True)
    assert result.fixed is not None
    dataset = torch.arange(32)
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)
    plain = DataLoader(dataset, batch_size=4, sampler=sampler)
    assert _orders(result.fixed, plain) == _orders(BUGGY, plain)


SCRIPT = """\
from torch.utils.data import DataLoader, DistributedSampler


def main(dataset, epochs, record):
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, seed=0)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    for epoch in range(epochs):
        record.append([int(i) for batch in loader for i in batch])
"""


def test_missing_set_epoch_repeats_the_order_and_the_fix_reshuffles() -> None:
    assert [f.code for f in lint_code(SCRIPT, select=["SL202"]).findings] == ["SL202"]
    fixed = lint_code(SCRIPT, select=["SL202"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None

    def orders(source: str) -> list[list[int]]:
        namespace: dict[str, Any] = {}
        exec(compile(source, "<script>", "exec"), namespace)
        record: list[list[int]] = []
        namespace["main"](torch.arange(32), 3, record)
        return record

    before, after = orders(SCRIPT), orders(fixed)
    assert before[0] == before[1] == before[2]
    assert after[0] == before[0] and after[1] != after[0] and after[2] != after[1]


# The shapes met in real code: an `elif` guard (timm's legacy_train.py) and an alias read only by
# its guard and set_epoch. Each is called as start_epoch(dataloader, epoch).
SHAPES = {
    "elif": """\
def start_epoch(dataloader, epoch, dataset=None, distributed=True):
    if hasattr(dataset, "set_epoch"):
        dataset.set_epoch(epoch)
    elif distributed and hasattr(dataloader.sampler, "set_epoch"):
        dataloader.sampler.set_epoch(epoch)
""",
    "alias": """\
from torch.utils.data import DistributedSampler


def start_epoch(dataloader, epoch):
    sampler = dataloader.sampler
    if isinstance(sampler, DistributedSampler):
        sampler.set_epoch(epoch)
""",
}


class EpochBatchSampler(BatchSampler):
    """A custom batch sampler that shuffles its batches itself, by epoch (timm's
    ScheduledBatchSampler, Composer's users' samplers)."""

    def __init__(self, sampler: Any, batch_size: int) -> None:
        super().__init__(sampler, batch_size, drop_last=False)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Any:
        batches = list(super().__iter__())
        order = torch.randperm(len(batches), generator=torch.Generator().manual_seed(self.epoch))
        return iter([batches[i] for i in order])


@pytest.mark.parametrize("shape", ["elif", "alias"])
def test_each_shape_is_fixed_and_the_fix_reshuffles(shape: str) -> None:
    source = SHAPES[shape]
    assert [f.code for f in lint_code(source, select=["SL201"]).findings] == ["SL201"]
    fixed = lint_code(source, select=["SL201"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None and fixed != source

    before = _orders(source, _loader())
    after = _orders(fixed, _loader())
    assert before[0] == before[1] == before[2]
    assert after[0] == before[0] and after[1] != after[0] and after[2] != after[1]


def test_the_elif_fix_is_not_hidden_behind_the_test_that_fails() -> None:
    # With a batch sampler, `dataloader.sampler` is a SequentialSampler without set_epoch: code
    # inserted inside the `elif` body would never run. The new tests join the chain before it.
    fixed = lint_code(SHAPES["elif"], select=["SL201"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None
    assert "    elif distributed and hasattr(getattr(dataloader, \"batch_sampler\"" in fixed
    assert "    elif distributed and hasattr(dataloader.sampler" in fixed
    dataset = torch.arange(32)
    loader = DataLoader(dataset, batch_sampler=EpochBatchSampler(range(32), 4))
    before = _orders(SHAPES["elif"], loader)
    after = _orders(fixed, loader)
    assert before[0] == before[1] == before[2]
    assert after[1] != after[0] and after[2] != after[1]


def test_fixed_code_keeps_working_for_loaders_without_batch_sampler() -> None:
    fixed = lint_code(SHAPES["elif"], select=["SL201"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None
    dataset = torch.arange(32)
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)
    unbatched = DataLoader(dataset, batch_size=None, sampler=sampler)  # batch_sampler is None
    assert _orders(fixed, unbatched) == _orders(SHAPES["elif"], unbatched)

    class Wrapper:  # a loader wrapper with no batch_sampler attribute (a prefetcher)
        def __init__(self, loader: Any) -> None:
            self.loader, self.sampler = loader, loader.sampler

        def __iter__(self) -> Any:
            return iter(self.loader)

    plain = DataLoader(dataset, batch_size=4, sampler=sampler)
    assert _orders(fixed, Wrapper(plain)) == _orders(SHAPES["elif"], Wrapper(plain))
    orders = _orders(fixed, Wrapper(plain))
    assert orders[0] != orders[1]  # the sampler itself still gets its epoch, once


LATE = """\
def main(loader, epochs, record):
    for epoch in range(epochs):
        it = iter(loader)
        loader.sampler.set_epoch(epoch)
        record.append([int(i) for batch in it for i in batch.reshape(-1)])
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_set_epoch_after_the_iterator_lags_one_epoch_and_the_fix_does_not(workers: int) -> None:
    assert [f.code for f in lint_code(LATE, select=["SL203"]).findings] == ["SL203"]
    fixed = lint_code(LATE, select=["SL203"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None

    def orders(source: str, batch_size: int | None) -> list[list[int]]:
        namespace: dict[str, Any] = {}
        exec(compile(source, "<late>", "exec"), namespace)
        dataset = torch.arange(32)
        sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)
        loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=workers)
        record: list[list[int]] = []
        namespace["main"](loader, 3, record)
        return record

    # Worker processes prefetch when the iterator is created, and without automatic batching
    # the sampler's iterator is made right then: the permutation is already drawn. (Only a
    # single-process loader with a batch sampler draws it lazily, at the first batch.)
    batch_size = 4 if workers else None
    before, after = orders(LATE, batch_size), orders(fixed, batch_size)
    assert before[0] == before[1]  # epoch 1 still drew epoch 0's permutation
    assert after[0] != after[1] and after[1] != after[2]
    assert before[1:] == after[:-1]  # the late call only shifted every order by one epoch


INFINITE = """\
from torch.utils.data import DataLoader, DistributedSampler


def main(dataset, steps, record):
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, seed=0)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    it = iter(loader)
    epoch = 0
    while steps:
        try:
            batch = next(it)
        except StopIteration:
            epoch += 1
            it = iter(loader)
            batch = next(it)
        record.extend(int(i) for i in batch)
        steps -= 1
"""


def test_the_infinite_iterator_repeats_its_pass_and_the_fix_reshuffles() -> None:
    assert [f.code for f in lint_code(INFINITE, select=["SL202"]).findings] == ["SL202"]
    fixed = lint_code(INFINITE, select=["SL202"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None and "sampler.set_epoch(epoch)" in fixed

    def passes(source: str) -> list[list[int]]:
        namespace: dict[str, Any] = {}
        exec(compile(source, "<infinite>", "exec"), namespace)
        record: list[int] = []
        namespace["main"](torch.arange(32), 12, record)  # 3 passes of 4 batches of 4
        return [record[i:i + 16] for i in range(0, 48, 16)]

    before, after = passes(INFINITE), passes(fixed)
    assert before[0] == before[1] == before[2]
    assert after[0] == before[0] and after[1] != after[0] and after[2] != after[1]


# The short forms: the reused guard ends an `if` / `elif` chain; the file's quotes are kept.
CHAINED = {
    "isinstance": """\
from torch.utils.data import DistributedSampler


def start_epoch(dataloader, epoch):
    if isinstance(dataloader.sampler, DistributedSampler):
        dataloader.sampler.set_epoch(epoch)
""",
    "hasattr, single quotes": """\
def start_epoch(dataloader, epoch):
    if hasattr(dataloader.sampler, 'set_epoch'):
        dataloader.sampler.set_epoch(epoch)
""",
    "proven DataLoader": """\
from torch.utils.data import DataLoader, DistributedSampler


def start_epoch(dataloader, epoch):
    if isinstance(dataloader, DataLoader) and isinstance(dataloader.sampler, DistributedSampler):
        dataloader.sampler.set_epoch(epoch)
""",
}


@pytest.mark.parametrize("shape", list(CHAINED))
def test_the_chained_fix_reaches_whichever_object_shuffles(shape: str) -> None:
    source = CHAINED[shape]
    fixed = lint_code(source, select=["SL201"], fix=True).fixed
    assert fixed is not None and "for _sampler" not in fixed and "else:" not in fixed
    assert fixed.count("elif ") == 2
    if "single quotes" in shape:
        assert '"' not in fixed
    dataset = torch.arange(32)

    def distributed() -> Any:
        return DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)

    # A DistributedSampler inside torch's BatchSampler: the fix reshuffles.
    after = _orders(fixed, _loader())
    assert after[0] != after[1] and after[1] != after[2]
    # Built with sampler=: exactly the orders of the original code.
    plain = DataLoader(dataset, batch_size=4, sampler=distributed())
    assert _orders(fixed, plain) == _orders(source, DataLoader(
        dataset, batch_size=4, sampler=distributed()
    ))
    # A batch sampler that shuffles by epoch itself (hasattr guards reach it).
    if "hasattr" in source:
        custom = DataLoader(dataset, batch_sampler=EpochBatchSampler(range(32), 4))
        orders = _orders(fixed, custom)
        assert orders[0] != orders[1] and orders[1] != orders[2]


# SL202 with a plain torch sampler as the other alternative (issue 15): the fix reshuffles the
# distributed path and leaves the single-process path exactly as it was.
MIXED = """\
import torch
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler


def main(dataset, epochs, record, multi):
    order = (
        DistributedSampler(dataset, num_replicas=2, rank=0, seed=0) if multi
        else RandomSampler(dataset, generator=torch.Generator().manual_seed(0))
    )
    loader = DataLoader(dataset, batch_size=4, sampler=order)
    for epoch in range(epochs):
        record.append([int(i) for batch in loader for i in batch])
"""


def test_a_plain_alternative_keeps_its_orders_and_the_distributed_one_reshuffles() -> None:
    assert [f.code for f in lint_code(MIXED, select=["SL202"]).findings] == ["SL202"]
    fixed = lint_code(MIXED, select=["SL202"], fix=True).fixed
    assert fixed is not None and 'if hasattr(order, "set_epoch"):' in fixed

    def orders(source: str, multi: bool) -> list[list[int]]:
        namespace: dict[str, Any] = {}
        exec(compile(source, "<mixed>", "exec"), namespace)
        record: list[list[int]] = []
        namespace["main"](torch.arange(32), 3, record, multi)
        return record

    assert orders(fixed, False) == orders(MIXED, False)
    before, after = orders(MIXED, True), orders(fixed, True)
    assert before[0] == before[1] == before[2]
    assert after[0] == before[0] and after[1] != after[0] and after[2] != after[1]
