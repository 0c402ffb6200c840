"""SL201 across files: a loader is followed from its construction through returns, constructor
arguments and ``self.<attr>``, in whichever files of the project they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.analysis.loader_facts import INDEX_REQUIRES
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


def test_a_factory_reexported_by_its_package_is_followed(project: Path) -> None:
    # `from pkg.data import create_loader`, defined in pkg/data/loader.py and re-exported by
    # pkg/data/__init__.py (timm's layout).
    data = project / "pkg" / "data"
    data.mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (data / "__init__.py").write_text("from .loader import create_loader\n")
    body = (
        "from torch.utils.data import BatchSampler, DataLoader, DistributedSampler\n\n\n"
        "def create_loader(dataset, distributed):\n"
        "    sampler = DistributedSampler(dataset) if distributed else None\n"
        "    return DataLoader(dataset, {arguments})\n"
    )
    (project / "train.py").write_text(
        "from pkg.data import create_loader\n\n\n"
        "def main(dataset, epochs):\n"
        "    loader = create_loader(dataset, True)\n"
        "    for epoch in range(epochs):\n"
        "        loader.sampler.set_epoch(epoch)\n"
    )
    (data / "loader.py").write_text(body.format(arguments="batch_size=8, sampler=sampler"))
    assert _codes(project, ".") == []
    (data / "loader.py").write_text(body.format(
        arguments="batch_sampler=BatchSampler(sampler, 8, False)"
    ))
    assert _codes(project, ".") == [("train.py", 7)]


PROVIDER = '''\
import torch
from torch.utils.data import DistributedSampler


class DataProvider:
    def __init__(self, dataset, distributed):
        self.distributed = distributed
        self.train = self.build_dataloader(dataset)

    def build_dataloader(self, dataset):
        loader_class = torch.utils.data.DataLoader
        if self.distributed:
            return loader_class(dataset, batch_size=8, sampler=DistributedSampler(dataset))
        return loader_class(dataset, batch_size=8, shuffle=True)

    def set_epoch(self, epoch):
        if isinstance(self.train.sampler, DistributedSampler):
            self.train.sampler.set_epoch(epoch)
'''


def test_a_loader_class_alias_and_a_plain_loader_carry_no_batch_sampler(project: Path) -> None:
    # efficientvit's DataProvider: `loader_class = DataLoader` then `loader_class(...)`, and a
    # non-distributed branch built with shuffle=True (torch's default batch sampler).
    (project / "provider.py").write_text(PROVIDER)
    assert _codes(project, ".") == []


def test_an_override_of_the_factory_method_in_another_file_counts(project: Path) -> None:
    (project / "provider.py").write_text(PROVIDER)
    (project / "custom.py").write_text(
        "from torch.utils.data import DataLoader\n\nfrom provider import DataProvider\n\n\n"
        "class Bucketed(DataProvider):\n"
        "    def build_dataloader(self, dataset):\n"
        "        return DataLoader(dataset, batch_sampler=self.buckets(dataset))\n"
    )
    assert _codes(project, ".") == [("provider.py", 18)]


def test_a_same_named_method_of_an_unrelated_class_does_not_count(project: Path) -> None:
    # torchtune's recipes: each class has its own _setup_data; another recipe's batch sampler
    # says nothing about this one.
    (project / "provider.py").write_text(PROVIDER)
    (project / "other_recipe.py").write_text(
        "from torch.utils.data import DataLoader\n\n\n"
        "class OtherRecipe:\n"
        "    def build_dataloader(self, dataset):\n"
        "        return DataLoader(dataset, batch_sampler=self.buckets(dataset))\n"
    )
    assert _codes(project, ".") == []


FACTORY = '''\
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler


def build_loader(dataset):
    sampler = DistributedSampler(dataset)
    return dataset, DataLoader(dataset, {arguments}), None
'''

UNPACKING = '''\
from data import build_loader


def main(dataset, epochs):
    dataset_train, data_loader_train, mixup = build_loader(dataset)
    for epoch in range(epochs):
        data_loader_train.sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [("batch_size=8, sampler=sampler", []),
     ("batch_sampler=BatchSampler(sampler, 8, False)", [("train.py", 7)])],
)
def test_loaders_returned_in_a_tuple_are_followed(
    project: Path, arguments: str, expected: list[tuple[str, int]]
) -> None:
    # Swin Transformer, YOLOv5, MLPerf: `a, loader, b = build_loader(...)`.
    (project / "data.py").write_text(FACTORY.format(arguments=arguments))
    (project / "train.py").write_text(UNPACKING)
    assert _codes(project, ".") == expected
    (project / "train.py").write_text(UNPACKING.replace(
        "dataset_train, data_loader_train, mixup = build_loader(dataset)",
        "data_loader_train = build_loader(dataset)[1]",
    ))
    assert _codes(project, ".") == expected


LIST_FACTORY = '''\
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler


def create_loader(datasets, samplers, batch_size):
    loaders = []
    for dataset, sampler in zip(datasets, samplers):
        loader = DataLoader(dataset, {arguments})
        loaders.append(loader)
    {extra}return loaders
'''

LIST_UNPACKING = '''\
from data import create_loader


def main(datasets, samplers, epochs):
    train_loader, val_loader = create_loader(datasets, samplers, 8)
    for epoch in range(epochs):
        train_loader.sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(
    ("arguments", "extra", "expected"),
    [("batch_size=batch_size, sampler=sampler", "", []),
     ("batch_sampler=BatchSampler(sampler, batch_size, False)", "", [("train.py", 7)]),
     # Anything else done to the list may put another loader in it: not followed.
     ("batch_size=batch_size, sampler=sampler", "loaders.extend(extra_loaders())\n    ",
      [("train.py", 7)]),
     ("batch_size=batch_size, sampler=sampler", "register(loaders)\n    ", [("train.py", 7)]),
     ("batch_size=batch_size, sampler=sampler", "loaders[0] = swap(loaders[0])\n    ",
      [("train.py", 7)]),
     ("batch_size=batch_size, sampler=sampler", "loaders += extra_loaders()\n    ",
      [("train.py", 7)])],
)
def test_loaders_appended_to_a_returned_list_are_followed(
    project: Path, arguments: str, extra: str, expected: list[tuple[str, int]]
) -> None:
    # BLIP, ALBEF: `loaders = []`, `loaders.append(DataLoader(...))` in a loop, `return
    # loaders`, and the caller unpacks them.
    (project / "data.py").write_text(LIST_FACTORY.format(arguments=arguments, extra=extra))
    (project / "train.py").write_text(LIST_UNPACKING)
    assert _codes(project, ".") == expected


def test_a_method_of_an_instance_of_a_project_class_is_followed(project: Path) -> None:
    # MLPerf GNMT: `train_data = LazyParallelDataset(...)`, then `train_data.get_loader(...)`,
    # defined on its base class.
    (project / "dataset.py").write_text(
        "from torch.utils.data import DataLoader, Dataset, DistributedSampler\n\n\n"
        "class TextDataset(Dataset):\n"
        "    def get_loader(self, batch_size):\n"
        "        return DataLoader(self, batch_size=batch_size, sampler=DistributedSampler(self))\n"
        "\n\nclass LazyParallelDataset(TextDataset):\n    pass\n"
    )
    (project / "train.py").write_text(
        "from dataset import LazyParallelDataset\n\n\n"
        "def main(epochs):\n"
        "    train_data = LazyParallelDataset()\n"
        "    train_loader = train_data.get_loader(batch_size=8)\n"
        "    for epoch in range(epochs):\n"
        "        train_loader.sampler.set_epoch(epoch)\n"
    )
    assert _codes(project, ".") == []


DATAMODULE = """\
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler


class QM9DataModule:
    def __init__(self, **kwargs):
        self.ds = list(range(100))

    def train_dataloader(self):
        return DataLoader(self.ds, {arguments})
"""

TRAINING = """\
from torch.utils.data import DistributedSampler

from datamodule import QM9DataModule


def train(model, train_dataloader, epochs):
    for epoch in range(epochs):
        if isinstance(train_dataloader.sampler, DistributedSampler):
            train_dataloader.sampler.set_epoch(epoch)
        for batch in train_dataloader:
            model(batch)


if __name__ == "__main__":
    datamodule = QM9DataModule(batch_size=8)
    train(print, datamodule.train_dataloader(), 10)
