"""A length-bucketing DistributedSampler subclass with a one-letter typo.

sampler-lint finds: SL401 (safe fix). `self.num_sample` is never assigned (the base class sets
`self.num_samples`), so `len(sampler)` raises AttributeError, only on the code path that asks.
"""

import math

import torch
from torch.utils.data import DistributedSampler


class BucketSampler(DistributedSampler):
    def __init__(self, dataset, lengths, bucket_size: int = 100, **kwargs) -> None:
        super().__init__(dataset, **kwargs)
        self.lengths = lengths
        self.bucket_size = bucket_size

    def __iter__(self):
        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.dataset), generator=g).tolist()
        buckets = [order[i : i + self.bucket_size] for i in range(0, len(order), self.bucket_size)]
        order = [i for bucket in buckets for i in sorted(bucket, key=self.lengths.__getitem__)]
        order += order[: self.total_size - len(order)]
        return iter(order[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_sample

    def batches(self, batch_size: int) -> int:
        return math.ceil(len(self) / batch_size)
