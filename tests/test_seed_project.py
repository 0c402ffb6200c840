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


# The project's own class named like torch's (NVIDIA's Mask R-CNN and GNMT recipes): a copy that
# derives from `Sampler` and orders by the epoch alone, with no `seed` parameter. Its
# `DistributedSampler(...)` is not torch's: a finding would blame torch's default seed, and the
# fix's `seed=` would raise a TypeError.
_COPY = '''\
import torch
from torch.utils.data import Sampler


class DistributedSampler(Sampler):
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True{extra}):
        self.dataset, self.shuffle, self.epoch = dataset, shuffle, 0
        self.num_replicas, self.rank = num_replicas or 1, rank or 0

    def __iter__(self):
        order = torch.randperm(len(self.dataset)).tolist()
        return iter(order[self.rank::self.num_replicas])

    def set_epoch(self, epoch):
        self.epoch = epoch
'''

_DOCSTRING = '"""\nclass DistributedSampler from torch.\n"""\n'

_SEEDED_SCRIPT = '''\
import argparse

import torch
{import_line}


def main(dataset):
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    return {call}(dataset)
'''


def _seeded(import_line: str, call: str = "DistributedSampler") -> str:
    """A script that seeds the run from `args.seed` and builds `call(dataset)`."""
    return _SEEDED_SCRIPT.format(import_line=import_line, call=call)


def test_the_projects_own_class_named_like_torchs_is_judged_by_its_own_init(
    project: Path,
) -> None:
    _write(project, {
        "det/__init__.py": "",
        "det/data/__init__.py": "",
        "det/data/samplers/__init__.py": "from .distributed import DistributedSampler\n",
        "det/data/samplers/distributed.py": _COPY.format(extra=""),
        # A factory reaching the copy through `from . import samplers` (Mask R-CNN).
        "det/data/build.py": (
            "from . import samplers\n"
            "\n"
            "\n"
            "def make_data_sampler(dataset, shuffle):\n"
            "    return samplers.DistributedSampler(dataset, shuffle=shuffle)\n"
        ),
        # A script importing it by its package's absolute name, and one by a relative name.
        "det/train.py": _seeded(
            import_line="from det.data.samplers import DistributedSampler",
        ),
        "det/tune.py": _seeded(
            import_line="from .data.samplers.distributed import DistributedSampler",
        ),
        # A copy defined in the script itself, keeping `Sampler`'s `__init__` (no seed there).
        "tools/local.py": _seeded(
            import_line=(
                "from torch.utils.data import Sampler\n\n\n"
                "class DistributedSampler(Sampler):\n"
                "    def __iter__(self):\n"
                "        return iter(range(len(self.data_source)))\n"
            ),
        ),
        # A class of that name without bases and with its own `__init__` (WeNet's), imported.
        "tools/plain.py": (
            "class DistributedSampler:\n"
            "    def __init__(self, shuffle=True, partition=True):\n"
            "        self.shuffle, self.partition = shuffle, partition\n"
        ),
        "tools/shards.py": _seeded(
            import_line="from plain import DistributedSampler",
        ),
        # The same class, defined in the script that builds it.
        "tools/shards_here.py": _seeded(
            import_line=(
                "\n\nclass DistributedSampler:\n"
                "    def __init__(self, shuffle=True, partition=True):\n"
                "        self.shuffle, self.partition = shuffle, partition\n"
            ),
        ),
        # Torch's class, in the same project: still torch's, and a docstring line that starts
        # with "class DistributedSampler" defines nothing.
        "tools/train_torch.py": _DOCSTRING + _seeded(
            import_line="from torch.utils.data import DistributedSampler",
        ),
    })
    found = _findings(project, "SL301,SL302")
    assert [(name, row) for name, row, _ in found] == [("train_torch.py", 15)]


