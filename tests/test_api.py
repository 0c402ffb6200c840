"""The Python API is safe by default: ``lint_code(..., fix=True)`` applies only safe fixes, as
the command line does without ``--unsafe-fixes``."""

from __future__ import annotations

import inspect

from sampler_lint.api import index_sources, lint_code

UNSAFE_ONLY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
SAFE = (
    "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
    "def train(dataset, epochs):\n"
    "    sampler = DistributedSampler(dataset)\n"
    "    loader = DataLoader(dataset, batch_size=8, sampler=sampler)\n"
    "    for epoch in range(epochs):\n"
    "        for batch in loader:\n"
    "            print(batch)\n"
)


def test_unsafe_fixes_are_off_by_default() -> None:
    assert inspect.signature(lint_code).parameters["unsafe_fixes"].default is False
    result = lint_code(UNSAFE_ONLY, fix=True)
    assert result.fixed is None
    assert [f.code for f in result.findings] == ["SL101"]
    assert result.findings[0].fix is not None and result.findings[0].fix.applicability == "unsafe"


def test_unsafe_fixes_on_request() -> None:
    result = lint_code(UNSAFE_ONLY, fix=True, unsafe_fixes=True)
    assert result.fixed is not None and "tensor_split" in result.fixed
    assert result.findings == []


def test_safe_fixes_apply_by_default() -> None:
    result = lint_code(SAFE, fix=True)
    assert result.fixed is not None and "sampler.set_epoch(epoch)" in result.fixed
    assert result.findings == []
    assert lint_code(result.fixed, fix=True).fixed is None  # a second pass changes nothing


def test_bytes_in_bytes_out_and_no_fix_without_fix() -> None:
    result = lint_code(SAFE.encode("latin-1"))
    assert result.fixed is None and [f.code for f in result.findings] == ["SL202"]


def test_a_project_index_from_memory() -> None:
    helper = "def run_epoch(loader, epoch):\n    loader.sampler.set_epoch(epoch)\n"
    train = SAFE.replace("        for batch in loader:\n            print(batch)\n",
                         "        run_epoch(loader, epoch)\n")
    train = "from helpers import run_epoch\n" + train
    index = index_sources({"helpers.py": helper, "train.py": train})
    assert lint_code(train, path="train.py", index=index).findings == []
    assert [f.code for f in lint_code(train, path="train.py").findings] == ["SL202"]
