"""The second pre-filter stage (each rule's ``may_match`` over the ``ast`` summary) on shapes at
the edge of what it can see: each snippet is flagged by its rule, and the pre-filter keeps it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.analysis.syntax_summary import SyntaxSummary, argument, within
from sampler_lint.analysis.vocabulary import Vocabulary
from sampler_lint.api import lint_code
from sampler_lint.cli import main
from sampler_lint.engine.registry import rules_by_code

CASES = {
    # The rule compares divisors as text with whitespace removed, comments kept: these two
    # spell `a.b` and `a` in ast terms, yet both read `(a#.b)` to the rule.
    "SL402 comments in the divisors": (
        "SL402",
        "from torch.utils.data import Sampler\n"
        "class S(Sampler):\n"
        "  def f(n, a):\n"
        "    q = n // (a  #\n"
        "              .b)\n"
        "    return q % (a  # .b\n"
        "                )\n",
    ),
    "SL402 attribute quotient, literal divisor": (
        "SL402",
        "from torch.utils.data import BatchSampler as B\n"
        "class S(B):\n"
        "    def f(self):\n"
        "        self.q = self.n // 4\n"
        "        if self.q % 4:\n"
        "            self.q += 1\n",
    ),
    "SL402 one line": (
        "SL402",
        "from torch.utils.data import Sampler\n"
        "def f(n, k):\n"
        "    q = n // k; r = 1\n"
        "    return q % k\n"
        "class S(Sampler):\n"
        "    def __len__(self):\n"
        "        return f(self.n, 4)\n",
    ),
    "SL301 subscripted sampler in a factory": (
        "SL301",
        "from torch.utils.data import DistributedSampler\n"
        "\n"
        "def make(dataset):\n"
        "    sampler = DistributedSampler[int](dataset, shuffle=True, seed=0)\n"
        "    return sampler\n",
    ),
    "SL302 positional seed": (
        "SL302",
        "import torch.distributed as dist\n"
        "from torch.utils.data import DistributedSampler\n"
        "\n"
        "def make(dataset, world_size, seed):\n"
        "    rank = dist.get_rank()\n"
        "    return DistributedSampler(dataset, world_size, rank, True, seed + rank)\n",
    ),
    # The seeds a rank makes differ through: an augmented assignment, the clock or pid under
    # an import alias, numpy's generator under another name, a rank call inside the sum.
    "SL302 seed made per rank by an augmented assignment": (
        "SL302",
        "from torch.utils.data import DistributedSampler\n"
        "def make(dataset, args, rank):\n"
        "    seed = args.seed\n"
        "    seed += rank\n"
        "    return DistributedSampler(dataset, seed=seed)\n",
    ),
    "SL302 clock under an alias": (
        "SL302",
        "from time import time as now\n"
        "from torch.utils.data import DistributedSampler\n"
        "s = DistributedSampler(data, seed=int(now()))\n",
    ),
    "SL302 numpy under another name": (
        "SL302",
        "import numpy as onp\n"
        "from torch.utils.data import DistributedSampler\n"
        "s = DistributedSampler(data, seed=onp.random.randint(1000))\n",
    ),
    "SL302 process id through a name": (
        "SL302",
        "import os\n"
        "from torch.utils.data import DistributedSampler\n"
        "base = os.getpid()\n"
        "s = DistributedSampler(data, seed=base)\n",
    ),
    "SL302 rank call inside the seed": (
        "SL302",
        "import torch.distributed as dist\n"
        "from torch.utils.data import DistributedSampler\n"
        "s = DistributedSampler(data, seed=cfg.seed + dist.get_rank())\n",
    ),
    # Every attribute read is assigned and every one assigned is read: only the path-sensitive
    # shape keeps these, a read in `__init__` of what a branch (or a helper's branch) assigns.
    "SL401 read after a branch assigns it": (
        "SL401",
        "from torch.utils.data import Sampler\n"
        "class Shards(Sampler):\n"
        "    def __init__(self, data, shuffle):\n"
        "        if shuffle:\n"
        "            self.seed = 0\n"
        "        self.data = data\n"
        "        self.first = self.seed\n"
        "    def __iter__(self):\n"
        "        return iter([self.first] + self.data)\n",
    ),
    "SL401 read after a helper's branch assigns it": (
        "SL401",
        "from torch.utils.data import Sampler\n"
        "class Shards(Sampler):\n"
        "    def __init__(self, data):\n"
        "        self._setup(data)\n"
        "        self.size = len(self.data)\n"
        "    def _setup(self, data):\n"
        "        if data:\n"
        "            self.data = data\n"
        "    def __iter__(self):\n"
        "        return iter(self.data[: self.size])\n",
    ),
    # torch's class reached through `self` (the review of the hints: the filter skipped every
    # `self.` callee before asking whether it names a DistributedSampler, as the rule does).
    "SL302 DistributedSampler through self": (
        "SL302",
        "class Builder:\n"
        "    def make(self, ds, rank):\n"
        "        return self.tud.DistributedSampler(ds, seed=rank)\n",
    ),
    # A project subclass with a lowercase name (the filter once asked for a class-like one).
    "SL302 lowercase project subclass": (
        "SL302",
        "from torch.utils.data import DistributedSampler\n"
        "class shard_sampler(DistributedSampler):\n"
        "    pass\n"
        "def make(data, rank):\n"
        "    return shard_sampler(data, seed=rank)\n",
    ),
    # The rule looks a class's facts up by name: a second class of that name (the other branch
    # of an `if`) is judged against the first one's (the review's case).
    "SL401 a sampler defined in two branches": (
        "SL401",
        "from torch.utils.data import Sampler\n"
        "if fast:\n"
        "    class S(Sampler):\n"
        "        def num_sample(self):\n"
        "            return 1\n"
        "        def __len__(self):\n"
        "            return self.num_sample()\n"
        "else:\n"
        "    class S(Sampler):\n"
        "        num_samples = 0\n",
    ),
    "SL503 positional shuffle and sampler": (
        "SL503",
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "\n"
        "sampler = DistributedSampler(data)\n"
        "loader = DataLoader(data, 8, True, sampler)\n",
    ),
    "SL503 batch sampler and batch size": (
        "SL503",
        "import torch\n"
        "\n"
        "loader = torch.utils.data.DataLoader(data, batch_size=4, batch_sampler=make(data))\n",
    ),
    # No "sampler" in the text at all: the batch sampler is the fifth positional argument.
    "SL503 positional batch sampler": (
        "SL503",
        "from torch.utils.data import DataLoader\n"
        "\n"
        "loader = DataLoader(data, 4, False, None, make(data))\n",
    ),
    "SL101 split through a name": (
        "SL101",
        "def shard(idx, rank, world_size):\n"
        "    parts = idx.split(idx.size(0) // world_size)\n"
        "    return parts[rank]\n",
    ),
    # The size is a name assigned a floor division (annotated): the visitor follows it.
    "SL101 size through an annotated name": (
        "SL101",
        "def shard(idx, rank, world_size):\n"
        "    per_rank: int = idx.size(0) // world_size\n"
        "    return idx.split(per_rank)[rank]\n",
    ),
    "SL102 chunk": (
        "SL102",
        "def shard(idx, rank, world_size):\n"
        "    return idx.chunk(world_size)[rank]\n",
    ),
    "SL102 ceil-sized split": (
        "SL102",
        "import math\n"
        "\n"
        "def shard(idx, rank, world_size):\n"
        "    return idx.split(math.ceil(idx.numel() / world_size))[rank]\n",
    ),
    "SL103 range": (
        "SL103",
        "def shard(n, rank, world_size):\n"
        "    per = n // world_size\n"
        "    return list(range(rank * per, (rank + 1) * per))\n",
    ),
    "SL103 islice imported under another name": (
        "SL103",
        "from itertools import islice as cut\n"
        "\n"
        "def shard(items, n, rank, world_size):\n"
        "    per = n // world_size\n"
        "    return list(cut(items, rank * per, (rank + 1) * per))\n",
    ),
    "SL103 slice through names": (
        "SL103",
        "def shard(x, rank, world_size):\n"
        "    per = len(x) // world_size\n"
        "    start = rank * per\n"
        "    end = start + per\n"
        "    return x[start:end]\n",
    ),
    # A pad spelled in another function, and in the function around a nested one: the rule
    # reads the words of the innermost function (and its class) only, and so does the filter.
    "SL103 padded elsewhere": (
        "SL103",
        "def pad(x, world_size):\n"
        "    return x + x[: -len(x) % world_size]\n"
        "\n"
        "def shard(x, rank, world_size):\n"
        "    per = len(x) // world_size\n"
        "    return x[rank * per:(rank + 1) * per]\n",
    ),
    "SL103 padded around a nested function": (
        "SL103",
        "def outer(x, rank, world_size):\n"
        "    padded = True\n"
        "    def shard(y):\n"
        "        per = len(y) // world_size\n"
        "        return list(range(rank * per, (rank + 1) * per))\n"
        "    return shard(x), padded\n",
    ),
    # No `for` and no iter/enumerate/tqdm: the iterator comes from `zip`.
    "SL203 iterator made by zip": (
        "SL203",
        "def step(loader, other, epoch):\n"
        "    it = zip(loader, other)\n"
        "    loader.sampler.set_epoch(epoch)\n"
        "    return next(it)\n",
    ),
    "SL203 async for": (
        "SL203",
        "async def train(loader, epochs):\n"
        "    async for batch in loader:\n"
        "        loader.sampler.set_epoch(1)\n",
    ),
    "SL203 loader annotated": (
        "SL203",
        "def train(data, s, epoch):\n"
        "    loader: DataLoader = DataLoader(data, sampler=s)\n"
        "    it = iter(loader)\n"
        "    s.set_epoch(epoch)\n"
        "    return next(it)\n",
    ),
    "SL202 async for": (
        "SL202",
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "\n"
        "async def main(dataset, epochs, step):\n"
        "    sampler = DistributedSampler(dataset)\n"
        "    loader = DataLoader(dataset, batch_size=64, sampler=sampler)\n"
        "    async for epoch in epochs:\n"
        "        async for batch in loader:\n"
        "            step(batch)\n",
    ),
    "SL201 sampler alias": (
        "SL201",
        "def train(loader, epochs):\n"
        "    s = loader.sampler\n"
        "    for epoch in range(epochs):\n"
        "        s.set_epoch(epoch)\n"
        "        for batch in loader:\n"
        "            pass\n",
    ),
    "SL401 read in a nested function": (
        "SL401",
        "from torch.utils.data import DistributedSampler\n"
        "\n"
        "class Sub(DistributedSampler):\n"
        "    def __len__(self):\n"
        "        def inner():\n"
        "            return self.num_sample\n"
        "        return inner()\n",
    ),
    "SL404 positional rank, generic sampler": (
        "SL404",
        "import os\n"
        "from torch.utils.data import DistributedSampler\n"
        "gpu = int(os.getenv('LOCAL_RANK'))\n"
        "s = DistributedSampler[int](d, int(os.environ['WORLD_SIZE']), gpu)\n",
    ),
    # Local ranks the visitor follows: an attribute assigned one, a horovod call through a
    # name, SLURM's variable read with getenv, an argument named so.
    "SL404 attribute assigned the local rank": (
        "SL404",
        "import os\n"
        "import torch.distributed as dist\n"
        "from torch.utils.data import DistributedSampler\n"
        "class Job:\n"
        "    def __init__(self, ds):\n"
        "        self.gpu = int(os.environ['LOCAL_RANK'])\n"
        "        self.s = DistributedSampler(\n"
        "            ds, num_replicas=dist.get_world_size(), rank=self.gpu)\n",
    ),
    "SL404 horovod local rank through a name": (
        "SL404",
        "import horovod.torch as hvd\n"
        "from torch.utils.data.distributed import DistributedSampler\n"
        "r = hvd.local_rank()\n"
        "s = DistributedSampler(ds, num_replicas=hvd.size(), rank=r)\n",
    ),
    "SL404 SLURM variable": (
        "SL404",
        "import os\n"
        "from torch.utils.data import DistributedSampler\n"
        "s = DistributedSampler(ds, rank=int(os.getenv('SLURM_LOCALID')))\n",
    ),
    "SL404 argument named the local rank": (
        "SL404",
        "from torch.utils.data import DistributedSampler\n"
        "def make(ds, args):\n"
        "    return DistributedSampler(ds, rank=args.local_rank)\n",
    ),
    "SL504 positional sampler, loader and accelerator through assignments": (
        "SL504",
        "import accelerate\n"
        "from torch.utils import data\n"
        "acc = accelerate.Accelerator()\n"
        "loader = data.DataLoader(ds, 8, False, data.DistributedSampler(ds))\n"
        "model, loader = acc.prepare(model, loader)\n",
    ),
    "SL303 positional worker_init_fn, aliased partial": (
        "SL303",
        "import functools\n"
        "import random\n"
        "from torch.utils.data import DataLoader\n"
        "def init(worker_id, seed):\n"
        "    random.seed(seed + worker_id)\n"
        "fn = functools.partial(init, seed=3)\n"
        "loader = DataLoader(ds, 1, False, None, None, 2, None, False, False, 0, fn)\n",
    ),
    "SL304 aliased constructor, dataset base through a module": (
        "SL304",
        "from numpy.random import default_rng as make_rng\n"
        "from torch.utils import data\n"
        "class D(data.IterableDataset):\n"
        "    def __init__(self):\n"
        "        self.g = make_rng()\n"
        "    def __iter__(self):\n"
        "        yield self.g.random()\n",
    ),
    "SL204 aliased loader, epoch through a helper": (
        "SL204",
        "from torch.utils.data import DataLoader as Loader, Dataset\n"
        "class D(Dataset):\n"
        "    def set_epoch(self, e):\n"
        "        self._move(e)\n"
        "    def _move(self, e):\n"
        "        self.shift = e\n"
        "    def __getitem__(self, i):\n"
        "        return i + self.shift\n"
        "ds = D()\n"
        "loader = Loader(ds, num_workers=2, persistent_workers=True)\n"
        "for ep in range(3):\n"
        "    ds.set_epoch(ep)\n"
        "    list(loader)\n",
    ),
    "SL403 aliased imports, chained seeding": (
        "SL403",
        "from torch import Generator as Gen, randperm as shuffle_ids\n"
        "\n"
        "class S:\n"
        "    def __iter__(self):\n"
        "        g = Gen().manual_seed(self.seed)\n"
        "        return iter(shuffle_ids(self.n).tolist())\n",
    ),
    "SL304 constructor imported under another name": (
        "SL304",
        "from numpy.random import default_rng as make_rng\n"
        "from torch.utils.data import Dataset\n"
        "\n"
        "class Noisy(Dataset):\n"
        "    def __init__(self, items, seed=None):\n"
        "        self.items = items\n"
        "        if seed is not None:\n"
        "            self.rng = make_rng(seed)\n"
        "\n"
        "    def __getitem__(self, i):\n"
        "        return self.items[i] + self.rng.normal()\n",
    ),
    "SL204 persistent workers from a name, epoch written in a while loop": (
        "SL204",
        "from torch.utils.data import DataLoader, Dataset\n"
        "\n"
        "class Shifted(Dataset):\n"
        "    def __getitem__(self, i):\n"
        "        return i + self.epoch\n"
        "\n"
        "def run(epochs):\n"
        "    ds = Shifted()\n"
        "    keep = True\n"
        "    loader = DataLoader(ds, num_workers=2, persistent_workers=keep)\n"
        "    epoch = 0\n"
        "    while epoch < epochs:\n"
        "        ds.epoch = epoch\n"
        "        for batch in loader:\n"
        "            pass\n"
        "        epoch += 1\n",
    ),}


_SHUFFLE_WINDOW = (
    "import random\n"
    "from torch.utils.data import DataLoader, IterableDataset\n"
    "\n"
    "class Window(IterableDataset):\n"
    "    def __init__(self, source):\n"
    "        self.source, self.epoch = source, 0\n"
    "    def set_epoch(self, epoch):\n"
    "        self.epoch = epoch\n"
    "    def __iter__(self):\n"
    "        return iter(random.Random(self.epoch).sample(list(self.source), 4))\n"
    "\n"
)
# The starts of SL202's three shapes, in the spellings its visitor accepts.
CASES.update({
    "SL202 inner dataset in a method, epochs of an attribute": (
        "SL202",
        _SHUFFLE_WINDOW + "class Trainer:\n"
        "    def fit(self, shards, args, step):\n"
        "        mixed = Window(shards)\n"
        "        loader = DataLoader(mixed, batch_size=8)\n"
        "        for i in range(args.max_epochs):\n"
        "            shards.set_epoch(i)\n"
        "            for batch in loader:\n"
        "                step(batch)\n",
    ),
    "SL202 inner dataset, annotated loader, tqdm over epochs": (
        "SL202",
        _SHUFFLE_WINDOW + "def fit(shards, n_epochs, step):\n"
        "    mixed = Window(shards)\n"
        "    loader: DataLoader = DataLoader(mixed, batch_size=8)\n"
        "    for i in tqdm(range(n_epochs)):\n"
        "        shards.set_epoch(i)\n"
        "        for batch in loader:\n"
        "            step(batch)\n",
    ),
    "SL202 loader given the sampler through a batch sampler": (
        "SL202",
        "from torch.utils.data import BatchSampler, DataLoader, DistributedSampler\n"
        "\n"
        "def fit(ds, n_epochs, step):\n"
        "    order = DistributedSampler(ds)\n"
        "    feed = DataLoader(ds, batch_sampler=BatchSampler(order, 8, False))\n"
        "    for epoch in range(n_epochs):\n"
        "        for batch in feed:\n"
        "            step(batch)\n",
    ),
    "SL202 sampler kept by an async iterable": (
        "SL202",
        "from torch.utils.data import DistributedSampler\n"
        "\n"
        "class Batches:\n"
        "    def __init__(self, ds):\n"
        "        if ds:\n"
        "            self.order = DistributedSampler(ds)\n"
        "    async def __iter__(self):\n"
        "        for i in self.order:\n"
        "            yield i\n",
    ),
    "SL203 inside a loop over the loader": (
        "SL203",
        "def train(loader, epochs, step):\n"
        "    for epoch in range(epochs):\n"
        "        for batch in tqdm(iterable=loader):\n"
        "            loader.batch_sampler.set_epoch(epoch)\n"
        "            step(batch)\n",
    ),
    "SL203 iterator made before, sampler given to a loader": (
        "SL203",
        "from torch.utils.data import DataLoader\n"
        "\n"
        "def train(ds, order, epochs, steps, step):\n"
        "    feed = DataLoader(ds, sampler=order)\n"
        "    for epoch in range(epochs):\n"
        "        it = iter(feed)\n"
        "        order.set_epoch(epoch)\n"
        "        for _ in range(steps):\n"
        "            step(next(it))\n",
    ),
    "SL203 iterator made again later in the loop": (
        "SL203",
        "def train(loader, epochs, step):\n"
        "    it = iter(loader)\n"
        "    for epoch in range(epochs):\n"
        "        loader.sampler.set_epoch(epoch)\n"
        "        step(next(it))\n"
        "        it = iter(loader)\n",
    ),
    # libcst's statement for a call in a one-line suite is the whole compound statement, in
    # the block around it; ast gives the suite a block of its own.
    "SL203 set in a one-line if after the iterator": (
        "SL203",
        "def train(loader, epochs, steps, step):\n"
        "    for epoch in range(epochs):\n"
        "        it = iter(loader)\n"
        "        if hasattr(loader.sampler, 'set_epoch'): loader.sampler.set_epoch(epoch)\n"
        "        for _ in range(steps):\n"
        "            step(next(it))\n",
    ),
    "SL203 set in a one-line with, the iterator made again later": (
        "SL203",
        "def train(loader, epochs, step, lock):\n"
        "    it = iter(loader)\n"
        "    for epoch in range(epochs):\n"
        "        with lock: loader.sampler.set_epoch(epoch)\n"
        "        step(next(it))\n"
        "        it = iter(loader)\n",
    ),
    "SL203 set by a one-line function after the iterator": (
        "SL203",
        "def train(loader, epochs, steps, step):\n"
        "    for epoch in range(epochs):\n"
        "        it = iter(loader)\n"
        "        def advance(e): loader.sampler.set_epoch(e)\n"
        "        advance(epoch)\n"
        "        for _ in range(steps):\n"
        "            step(next(it))\n",
    ),
    "SL202 __init__ under a condition of the class body": (
        "SL202",
        "from torch.utils.data import DistributedSampler\n"
        "\n"
        "class Batches:\n"
        "    if True:\n"
        "        def __init__(self, ds):\n"
        "            self.shuffler = DistributedSampler(ds)\n"
        "\n"
        "    def __iter__(self):\n"
        "        yield from self.shuffler\n",
    ),
    "SL202 a DistributedSamplerWrapper given to the loader": (
        "SL202",
        "from catalyst.data import DistributedSamplerWrapper\n"
        "from torch.utils.data import DataLoader\n"
        "\n"
        "def fit(ds, base, n_epochs, step):\n"
        "    s = DistributedSamplerWrapper(base)\n"
        "    loader = DataLoader(ds, sampler=s)\n"
        "    for epoch in range(n_epochs):\n"
        "        for batch in loader:\n"
        "            step(batch)\n",
    ),
    "SL202 inner dataset, the wrapper's set_epoch async": (
        "SL202",
        _SHUFFLE_WINDOW.replace("    def set_epoch", "    async def set_epoch")
        + "def fit(shards, n_epochs, step):\n"
        "    mixed = Window(shards)\n"
        "    loader = DataLoader(mixed, batch_size=8)\n"
        "    for epoch in range(n_epochs):\n"
        "        shards.set_epoch(epoch)\n"
        "        for batch in loader:\n"
        "            step(batch)\n",
    ),
})


# Where SL202's epoch loop may be for a loader given a sampler: the filter keeps a loader whose
# scope may go round the epochs (a `while` that builds the iterator again, or a call handed the
# loader outside any loop: a function of the file, a method of `self`, an imported function).
_DISTRIBUTED = "from torch.utils.data import DataLoader, DistributedSampler\n\n"
_TRAIN = (
    "def train(feed, epochs):\n"
    "    for epoch in range(epochs):\n"
    "        for batch in feed:\n"
    "            pass\n"
    "\n"
)
CASES.update({
    "SL202 loader handed to a function of the file": (
        "SL202",
        _DISTRIBUTED + _TRAIN + "def main(ds):\n"
        "    order = DistributedSampler(ds)\n"
        "    loader = DataLoader(ds, sampler=order)\n"
        "    train(loader, 3)\n",
    ),
    "SL202 loader handed to a method of self by keyword": (
        "SL202",
        _DISTRIBUTED + "class Runner:\n"
        "    def fit(self, ds):\n"
        "        order = DistributedSampler(ds)\n"
        "        loader = DataLoader(ds, sampler=order)\n"
        "        self.loop(feed=loader)\n"
        "\n"
        "    def loop(self, feed):\n"
        "        for epoch in range(self.epochs):\n"
        "            for batch in feed:\n"
        "                pass\n",
    ),
    "SL202 what a call made of the loader handed to a function of the file": (
        "SL202",
        _DISTRIBUTED + _TRAIN + "def main(ds, tools):\n"
        "    order = DistributedSampler(ds)\n"
        "    loader = DataLoader(ds, sampler=order)\n"
        "    device_feed, _ = tools.wrap(loader), 1\n"
        "    first, *feed = tools.wrap(loader)\n"
        "    train(feed, 3)\n",
    ),
    # A chain of names made from the loader, in and out of blocks: the filter follows it to
    # the end, whatever order it reads the function in (a review's find).
    "SL202 a chain of names made from the loader across blocks": (
        "SL202",
        _DISTRIBUTED + "def main(ds, wrap):\n"
        "    order = DistributedSampler(ds)\n"
        "    loader = DataLoader(ds, sampler=order)\n"
        "    if ds:\n"
        "        a = wrap(loader)\n"
        "    b = wrap(a)\n"
        "    with ds:\n"
        "        c = wrap(b)\n"
        "    d = wrap(c)\n"
        "    train(d)\n"
        "\n"
        "def train(feed):\n"
        "    for epoch in range(10):\n"
        "        for batch in feed:\n"
        "            pass\n",
    ),
    "SL202 iterator built again in a while loop": (
        "SL202",
        _DISTRIBUTED + "def main(ds, steps, step):\n"
        "    order = DistributedSampler(ds)\n"
        "    loader = DataLoader(ds, sampler=order)\n"
        "    batches = iter([])\n"
        "    done = 0\n"
        "    while done < steps:\n"
        "        try:\n"
        "            batch = next(batches)\n"
        "        except StopIteration:\n"
        "            batches = iter(loader)\n"
        "            continue\n"
        "        step(batch)\n"
        "        done += 1\n",
    ),
})


# SL104 reads a loader and a DDP start through the file's imports: each name may be bound to
# torch by any of its imports (an alias, one branch of a `try`), or written out in full.
_DDP_SCRIPT = (
    "dist.init_process_group('nccl')\n"
    "model = DDP(torch.nn.Linear(784, 10))\n"
    "dataset = torchvision.datasets.MNIST('data', train=True)\n"
    "loader = {loader}(dataset, batch_size=32, shuffle=True)\n"
    "for epoch in range(3):\n"
    "    for x, y in loader:\n"
    "        model(x).sum().backward()\n"
)
_DDP_IMPORTS = (
    "import torch\nimport torchvision\nimport torch.distributed as dist\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
)
CASES.update({
    "SL104 loader imported under an alias": (
        "SL104",
        _DDP_IMPORTS + "from torch.utils.data import DataLoader as Loader\n"
        + _DDP_SCRIPT.format(loader="Loader"),
    ),
    "SL104 loader imported in one branch of two": (
        "SL104",
        _DDP_IMPORTS + "try:\n    from torch.utils.data import DataLoader\n"
        "except ImportError:\n    from fast_loaders import DataLoader\n"
        + _DDP_SCRIPT.format(loader="DataLoader"),
    ),
    "SL104 loader and DDP written out in full": (
        "SL104",
        "import torch\nimport torchvision\nimport torch.distributed as dist\n"
        "DDP = torch.nn.parallel.DistributedDataParallel\n"
        + _DDP_SCRIPT.format(loader="torch.utils.data.DataLoader").replace(
            "model = DDP(", "model = torch.nn.parallel.DistributedDataParallel("
        ),
    ),
})
# SL201: a loader built from a ** spread alone may carry a batch sampler in it; one that also
# passes its sampler by name may not (torch refuses the two together).
_SPREAD_LOADER = (
    "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
    "def spread_loader(dataset, **options):\n"
    "    return DataLoader(dataset, **options)\n\n\n"
    "def train(dataset, epochs):\n"
    "    loader = spread_loader(dataset, batch_size=8)\n"
    "    for epoch in range(epochs):\n"
    "        loader.sampler.set_epoch(epoch)\n"
    "        for batch in loader:\n"
    "            print(batch)\n"
)
CASES["SL201 a loader built from a spread alone"] = ("SL201", _SPREAD_LOADER)

# The visitor leaves a function that spells `batch_sampler` alone: one spelled in another
# function does not.
CASES["SL201 batch_sampler spelled elsewhere"] = ("SL201", _SPREAD_LOADER + (
    "\n\ndef describe(loader):\n    return loader.batch_sampler\n"
))

# Shapes the rule leaves alone, turned away before libcst once the filter has the code: a
# function that looks at the batch sampler itself, and a batch sampler built here whose own
# `.sampler` is the DistributedSampler (Lightning's reinforcement-learning examples).
SL201_LEFT_ALONE = {
    "batch_sampler spelled": _SPREAD_LOADER.replace(
        "        loader.sampler.set_epoch(epoch)\n",
        "        if loader.batch_sampler is None:\n            loader.sampler.set_epoch(epoch)\n",
    ),
    "a batch sampler's sampler": "from torch.utils.data import BatchSampler, "
    "DistributedSampler, RandomSampler\n\n\n"
    "def train(indexes, epochs, distributed):\n"
    "    if distributed:\n        sampler = DistributedSampler(indexes)\n"
    "    else:\n        sampler = RandomSampler(indexes)\n"
    "    sampler = BatchSampler(sampler, batch_size=8, drop_last=False)\n"
    "    for epoch in range(epochs):\n"
    "        if distributed:\n            sampler.sampler.set_epoch(epoch)\n"
    "        for batch in sampler:\n            print(batch)\n",
}


@pytest.mark.parametrize("name", sorted(SL201_LEFT_ALONE))
def test_sl201_filter_turns_away_what_the_rule_leaves_alone(name: str) -> None:
    snippet = SL201_LEFT_ALONE[name]
    rule = rules_by_code()["SL201"]
    summary = SyntaxSummary(ast.parse(snippet)).given(snippet, Vocabulary(), {})
    kept = rule.may_match(summary)
    assert not kept or rule.syntax_hints(summary) == frozenset()
    assert not lint_code(snippet, select=["SL201"], use_prefilter=False).findings
    assert not lint_code(snippet, select=["SL201"]).findings


def test_a_loader_that_names_its_sampler_carries_no_batch_sampler_in_a_spread() -> None:
    snippet = _SPREAD_LOADER.replace(
        "DataLoader(dataset, **options)",
        "DataLoader(dataset, sampler=DistributedSampler(dataset), **options)",
    )
    assert not lint_code(snippet, select=["SL201"], use_prefilter=False).findings
    assert not lint_code(snippet, select=["SL201"]).findings


REJECTED_BY_IMPORTS = {
    # A graph library's own loader (dgl, graphbolt) in a DDP script: it shards by itself.
    "SL104 another library's DataLoader": _DDP_IMPORTS
    + "from dgl.dataloading import DataLoader\n" + _DDP_SCRIPT.format(loader="DataLoader"),
    # A DataLoader class of the file itself, never imported.
    "SL104 a DataLoader of the file": _DDP_IMPORTS + "class DataLoader:\n    pass\n"
    + _DDP_SCRIPT.format(loader="DataLoader"),
    # torch's loader, but the wrapper and the process group are another library's.
    "SL104 another library's DDP": "import torch\nimport torchvision\n"
    "from mylib import DistributedDataParallel as DDP, init_process_group\n"
    "from torch.utils.data import DataLoader\n"
    + _DDP_SCRIPT.format(loader="DataLoader").replace("dist.init_", "init_"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_flagged_with_and_without_the_prefilter(name: str) -> None:
    code, snippet = CASES[name]
    without = lint_code(snippet, select=["ALL"], use_prefilter=False)
    assert code in {f.code for f in without.findings}, "the snippet no longer shows the shape"
    with_filter = lint_code(snippet, select=["ALL"])
    assert sorted((f.location.line, f.code) for f in with_filter.findings) == sorted(
        (f.location.line, f.code) for f in without.findings
    )
    # As the engine gives it: some filters read the code's words.
    summary = SyntaxSummary(ast.parse(snippet)).given(snippet, Vocabulary(), {})
    assert rules_by_code()[code].may_match(summary)


REJECTED = {
    "SL402": "def f(n, k, m):\n    q = n // k\n    return q % m\n",
    # A floor division in the file, but the split size is a name never assigned one.
    "SL101 size not divided": "def shard(idx, rank, world_size, per_rank):\n"
    "    n = idx.size(0) // world_size\n    return idx.split(per_rank)[rank], n\n",
    # Divided by something that is no world size, directly or through its one assignment.
    "SL101 divided by a chunk count": "def shard(idx, rank, world_size, k):\n"
    "    per = idx.size(0) // k\n    step = len(idx) // (k + 1)\n"
    "    return idx.split(per)[rank], idx.split(step)[rank], world_size\n",
    # Sliced by rank, but the share is divided by a chunk count, directly or through a name.
    "SL103 divided by a chunk count": "def f(x, rank, world_size, k):\n"
    "    per = len(x) // k\n    a = x[rank * per:(rank + 1) * per]\n"
    "    parts = k + 1\n    step = len(x) // parts\n"
    "    return a, x[rank * step:(rank + 1) * step], world_size\n",
    "SL402 before": "def f(n, b):\n    low = n % b\n    n = n // b\n    return low\n",
    "SL301": "from torch.utils.data import DistributedSampler\n"
    "s = DistributedSampler(d, shuffle=False)\n",
    "SL302": "from torch.utils.data import DistributedSampler\n"
    "s = DistributedSampler(d, seed=42)\n",
    # Seeds the same on every rank, directly or through names (no rank, clock or generator).
    "SL302 shared seed through names": "from torch.utils.data import DistributedSampler\n"
    "def make(d, args, cfg):\n    seed = args.seed\n    seed += 1\n"
    "    return DistributedSampler(d, seed=seed), DistributedSampler(d, seed=cfg.train.seed)\n",
    # `rank` only as a keyword's name or a lambda's parameter: labels, not values.
    "SL302 rank as a label": "from torch.utils.data import DistributedSampler\n"
    "s = DistributedSampler(d, seed=derive(cfg.seed, rank=0))\n"
    "t = DistributedSampler(d, seed=(lambda rank: 7)(0))\n",
    # A rank from the data-parallel group, not the machine (DeepSpeed's engine).
    "SL404 rank assigned the global rank": "from torch.utils.data import DistributedSampler\n"
    "def make(self, ds):\n    rank = self.global_rank\n"
    "    if self.mpu is not None:\n        rank = self.mpu.get_data_parallel_rank()\n"
    "    return DistributedSampler(ds, num_replicas=self.dp_world_size, rank=rank)\n",
    # `__init__` checks its arguments (branches that raise), then assigns before it reads.
    "SL401 checks, then assigns": "from torch.utils.data import BatchSampler\n"
    "class Buckets(BatchSampler):\n    def __init__(self, data, size):\n"
    "        if size <= 0:\n            raise ValueError(size)\n"
    "        self.data = data\n        self.size = size\n        self.n = len(self.data) // size\n"
    "    def __len__(self):\n        return self.n + len(self.data) + self.size\n",
    "SL503": "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(d, batch_size=8, shuffle=(s is None), sampler=s)\n",
    "SL103": "def f(x, i, bs):\n    return x[i * bs:(i + 1) * bs], f(a, b)\n",
    # Sliced by a loop counter, not a rank (the text still spells both words elsewhere).
    "SL103 counter": "def f(x, rank, world_size):\n    per = len(x) // world_size\n"
    "    return [x[i * per:(i + 1) * per] for i in range(world_size)]\n",
    "SL502": "from torch.utils.data import BatchSampler\nclass B(BatchSampler):\n    pass\n",
    "SL404": "from torch.utils.data import DistributedSampler\n"
    "local_rank = 0\ns = DistributedSampler(d, rank=0)\n",
    "SL504": "from torch.utils.data import DataLoader\n"
    "loader = accelerator.prepare(DataLoader(ds, 8, True))\n",
    "SL303": "import random\nfrom torch.utils.data import DataLoader\n"
    "def f(i):\n    random.seed(i)\n"
    "loader = DataLoader(ds, worker_init_fn=f, **kw)\n",
    "SL204": "from torch.utils.data import DataLoader\n"
    "class D:\n    def epoch_of(self):\n        return self.epoch\n"
    "loader = DataLoader(ds, num_workers=2, **options)\n",
    "SL304": "import numpy as np\nclass D(Base):\n    def __init__(self):\n"
    "        self.rng = np.random.default_rng()\n    def __getitem__(self, i):\n"
    "        return self.rng.random()\n",
    "SL403": "import torch\ndef __init__(self):\n    g = torch.Generator().manual_seed(1)\n"
    "    return torch.randperm(3)\n",
    "SL304 RNG made outside __init__": "import numpy as np\nfrom torch.utils.data import Dataset\n"
    "class D(Dataset):\n    def reset(self):\n        self.rng = np.random.default_rng()\n"
    "    def __getitem__(self, i):\n        return self.rng.random()\n",
    "SL304 no method the workers run": "import random\nfrom torch.utils.data import Dataset\n"
    "class D(Dataset):\n    def __init__(self):\n        self.rng = random.Random(0)\n"
    "    def draw(self):\n        return self.rng.random()\n",
    "SL204 persistent workers off": "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(ds, num_workers=2, persistent_workers=False)\n"
    "for epoch in range(3):\n    ds.set_epoch(epoch)\n    list(loader)\n",
    # A dataset that forwards the epoch to what it wraps: no loader in the file.
    "SL202 forwarding dataset": "class Concat:\n    def __init__(self, parts):\n"
    "        self.parts = parts\n    def set_epoch(self, epoch):\n"
    "        for part in self.parts:\n            part.set_epoch(epoch)\n",
    # An inner dataset's epoch set in a loop over batches, not epochs.
    "SL202 epoch set in a batch loop": _SHUFFLE_WINDOW + "def fit(shards, step):\n"
    "    loader = DataLoader(Window(shards))\n    for batch in loader:\n"
    "        shards.set_epoch(batch)\n",
    # Samplers built, loaders assigned, but no loader is given a sampler (an evaluation one
    # does not count), and no iterable class keeps one.
    "SL202 loaders without samplers": "from torch.utils.data import DataLoader, "
    "DistributedSampler\n"
    "def test_sampler(ds):\n    sampler = DistributedSampler(ds)\n"
    "    loader = DataLoader(ds, batch_size=2)\n"
    "    val_loader = DataLoader(ds, sampler=sampler)\n"
    "    assert isinstance(loader.sampler, DistributedSampler)\n",
    # A test builds a loader with a DistributedSampler and hands it to an object it was given:
    # no epoch loop, no `while`, no call the rule could follow (Lightning's Fabric tests).
    "SL202 loader handed to a parameter's method": "from itertools import chain\n"
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "def test_setup(fabric, ds):\n"
    "    loader = DataLoader(ds, sampler=DistributedSampler(ds, shuffle=True))\n"
    "    wrapped = fabric.setup_dataloaders(loader)\n"
    "    for batch in wrapped:\n        check(batch)\n"
    "    for name in names(loader):\n        check(name)\n"
    "    def fetch(feed):\n        return next(iter(feed))\n"
    "    first, count = fetch(loader), len(loader)\n"
    "    batches = chain(loader)\n",
    "SL202 iterable class with its own set_epoch": "from torch.utils.data import "
    "DistributedSampler\n"
    "class Batches:\n    def __init__(self, ds):\n        self.order = DistributedSampler(ds)\n"
    "    def set_epoch(self, epoch):\n        self.order.set_epoch(epoch)\n"
    "    def __iter__(self):\n        return iter(self.order)\n",
    # The epoch set before the loader is handed on (icefall's recipes): no iterator around.
    "SL203 set before the loader is handed on": "def run(train_dl, epochs, model):\n"
    "    for epoch in range(1, epochs):\n        train_dl.sampler.set_epoch(epoch - 1)\n"
    "        train_one_epoch(model, train_dl)\n        for b in enumerate(valid_dl):\n"
    "            pass\n",
    "SL204 epoch set outside any loop": "from torch.utils.data import DataLoader\n"
    "def run(ds, epoch):\n    loader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
    "    ds.set_epoch(epoch)\n    return [b for b in loader]\n",
}


REJECTED.update(REJECTED_BY_IMPORTS)


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_shapes_the_filter_rejects(name: str) -> None:
    """Far from the pattern: the filter spares libcst (and the rule indeed finds nothing)."""
    snippet = REJECTED[name]
    code = name.split()[0]
    assert not rules_by_code()[code].may_match(SyntaxSummary(ast.parse(snippet)))
    without = lint_code(snippet, select=[code], use_prefilter=False)
    assert not without.findings


def test_argument_binds_like_get_arg() -> None:
    call = ast.parse("f(a, b, *c, d, k=e)").body[0].value  # type: ignore[attr-defined]
    assert isinstance(call, ast.Call)
    assert ast.unparse(argument(call, 1, "x")) == "b"  # type: ignore[arg-type]
    assert argument(call, 3, "x") is None  # after *c: unknowable
    assert ast.unparse(argument(call, 0, "k")) == "e"  # type: ignore[arg-type]
    assert argument(call, 9) is None


def test_within_counts_decorators() -> None:
    tree = ast.parse("@deco(self.a)\nclass K(B):\n    x = self.b\ny = self.c\n")
    klass = tree.body[0]
    assert isinstance(klass, ast.ClassDef)
    attributes = {a.attr: a for a in ast.walk(tree) if isinstance(a, ast.Attribute)}
    assert within(attributes["a"], klass) and within(attributes["b"], klass)
    assert not within(attributes["c"], klass)


# Projects whose findings the text pre-filter (``Rule.requires``) once hid: a seed passed
# positionally, a sampler without "DistributedSampler" in its name, a batch sampler class in a
# file that never says "Sampler", a BatchSampler reached through a base in another file, odd
# spacing, a class fact collected for another rule.
PROJECTS = {
    "SL302 positional seed": {
        "a.py": "import torch.distributed as dist\n"
        "from torch.utils.data import DistributedSampler\n"
        "\n"
        "def make(dataset, world_size, base):\n"
        "    rank = dist.get_rank()\n"
        "    return DistributedSampler(dataset, world_size, rank, True, base + rank)\n",
    },
    "SL202 length-grouped sampler": {
        "a.py": "from torch.utils.data import DataLoader\n"
        "from transformers.trainer_pt_utils import DistributedLengthGroupedSampler\n"
        "\n"
        "def main(dataset, epochs, step, lengths):\n"
        "    sampler = DistributedLengthGroupedSampler(8, dataset, lengths=lengths)\n"
        "    loader = DataLoader(dataset, batch_size=64, sampler=sampler)\n"
        "    for epoch in range(epochs):\n"
        "        for batch in loader:\n"
        "            step(batch)\n",
    },
    "SL501 no Sampler, no methods": {
        "other.py": "# A Sampler of sorts.\n"
        "class Other(object):\n"
        "    def __init__(self, data):\n"
        "        self.data = data\n"
        "\n"
        "    def __iter__(self):\n"
        "        yield [0]\n",
        "batcher.py": "import lightning as L\n"
        "from torch.utils.data import DataLoader\n"
        "\n"
        "from other import Other\n"
        "\n"
        "class Batcher(Other):\n"
        "    pass\n"
        "\n"
        "def loader(data):\n"
        "    return DataLoader(data, batch_sampler=Batcher(data))\n",
    },
    "SL502 BatchSampler through a base": {
        "base.py": "from torch.utils.data import BatchSampler\n\n"
        "class Base(BatchSampler):\n    pass\n",
        "mine.py": "import lightning as L\n"
        "\n"
        "from base import Base  # a Sampler family\n"
        "\n"
        "class Mine(Base):\n"
        "    def __iter__(self):\n"
        "        for bucket in self.buckets:\n"
        "            yield bucket\n",
    },
    "SL204 base without the word epoch": {
        "base.py": "from torch.utils.data import Dataset\n\n"
        "class Base(Dataset):\n"
        "    def __getitem__(self, i):\n"
        "        return self.items[i + self.offset]\n",
        "mine.py": "from base import Base\n\n"
        "class Mine(Base):\n"
        "    def set_epoch(self, e):\n"
        "        self.offset = e\n",
        "train.py": "from torch.utils.data import DataLoader\n"
        "from mine import Mine\n"
        "\n"
        "def run(items, epochs):\n"
        "    ds = Mine(items)\n"
        "    loader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
        "    for epoch in range(epochs):\n"
        "        ds.set_epoch(epoch)\n"
        "        for batch in loader:\n"
        "            pass\n",
    },
    "SL201 spaced attribute": {
        "a.py": "def train(loader, epochs):\n"
        "    for epoch in range(epochs):\n"
        "        loader. sampler.set_epoch(epoch)\n"
        "        for batch in loader:\n"
        "            pass\n",
    },
    "SL401 fact collected for SL501": {
        "base.py": "from torch.utils.data import DistributedSampler\n\n"
        "class Base(DistributedSampler):\n    pass\n",
        "mine.py": "from base import Base\n"
        "\n"
        "# passed on as batch_sampler elsewhere\n"
        "\n"
        "class Mine(Base):\n"
        "    def __len__(self):\n"
        "        return self.num_sample\n",
    },
    "SL301 project subclass built in another file": {
        "samplers.py": "from torch.utils.data import DistributedSampler\n\n\n"
        "class EvenShards(DistributedSampler):\n    pass\n",
        "train.py": "from samplers import EvenShards\n\n\n"
        "def make_sampler(dataset):\n    return EvenShards(dataset, shuffle=True)\n",
        "other.py": "def make_sampler(dataset):\n    return Buckets(dataset, shuffle=True)\n",
    },
    # The index stage keeps a file that may call a project subclass: every spelling of a call
    # whose callee ends with the class's name.
    "SL301 project subclass called through its module, parenthesised, subscripted": {
        "samplers.py": "from torch.utils.data import DistributedSampler\n\n\n"
        "class EvenShards(DistributedSampler):\n    pass\n",
        "by_module.py": "import samplers\n\n\n"
        "def make(dataset):\n    return samplers.EvenShards(dataset, shuffle=True)\n",
        "in_parentheses.py": "from samplers import EvenShards\n\n\n"
        "def make(dataset):\n    return (EvenShards)(dataset, shuffle=True)\n",
        "subscripted.py": "from samplers import EvenShards\n\n\n"
        "def make(dataset):\n    return EvenShards[int](dataset, shuffle=True)\n",
        "commented.py": "from samplers import EvenShards\n\n\n"
        "def make(dataset):\n    return (\n        EvenShards  # ours\n"
        "        (dataset, shuffle=True)\n    )\n",
        "continued.py": "from samplers import EvenShards\n\n\n"
        "def make(dataset):\n    return EvenShards \\\n        (dataset)\n",
    },
    "SL302 project subclass called through its module": {
        "samplers.py": "from torch.utils.data import DistributedSampler\n\n\n"
        "class EvenShards(DistributedSampler):\n    pass\n",
        "train.py": "import torch.distributed as dist\n\nimport samplers\n\n\n"
        "def make(dataset, base):\n"
        "    return samplers.EvenShards(dataset, seed=base + dist.get_rank())\n",
    },
}


def _project_findings(project: Path, *extra: str) -> list[tuple[str, int, str]]:
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "json", str(project), *extra]
    )
    assert result.exit_code in (0, 1), result.output
    return sorted(
        (Path(f["filename"]).name, f["location"]["row"], f["code"])
        for f in json.loads(result.stdout)
    )


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_text_prefilter_keeps_project_findings(project: Path, name: str) -> None:
    for filename, text in PROJECTS[name].items():
        (project / filename).write_text(text)
    unfiltered = _project_findings(project, "--no-prefilter")
    assert name.split()[0] in {code for _, _, code in unfiltered}
    assert _project_findings(project) == unfiltered


def test_walk_is_ast_walk_without_the_context_markers() -> None:
    # The fact collectors rely on ast.walk's nodes and order; `walk` skips only Load / Store /
    # Del, which no collector looks at.
    from sampler_lint.analysis.syntax_summary import walk

    sources = sorted((Path(__file__).parent / "fixtures").rglob("*.py"))[:200]
    assert sources
    for source in sources:
        try:
            tree = ast.parse(source.read_bytes())
        except SyntaxError:
            continue
        expected = [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]
        assert list(walk(tree)) == expected, source
        # The summary's nodes of each kind are those nodes, in that order.
        summary = SyntaxSummary(tree)
        for kind in {type(node) for node in expected}:
            assert summary.nodes(kind) == [n for n in expected if type(n) is kind], (source, kind)


# Shards the rule exempts by the words of the function or class around them (a pad, a
# `ceil(`, a gather): the filter reads the same words in the code it was given.
SL103_EXEMPT_BY_WORDS = {
    "padded first": "def shard(x, rank, world_size):\n"
    "    x = x + x[: -len(x) % world_size]  # pad to a multiple\n"
    "    per = len(x) // world_size\n"
    "    return x[rank * per:(rank + 1) * per]\n",
    "gathered parts, in a method": "class Split:\n"
    "    def parts(self, x, rank, world_size):\n"
    "        per = len(x) // world_size\n"
    "        return list(range(rank * per, (rank + 1) * per))\n"
    "    def join(self, parts):\n"
    "        return torch.cat(parts)\n",
    "ceil at module level": "import math\n"
    "per = len(items) // world_size\n"
    "mine = items[rank * per:(rank + 1) * per]\n"
    "steps = math.ceil(len(items) / world_size)\n",
    "islice in a padded function": "from itertools import islice\n"
    "def shard(items, n, rank, world_size):\n"
    "    per = n // world_size  # caller pads n\n"
    "    return list(islice(items, rank * per, (rank + 1) * per))\n",
}


@pytest.mark.parametrize("name", sorted(SL103_EXEMPT_BY_WORDS))
def test_sl103_filter_turns_away_what_the_rule_exempts_by_its_words(name: str) -> None:
    snippet = SL103_EXEMPT_BY_WORDS[name]
    rule = rules_by_code()["SL103"]
    summary = SyntaxSummary(ast.parse(snippet))
    assert rule.may_match(summary), "without the code, the shape alone keeps the file"
    summary.given(snippet, Vocabulary(), {})
    assert not rule.may_match(summary)
    assert not lint_code(snippet, select=["SL103"], use_prefilter=False).findings
    # The words are what exempts it: spelled otherwise, the rule flags the shard.
    plain = snippet.replace("pad", "pod").replace("cat(", "dog(").replace("ceil(", "floor(")
    assert lint_code(plain, select=["SL103"], use_prefilter=False).findings


SL103_SHARDS = (
    "import torch.distributed as dist\n"
    "def shard(items):\n"
    "    me = {rank}\n"
    "    per = len(items) // dist.get_world_size()\n"
    "    return items[me * per:(me + 1) * per]\n"
)


@pytest.mark.parametrize(("rank", "options"), [
    ("dist.get_rank()", {}),  # a name assigned a rank
    ("args.rank", {}),
    ("args.shard_index", {"rank-names": ["shard_index"]}),  # the configured vocabulary
])
def test_sl103_sees_a_rank_as_the_rule_does(rank: str, options: dict[str, list[str]]) -> None:
    snippet = SL103_SHARDS.format(rank=rank)
    without = lint_code(snippet, select=["SL103"], options=options, use_prefilter=False)
    assert [f.code for f in without.findings] == ["SL103"]
    assert [f.code for f in lint_code(snippet, select=["SL103"], options=options).findings] \
        == ["SL103"]
    if options:  # without the configured name, neither the rule nor its filter sees a rank
        assert not lint_code(snippet, select=["SL103"], use_prefilter=False).findings
        assert not rules_by_code()["SL103"].may_match(SyntaxSummary(ast.parse(snippet)))


WORLD_SIZE_SHARDS = {
    "SL101": (
        "import os\n"
        "import torch.distributed as dist\n"
        "def shard(items, rank, args):\n"
        "    parts = {world}\n"
        "    per = len(items) // parts\n"
        "    return items.split(per)[rank]\n"
    ),
    "SL103": (
        "import os\n"
        "import torch.distributed as dist\n"
        "def shard(items, rank, args):\n"
        "    parts = {world}\n"
        "    per = len(items) // parts\n"
        "    return items[rank * per:(rank + 1) * per]\n"
    ),
}


@pytest.mark.parametrize("code", sorted(WORLD_SIZE_SHARDS))
@pytest.mark.parametrize(("world", "options"), [
    ("dist.get_world_size()", {}),  # the divisor a name assigned a world size
    ("int(os.environ['WORLD_SIZE'])", {}),
    ("args.world_size", {}),
    ("args.n_shards", {"world-size-names": ["n_shards"]}),  # the configured vocabulary
])
def test_shard_filters_see_a_world_size_as_the_rules_do(
    code: str, world: str, options: dict[str, list[str]]
) -> None:
    snippet = WORLD_SIZE_SHARDS[code].format(world=world)
    without = lint_code(snippet, select=[code], options=options, use_prefilter=False)
    assert [f.code for f in without.findings] == [code]
    assert [f.code for f in lint_code(snippet, select=[code], options=options).findings] \
        == [code]
    if options:  # without the configured name, neither the rule nor its filter sees one
        assert not lint_code(snippet, select=[code], use_prefilter=False).findings
        summary = SyntaxSummary(ast.parse(snippet))
        assert not rules_by_code()[code].may_match(summary)
        summary.vocabulary = Vocabulary.from_options(options)
        assert rules_by_code()[code].may_match(summary)


def test_a_project_subclass_is_called_only_where_a_call_spells_it(tmp_path: Path) -> None:
    """The index stage of SL301 and SL302 keeps a file that may call a project subclass of
    DistributedSampler, not one that only imports it or tests an object against it."""
    from sampler_lint.analysis.sampler_family import calls_project_subclass
    from sampler_lint.engine.registry import all_rules
    from sampler_lint.engine.runner import build_index

    (tmp_path / "samplers.py").write_text(
        "from torch.utils.data import DistributedSampler\n\n"
        "class EvenShards(DistributedSampler):\n    pass\n"
    )
    index = build_index([tmp_path / "samplers.py"], all_rules())
    called = [
        "EvenShards(ds)", "s.EvenShards(ds)", "(EvenShards)(ds)", "EvenShards[int](ds)",
        "EvenShards (ds)", "x = (EvenShards  # ours\n  (ds))", "EvenShards \\\n (ds)",
        "x = (EvenShards  # ours\r  (ds))", "x = (EvenShards  # ## # (\r\n  # #\n  (ds))",
    ]
    not_called = [
        "from samplers import EvenShards", "isinstance(s, EvenShards)", "kind = EvenShards",
        "MyEvenShards(ds)", "EvenShardsBig(ds)", "samplers.EvenShards.__name__",
        "kind = EvenShards  # ours (one kind)", "## EvenShards ##\n",
        "class EvenShards(DistributedSampler):\n    pass\n",
        "def EvenShards(dataset):\n    return None\n",
    ]
    # Defined and called in one file: the call counts.
    assert calls_project_subclass(
        index, "class EvenShards(Base):\n    pass\nsampler = EvenShards(ds)\n",
        "DistributedSampler",
    )
    for text in called:
        assert calls_project_subclass(index, text, "DistributedSampler"), text
    for text in not_called:
        assert not calls_project_subclass(index, text, "DistributedSampler"), text
    assert not calls_project_subclass(index, "Whatever(ds)", "BatchSampler")  # none there


@pytest.mark.parametrize(
    "loop",
    [
        "for epoch_idx in data: pass", "for i in range(10): pass",
        "for i in range(args.epochs): pass", "for i in trange(cfg.train.max_epoch): pass",
        "for i in tqdm(range(n), total=n_epochs): pass", "for i in tqdm(range(n), desc=name): pass",
        "for i in range(f(epoch_count=3)): pass", "for i in range(g(lambda epoch: 1)): pass",
        "for i, b in enumerate(epochs): pass", "for i in batches(n_epochs): pass",
        "for i in x.range(n_epochs): pass", "async def f():\n    async for ep in it: pass",
    ],
)
def test_the_ast_epoch_loop_answers_as_the_rules_one(loop: str) -> None:
    """Pre-filters and the index read epoch loops in ``ast``; the rules in libcst."""
    import libcst

    from sampler_lint.analysis.loader_calls import is_epoch_loop
    from sampler_lint.analysis.loader_facts import is_epoch_loop_ast

    ast_loop = next(n for n in ast.walk(ast.parse(loop)) if isinstance(n, (ast.For, ast.AsyncFor)))
    found: list[libcst.For] = []

    class Loops(libcst.CSTVisitor):
        def visit_For(self, node: libcst.For) -> None:
            found.append(node)

    libcst.parse_module(loop).visit(Loops())
    assert is_epoch_loop_ast(ast_loop) == is_epoch_loop(found[0])
