"""Fixes leave correct programs alone (issue 13, "Done means").

For every rule whose fix is SAFE, the fix must leave the observable behaviour unchanged on every
input where the original program was already correct. Where that behaviour is sharding or sampler
arithmetic it runs here in plain Python, with hypothesis choosing the inputs; the runtime tests
(``tests/test_runtime_*.py``) show the other half, that each fix changes what it promises.

What holds, rule by rule:

- SL101, SL102, SL103 (unsafe fixes): on inputs where the original is correct (the world size
  divides the length) the fixed shard of every rank is the original one, item for item. Elsewhere
  the fix changes the shards on purpose (it stops dropping items), which is why it is unsafe:
  part sizes then differ by one.
- SL402 (unsafe fix): ``(A // B) % B`` becomes ``A % B``. Where the two agree the sampler is
  unchanged (tested); where they differ the value changes by definition, which is why the fix is
  unsafe.
- SL401 (safe fix): a read of a never-assigned attribute raised ``AttributeError``, so no input
  makes the original correct; the fix makes the read see the attribute the sampler assigns.
- SL201 (safe fix): with a loader built with ``sampler=`` (where the original was correct) the
  fixed code gives every epoch the same order as before (tested with plain-Python stand-ins).
- SL301 (safe fix): passing the run's seed changes nothing when that seed is the sampler's
  default, 0 (tested with torch when it is installed).
- SL002, SL202, SL203: removing an unused ``# noqa`` code changes no code; adding a missing
  ``set_epoch`` or moving it before the iterator is created changes the order only where the
  original repeated or lagged (``tests/test_runtime_epoch.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampler_lint.api import lint_code
from sampler_lint.engine.registry import rules_by_code
from sampler_lint.rule import Applicability

# ------------------------------------------------------------------------------------------------
# A plain-Python stand-in for a 1-D tensor: torch's split / chunk / tensor_split semantics.


class Items(list[int]):
    """What the sharding code calls on a 1-D tensor, with torch's documented semantics."""

    @property
    def shape(self) -> tuple[int]:
        return (len(self),)

    def size(self, dim: int = 0) -> int:
        assert dim == 0
        return len(self)

    def numel(self) -> int:
        return len(self)

    def __getitem__(self, key: Any) -> Any:  # slices stay Items
        value = super().__getitem__(key)
        return Items(value) if isinstance(key, slice) else value

    def split(self, size: int, dim: int = 0) -> tuple[Items, ...]:
        if size <= 0:
            raise RuntimeError("split_size must be positive")
        return tuple(self[i:i + size] for i in range(0, len(self), size)) or (Items(),)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Items, ...]:
        return self.split(-(-len(self) // chunks) or 1)

    def tensor_split(self, sections: int, dim: int = 0) -> tuple[Items, ...]:
        base, extra = divmod(len(self), sections)
        parts, start = [], 0
        for index in range(sections):
            end = start + base + (1 if index < extra else 0)
            parts.append(self[start:end])
            start = end
        return tuple(parts)


class _Torch:
    """``torch.split(x, ...)`` and friends, for the function-style shapes."""

    @staticmethod
    def split(x: Items, size: int, dim: int = 0) -> tuple[Items, ...]:
        return x.split(size, dim)

    @staticmethod
    def chunk(x: Items, chunks: int, dim: int = 0) -> tuple[Items, ...]:
        return x.chunk(chunks, dim)

    @staticmethod
    def tensor_split(x: Items, sections: int, dim: int = 0) -> tuple[Items, ...]:
        return x.tensor_split(sections, dim)


SHARDING = {
    "SL101": [
        "def shard(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n",
        "def shard(x, world_size, rank):\n"
        "    per_rank = len(x) // world_size\n"
        "    return x.split(per_rank)[rank]\n",
        "import torch\n\n\ndef shard(x, world_size, rank):\n"
        "    return torch.split(x, x.shape[0] // world_size)[rank]\n",
    ],
    "SL102": [
        "def shard(x, world_size, rank):\n    return x.chunk(world_size)[rank]\n",
        "import math\n\n\ndef shard(x, world_size, rank):\n"
        "    num_splits = math.ceil(x.size(0) / world_size)\n"
        "    return x.split(num_splits)[rank]\n",
        "def shard(x, world_size, rank):\n"
        "    return x.split((len(x) + world_size - 1) // world_size)[rank]\n",
    ],
    "SL103": [
        "def shard(x, world_size, rank):\n"
        "    per = len(x) // world_size\n"
        "    return x[rank * per:(rank + 1) * per]\n",
    ],
}


def _fixed(code: str, rule: str) -> str:
    assert [f.code for f in lint_code(code, select=[rule]).findings] == [rule]
    fixed = lint_code(code, select=[rule], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None
    return fixed


def _function(code: str, name: str = "shard") -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    # The stand-in is what `import torch` finds, so this runs (and means the same) without torch.
    with mock.patch.dict(sys.modules, {"torch": _Torch}):  # type: ignore[dict-item]
        exec(compile(code, "<fixed>", "exec"), namespace)  # the test's own snippets only
    namespace["torch"] = _Torch
    function: Callable[..., Any] = namespace[name]
    return function


_CASES = [(rule, code) for rule, codes in SHARDING.items() for code in codes]
_FIXED = {code: _fixed(code, rule) for rule, code in _CASES}


@pytest.mark.parametrize(("rule", "code"), _CASES, ids=[f"{r}-{i}" for i, (r, _) in
                                                        enumerate(_CASES)])
@settings(max_examples=60, deadline=None)
@given(world_size=st.integers(1, 64), per_rank=st.integers(1, 40))
def test_sharding_fix_keeps_every_shard_where_the_original_was_correct(
    rule: str, code: str, world_size: int, per_rank: int
) -> None:
    n = world_size * per_rank  # the world size divides the length: the original is correct
    items = Items(range(n))
    before, after = _function(code), _function(_FIXED[code])
    for rank in range(world_size):
        assert list(after(items, world_size, rank)) == list(before(items, world_size, rank))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 300), sections=st.integers(1, 40), size=st.integers(1, 40))
def test_the_stand_in_agrees_with_torch(n: int, sections: int, size: int) -> None:
    torch = pytest.importorskip("torch")
    x, items = torch.arange(n), Items(range(n))
    assert [p.tolist() for p in x.split(size)] == [list(p) for p in items.split(size)]
    assert [p.tolist() for p in x.tensor_split(sections)] == [
        list(p) for p in items.tensor_split(sections)
    ]
    if n:
        assert [p.tolist() for p in x.chunk(sections)] == [list(p) for p in items.chunk(sections)]


def test_the_sharding_fixes_are_unsafe() -> None:
    """Not safe, because elsewhere they change the shards (sizes then differ by one)."""
    for code in SHARDING:
        assert rules_by_code()[code].fix_applicability is Applicability.UNSAFE


# ------------------------------------------------------------------------------------------------
# SL402: the sub-epoch sampler


SUB_EPOCHS = """\
from torch.utils.data import DistributedSampler


class SubEpochSampler(DistributedSampler):
    def __init__(self, num_samples, k, sub_epoch):
        self.num_samples, self.sub_epoch = num_samples, sub_epoch
        self.set_sub_num_samples(k)

    def set_sub_num_samples(self, k):
        self.sub_num_samples = self.num_samples // k
        if self.sub_num_samples % k > self.sub_epoch:
            self.sub_num_samples += 1
"""


def _sub_num_samples(source: str, num_samples: int, k: int, sub_epoch: int) -> int:
    namespace: dict[str, Any] = {}
    body = source.replace("from torch.utils.data import DistributedSampler\n", "")
    exec(compile(body, "<sampler>", "exec"), {"DistributedSampler": object}, namespace)
    sampler = namespace["SubEpochSampler"](num_samples, k, sub_epoch)
    return int(sampler.sub_num_samples)


_SL402_FIXED = _fixed(SUB_EPOCHS, "SL402")


@settings(max_examples=200, deadline=None)
@given(num_samples=st.integers(0, 10_000), k=st.integers(1, 50), sub_epoch=st.integers(0, 49))
def test_sl402_fix_changes_the_sampler_only_where_quotient_and_dividend_disagree(
    num_samples: int, k: int, sub_epoch: int
) -> None:
    before = _sub_num_samples(SUB_EPOCHS, num_samples, k, sub_epoch)
    after = _sub_num_samples(_SL402_FIXED, num_samples, k, sub_epoch)
    if (num_samples // k) % k == num_samples % k:
        assert after == before
    # And the fixed sampler hands out the remainder: the sub-epochs add up to the whole.
    total = sum(_sub_num_samples(_SL402_FIXED, num_samples, k, s) for s in range(k))
    assert total == num_samples


# ------------------------------------------------------------------------------------------------
# SL201: a loader built with `sampler=` (where the original was correct) is unchanged


SET_EPOCH = """\
from torch.utils.data import DistributedSampler


def start_epoch(loader, epoch):
    if isinstance(loader.sampler, DistributedSampler):
        loader.sampler.set_epoch(epoch)
"""


class _Sampler:
    def __init__(self) -> None:
        self.epoch = 0
        self.calls: list[int] = []

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.calls.append(epoch)


class _BatchSampler:
    """torch's BatchSampler: holds the sampler, has no set_epoch."""

    def __init__(self, sampler: _Sampler) -> None:
        self.sampler = sampler


class _Loader:
    """A loader built with `sampler=`: torch wraps it in a BatchSampler."""

    def __init__(self, sampler: _Sampler) -> None:
        self.sampler = sampler
        self.batch_sampler = _BatchSampler(sampler)


def _epochs_seen(source: str, epochs: list[int]) -> int:
    namespace: dict[str, Any] = {}
    body = source.replace("from torch.utils.data import DistributedSampler\n", "")
    exec(compile(body, "<train>", "exec"), {"DistributedSampler": _Sampler}, namespace)
    sampler = _Sampler()
    loader = _Loader(sampler)
    seen = []
    for epoch in epochs:
        namespace["start_epoch"](loader, epoch)
        seen.append(sampler.epoch)
    return hash(tuple(seen))


@settings(max_examples=50, deadline=None)
@given(epochs=st.lists(st.integers(0, 1000), min_size=1, max_size=20))
def test_sl201_fix_leaves_a_sampler_loader_on_the_same_epochs(epochs: list[int]) -> None:
    fixed = lint_code(SET_EPOCH, select=["SL201"], fix=True).fixed
    if fixed is None:
        pytest.skip("SL201 does not flag this shape any more")
    assert rules_by_code()["SL201"].fix_applicability is Applicability.SAFE
    assert _epochs_seen(fixed, epochs) == _epochs_seen(SET_EPOCH, epochs)


# ------------------------------------------------------------------------------------------------
# SL301: passing the run's seed changes nothing when that seed is the default, 0


HARDCODED = """\
import torch
from torch.utils.data import DistributedSampler


def order(dataset, seed, rank, epoch):
    torch.manual_seed(seed)
    sampler = DistributedSampler(dataset, num_replicas=2, rank=rank, shuffle=True)
    sampler.set_epoch(epoch)
    return list(sampler)
"""


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 200), rank=st.integers(0, 1), epoch=st.integers(0, 100))
def test_sl301_fix_keeps_the_order_for_the_default_seed(n: int, rank: int, epoch: int) -> None:
    pytest.importorskip("torch")
    # A parameter may be None, so this fix is offered as unsafe; the property holds all the same.
    fixed = lint_code(HARDCODED, select=["SL301"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None and "seed=seed" in fixed
    runs = []
    for source in (HARDCODED, fixed):
        namespace: dict[str, Any] = {}
        exec(compile(source, "<script>", "exec"), namespace)
        runs.append([int(i) for i in namespace["order"](list(range(n)), 0, rank, epoch)])
    assert runs[0] == runs[1]
