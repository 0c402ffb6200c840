"""A LightningDataModule whose loaders break once the Trainer runs on several GPUs.

sampler-lint finds: SL501: under DDP, Lightning rebuilds the batch sampler with
`(sampler, batch_size, drop_last)`, which this one does not accept; SL503 (unsafe fix):
`shuffle=True` with a `sampler=` makes DataLoader raise.
"""

import lightning as L
import torch
from torch.utils.data import DataLoader, Sampler, WeightedRandomSampler


class TwoStreamBatchSampler(Sampler):
    """Each batch mixes labelled and unlabelled samples."""

    def __init__(self, labelled, unlabelled, batch_size: int, unlabelled_batch_size: int) -> None:
        self.labelled = labelled
        self.unlabelled = unlabelled
        self.batch_size = batch_size
        self.unlabelled_batch_size = unlabelled_batch_size

    def __iter__(self):
        labelled = torch.randperm(len(self.labelled)).tolist()
        unlabelled = torch.randperm(len(self.unlabelled)).tolist()
        step = self.batch_size - self.unlabelled_batch_size
        for i in range(len(self)):
            yield (labelled[i * step : (i + 1) * step]
                   + unlabelled[i * self.unlabelled_batch_size : (i + 1) * self.unlabelled_batch_size])

    def __len__(self) -> int:
        return len(self.labelled) // (self.batch_size - self.unlabelled_batch_size)


class SemiSupervisedData(L.LightningDataModule):
    def __init__(self, dataset, labelled, unlabelled, weights) -> None:
        super().__init__()
        self.dataset = dataset
        self.labelled = labelled
        self.unlabelled = unlabelled
        self.weights = weights

    def train_dataloader(self):
        sampler = TwoStreamBatchSampler(self.labelled, self.unlabelled, 32, 8)
        return DataLoader(self.dataset, batch_sampler=sampler, num_workers=4)

    def val_dataloader(self):
        sampler = WeightedRandomSampler(self.weights, num_samples=len(self.weights))
        return DataLoader(self.dataset, batch_size=64, shuffle=True, sampler=sampler)