"""


# The data module's loader built with a sampler (not flagged), or a batch sampler (flagged).
DATAMODULE_LOADERS = [
    ("sampler=DistributedSampler(self.ds), batch_size=8", []),
    ("batch_sampler=BatchSampler(DistributedSampler(self.ds), 8, False)", [("training.py", 9)]),
]


@pytest.mark.parametrize(("arguments", "expected"), DATAMODULE_LOADERS)
def test_a_loader_handed_on_from_module_level_code_is_followed(
    project: Path, arguments: str, expected: list[tuple[str, int]]
) -> None:
    # NVIDIA's SE3Transformer: the data module is built under `if __name__ == "__main__":` and
    # its method's loader handed to `train`; the name was followed inside functions only.
    (project / "datamodule.py").write_text(DATAMODULE.format(arguments=arguments))
    (project / "training.py").write_text(TRAINING)
    assert _codes(project, "training.py") == expected


@pytest.mark.parametrize(("arguments", "expected"), DATAMODULE_LOADERS)
def test_a_class_reexported_by_a_package_that_names_no_loader_is_followed(
    project: Path, arguments: str, expected: list[tuple[str, int]]
) -> None:
    # SE3Transformer again: `from se3_transformer.data_loading import QM9DataModule`, whose
    # `__init__.py` holds only `from .qm9 import QM9DataModule` (no loader words: no loader
    # facts, so the import resolved to nothing and the loader stayed unknown).
    package = project / "pkg" / "data"
    package.mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from .qm9 import QM9DataModule\n")
    (package / "qm9.py").write_text(DATAMODULE.format(arguments=arguments))
    (project / "training.py").write_text(
        TRAINING.replace("from datamodule import", "from pkg.data import")
    )
    assert _codes(project, "training.py") == expected

# -- tuples of loader-or-None, objects a factory builds --------------------------------------------

BUILD = '''\
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler


def build_loaders(cfg, train_set, val_set):
    sampler = DistributedSampler(train_set)
    train_loader = DataLoader(
        train_set, {arguments}
    ) if train_set is not None else None
    val_loader = DataLoader(val_set, batch_size=8) if val_set is not None else None
    {extra}return train_set, val_set, train_loader, \\
        val_loader
'''

BUILD_USER = '''\
from data import build_loaders


def main(cfg, train_set, val_set):
    train_set, val_set, train_loader, val_loader = build_loaders(cfg, train_set, val_set)
    for epoch in range(cfg.epochs):
        train_loader.sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(("arguments", "extra", "expected"), [
    ("batch_size=8, sampler=sampler", "", []),
    ("batch_sampler=BatchSampler(sampler, 8, False)", "", [("main.py", 7)]),
    # another return that is no tuple literal, or one of another length: not followed
    ("batch_size=8, sampler=sampler", "if cfg.cached:\n        return cfg.cached\n    ",
     [("main.py", 7)]),
    ("batch_size=8, sampler=sampler",
     "if cfg.short:\n        return train_set, train_loader\n    ", [("main.py", 7)]),
])
def test_a_loader_or_none_element_of_a_returned_tuple_is_followed(
    project: Path, arguments: str, extra: str, expected: list[tuple[str, int]]
) -> None:
    # InternVL: `a, b, c, data_loader_train, ... = build_loader(config)` from a package that
    # re-exports it, the element `DataLoader(..., sampler=...) if dataset is not None else None`.
    data = project / "data"
    data.mkdir()
    (data / "__init__.py").write_text("from .build import build_loaders\n")
    (data / "build.py").write_text(BUILD.format(arguments=arguments, extra=extra))
    (project / "main.py").write_text(BUILD_USER)
    assert _codes(project, ".") == expected


STRATEGY = '''\
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler


class {name}({base}):
    def __init__(self, args):
        self.args = args

    def setup_dataloader(self, dataset, batch_size, shuffle=True):
        sampler = DistributedSampler(dataset, shuffle=shuffle)
        return DataLoader(dataset, {arguments})
'''

FACTORIES = '''\
def loader_workers(args):
    return args.workers


def get_strategy(args):
    from pkg.strategy import Strategy

    strategy = Strategy(args)
    return strategy
'''

SFT_TRAINER = '''\
class SFTTrainer:
    def __init__(self, model, strategy, train_dataloader, eval_dataloader=None):
        self.model = model
        self.train_dataloader = train_dataloader
        self.eval_dataloader = eval_dataloader

    def fit(self, epochs):
        for epoch in range(epochs):
            self.train_dataloader.sampler.set_epoch(epoch)
'''

SFT_MAIN = '''\
from pkg import get_strategy
from pkg.trainer import SFTTrainer


def train(args, model, train_set):
    strategy = get_strategy(args)
    train_dataloader = strategy.setup_dataloader(train_set, 8, True)
    trainer = SFTTrainer(model, strategy, train_dataloader=train_dataloader)
    trainer.fit(args.epochs)
'''

SAMPLER_ARGS = "batch_size=batch_size, sampler=sampler"
BATCH_ARGS = "batch_sampler=BatchSampler(sampler, batch_size, False)"


def _strategy_project(
    project: Path, arguments: str = SAMPLER_ARGS, factories: str = FACTORIES
) -> Path:
    pkg = project / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .utils import get_strategy, loader_workers\n")
    (pkg / "utils.py").write_text(factories)
    (pkg / "strategy.py").write_text(
        STRATEGY.format(name="Strategy", base="", arguments=arguments)
    )
    (pkg / "trainer.py").write_text(SFT_TRAINER)
    (project / "train_sft.py").write_text(SFT_MAIN)
    return pkg


def test_a_method_of_the_object_a_factory_builds_is_followed(project: Path) -> None:
    # OpenRLHF: `strategy = get_strategy(args)`, `strategy.setup_dataloader(...)` handed to a
    # trainer that keeps it as `self.train_dataloader`.
    _strategy_project(project)
    assert _codes(project, ".") == []


def test_a_batch_sampler_in_the_method_of_the_built_object_is_flagged(project: Path) -> None:
    _strategy_project(project, arguments=BATCH_ARGS)
    assert _codes(project, ".") == [("trainer.py", 9)]


@pytest.mark.parametrize(("built", "expected"), [
    ("Strategy", []),  # built as exactly the base: a subclass's override never runs
    ("BucketedStrategy", [("trainer.py", 9)]),
])
def test_the_class_built_decides_between_a_base_and_its_subclass(
    project: Path, built: str, expected: list[tuple[str, int]]
) -> None:
    pkg = _strategy_project(project, factories=FACTORIES.replace(
        "from pkg.strategy import Strategy", "from pkg.bucketed import BucketedStrategy, Strategy"
    ).replace("Strategy(args)", f"{built}(args)"))
    (pkg / "bucketed.py").write_text(
        STRATEGY.format(name="BucketedStrategy", base="Strategy", arguments=BATCH_ARGS)
        .replace("from torch", "from pkg.strategy import Strategy\nfrom torch")
    )
    assert _codes(project, ".") == expected


@pytest.mark.parametrize(("arguments", "expected"), [
    (SAMPLER_ARGS, []),
    (BATCH_ARGS, [("trainer.py", 9)]),
])
def test_an_inherited_method_of_the_built_class_is_followed(
    project: Path, arguments: str, expected: list[tuple[str, int]]
) -> None:
    pkg = _strategy_project(project, arguments=arguments, factories=FACTORIES.replace(
        "from pkg.strategy import Strategy", "from pkg.derived import Derived"
    ).replace("Strategy(args)", "Derived(args)"))
    (pkg / "derived.py").write_text(
        "from pkg.strategy import Strategy\n\n\nclass Derived(Strategy):\n"
        "    def loader_workers(self):\n        return 4\n"
    )
    assert _codes(project, ".") == expected


# OpenRLHF's `utils.py` as it is: nothing in it names a loader (or a sampler), so the loader
# facts skip the file; the factory is read because the question meets it.
PLAIN_FACTORIES = FACTORIES.split("\n\n\n", 1)[1]
PLAIN_INIT = "from .utils import get_strategy\n"


def _plain_strategy_project(project: Path, arguments: str = SAMPLER_ARGS) -> Path:
    pkg = _strategy_project(project, arguments=arguments, factories=PLAIN_FACTORIES)
    (pkg / "__init__.py").write_text(PLAIN_INIT)
    for text in (PLAIN_FACTORIES, PLAIN_INIT):
        assert not any(word in text for words in INDEX_REQUIRES for word in words)
    return pkg


@pytest.mark.parametrize(("arguments", "expected"), [
    (SAMPLER_ARGS, []),
    (BATCH_ARGS, [("trainer.py", 9)]),
])
@pytest.mark.parametrize("target", [".", "trainer.py", "stdin"])
def test_a_factory_in_a_file_that_names_no_loader_is_followed(
    project: Path, arguments: str, expected: list[tuple[str, int]], target: str
) -> None:
    pkg = _plain_strategy_project(project, arguments=arguments)
    if target != "stdin":
        assert _codes(project, "." if target == "." else str(pkg / target)) == expected
        return
    # An editor's buffer: the index over the project is built whole, not on demand.
    result = CliRunner().invoke(main, [
        "check", "--no-cache", "--output-format", "json", "--select", "SL201",
        "--stdin-filename", str(pkg / "trainer.py"), "-",
    ], input=SFT_TRAINER)
    assert result.exit_code in (0, 1), result.output
    assert [("trainer.py", f["location"]["row"]) for f in json.loads(result.stdout)] == expected


@pytest.mark.parametrize(("arguments", "expected"), [
    (SAMPLER_ARGS, []),
    (BATCH_ARGS, [("trainer.py", 9)]),
])
def test_a_plain_factory_imported_under_another_name_is_followed(
    project: Path, arguments: str, expected: list[tuple[str, int]]
) -> None:
    _plain_strategy_project(project, arguments=arguments)
    (project / "train_sft.py").write_text(
        SFT_MAIN.replace("import get_strategy", "import get_strategy as make_strategy")
        .replace("= get_strategy(", "= make_strategy(")
    )
    assert _codes(project, ".") == expected


@pytest.mark.parametrize("factories", [
    # the factory builds a class through an alias the facts do not follow
    PLAIN_FACTORIES.replace("import Strategy", "import Strategy as Built")
    .replace("Strategy(args)", "Built(args)"),
    # a method of the factory's class, not a module function
    "class Holder:\n    " + PLAIN_FACTORIES.replace("\n", "\n    ")
    .replace("get_strategy(args)", "get_strategy(self, args)"),
    # a factory that returns what another, unknown, function builds
    PLAIN_FACTORIES.replace("strategy = Strategy(args)", "strategy = make(args)"),
])
def test_a_plain_factory_the_project_cannot_follow_keeps_the_finding(
    project: Path, factories: str
) -> None:
    pkg = _plain_strategy_project(project)
    (pkg / "utils.py").write_text(factories)
    assert _codes(project, ".") == [("trainer.py", 9)]


def test_a_warm_run_sees_the_plain_factory_change(project: Path, tmp_path: Path) -> None:
    pkg = _plain_strategy_project(project)
    (pkg / "batched.py").write_text(
        STRATEGY.format(name="Batched", base="", arguments=BATCH_ARGS)
    )
    cache = tmp_path / "cache"

    def warm() -> list[tuple[str, int]]:
        result = CliRunner().invoke(main, [
            "check", "--cache-dir", str(cache), "--output-format", "json", "--select", "SL201",
            str(project),
        ])
        assert result.exit_code in (0, 1), result.output
        return [(Path(f["filename"]).name, f["location"]["row"])
                for f in json.loads(result.stdout)]

    assert warm() == warm() == []
    (pkg / "utils.py").write_text(
        PLAIN_FACTORIES.replace("pkg.strategy import Strategy", "pkg.batched import Batched")
        .replace("Strategy(args)", "Batched(args)")
    )
    assert warm() == [("trainer.py", 9)]


@pytest.mark.parametrize("factories", [
    # the method comes from a library base class: not in the project
    FACTORIES.replace("from pkg.strategy import Strategy", "from accelerate import Strategy"),
    # one path returns an object the project cannot show
    FACTORIES.replace("    return strategy", "    if args.remote:\n"
                      "        return make_remote(args)\n    return strategy"),
    # the factory returns what it was given
    FACTORIES.replace("def get_strategy(args):", "def get_strategy(args, strategy=None):")
    .replace("    strategy = Strategy(args)\n", "    strategy = strategy or Strategy(args)\n"),
])
def test_a_factory_the_project_cannot_follow_keeps_the_finding(
    project: Path, factories: str
) -> None:
    _strategy_project(project, factories=factories)
    assert _codes(project, ".") == [("trainer.py", 9)]


# -- imports resolved by module path ---------------------------------------------------------------

LOOP = (
    "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
    "def main(items):\n"
    "    run_epochs(DataLoader(items, batch_size=8, sampler=DistributedSampler(items)), 3)\n\n\n"
    "def run_epochs(feed, epochs):\n"
    "    for epoch in range(epochs):\n"
    "        feed.sampler.set_epoch(epoch)\n"
)
UNKNOWN_CALLER = "{imports}\n\n\ndef elsewhere(cfg, loader):\n    run_epochs(loader, cfg.epochs)\n"


@pytest.mark.parametrize("imports", [
    "from tools.loop import run_epochs",  # no tools/loop.py in the project: unknown
    "from other.run_epochs import run_epochs",  # a module named like the function
    "import loop\nrun_epochs = loop.run_epochs",  # no loop.py beside it or above it
])
def test_an_import_is_matched_by_module_path_not_by_file_name(project: Path, imports: str) -> None:
    (project / "recipe").mkdir()
    (project / "recipe" / "loop.py").write_text(LOOP)
    (project / "bench").mkdir()
    (project / "bench" / "compare.py").write_text(UNKNOWN_CALLER.format(imports=imports))
    assert _codes(project, ".") == []


@pytest.mark.parametrize(("caller_at", "imports"), [
    ("bench/compare.py", "from recipe.loop import run_epochs"),  # from the project root
    ("recipe/compare.py", "from loop import run_epochs"),  # a script beside the module
    ("recipe/compare.py", "from .loop import run_epochs"),  # relative
    ("recipe/sub/compare.py", "from ..loop import run_epochs"),  # relative, one level up
    ("bench/compare.py", "from recipe import loop as lp\nrun_epochs = lp.run_epochs"),
    ("tests/compare.py", "from recipe.loop import run_epochs"),  # the src layout
])
def test_an_import_resolved_by_module_path_reaches_the_function(
    project: Path, caller_at: str, imports: str
) -> None:
    source = project / "src" if caller_at.startswith("tests/") else project
    (source / "recipe").mkdir(parents=True)
    (source / "recipe" / "loop.py").write_text(LOOP)
    caller = project / caller_at
    caller.parent.mkdir(parents=True, exist_ok=True)
    caller.write_text(UNKNOWN_CALLER.format(imports=imports))
    # A caller passing a loader of unknown origin: the function may get a batch sampler.
    assert [name for name, _ in _codes(project, ".")] == ["loop.py"]


# -- a batch-sampler branch behind an optional parameter the caller never passes ----------------

OPTIONAL_FACTORY = (
    "from torch.utils.data import BatchSampler, DataLoader, DistributedSampler\n\n\n"
    "def make_loader(items, size, plan={default}, *, rank_order=False):\n"
    "    order = DistributedSampler(items)\n"
    "{branch}"
    "    return DataLoader(items, batch_size=size, sampler=order)\n"
)
BATCHES = "        return DataLoader(items, batch_sampler=BatchSampler(order, size, 1))\n"
BRANCHES = {
    "is not None": "    if plan is not None:\n" + BATCHES,
    "truthy and": "    if plan and size > 1:\n" + BATCHES,
    "early return": "    if plan is None:\n"
                    "        return DataLoader(items, batch_size=size, sampler=order)\n"
                    + BATCHES[4:],
    "else of not": "    if not plan:\n        pass\n    else:\n" + BATCHES,
    "keyword-only": "    if rank_order:\n" + BATCHES,
    "rebound": "    if plan is None:\n        plan = size > 1\n    if plan:\n" + BATCHES,
}
USER = (
    "from pkg.factory import make_loader\n\n\n"
    "def main(items, epochs):\n"
    "    train = make_loader({arguments})\n"
    "    for epoch in range(epochs):\n"
    "        train.sampler.set_epoch(epoch)\n"
)


def _factory_project(project: Path, branch: str, default: str, arguments: str) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "factory.py").write_text(
        OPTIONAL_FACTORY.format(default=default, branch=BRANCHES[branch])
    )
    (project / "run.py").write_text(USER.format(arguments=arguments))


@pytest.mark.parametrize("branch", [b for b in BRANCHES if b != "rebound"])
def test_a_batch_sampler_branch_the_caller_never_takes_is_unreachable(
    project: Path, branch: str
) -> None:
    _factory_project(project, branch, "None", "items, 8")
    assert _codes(project, ".") == []


@pytest.mark.parametrize(("branch", "arguments"), [
    ("is not None", "items, 8, plan=[1, 2]"),
    ("is not None", "items, 8, [1, 2]"),  # positional
    ("truthy and", "items, 8, True"),
    ("early return", "items, 8, plan=None"),  # passed, even as None: not proven unreachable
    ("keyword-only", "items, 8, rank_order=True"),
    ("keyword-only", "items, 8, **options"),  # anything may be in there
    ("rebound", "items, 8"),  # the factory sets it itself: the branch is reachable
])
def test_a_caller_that_passes_the_parameter_keeps_the_finding(
    project: Path, branch: str, arguments: str
) -> None:
    _factory_project(project, branch, "None", arguments)
    assert _codes(project, ".") == [("run.py", 7)]


def test_a_default_that_takes_the_branch_keeps_the_finding(project: Path) -> None:
    # `plan=False` is not None: `if plan is not None:` is taken when the caller passes nothing.
    _factory_project(project, "is not None", "False", "items, 8")
    assert _codes(project, ".") == [("run.py", 7)]


def test_a_module_linked_into_the_recipe_folder_resolves_to_its_target(project: Path) -> None:
    # icefall's recipes link a shared data module into their folder under another name.
    shared = project / "shared"
    shared.mkdir()
    (shared / "datamodule.py").write_text(
        "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
        "class Data:\n"
        "    def train_loader(self, items):\n"
        "        return DataLoader(items, batch_size=None, sampler=DistributedSampler(items))\n"
    )
    recipe = project / "recipe"
    recipe.mkdir()
    (recipe / "corpus.py").symlink_to("../shared/datamodule.py")
    (recipe / "train.py").write_text(
        "from corpus import Data\n\n\n"
        "def main(items, epochs):\n"
        "    data = Data()\n"
        "    train_dl = data.train_loader(items)\n"
        "    for epoch in range(epochs):\n"
        "        train_dl.sampler.set_epoch(epoch)\n"
    )
    assert _codes(project, ".") == []
    (recipe / "corpus.py").unlink()  # the import no longer resolves: the loader is unknown
    assert _codes(project, ".") == [("train.py", 8)]


# -- SL202 follows the loader into the project function it is handed to -------------------------

SL202_MAIN = '''\
from torch.utils.data import DataLoader, DistributedSampler

from {module} import {function}


def main(dataset, model, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
{body}'''
PER_EPOCH = "    for epoch in range(epochs):\n        {function}(model, loader, epoch)\n"
ONCE = "    {function}(model, loader, epochs)\n"
HOOKS = "def on_epoch(state, epoch):\n    state.other_loader.sampler.set_epoch(epoch)\n"


def _sl202(project: Path) -> list[tuple[str, int]]:
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "json", "--select", "SL202",
               str(project)],
    )
    assert result.exit_code in (0, 1), result.output
    return [(Path(f["filename"]).name, f["location"]["row"]) for f in json.loads(result.stdout)]


@pytest.mark.parametrize(("engine", "body", "expected"), [
    # iterates the loader, sets no epoch: an unrelated set_epoch elsewhere does not count
    ("def train_one_epoch(model, data_loader, epoch):\n    for batch in data_loader:\n"
     "        model(batch)\n", PER_EPOCH, [("main.py", 7)]),
    # sets the epoch itself
    ("def train_one_epoch(model, data_loader, epoch):\n    data_loader.sampler.set_epoch(epoch)\n"
     "    for batch in data_loader:\n        model(batch)\n", PER_EPOCH, []),
    # hands the loader on: not followed, the project-wide check stays (HOOKS sets some epoch)
    ("def train_one_epoch(model, data_loader, epoch):\n    run(model, data_loader)\n",
     PER_EPOCH, []),
    # the epoch loop lives in the callee, handed the loader once
    ("def train_one_epoch(model, data_loader, epochs):\n    for epoch in range(epochs):\n"
     "        for batch in data_loader:\n            model(batch)\n", ONCE, [("main.py", 7)]),
    ("def train_one_epoch(model, data_loader, epochs):\n    for epoch in range(epochs):\n"
     "        data_loader.sampler.set_epoch(epoch)\n        for batch in data_loader:\n"
     "            model(batch)\n", ONCE, []),
])
def test_sl202_follows_the_loader_into_another_file(
    project: Path, engine: str, body: str, expected: list[tuple[str, int]]
) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "engine.py").write_text(engine)
    (project / "pkg" / "hooks.py").write_text(HOOKS)
    (project / "main.py").write_text(SL202_MAIN.format(
        module="pkg.engine", function="train_one_epoch",
        body=body.format(function="train_one_epoch"),
    ))
    assert _sl202(project) == expected


def test_sl202_an_import_that_does_not_resolve_keeps_the_project_wide_check(
    project: Path
) -> None:
    (project / "hooks.py").write_text(HOOKS)
    (project / "main.py").write_text(SL202_MAIN.format(
        module="elsewhere", function="train_one_epoch",
        body=PER_EPOCH.format(function="train_one_epoch"),
    ))
    assert _sl202(project) == []
    (project / "hooks.py").unlink()
    assert _sl202(project) == [("main.py", 7)]


@pytest.mark.parametrize("imports", ["from pkg.engine import train", "from .engine import train"])
def test_sl202_a_project_function_named_train_is_not_a_framework(
    project: Path, imports: str
) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "engine.py").write_text(
        "def train(model, data_loader, epoch):\n    for batch in data_loader:\n"
        "        model(batch)\n"
    )
    source = SL202_MAIN.format(module="pkg.engine", function="train",
                               body=PER_EPOCH.format(function="train"))
    source = source.replace("from pkg.engine import train", imports)
    (project / "pkg" / "main.py").write_text(source)
    assert _sl202(project) == [("main.py", 7)]
    # The same call to Lightning's entry point is a hand-off.
    (project / "pkg" / "main.py").write_text(source.replace(imports, "from lightning import train"))
    assert _sl202(project) == []


# timm's train.py pattern: a loader from timm's `create_loader`, its epoch set on `.sampler`.
TIMM_TRAIN = '''\
from {module} import create_loader{alias}


def main(dataset, epochs, distributed, **options):
    loader_train = {name}(dataset, input_size=224, batch_size=32, is_training=True{more})
    for epoch in range(epochs):
        if distributed and hasattr(loader_train.sampler, "set_epoch"):
            loader_train.sampler.set_epoch(epoch)
        for batch in loader_train:
            print(batch)
'''


@pytest.mark.parametrize(("module", "alias", "name", "more", "flagged"), [
    # timm builds it with sampler= and no batch_sampler=, and its PrefetchLoader passes
    # `.sampler` through: right.
    ("timm.data", "", "create_loader", "", False),
    ("timm.data.loader", " as make_loader", "make_loader", "", False),
    # ... unless asked for scheduled batching, which builds a batch_sampler= (or may be asked
    # through a spread).
    ("timm.data", "", "create_loader", ", scheduled_batching=True", True),
    ("timm.data", "", "create_loader", ", **options", True),
    # A library the rule knows nothing of may build it with batch_sampler=.
    ("visionkit.data", "", "create_loader", "", True),
])
def test_a_known_library_factory_carries_no_batch_sampler(
    project: Path, module: str, alias: str, name: str, more: str, flagged: bool
) -> None:
    (project / "train.py").write_text(
        TIMM_TRAIN.format(module=module, alias=alias, name=name, more=more)
    )
    assert _codes(project, ".") == ([("train.py", 8)] if flagged else [])


def test_a_project_of_the_libraries_name_is_read_for_itself(project: Path) -> None:
    # A checkout of the library (or a package of the same name) has its own facts: its
    # create_loader here builds a batch sampler.
    data = project / "timm" / "data"
    data.mkdir(parents=True)
    (project / "timm" / "__init__.py").write_text("")
    (data / "__init__.py").write_text(
        "from torch.utils.data import BatchSampler, DataLoader, DistributedSampler\n\n\n"
        "def create_loader(dataset, input_size, batch_size, is_training):\n"
        "    batches = BatchSampler(DistributedSampler(dataset), batch_size, False)\n"
        "    return DataLoader(dataset, batch_sampler=batches)\n"
    )
    (project / "train.py").write_text(
        TIMM_TRAIN.format(module="timm.data", alias="", name="create_loader", more="")
    )
    assert _codes(project, ".") == [("train.py", 8)]


# A runner that wraps each loader twice as it builds it, rebinding one name (LAVIS's
# `_create_loader` and the projects built on it): a prefetching wrapper that hands every
# attribute it lacks to the loader, then an endless iterator that sets the epoch on
# `.sampler` when the loader runs out.
WRAPPERS = '''\
import time


class Prefetcher(object):
    def __init__(self, loader):
        self.loader = loader
        self.batch = None

    def __iter__(self):
        return iter(self.loader)
{extra}
    def __getattr__(self, name):
{forward}


class Endless:
    def __init__(self, dataloader, use_distributed=False):
        self._dataloader = dataloader
        self._iter = iter(self._dataloader)
        self._epoch = 0

    def __next__(self):
        try:
            return next(self._iter)
        except StopIteration:
            self._epoch += 1
            if hasattr(self._dataloader.sampler, "set_epoch"):
                self._dataloader.sampler.set_epoch(self._epoch)
            time.sleep(1)
            self._iter = iter(self._dataloader)
            return next(self._iter)
'''

GETATTR = "        return getattr(self.loader, name)\n"

RUNNER = '''\
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler

from wrappers import Endless, Prefetcher


def build(dataset, batch_size, is_train, streaming):
    if streaming:
        loader = iter(DataLoader(dataset, batch_size=batch_size))
    else:
        sampler = DistributedSampler(dataset, shuffle=is_train)
        loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
{between}        loader = Prefetcher(loader)
        if is_train:
            loader = Endless(loader, use_distributed=True)
    return loader
'''

SHARDED_BATCHES = (
    "        if is_train:\n"
    "            batches = BatchSampler(sampler, batch_size, drop_last=True)\n"
    "            loader = DataLoader(dataset, batch_sampler=batches)\n"
)


@pytest.mark.parametrize("forward", [
    GETATTR,
    "        return self.loader.__getattribute__(name)\n",
    "        method = self.loader.__getattribute__(name)\n        return method\n",
])
def test_a_loader_wrapped_in_a_forwarding_wrapper_is_followed(
    project: Path, forward: str
) -> None:
    # Each wrap sees the value just before it: Endless gets the Prefetcher, which forwards
    # `.sampler` and `.batch_sampler` to a loader built with `sampler=` only.
    (project / "wrappers.py").write_text(WRAPPERS.format(extra="", forward=forward))
    (project / "runner.py").write_text(RUNNER.format(between=""))
    assert _codes(project, ".") == []
    assert _codes(project, "wrappers.py") == []


def test_a_batch_sampler_on_some_path_through_the_wrapper_is_flagged(project: Path) -> None:
    # A branch before the wrap may bind a loader with `batch_sampler=`: both values reach it.
    (project / "wrappers.py").write_text(WRAPPERS.format(extra="", forward=GETATTR))
    (project / "runner.py").write_text(RUNNER.format(between=SHARDED_BATCHES))
    assert _codes(project, ".") == [("wrappers.py", 29)]


@pytest.mark.parametrize(("extra", "forward"), [
    # A wrapper that answers `.sampler` itself is not taken for the loader's.
    ("\n    @property\n    def sampler(self):\n        return self.loader.sampler\n", GETATTR),
    ("\n    sampler = None\n", GETATTR),
    # A `__getattr__` that does more than forward.
    ("", "        if name == 'sampler':\n            return None\n" + GETATTR),
])
def test_a_wrapper_that_may_answer_sampler_itself_keeps_the_finding(
    project: Path, extra: str, forward: str
) -> None:
    (project / "wrappers.py").write_text(WRAPPERS.format(extra=extra, forward=forward))
    (project / "runner.py").write_text(RUNNER.format(between=""))
    line = 28 + extra.count("\n") + forward.count("\n")  # the `set_epoch` call
    assert _codes(project, ".") == [("wrappers.py", line)]


# Ranks that hold no data get a stand-in that only counts steps (GLM's finetuning): the epoch
# call is guarded by the rank that holds the real loader, which the rule cannot see, but the
# stand-in has no `.sampler` at all, so no batch sampler is missed through it.
STAND_IN = '''\
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler


class Placeholder:
    def __init__(self, steps):
        self.steps = steps

    def __iter__(self):
        for _ in range(self.steps):
            yield None
{extra}

def build(dataset, steps, holds_data):
    if holds_data:
        loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    else:
        loader = Placeholder(steps)
    return loader


def train(dataset, steps, holds_data, epochs):
    loader = build(dataset, steps, holds_data)
    for epoch in range(epochs):
        if holds_data:
            loader.sampler.set_epoch(epoch)
        for batch in loader:
            pass
'''


@pytest.mark.parametrize(("extra", "flagged"), [
    ("", False),
    # A stand-in that stores a batch sampler of its own (or may) is not known.
    ("\n    def attach(self, batches):\n        self.batch_sampler = batches\n", True),
    ("\n    def __getattr__(self, name):\n        return None\n", True),
])
def test_a_stand_in_without_a_sampler_carries_no_batch_sampler(
    project: Path, extra: str, flagged: bool
) -> None:
    (project / "train.py").write_text(STAND_IN.format(extra=extra))
    line = 26 + max(extra.count("\n") - 1, 0)  # the `set_epoch` call
    assert _codes(project, ".") == ([("train.py", line)] if flagged else [])


TUPLE_ARGUMENT = '''\
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler


def train(model, loaders, epochs):
    for epoch in range(epochs):
        loaders[0].sampler.set_epoch(epoch)
        for batch in loaders[0]:
            model(batch)


def main(dataset, model):
    loader = DataLoader(dataset, {arguments})
    train(model, (loader, None), 3)
'''


@pytest.mark.parametrize(("arguments", "flagged"), [(SAMPLER_ONLY, False), (BATCH_SAMPLER, True)])
def test_an_element_of_a_tuple_argument_is_followed(
    project: Path, arguments: str, flagged: bool
) -> None:
    (project / "train.py").write_text(TUPLE_ARGUMENT.format(arguments=arguments))
    assert _codes(project, ".") == ([("train.py", 6)] if flagged else [])


# Loaders kept in a dict under their split's name: the epoch loop reads `loaders["train"]`.
KEYED = '''\
from torch.utils.data import DataLoader, DistributedSampler

from batching import batched


def shuffled(dataset):
    return DataLoader(dataset, batch_size=16, sampler=DistributedSampler(dataset))


{build}


def fit(splits, epochs):
    loaders = build(splits)
    for epoch in range(epochs):
        loaders["train"].sampler.set_epoch(epoch)
        for batch in loaders["train"]:
            pass
'''

BATCHING = '''\
from torch.utils.data import DataLoader


def batched(dataset, batches):
    return DataLoader(dataset, batch_sampler=batches)
'''

KEYED_BUILDS = {
    "literal": (
        "def build(splits):\n"
        "    return {'train': shuffled(splits[0]), 'valid': DataLoader(splits[1])}\n"
    ),
    "named literal": (
        "def build(splits):\n"
        "    loaders = {'train': shuffled(splits[0])}\n"
        "    loaders['valid'] = DataLoader(splits[1])\n"
        "    return loaders\n"
    ),
    "stored": (
        "def build(splits):\n"
        "    loaders = {}\n"
        "    loaders['train'] = shuffled(splits[0])\n"
        "    return loaders\n"
    ),
    # Stored over, or changed some other way, or under a key not known: the batched loader
    # (or anything) may be what the loop reads.
    "stored over": (
        "def build(splits):\n"
        "    loaders = {'train': shuffled(splits[0])}\n"
        "    loaders['train'] = batched(splits[0], splits[2])\n"
        "    return loaders\n"
    ),
    "updated": (
        "def build(splits):\n"
        "    loaders = {'train': shuffled(splits[0])}\n"
        "    loaders.update(train=batched(splits[0], splits[2]))\n"
        "    return loaders\n"
    ),
    "computed key": (
        "def build(splits):\n"
        "    loaders = {'train': shuffled(splits[0])}\n"
        "    for name in ('train',):\n"
        "        loaders[name] = batched(splits[0], splits[2])\n"
        "    return loaders\n"
    ),
    "aliased": (
        "def build(splits):\n"
        "    loaders = {'train': shuffled(splits[0])}\n"
        "    other = loaders\n"
        "    other['train'] = batched(splits[0], splits[2])\n"
        "    return loaders\n"
    ),
    "missing key": (
        "def build(splits):\n"
        "    return {'valid': shuffled(splits[1])}\n"
    ),
}


@pytest.mark.parametrize(("shape", "flagged"), [
    ("literal", False), ("named literal", False), ("stored", False),
    ("stored over", True), ("updated", True), ("computed key", True), ("aliased", True),
    ("missing key", True),
])
def test_a_loader_kept_under_a_key_is_followed(project: Path, shape: str, flagged: bool) -> None:
    (project / "batching.py").write_text(BATCHING)
    code = KEYED.format(build=KEYED_BUILDS[shape])
    (project / "train.py").write_text(code)
    line = code.splitlines().index('        loaders["train"].sampler.set_epoch(epoch)') + 1
    assert _codes(project, ".") == ([("train.py", line)] if flagged else [])


def test_a_dict_built_in_the_epoch_loops_own_function_is_followed(project: Path) -> None:
    # The linted file's side (libcst) reads the same shapes.
    (project / "batching.py").write_text(BATCHING)
    (project / "train.py").write_text(
        "from torch.utils.data import DataLoader, DistributedSampler\n\n"
        "from batching import batched\n\n\n"
        "def fit(dataset, batches, epochs, resume):\n"
        "    loaders = {}\n"
        "    loaders['train'] = DataLoader(dataset, sampler=DistributedSampler(dataset))\n"
        "    for epoch in range(epochs):\n"
        "        loaders['train'].sampler.set_epoch(epoch)\n\n\n"
        "def fit_resumed(dataset, batches, epochs):\n"
        "    loaders = {'train': DataLoader(dataset, sampler=DistributedSampler(dataset))}\n"
        "    loaders['train'] = batched(dataset, batches)\n"
        "    for epoch in range(epochs):\n"
        "        loaders['train'].sampler.set_epoch(epoch)\n"
    )
    assert _codes(project, ".") == [("train.py", 17)]


@pytest.mark.parametrize(("train", "flagged"), [
    ("shuffled(splits[0])", False), ("batched(splits[0], splits[2])", True),
])
def test_a_dict_of_loaders_returned_in_a_tuple_is_followed(
    project: Path, train: str, flagged: bool
) -> None:
    # `datasets, loaders, mixup = build_loader(config)`, then `loaders["train"]`.
    (project / "batching.py").write_text(BATCHING)
    build = (
        "def build(splits):\n"
        f"    return splits, {{'train': {train}, 'valid': DataLoader(splits[1])}}, None\n"
    )
    code = KEYED.format(build=build).replace(
        "    loaders = build(splits)\n", "    datasets, loaders, mixing = build(splits)\n"
    )
    (project / "train.py").write_text(code)
    line = code.splitlines().index('        loaders["train"].sampler.set_epoch(epoch)') + 1
    assert _codes(project, ".") == ([("train.py", line)] if flagged else [])


RECEIVED_DICT = '''\
from torch.utils.data import DataLoader, DistributedSampler

from batching import batched


def build(ds):
    return {{"train": DataLoader(ds, sampler=DistributedSampler(ds))}}


def fit(ds, batches, epochs):
    loaders = build(ds)
{change}    for epoch in range(epochs):
        loaders["train"].sampler.set_epoch(epoch)


class Trainer:
    def __init__(self, ds):
        self.loaders = {{"train": DataLoader(ds, sampler=DistributedSampler(ds))}}

    def swap(self, ds, batches, split):
{swap}
    def run(self, epochs):
        for epoch in range(epochs):
            self.loaders["train"].sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(("change", "swap", "flagged"), [
    ("", "        pass\n", []),
    # The function that reads the dict, or a method of the class that keeps it, stores
    # another loader there (or may: a computed key, `update`, a second name).
    ("    loaders['train'] = batched(ds, batches)\n", "        pass\n", [14]),
    ("    loaders.update(train=batched(ds, batches))\n", "        pass\n", [14]),
    ("", "        self.loaders['train'] = batched(ds, batches)\n", [25]),
    ("", "        self.loaders[split] = batched(ds, batches)\n", [25]),
    ("", "        self.loaders.update(train=batched(ds, batches))\n", [25]),
    ("", "        held = self.loaders\n        held['train'] = batched(ds, batches)\n", [26]),
])
def test_what_is_stored_in_a_dict_after_it_is_built_counts(
    project: Path, change: str, swap: str, flagged: list[int]
) -> None:
    (project / "batching.py").write_text(BATCHING)
    code = RECEIVED_DICT.format(change=change, swap=swap)
    (project / "train.py").write_text(code)
    assert _codes(project, ".") == [("train.py", line) for line in flagged]


BASE_RUNNER = '''\
from torch.utils.data import DataLoader, DistributedSampler

from batching import batched


class Runner:
    def __init__(self, dataset, batches):
        self.loader = {built}
'''

SUB_RUNNER = '''\
from torch.utils.data import DataLoader, DistributedSampler

from base_runner import Runner


class EpochRunner(Runner):
{own}
    def run(self, epochs):
        for epoch in range(epochs):
            self.loader.sampler.set_epoch(epoch)
'''

SHUFFLED_LOADER = "DataLoader(dataset, sampler=DistributedSampler(dataset))"


@pytest.mark.parametrize(("built", "own", "flagged"), [
    # Assigned by the base class's __init__, in another file: followed there.
    (SHUFFLED_LOADER, "", False),
    ("batched(dataset, batches)", "", True),
    # The subclass assigns it too: either value may be the one read.
    ("batched(dataset, batches)",
     "    def reload(self, dataset):\n        self.loader = " + SHUFFLED_LOADER + "\n", True),
])
def test_an_attribute_a_base_class_assigns_is_followed(
    project: Path, built: str, own: str, flagged: bool
) -> None:
    (project / "batching.py").write_text(BATCHING)
    (project / "base_runner.py").write_text(BASE_RUNNER.format(built=built))
    code = SUB_RUNNER.format(own=own)
    (project / "sub_runner.py").write_text(code)
    line = code.splitlines().index("            self.loader.sampler.set_epoch(epoch)") + 1
    assert _codes(project, ".") == ([("sub_runner.py", line)] if flagged else [])


# An override that extends what its base method returns: `loaders = super().build()`, then
# keys stored over it (USB's `set_data_loader` overrides), read by the base class's epoch loop.
ALGORITHM_BASE = '''\
from torch.utils.data import DataLoader, DistributedSampler

from batching import batched


class AlgorithmBase:
    def __init__(self, dataset, batches):
        self.dataset, self.batches = dataset, batches
        self.loaders = self.set_loaders()

    def set_loaders(self):
        loaders = {{}}
        loaders["train"] = {train}
        return loaders

    def train(self, epochs):
        for epoch in range(epochs):
            self.loaders["train"].sampler.set_epoch(epoch)
'''

ALGORITHM = '''\
from torch.utils.data import DataLoader

from {base_module} import {base}
from batching import batched


class Extended({base}):
    def set_loaders(self):
        loaders = super().set_loaders()
{stores}        return loaders
'''

SHUFFLED_TRAIN = "DataLoader(self.dataset, sampler=DistributedSampler(self.dataset))"


@pytest.mark.parametrize(("train", "stores", "flagged"), [
    # The override adds a key of its own: the loop's loader is still the base's.
    (SHUFFLED_TRAIN, "        loaders['eval'] = DataLoader(self.dataset)\n", False),
    (SHUFFLED_TRAIN, "", False),
    # The base's own loader has a batch sampler.
    ("batched(self.dataset, self.batches)", "        loaders['eval'] = DataLoader([])\n", True),
    # The override replaces the loop's loader with a batched one.
    (SHUFFLED_TRAIN, "        loaders['train'] = batched(self.dataset, self.batches)\n", True),
    # ... on one path only: either may be the one read.
    (SHUFFLED_TRAIN,
     "        if self.batches:\n            loaders['train'] = batched(self.dataset, 2)\n", True),
])
def test_what_an_override_adds_to_its_base_method_s_dict_counts(
    project: Path, train: str, stores: str, flagged: bool
) -> None:
    (project / "batching.py").write_text(BATCHING)
    base = ALGORITHM_BASE.format(train=train)
    (project / "algorithm_base.py").write_text(base)
    (project / "extended.py").write_text(
        ALGORITHM.format(base_module="algorithm_base", base="AlgorithmBase", stores=stores)
    )
    line = base.splitlines().index('            self.loaders["train"].sampler.set_epoch(epoch)') + 1
    assert _codes(project, ".") == ([("algorithm_base.py", line)] if flagged else [])


def test_super_of_a_class_the_project_does_not_define_is_unknown(project: Path) -> None:
    # `super().set_loaders()` of a library base: nothing known of what it returns.
    (project / "batching.py").write_text(BATCHING)
    code = ALGORITHM.format(
        base_module="library", base="LibraryBase",
        stores="        loaders['eval'] = DataLoader([])\n",
    ) + (
        "\n    def train(self, epochs):\n"
        "        for epoch in range(epochs):\n"
        "            self.set_loaders()['train'].sampler.set_epoch(epoch)\n"
    )
    (project / "extended.py").write_text(code)
    line = len(code.splitlines())
    assert _codes(project, ".") == [("extended.py", line)]


STAR_BUILD = '''\
from torch.utils.data import DataLoader, DistributedSampler


def get_data_loader(dataset, batches):
    return {other}
'''

STAR_USER = '''\
from utils import get_data_loader


def main(dataset, epochs):
    loader = get_data_loader(dataset, 4)
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(("other", "flagged"), [
    ("DataLoader(dataset, sampler=DistributedSampler(dataset))", False),
    ("DataLoader(dataset, batch_sampler=batches)", True),
])
def test_a_function_a_package_reexports_with_a_star_import_is_followed(
    project: Path, other: str, flagged: bool
) -> None:
    # `from .build import *` in the package's __init__.py (USB's semilearn/core/utils).
    (project / "utils").mkdir()
    (project / "utils" / "__init__.py").write_text("from .build import *\nfrom .misc import *\n")
    (project / "utils" / "misc.py").write_text("def helper():\n    return 1\n")
    (project / "utils" / "build.py").write_text(STAR_BUILD.format(other=other))
    (project / "main.py").write_text(STAR_USER)
    assert _codes(project, ".") == ([("main.py", 7)] if flagged else [])


OVER_A_CALL = '''\
from torch.utils.data import DataLoader, DistributedSampler

from batching import batched


def build(dataset):
    return {{"train": DataLoader(dataset, sampler=DistributedSampler(dataset))}}


def build_more(dataset, batches):
    loaders = build(dataset)
{store}    return loaders


def main(dataset, batches, epochs):
    loaders = build_more(dataset, batches)
    for epoch in range(epochs):
        loaders["train"].sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(("store", "flagged"), [
    ("", False),
    ("    loaders['valid'] = DataLoader(dataset)\n", False),
    # Stored over what build() returned, then returned: the loop reads the batched loader
    # (a store a build before this one did not see).
    ("    loaders['train'] = batched(dataset, batches)\n", True),
    # Under a computed key: it may be "train" (missed by 98b6e19).
    ("    loaders[str(batches)] = batched(dataset, batches)\n", True),
    # Stored by a method that names its keys (before 2c997ca, any `update` was unknown).
    ("    loaders.update(valid=batched(dataset, batches))\n", False),
    ("    loaders.update({'train': batched(dataset, batches)})\n", True),
    ("    loaders.setdefault('train', batched(dataset, batches))\n", True),
    # Keys it cannot tell: a call's value changed some other way is taken as it was returned
    # (`with_keyed_stores`: most are no dict at all).
    ("    loaders.update(more)\n", False),
])
def test_keys_stored_over_the_dict_a_call_returned_count(
    project: Path, store: str, flagged: bool
) -> None:
    (project / "batching.py").write_text(BATCHING)
    code = OVER_A_CALL.format(store=store)
    (project / "train.py").write_text(code)
    line = code.splitlines().index('        loaders["train"].sampler.set_epoch(epoch)') + 1
    assert _codes(project, ".") == ([("train.py", line)] if flagged else [])


# A dict read under a key that is no constant (`for phase in ["train", "val"]:
# loaders[phase]`, the PyTorch tutorials' shape) or built by a comprehension.
PHASES = '''\
from torch.utils.data import DataLoader, DistributedSampler

from batching import batched


def build(datasets, batches):
    return {built}


def train(datasets, batches, model, epochs):
    loaders = build(datasets, batches)
{extra}    for epoch in range(epochs):
        for phase in ["train", "val"]:
            loaders[phase].sampler.set_epoch(epoch)
            for batch in loaders[phase]:
                model(batch)
'''

SHUFFLED = "DataLoader(datasets[{0}], sampler=DistributedSampler(datasets[{0}]))"


@pytest.mark.parametrize(("built", "extra", "flagged"), [
    ('{"train": ' + SHUFFLED.format(0) + ', "val": ' + SHUFFLED.format(1) + "}", "", False),
    # Any value may be the one read: one batched loader is enough.
    ('{"train": ' + SHUFFLED.format(0) + ', "val": batched(datasets[1], batches)}', "", True),
    ("{x: " + SHUFFLED.format("x") + " for x in datasets}", "", False),
    ("{x: batched(datasets[x], batches) for x in datasets}", "", True),
    # Stored later by the reader, under a constant key or a computed one.
    ("{x: " + SHUFFLED.format("x") + " for x in datasets}",
     "    loaders['val'] = batched(datasets[1], batches)\n", True),
    ("{x: " + SHUFFLED.format("x") + " for x in datasets}",
     "    loaders[len(datasets)] = batched(datasets[1], batches)\n", True),
    # Not a dict at all: a tuple read at a computed index, any element.
    ("(" + SHUFFLED.format(0) + ", " + SHUFFLED.format(1) + ")", "", False),
    ("(" + SHUFFLED.format(0) + ", batched(datasets[1], batches))", "", True),
])
def test_a_dict_read_under_a_key_that_is_no_constant_is_followed(
    project: Path, built: str, extra: str, flagged: bool
) -> None:
    (project / "batching.py").write_text(BATCHING)
    code = PHASES.format(built=built, extra=extra)
    (project / "train.py").write_text(code)
    line = code.splitlines().index("            loaders[phase].sampler.set_epoch(epoch)") + 1
    assert _codes(project, ".") == ([("train.py", line)] if flagged else [])


# The loop names the keys it reads: a dict that also holds a batched loader under another key
# (`"test"`) is not read there (flagged by 5a76407, which read every value).
LOOPED_KEYS = '''\
from torch.utils.data import DataLoader, DistributedSampler

from batching import batched


def build(datasets, batches):
    return {{
        "train": DataLoader(datasets[0], sampler=DistributedSampler(datasets[0])),
        "val": DataLoader(datasets[1], sampler=DistributedSampler(datasets[1])),
        "test": batched(datasets[2], batches),
    }}


def train(datasets, batches, model, epochs, phases):
    loaders = build(datasets, batches)
    for epoch in range(epochs):
        for phase in {loop}:
{body}            loaders[phase].sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(("loop", "body", "flagged"), [
    ('["train", "val"]', "", False),
    ("('train',)", "", False),
    ('{"val", "train"}', "            model = phase\n", False),
    ('["train", "test"]', "", True),
    # Not a list of constants, or a name the body binds again: any key.
    ("phases", "", True),
    ('["train", f"{epoch}"]', "", True),
    ('["train", "val"]', "            phase = phases[epoch]\n", True),
    ('["train", "val"]', "            for phase in phases:\n                pass\n", True),
    ('["train", "val"]', "            with open(phases) as phase:\n                pass\n", True),
    ('["train", "val"]', "            if (phase := phases[0]):\n                pass\n", True),
    ('["train", "val"]', "            from splits import phase\n", True),
    ('["train", "val"]', "            global seen\n            phase = phases[epoch]\n", True),
    # A store under the variable reads it, binds nothing: the loop's keys stand.
    ('["train", "val"]', "            phases[phase] = epoch\n", False),
    ('["train", "val"]', "            match phases:\n                case [phase]:\n"
     "                    pass\n", True),
])
def test_a_loop_over_constant_keys_reads_those_keys_only(
    project: Path, loop: str, body: str, flagged: bool
) -> None:
    (project / "batching.py").write_text(BATCHING)
    code = LOOPED_KEYS.format(loop=loop, body=body)
    (project / "train.py").write_text(code)
    line = code.splitlines().index("            loaders[phase].sampler.set_epoch(epoch)") + 1
    assert _codes(project, ".") == ([("train.py", line)] if flagged else [])


def test_a_loop_over_constant_keys_of_a_dict_on_self(project: Path) -> None:
    (project / "batching.py").write_text(BATCHING)
    code = SELF_PHASES.format(
        more='        self.loaders["test"] = batched(datasets[1], batches)\n'
    )
    (project / "runner.py").write_text(code.replace("in self.loaders:", 'in ("train",):'))
    assert _codes(project, ".") == []
    (project / "runner.py").write_text(code.replace("in self.loaders:", 'in ("train", "test"):'))
    line = code.splitlines().index("                self.loaders[phase].sampler.set_epoch(epoch)")
    assert _codes(project, ".") == [("runner.py", line + 1)]


# `loaders.get("train")` reads the dict as `loaders["train"]` does, or gives the default (an
# unknown call `get` before: flagged whatever the dict held).
DICT_GET = '''\
from torch.utils.data import DataLoader, DistributedSampler

from batching import batched


def build(datasets, batches):
    return {{
        "train": DataLoader(datasets[0], sampler=DistributedSampler(datasets[0])),
        "test": batched(datasets[2], batches),
    }}


def train(datasets, batches, epochs, fallback):
    loaders = build(datasets, batches)
    for epoch in range(epochs):
        for phase in ("train",):
            {read}.sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(("read", "flagged"), [
    ('loaders.get("train")', False),
    ("loaders.get(phase)", False),
    ('loaders.get("train", loaders["train"])', False),
    ('loaders.get("test")', True),
    ('loaders.get("train", fallback)', True),  # the default is unknown
    ('loaders.get("train", batched(datasets[0], batches))', True),
    ("loaders.get(str(epoch))", True),
])
def test_a_dict_get_reads_under_its_key(project: Path, read: str, flagged: bool) -> None:
    (project / "batching.py").write_text(BATCHING)
    code = DICT_GET.format(read=read)
    (project / "train.py").write_text(code)
    line = code.splitlines().index(f"            {read}.sampler.set_epoch(epoch)") + 1
    assert _codes(project, ".") == ([("train.py", line)] if flagged else [])


@pytest.mark.parametrize(("key", "flagged"), [("train", False), ("test", True)])
def test_a_dict_get_returned_from_another_file_is_followed(
    project: Path, key: str, flagged: bool
) -> None:
    # The project's facts read `.get` too (`ast`, the file that returns it).
    (project / "batching.py").write_text(BATCHING)
    (project / "data.py").write_text(
        DICT_GET.format(read="").split("def train")[0]
        + f"def pick(datasets, batches):\n    return build(datasets, batches).get({key!r})\n"
    )
    (project / "train.py").write_text(
        "from data import pick\n\n\ndef train(datasets, batches, epochs):\n"
        "    loader = pick(datasets, batches)\n"
        "    for epoch in range(epochs):\n"
        "        loader.sampler.set_epoch(epoch)\n"
    )
    assert _codes(project, ".") == ([("train.py", 7)] if flagged else [])


OBJECT_GET = '''\
from torch.utils.data import DataLoader, DistributedSampler

from batching import batched


class Loaders:
    def __init__(self, datasets, batches):
        self.datasets, self.batches = datasets, batches

    def get(self, name):
        return {built}


def train(datasets, batches, epochs):
    loaders = Loaders(datasets, batches)
    for epoch in range(epochs):
        loaders.get("train").sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(("built", "flagged"), [
    ("DataLoader(self.datasets[name], sampler=DistributedSampler(self.datasets[name]))", False),
    ("batched(self.datasets[name], self.batches)", True),
])
def test_the_get_method_of_a_project_object_is_its_own(
    project: Path, built: str, flagged: bool
) -> None:
    # `x.get(key)` of an object the project builds calls its class's `get` (no dict read).
    (project / "batching.py").write_text(BATCHING)
    code = OBJECT_GET.format(built=built)
    (project / "train.py").write_text(code)
    line = code.splitlines().index('        loaders.get("train").sampler.set_epoch(epoch)') + 1
    assert _codes(project, ".") == ([("train.py", line)] if flagged else [])


# A dict whose key is stored from its own value (`out["w"] = out["w"] * 2`, a collate
# function's shape): a cycle of reads. The project's facts recursed until Python's limit and
# the whole run stopped (exit 2: NVIDIA/DeepLearningExamples); in the file being linted, it was
# a false SL001 ("nested too deeply").
READ_BACK = '''\
from torch.utils.data import DataLoader


def collate(batch):
    out = {"w": batch}
    out["w"] = out["w"] * 2 if out["w"] is not None else out["w"]
    out["x"] = [out["x"], out["w"]]
    return out


def train(loader, epochs):
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)


def keyed(dataset, epochs):
    loaders = {"w": DataLoader(dataset)}
    loaders["w"] = loaders["w"]
    for epoch in range(epochs):
        loaders["w"].sampler.set_epoch(epoch)
'''


def test_a_key_stored_from_its_own_value_is_no_endless_read(project: Path) -> None:
    (project / "collate.py").write_text(READ_BACK)
    (project / "train.py").write_text(
        "from collate import collate\n\n\ndef main(b):\n    return collate(b)\n"
    )
    result = CliRunner().invoke(main, [
        "check", "--no-cache", "--output-format", "json", str(project),
    ])
    assert result.exit_code == 1, result.output
    codes = [(f["code"], f["location"]["row"]) for f in json.loads(result.stdout)]
    assert ("SL001", 1) not in codes
    assert ("SL201", 13) in codes  # `loader` is a parameter nobody passes: unknown, as before


def test_a_key_stored_from_its_own_value_in_the_linted_file_is_read(project: Path) -> None:
    (project / "keyed.py").write_text(READ_BACK.split("def collate")[0] + "def keyed" + (
        READ_BACK.split("def keyed")[1]
    ))
    result = CliRunner().invoke(main, [
        "check", "--no-cache", "--output-format", "json", str(project / "keyed.py"),
    ])
    codes = [f["code"] for f in json.loads(result.stdout)]
    assert "SL001" not in codes, result.output


# A wrapper whose `sampler` property is the batch sampler of the loader it wraps (NVIDIA's
# Efficientdet `PrefetchLoader`): `.sampler.set_epoch` reaches that batch sampler.
PREFETCHED = '''\
from torch.utils.data import DataLoader


class Prefetch:
    def __init__(self, loader):
        self.loader = loader

    def __iter__(self):
        yield from self.loader

    @property
    def sampler(self):
        return self.loader.{gives}


def create(dataset, batches):
    return Prefetch(DataLoader(dataset, batch_sampler=batches))


def train(dataset, batches, epochs):
    loader = create(dataset, batches)
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(("gives", "flagged"), [("batch_sampler", False), ("sampler", True)])
def test_a_wrapper_whose_sampler_is_the_batch_sampler_reaches_it(
    project: Path, gives: str, flagged: bool
) -> None:
    code = PREFETCHED.format(gives=gives)
    (project / "train.py").write_text(code)
    line = code.splitlines().index("        loader.sampler.set_epoch(epoch)") + 1
    assert _codes(project, ".") == ([("train.py", line)] if flagged else [])


SELF_PHASES = '''\
from torch.utils.data import DataLoader, DistributedSampler

from batching import batched


class Runner:
    def __init__(self, datasets, batches):
        self.loaders = {{}}
        self.loaders["train"] = DataLoader(datasets[0], sampler=DistributedSampler(datasets[0]))
{more}
    def run(self, epochs):
        for epoch in range(epochs):
            for phase in self.loaders:
                self.loaders[phase].sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(("more", "flagged"), [
    ("", False),
    ('        self.loaders["val"] = DataLoader(datasets[1])\n', False),
    ('        self.loaders["val"] = batched(datasets[1], batches)\n', True),
    # Stored under a computed key: under some key, which any read may meet.
    ("        for name in datasets:\n            self.loaders[name] = DataLoader(datasets[name])\n",
     False),
    ("        for name in datasets:\n            self.loaders[name] = batched(datasets[name], 2)\n",
     True),
])
def test_a_dict_on_self_read_under_any_key_counts_every_store(
    project: Path, more: str, flagged: bool
) -> None:
    (project / "batching.py").write_text(BATCHING)
    code = SELF_PHASES.format(more=more)
    (project / "runner.py").write_text(code)
    line = code.splitlines().index("                self.loaders[phase].sampler.set_epoch(epoch)")
    assert _codes(project, ".") == ([("runner.py", line + 1)] if flagged else [])


@pytest.mark.parametrize(("more", "flagged"), [
    ("", False),
    ('        self.loaders["val"] = batched(datasets[1], batches)\n', False),
    ('        self.loaders["train"] = batched(datasets[1], batches)\n', True),
    ("        self.loaders.update(val=batched(datasets[1], batches))\n", False),
    ('        self.loaders.update({"train": batched(datasets[1], batches)})\n', True),
    ("        self.loaders.update(datasets)\n", True),
])
def test_an_empty_dict_on_self_filled_by_stores_holds_what_is_stored(
    project: Path, more: str, flagged: bool
) -> None:
    # `self.loaders = {}`, then `self.loaders["train"] = ...`: the empty dict alone lacked the
    # key, so its value was unknown (flagged by 3299d3b and earlier builds).
    (project / "batching.py").write_text(BATCHING)
    code = SELF_PHASES.format(more=more).replace(
        "            for phase in self.loaders:\n"
        "                self.loaders[phase].sampler.set_epoch(epoch)\n",
        '            self.loaders["train"].sampler.set_epoch(epoch)\n',
    )
    (project / "runner.py").write_text(code)
    line = code.splitlines().index('            self.loaders["train"].sampler.set_epoch(epoch)')
    assert _codes(project, ".") == ([("runner.py", line + 1)] if flagged else [])


READ_AFTER_A_COMPUTED_STORE = '''\
from torch.utils.data import DataLoader, DistributedSampler

from batching import batched


def build(dataset):
    return {{"train": DataLoader(dataset, sampler=DistributedSampler(dataset))}}


def main(dataset, batches, name, epochs):
    loaders = build(dataset)
{store}    for epoch in range(epochs):
        loaders["train"].sampler.set_epoch(epoch)
'''


@pytest.mark.parametrize(("store", "flagged"), [
    ("", False),
    ("    loaders['valid'] = batched(dataset, batches)\n", False),
    # Stored under a key that is no constant, in the function that reads "train": it may be
    # "train" (missed by 98b6e19; flagged before it, as an unknown change).
    ("    loaders[name] = batched(dataset, batches)\n", True),
    ("    loaders.update(valid=batched(dataset, batches))\n", False),
    ("    loaders.update(train=batched(dataset, batches))\n", True),
    ("    loaders.setdefault(name, batched(dataset, batches))\n", True),
])
def test_a_constant_key_read_meets_what_is_stored_under_a_computed_key(
    project: Path, store: str, flagged: bool
) -> None:
    (project / "batching.py").write_text(BATCHING)
    code = READ_AFTER_A_COMPUTED_STORE.format(store=store)
    (project / "train.py").write_text(code)
    line = code.splitlines().index('        loaders["train"].sampler.set_epoch(epoch)') + 1
    assert _codes(project, ".") == ([("train.py", line)] if flagged else [])
