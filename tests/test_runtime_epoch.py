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
        orders.append([int(i) for batch in loader for i in batch])
    return orders


def _loader() -> Any:
    dataset = torch.arange(32)
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)
    return DataLoader(dataset, batch_sampler=BatchSampler(sampler, 4, drop_last=False))


def test_the_flagged_code_repeats_one_order_and_the_fix_reshuffles() -> None:
    result = lint_code(BUGGY, select=["SL201"], fix=True)
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
    result = lint_code(BUGGY, select=["SL201"], fix=True)
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
    fixed = lint_code(SCRIPT, select=["SL202"], fix=True).fixed
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
