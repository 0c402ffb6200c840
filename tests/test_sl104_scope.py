"""SL104's file-level scope: test files (a test of DDP often feeds every rank the same batches on
purpose) and files that import a library that shards loaders itself are left alone."""

from __future__ import annotations

import pytest

from sampler_lint.api import lint_code

SOURCE = """\
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader


def run(args, model, optimizer):
    dist.init_process_group("gloo")
    model = DDP(model)
    loader = DataLoader(torchvision.datasets.CIFAR10(args.root), batch_size=4)
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
"""


def _codes(source: str, path: str) -> list[str]:
    return [f.code for f in lint_code(source, select=["SL104"], path=path).findings]


def test_a_training_script_is_flagged() -> None:
    assert _codes(SOURCE, "project/train.py") == ["SL104"]


@pytest.mark.parametrize(
    "path", ["project/test_ddp.py", "project/ddp_test.py", "project/tests/helpers.py",
             "project/conftest.py"],
)
def test_test_files_are_left_alone(path: str) -> None:
    assert _codes(SOURCE, path) == []


@pytest.mark.parametrize(
    "library",
    ["import lightning as L", "from accelerate import Accelerator", "import ray.train",
     "from transformers import Trainer", "from trl import SFTTrainer"],
)
def test_files_using_a_sharding_library_are_left_alone(library: str) -> None:
    assert _codes(library + "\n" + SOURCE, "project/train.py") == []


def test_deepspeed_given_the_training_data_is_left_alone() -> None:
    source = "import deepspeed\n" + SOURCE + (
        "\n\ndef engine(model, data):\n"
        "    return deepspeed.initialize(model=model, training_data=data)\n"
    )
    assert _codes(source, "project/train.py") == []
