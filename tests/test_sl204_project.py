"""SL204 across files: the dataset (or the batch sampler) is defined in one file and used in
another; its base class may sit in a third."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sampler_lint.cli import main

BASE = '''\
from torch.utils.data import Dataset


class EpochDataset(Dataset):
    def __init__(self, items):
        self.items = items
        self.epoch = 0

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[(index + self.epoch) % len(self.items)]
'''
DATASETS = '''\
from base import EpochDataset


class Rotated(EpochDataset):
    def set_epoch(self, epoch):
        {body}
'''
TRAIN = '''\
from torch.utils.data import DataLoader

from datasets_here import Rotated


def main(items, epochs):
    dataset = Rotated(items)
    loader = DataLoader(dataset, num_workers=4, persistent_workers=True)
    for epoch in range(epochs):
        dataset.set_epoch(epoch)
        for batch in loader:
            pass
'''


def _findings(project: Path) -> list[tuple[str, int]]:
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "json", "--select", "SL204", str(project)]
    )
    assert result.exit_code in (0, 1), result.output
    return [(Path(f["filename"]).name, f["location"]["row"]) for f in json.loads(result.stdout)]


def test_a_dataset_from_another_file_with_a_base_from_a_third(project: Path) -> None:
    (project / "base.py").write_text(BASE)
    (project / "datasets_here.py").write_text(DATASETS.format(body="self.epoch = epoch"))
    (project / "train.py").write_text(TRAIN)
    assert _findings(project) == [("train.py", 10)]


def test_a_shared_epoch_in_another_file_is_not_flagged(project: Path) -> None:
    (project / "base.py").write_text(BASE.replace("self.epoch = 0", "self.epoch = Value('i', 0)"))
    (project / "datasets_here.py").write_text(DATASETS.format(body="self.epoch.value = epoch"))
    (project / "train.py").write_text(TRAIN)
    assert _findings(project) == []


SAMPLERS = '''\
import random

from torch.utils.data import BatchSampler


class ShuffledBatches(BatchSampler):
    epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        batches = list(super().__iter__())
        random.Random(self.epoch).shuffle(batches)
        yield from batches
'''
DATA_MODULE = '''\
{imports}
from torch.utils.data import DataLoader, RandomSampler

from samplers import ShuffledBatches


def train_dataloader(dataset):
    return DataLoader(dataset, batch_sampler=ShuffledBatches(RandomSampler(dataset), 8, False))
'''


def test_a_batch_sampler_used_under_lightning_elsewhere(project: Path) -> None:
    (project / "samplers.py").write_text(SAMPLERS)
    (project / "data.py").write_text(DATA_MODULE.format(imports="import lightning as L"))
    assert _findings(project) == [("samplers.py", 9)]


def test_a_batch_sampler_in_a_project_without_lightning(project: Path) -> None:
    (project / "samplers.py").write_text(SAMPLERS)
    (project / "data.py").write_text(DATA_MODULE.format(imports="import torch"))
    assert _findings(project) == []