def test_the_projects_own_class_that_takes_a_seed_is_judged_as_torchs(project: Path) -> None:
    # A copy that keeps torch's `seed` parameter: the seed the run is given reaches it only if
    # passed, as with torch's class, and the fix passes it.
    _write(project, {
        "samplers.py": _COPY.format(extra=", seed=0"),
        "train.py": _seeded(
            import_line="from samplers import DistributedSampler",
        ),
        # Given more than the dataset positionally: its own `__init__` may order them otherwise
        # (as for a subclass with its own `__init__`), so a seed may be among them.
        "tune.py": _seeded(
            import_line="from samplers import DistributedSampler",
        ).replace("(dataset)\n", "(dataset, 2, 0, True, 7)\n"),
    })
    found = _findings(project, "SL301")
    assert [(name, row) for name, row, _ in found] == [("train.py", 12)]
    assert "`args.seed`" in found[0][2]
    fixed = _fixed(project, "train.py")
    assert "    return DistributedSampler(dataset, seed=args.seed)\n" in fixed
    assert _fixed(project, "train.py") == fixed  # a second --fix changes nothing


def test_a_subclass_init_is_known_where_its_file_never_says_seed(project: Path) -> None:
    # The seed facts are read from files that spell "seed"; a subclass's `__init__` is read from
    # any file that defines a sampler class, so one that takes no seed is not given `seed=`.
    _write(project, {
        "chunks.py": (
            "from torch.utils.data import DistributedSampler\n"
            "\n"
            "\n"
            "class ChunkSampler(DistributedSampler):\n"
            "    def __init__(self, dataset, chunk=4):\n"
            "        super().__init__(dataset, shuffle=True)\n"
            "        self.chunk = chunk\n"
            "\n"
            "\n"
            "class PassingSampler(DistributedSampler):\n"
            "    def __init__(self, dataset, **options):\n"
            "        super().__init__(dataset, **options)\n"
        ),
        "train.py": _seeded(
            import_line="from chunks import ChunkSampler, PassingSampler",
            call="ChunkSampler",
        ),
        "tune.py": _seeded(
            import_line="from chunks import ChunkSampler, PassingSampler",
            call="PassingSampler",
        ),
    })
    found = _findings(project, "SL301")
    assert [(name, row) for name, row, _ in found] == [("tune.py", 12)]
    assert "    return PassingSampler(dataset, seed=args.seed)\n" in _fixed(project, "tune.py")
    assert "    return ChunkSampler(dataset)\n" in _fixed(project, "train.py")


def _fixed(project: Path, name: str) -> str:
    """``name``'s text after ``check --fix --unsafe-fixes`` over the project (SL301)."""
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--fix", "--unsafe-fixes", "--exit-zero", "--select",
               "SL301", str(project)],
    )
    assert result.exit_code == 0, result.output
    return (project / name).read_text()


LIBRARY_WRAPPERS = """\
from catalyst.data import DistributedSamplerWrapper
from lightning.fabric.utilities import distributed


def catalyst_wrapper(sampler, seed):
    return DistributedSamplerWrapper(sampler)


def lightning_wrapper(sampler, seed):
    return distributed.DistributedSamplerWrapper(sampler)
"""


def test_a_library_wrapper_that_takes_no_seed_is_never_given_one() -> None:
    # catalyst's DistributedSamplerWrapper takes `sampler, num_replicas, rank, shuffle` only:
    # `seed=` would be a TypeError and its caller cannot choose the order. Lightning's takes it.
    from sampler_lint.api import lint_code

    found = lint_code(LIBRARY_WRAPPERS, select=["SL301"])
    assert [f.location.line for f in found.findings] == [10]
    fixed = lint_code(LIBRARY_WRAPPERS, select=["SL301"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None
    assert fixed.splitlines()[5].endswith("DistributedSamplerWrapper(sampler)")
    assert fixed.splitlines()[9].endswith("DistributedSamplerWrapper(sampler, seed=seed)")
