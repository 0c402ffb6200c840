"""A reusable training loop that reshuffles "the sampler" of whatever loader it is given.

sampler-lint finds: SL201 (safe fix). Loaders built with `batch_sampler=` keep their shuffling
sampler in `loader.batch_sampler`, so `loader.sampler.set_epoch` reaches a SequentialSampler
and every epoch repeats one order.
"""

from torch.utils.data import DistributedSampler


def fit(model, optimizer, train_loader, epochs: int) -> None:
    for epoch in range(epochs):
        if isinstance(train_loader.sampler, DistributedSampler):
            train_loader.sampler.set_epoch(epoch)
        for batch in train_loader:
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
