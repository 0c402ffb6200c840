"""SL301/SL302/SL401 across files: project DistributedSampler subclasses imported from another
module, seed keys defined in another module, seeds reaching a factory's sampler through a
``set_epoch`` elsewhere, attributes given to a sampler from outside."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sampler_lint.cli import main

SAMPLERS = '''\
from torch.utils.data import DistributedSampler


class WindowSampler(DistributedSampler):
    def __len__(self):
        return self.num_samples


class DeeperWindow(WindowSampler):
    pass
'''

BUILD = '''\
from torch.utils.data import DataLoader

from data.samplers import DeeperWindow


def make(corpus, batch, seed):
    return DeeperWindow(corpus)


def make_loader(corpus, batch):
    return DataLoader(corpus, batch_size=batch, sampler=DeeperWindow(corpus))


def from_options(opts, root):
    corpus = open(root)
    return DeeperWindow(corpus)


def per_rank(corpus, seed, rank):
    return DeeperWindow(corpus, seed=seed + rank)
'''

OPTIONS = '''\
from types import SimpleNamespace

options = SimpleNamespace()
options.run_seed = 11
'''

TRAIN = '''\
from build import make_loader


def fit(corpus, epochs, base_seed):
    loader = make_loader(corpus, 8)
    for epoch in range(epochs):
        loader.sampler.set_epoch(base_seed + epoch)
        for _ in loader:
            pass
'''


def _findings(project: Path, select: str) -> list[tuple[str, int, str]]:
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "json", "--select", select,
               str(project)],
    )
    assert result.exit_code in (0, 1), result.output
    return sorted(
        (Path(f["filename"]).name, f["location"]["row"], f["message"])
        for f in json.loads(result.stdout)
    )


def _write(project: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_subclasses_keys_and_set_epoch_across_files(project: Path) -> None:
    _write(project, {
        "data/__init__.py": "", "data/samplers.py": SAMPLERS, "build.py": BUILD,
        "options.py": OPTIONS, "train.py": TRAIN,
    })
    found = _findings(project, "SL301,SL302")
    lines = [(name, row) for name, row, _ in found]
    assert ("build.py", 7) in lines  # a subclass two levels down, a `seed` parameter unused
    assert ("build.py", 11) not in lines  # its loader is re-seeded by set_epoch(base_seed + ...)
    # The project's key is `options.run_seed`; `opts` is another namespace, and a local dataset
    # makes no factory.
    assert ("build.py", 16) not in lines
    assert ("build.py", 20) in lines  # SL302: seed + rank on a project subclass
    messages = {row: message for _, row, message in found}
    assert "`seed`" in messages[7]


def test_namespace_key_defined_in_a_related_module(project: Path) -> None:
    feed = (
        "from torch.utils.data import DistributedSampler\n"
        "{import_line}"
        "\n"
        "\n"
        "def feed(options, root):\n"
        "    corpus = open(root)\n"
        "    return DistributedSampler(corpus)\n"
    )
    _write(project, {
        "options.py": OPTIONS,
        "feeds.py": feed.format(import_line="\nimport options as defaults\n"),
        # Another script holding a namespace of the same name, unrelated to options.py.
        "other.py": feed.format(import_line=""),
    })
    found = _findings(project, "SL301")
    assert [(name, row) for name, row, _ in found] == [("feeds.py", 8)]
    assert "`options.run_seed`" in found[0][2]


def test_stale_read_is_not_stale_when_set_from_outside(project: Path) -> None:
    sampler = (
        "from torch.utils.data import Sampler\n"
        "\n"
        "\n"
        "class Window(Sampler):\n"
        "    def __init__(self, n):\n"
        "        self.n = n\n"
        "\n"
        "    def __iter__(self):\n"
        "        return iter(range(self.start_at, self.n))\n"
    )
    _write(project, {"window.py": sampler})
    assert [row for _, row, _ in _findings(project, "SL401")] == [9]
    _write(project, {"resume.py": "def resume(sampler, k):\n    sampler.start_at = k\n"})
    assert _findings(project, "SL401") == []


def test_a_key_of_another_scripts_module_of_the_same_name_is_not_seen(project: Path) -> None:
    script = (
        "from torch.utils.data import DistributedSampler\n"
        "from utils import *\n"
        "\n"
        "\n"
        "def run(args, root):\n"
        "    return DistributedSampler(open(root), shuffle=True), args.lr\n"
    )
    _write(project, {
        "first/utils.py": "def setup(args):\n    return args.random_seed\n",
        "second/utils.py": "def setup(args):\n    return args.lr\n",
        "second/train.py": script,
        "first/train.py": script,
    })
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "json", "--select", "SL301",
               str(project)],
    )
    found = [(Path(f["filename"]).parent.name, f["location"]["row"], f["message"])
             for f in json.loads(result.stdout)]
    assert [(folder, row) for folder, row, _ in found] == [("first", 6)]
    assert "`args.random_seed`" in found[0][2]


_RECIPE = (
    "import argparse\n"
    "\n"
    "import torch\n"
    "from torch.utils.data import DistributedSampler\n"
    "\n"
    "\n"
    "def parse_args(parser):\n"
    "    group = parser.add_argument_group('training setup')\n"
    "    group.add_argument('--seed', type=int, default=1234)\n"
    "    return parser\n"
    "\n"
    "\n"
    "def main(dataset, rank):\n"
    "    parser = argparse.ArgumentParser()\n"
    "    parser = parse_args(parser)\n"
    "    args, _ = parser.parse_known_args()\n"
    "{seeding}"
    "    return DistributedSampler(dataset)\n"
)


def test_a_parser_is_not_the_namespace_it_parses(project: Path) -> None:
    # NVIDIA's recipes (FastPitch): `parser = parse_args(parser)` adds the options and returns
    # the parser; `--seed` is a key of `args`, parsed after. `seed=parser.seed` would fail when
    # the sampler is built. With nothing reading `args.seed`, nothing is said.
    _write(project, {"train.py": _RECIPE.format(seeding="")})
    assert not any("parser" in message for _, _, message in _findings(project, "SL301"))


def test_a_namespace_bound_by_unpacking_is_visible(project: Path) -> None:
    # `args, _ = parser.parse_known_args()`, then `args.seed` read: the run's seed is right
    # there, and the sampler ignores it.
    _write(project, {"train.py": _RECIPE.format(
        seeding="    torch.manual_seed(args.seed + rank)\n"
    )})
    found = _findings(project, "SL301")
    assert [(name, row) for name, row, _ in found] == [("train.py", 18)]
    assert "`args.seed`" in found[0][2]
    # Its (unsafe) fix passes that seed, and is a fixed point. (No fixture file: the runtime
    # harness of fixed fixtures cannot run a function that parses the command line.)
    from sampler_lint.api import lint_code

    text = (project / "train.py").read_text()
    fixed = lint_code(text, select=["SL301"], fix=True, unsafe_fixes=True).fixed
    assert fixed == text.replace(
        "DistributedSampler(dataset)\n", "DistributedSampler(dataset, seed=args.seed)\n"
    )
    assert lint_code(fixed, select=["SL301"], fix=True, unsafe_fixes=True).fixed is None
