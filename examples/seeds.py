"""Seeding a DDP run: one seed that never reaches the sampler, and one that differs per rank.

sampler-lint finds: SL301 (the global seed does not seed DistributedSampler, which always
shuffles with seed 0) and SL302 (a per-rank seed makes ranks draw overlapping indices).
"""

import random

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def build_loaders(args, train_set, val_set):
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)

    train_sampler = DistributedSampler(train_set, shuffle=True)
    val_sampler = DistributedSampler(val_set, shuffle=True, seed=args.seed + rank)
    return (
        DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler),
        DataLoader(val_set, batch_size=args.batch_size, sampler=val_sampler),
    )
