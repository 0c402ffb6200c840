"""Runtime proof for SL104 with real torch: under two simulated ranks, the flagged loader gives
both processes the same samples; the code the linter's fix writes gives them disjoint halves
that cover the dataset, and (shuffling) a new order every epoch."""

from __future__ import annotations

from typing import Any

import pytest

from sampler_lint.api import lint_code

torch = pytest.importorskip("torch")

WORLD = 2
SIZE = 40

SCRIPT = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def main(model, optimizer, epochs, record):
    dist.init_process_group("gloo")
    model = DDP(model)
    dataset = TensorDataset(torch.arange({size}))
    loader = DataLoader(dataset, batch_size=4{shuffle})
    for epoch in range(epochs):
        seen = []
        for (x,) in loader:
            seen.extend(int(i) for i in x)
            optimizer.step()
        record.append(seen)
"""


class _Optimizer:
    def step(self) -> None:
        pass


@pytest.fixture
def ranks(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """torch.distributed answering for one simulated rank of ``WORLD``; DDP a stand-in."""
    current = {"rank": 0}
    dist = torch.distributed
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: WORLD)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: current["rank"])
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "init_process_group", lambda *a, **k: None)
    monkeypatch.setattr(torch.nn.parallel, "DistributedDataParallel", lambda model, **k: model)
    return current


def _run(source: str, ranks: dict[str, int], epochs: int = 3) -> list[list[list[int]]]:
    """The samples each simulated rank sees, per epoch (same global seed on every rank, as a
    script that seeds torch the same way everywhere)."""
    seen = []
    for rank in range(WORLD):
        ranks["rank"] = rank
        torch.manual_seed(0)
        namespace: dict[str, Any] = {}
        exec(compile(source, "<train>", "exec"), namespace)
        record: list[list[int]] = []
        namespace["main"](torch.nn.Linear(1, 1), _Optimizer(), epochs, record)
        seen.append(record)
    return seen


@pytest.mark.parametrize("shuffle", ["", ", shuffle=False", ", shuffle=True"])
def test_flagged_loader_repeats_the_data_and_the_fix_splits_it(
    shuffle: str, ranks: dict[str, int]
) -> None:
    source = SCRIPT.format(size=SIZE, shuffle=shuffle)
    assert [f.code for f in lint_code(source, select=["SL104"]).findings] == ["SL104"]
    fixed = lint_code(source, select=["SL104"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None and "DistributedSampler" in fixed
    assert lint_code(fixed, select=["SL104", "SL201", "SL202"]).findings == []

    before = _run(source, ranks)
    for epoch in range(3):
        assert before[0][epoch] == before[1][epoch]  # both ranks: the same samples
        assert sorted(before[0][epoch]) == list(range(SIZE))  # ... all of them

    after = _run(fixed, ranks)
    for epoch in range(3):
        first, second = after[0][epoch], after[1][epoch]
        assert not set(first) & set(second)  # disjoint shares
        assert sorted(first + second) == list(range(SIZE))  # that cover the dataset once
    if shuffle.endswith("True"):
        assert after[0][0] != after[0][1] != after[0][2]  # set_epoch: a new order each epoch
    else:
        assert after[0][0] == after[0][1]  # no shuffle asked, none given
