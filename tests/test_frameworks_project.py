"""SL501 and SL502 depend on the whole project: whether it uses Lightning or trains distributed,
whether any Trainer turns sampler injection off, and where classes are passed as batch_sampler."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sampler_lint.cli import main

SAMPLER = '''\
from torch.utils.data import Sampler


class PairBatchSampler(Sampler):
    def __init__(self, indices, pairs):
        self.indices = indices

    def __iter__(self):
        for i in self.indices:
            yield [i, i + 1]
'''
USES_IT = '''\
{imports}
from torch.utils.data import DataLoader

from samplers import PairBatchSampler


def loader(data):
    return DataLoader(data, batch_sampler=PairBatchSampler([0, 2], 1))
{trainer}
'''


def _findings(project: Path) -> list[tuple[str, str]]:
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "json", "--select", "SL5", str(project)]
    )
    assert result.exit_code in (0, 1), result.output
    return [(Path(f["filename"]).name, f["code"]) for f in json.loads(result.stdout)]


def _write(project: Path, imports: str, trainer: str = "") -> None:
    (project / "samplers.py").write_text(SAMPLER)
    (project / "train.py").write_text(USES_IT.format(imports=imports, trainer=trainer))


def test_a_lightning_project_is_flagged_in_the_file_that_defines_the_class(project: Path) -> None:
    _write(project, "import lightning as L")
    assert _findings(project) == [("samplers.py", "SL501")]


def test_a_project_without_lightning_is_not(project: Path) -> None:
    _write(project, "import torch")
    assert _findings(project) == []


def test_injection_turned_off_anywhere_in_the_project(project: Path) -> None:
    _write(project, "import lightning as L",
           "\n\ntrainer = L.Trainer(strategy='ddp', use_distributed_sampler=False)\n")
    assert _findings(project) == []


def test_one_trainer_elsewhere_turning_injection_off_does_not_silence_the_rule(
    project: Path,
) -> None:
    _write(project, "import lightning as L", "\n\ntrainer = L.Trainer(strategy='ddp')\n")
    (project / "predict.py").write_text(
        "import lightning as L\n\nL.Trainer(devices=1, use_distributed_sampler=False)\n"
    )
    assert _findings(project) == [("samplers.py", "SL501")]


def test_every_trainer_turning_injection_off_does(project: Path) -> None:
    _write(project, "import lightning as L")
    (project / "fit.py").write_text(
        "from lightning.pytorch import Trainer\n\n"
        "options = {'use_distributed_sampler': False}\n"
        "Trainer(strategy='ddp', **options)\n"
    )
    (project / "predict.py").write_text(
        "import lightning as L\n\nL.Trainer(devices=1, use_distributed_sampler=False)\n"
    )
    assert _findings(project) == []


def test_a_test_file_turning_injection_off_counts_neither_way(project: Path) -> None:
    _write(project, "import lightning as L")
    tests = project / "tests"
    tests.mkdir()
    (tests / "test_predict.py").write_text(
        "import lightning as L\n\nL.Trainer(devices=1, use_distributed_sampler=False)\n"
    )
    assert _findings(project) == [("samplers.py", "SL501")]


def test_lightning_in_a_sibling_example_folder_is_no_reason(project: Path) -> None:
    audio, vision = project / "audio", project / "vision"
    audio.mkdir()
    vision.mkdir()
    _write(audio, "import torch")
    (vision / "train.py").write_text("import lightning as L\n\nL.Trainer().fit(None)\n")
    assert _findings(project) == []
    (project / "cli.py").write_text("import lightning as L\n")  # above both: it may reach them
    assert _findings(project) == [("samplers.py", "SL501")]


SELF_BATCHING = '''\
{imports}
from torch.utils.data import BatchSampler, DataLoader


class Buckets(BatchSampler):
    def __init__(self, sampler, batch_size, drop_last=False, buckets=()):
        super().__init__(sampler, batch_size, drop_last)
        self.buckets = buckets

    def __iter__(self):
        yield from self.buckets


def loader(data, sampler):
    return {wrap}(DataLoader(data, batch_sampler=Buckets(sampler, 2, buckets=[[0, 1]])))
'''


def test_sl502_only_where_lightning_injects(project: Path) -> None:
    (project / "buckets.py").write_text(SELF_BATCHING.format(
        imports="from accelerate import Accelerator", wrap="Accelerator().prepare"
    ))
    assert _findings(project) == []  # accelerate shards whole batches: nothing is ignored
    (project / "buckets.py").write_text(SELF_BATCHING.format(
        imports="import lightning as L", wrap="L.Fabric().setup_dataloaders"
    ))
    assert _findings(project) == [("buckets.py", "SL502")]


def test_lightning_elsewhere_in_the_same_package_counts(project: Path) -> None:
    package = project / "graphs"
    for folder in (package, package / "loader", package / "lightning"):
        folder.mkdir()
        (folder / "__init__.py").write_text("")
    _write(package / "loader", "import torch")
    (package / "lightning" / "datamodule.py").write_text("import lightning as L\n")
    assert _findings(project) == [("samplers.py", "SL501")]


def test_the_base_swap_keeps_a_sampler_import_the_module_may_export(project: Path) -> None:
    module = project / "batches.py"
    module.write_text(
        "import lightning as L\n"
        "from torch.utils.data import DataLoader, Sampler\n\n"
        "__all__ = ['Sampler', 'Firsts']\n\n\n"
        "class Firsts(Sampler):\n"
        "    def __init__(self, sampler, batch_size, drop_last=False, keep=1):\n"
        "        self.sampler = sampler\n"
        "        self.batch_size = batch_size\n"
        "        self.drop_last = drop_last\n"
        "        self.keep = keep\n\n"
        "    def __iter__(self):\n"
        "        yield list(self.sampler)[: self.keep]\n\n"
        "    def __len__(self):\n"
        "        return 1\n\n\n"
        "def build(data, sampler):\n"
        "    return DataLoader(data, batch_sampler=Firsts(sampler, 2, keep=3))\n"
    )
    result = CliRunner().invoke(main, ["check", "--no-cache", "--fix", "--select", "SL501",
                                       str(project)])
    assert result.exit_code == 0, result.output
    text = module.read_text()
    assert "from torch.utils.data import BatchSampler, DataLoader, Sampler\n" in text
    assert "class Firsts(BatchSampler):" in text


BUCKETS = '''\
import torch


class BucketSampler(torch.utils.data.distributed.DistributedSampler):
    def __init__(self, dataset, batch_size, boundaries, num_replicas=None, rank=None):
        super().__init__(dataset, num_replicas=num_replicas, rank=rank)
        self.batch_size = batch_size
        self.boundaries = boundaries

    def __iter__(self):
        yield [0, 1]
'''


def test_the_reason_counts_what_a_torch_base_sets(project: Path) -> None:
    # NeMo's `DistributedBucketSampler`: `drop_last` comes from DistributedSampler, `batch_size`
    # from its own `__init__`. Lightning calls `cls(sampler, batch_size=..., drop_last=...)`,
    # which its `__init__` refuses: the message said it had neither attribute.
    (project / "samplers.py").write_text(BUCKETS)
    (project / "train.py").write_text(USES_IT.format(
        imports="import lightning as L", trainer="",
    ).replace("from samplers import PairBatchSampler", "from samplers import BucketSampler")
     .replace("PairBatchSampler([0, 2], 1)", "BucketSampler(data, 2, [1, 5])"))
    result = CliRunner().invoke(main, [
        "check", "--no-cache", "--output-format", "json", "--select", "SL501", str(project),
    ])
    (finding,) = json.loads(result.stdout)
    assert "cannot be called as `cls(sampler, batch_size=..., drop_last=...)`" in (
        finding["message"]
    )
    assert "has no `batch_size`" not in finding["message"]
