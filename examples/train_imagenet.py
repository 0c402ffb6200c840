"""ImageNet-style DDP training: the sampler shuffles, but nobody tells it a new epoch began.

sampler-lint finds: SL202 (safe fix: `train_sampler.set_epoch(epoch)` at the top of the loop).
"""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def main(args, model, train_set, criterion) -> None:
    dist.init_process_group("nccl")
    train_sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)
    train_loader = DataLoader(
        train_set, batch_size=args.batch_size, sampler=train_sampler, num_workers=8
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    # Without set_epoch every epoch replays epoch 0's order on every rank.
    for epoch in range(args.epochs):
        for images, target in train_loader:
            loss = criterion(model(images.cuda()), target.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
