"""Runtime proof for SL204 with real torch: a dataset that reads its epoch in ``__getitem__``
replays the first epoch under persistent workers, and each documented way out (an epoch in shared
memory, or workers that are not persistent) sees every epoch. The code run is the code linted."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from sampler_lint.api import lint_code

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the loaders below use the fork start method"
)

TRAIN = """
def train(items, epochs):
    dataset = Tagged(items)
    loader = DataLoader(
        dataset, batch_size=None, num_workers=2, persistent_workers={persistent},
        multiprocessing_context="fork",
    )
    seen = []
    for epoch in range(epochs):
        dataset.set_epoch(epoch)
        seen.append(sorted({{int(tag) for _, tag in loader}}))
    return seen
"""

REBOUND = """\
from torch.utils.data import DataLoader, Dataset


class Tagged(Dataset):
    def __init__(self, items):
        self.items = items
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index], self.epoch
"""

SHARED = """\
import torch
from torch.utils.data import DataLoader, Dataset


class Tagged(Dataset):
    def __init__(self, items):
        self.items = items
        self.epoch = torch.zeros((), dtype=torch.long).share_memory_()

    def set_epoch(self, epoch):
        self.epoch.fill_(epoch)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index], self.epoch.item()
"""


def _source(dataset: str, persistent: bool) -> str:
    return dataset + TRAIN.format(persistent=persistent)


def _run(source: str) -> list[list[int]]:
    namespace: dict[str, Any] = {"__name__": "sl204_runtime"}
    exec(compile(source, "<sl204>", "exec"), namespace)
    seen: list[list[int]] = namespace["train"](list(range(8)), 3)
    return seen


def _codes(source: str) -> list[str]:
    return [f.code for f in lint_code(source, select=["SL204"]).findings]


def test_persistent_workers_replay_the_first_epoch() -> None:
    source = _source(REBOUND, persistent=True)
    assert _codes(source) == ["SL204"]
    assert _run(source) == [[0], [0], [0]]  # the bug: the workers never see epochs 1 and 2


def test_an_epoch_in_shared_memory_reaches_persistent_workers() -> None:
    source = _source(SHARED, persistent=True)
    assert _codes(source) == []
    assert _run(source) == [[0], [1], [2]]


def test_workers_made_anew_every_epoch_see_it() -> None:
    source = _source(REBOUND, persistent=False)
    assert _codes(source) == []
    assert _run(source) == [[0], [1], [2]]


def test_lightning_sets_the_epoch_of_the_batch_samplers_sampler_never_its_own() -> None:
    fabric_data = pytest.importorskip("lightning.fabric.utilities.data")
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "SL204" / "lightning_batch_sampler.py"
    source = path.read_text(encoding="utf-8")
    flagged = [f.location.line for f in lint_code(source, select=["SL204"]).findings]
    assert flagged == [15]  # BucketBatchSampler.set_epoch
    namespace: dict[str, Any] = {}
    exec(compile(source, str(path), "exec"), namespace)
    data = list(range(16))

    own = namespace["BucketBatchSampler"]([len(str(i)) for i in data], 4)
    before = [list(b) for b in own]
    # What Lightning 2.x's fit loop runs before every epoch.
    fabric_data._set_sampler_epoch(torch.utils.data.DataLoader(data, batch_sampler=own), 5)
    assert own.epoch == 0 and [list(b) for b in own] == before

    inner = torch.utils.data.DistributedSampler(data, num_replicas=1, rank=0, shuffle=True)
    delegating = namespace["DelegatingBatchSampler"](inner, 4)
    fabric_data._set_sampler_epoch(torch.utils.data.DataLoader(data, batch_sampler=delegating), 5)
    assert inner.epoch == 5  # reached as loader.batch_sampler.sampler
