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
