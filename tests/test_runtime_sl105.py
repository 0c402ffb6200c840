"""Runtime proof for SL105 with real torch: an IterableDataset that walks its file whole yields
every line once per worker; the documentation's recipe (each worker keeps the lines numbered
``worker (mod workers)``) yields each line once, and is not flagged."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sampler_lint.api import lint_code

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(),
    reason="the classes are defined by exec: workers must be forked",
)

UNSHARDED = """\
from torch.utils.data import DataLoader, IterableDataset


class Lines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as handle:
            for line in handle:
                yield line.strip()


def make(path):
    return DataLoader(Lines(path), batch_size=None, num_workers=2)
"""

RECIPE = """\
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class Lines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        info = get_worker_info()
        workers, worker = (info.num_workers, info.id) if info else (1, 0)
        with open(self.path) as handle:
            for number, line in enumerate(handle):
                if number % workers == worker:
                    yield line.strip()


def make(path):
    return DataLoader(Lines(path), batch_size=None, num_workers=2)
"""


def _counts(source: str, path: Path) -> Counter[str]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<dataset>", "exec"), namespace)
    loader = namespace["make"](str(path))
    loader.multiprocessing_context = "fork"
    return Counter(loader)


def test_every_worker_yields_every_line_until_split(tmp_path: Path) -> None:
    path = tmp_path / "train.txt"
    path.write_text("".join(f"sample{i}\n" for i in range(10)))
    assert [f.code for f in lint_code(UNSHARDED, select=["SL105"]).findings] == ["SL105"]
    assert lint_code(RECIPE, select=["SL105"]).findings == []
    buggy = _counts(UNSHARDED, path)
    assert set(buggy) == {f"sample{i}" for i in range(10)}
    assert set(buggy.values()) == {2}  # two workers: every sample twice per epoch
    fixed = _counts(RECIPE, path)
    assert set(fixed) == {f"sample{i}" for i in range(10)}
    assert set(fixed.values()) == {1}
