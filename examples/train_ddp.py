"""A small multi-GPU GNN training script that shards its training nodes by floor division.

sampler-lint finds: SL101 (unsafe fix: `tensor_split` gives every node to exactly one rank).
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def train(rank: int, world_size: int, data, split_idx, model, epochs: int = 10) -> None:
    dist.init_process_group("gloo", rank=rank, world_size=world_size)

    # Give every rank its share of the training nodes. With 9 nodes on 4 ranks this makes five
    # chunks of 2 and one node is never trained on.
    train_idx = split_idx["train"]
    train_idx = train_idx.split(train_idx.size(0) // world_size)[rank]

    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(epochs):
        for batch in train_idx.split(256):
            optimizer.zero_grad()
            out = model(data.x, data.edge_index)[batch]
            loss = F.cross_entropy(out, data.y[batch])
            loss.backward()
            optimizer.step()
    dist.destroy_process_group()
