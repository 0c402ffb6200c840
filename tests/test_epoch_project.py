"""SL201 across files: a loader is followed from its construction through returns, constructor
arguments and ``self.<attr>``, in whichever files of the project they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

TRAINER = '''\
class Trainer:
    def __init__(self, model, train_data, optimizer):
        self.model = model
        self.train_data = train_data
        self.optimizer = optimizer

    def run_epoch(self, epoch):
        self.train_data.sampler.set_epoch(epoch)
        for batch in self.train_data:
            self.optimizer.step()
'''

MAIN = '''\
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler

from trainer import Trainer


def prepare_dataloader(dataset, batch_size):
    return DataLoader(dataset, {arguments})


def main(dataset, model, optimizer):
    train_data = prepare_dataloader(dataset, 32)
    trainer = Trainer(model, train_data, optimizer)
    trainer.run_epoch(0)
'''

SAMPLER_ONLY = "batch_size=batch_size, shuffle=False, sampler=DistributedSampler(dataset)"
BATCH_SAMPLER = (
    "batch_sampler=BatchSampler(DistributedSampler(dataset), batch_size, drop_last=False)"
)


def _codes(project: Path, *paths: str) -> list[tuple[str, int]]:
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "json", "--select", "SL201",
               *[str(project / p) for p in paths]],
    )
    assert result.exit_code in (0, 1), result.output
    return [(Path(f["filename"]).name, f["location"]["row"]) for f in json.loads(result.stdout)]


@pytest.mark.parametrize("target", [".", "trainer.py"])
def test_tutorial_shape_is_quiet_when_every_loader_has_a_sampler(
    project: Path, target: str
) -> None:
    (project / "trainer.py").write_text(TRAINER)
    (project / "main.py").write_text(MAIN.format(arguments=SAMPLER_ONLY))
    # Linting the one file still sees the project: the index is built from the project root.
    assert _codes(project, target) == []


def test_a_batch_sampler_anywhere_upstream_is_flagged(project: Path) -> None:
    (project / "trainer.py").write_text(TRAINER)
    (project / "main.py").write_text(MAIN.format(arguments=BATCH_SAMPLER))
    assert _codes(project, ".") == [("trainer.py", 8)]


def test_a_class_of_the_same_name_elsewhere_does_not_count(project: Path) -> None:
    (project / "trainer.py").write_text(TRAINER)
    (project / "main.py").write_text(MAIN.format(arguments=SAMPLER_ONLY))
    other = project / "other"
    other.mkdir()
    # Its own Trainer, called with a loader of unknown origin: it says nothing about ours.
    (other / "tool.py").write_text(
        "class Trainer:\n    def __init__(self, model, train_data, optimizer):\n        pass\n\n"
        "def go(loader):\n    Trainer(None, loader, None)\n"
    )
    assert _codes(project, ".") == []


def test_a_loader_nobody_in_the_project_passes_is_flagged(project: Path) -> None:
    (project / "trainer.py").write_text(TRAINER)  # a library: its users build the loaders
    assert _codes(project, ".") == [("trainer.py", 8)]
