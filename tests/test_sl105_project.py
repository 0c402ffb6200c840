"""SL105 across files: the dataset class is defined in one file and built into a loader in
another; the finding is on the class, only when an import resolves to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

LINES = '''\
from torch.utils.data import IterableDataset


class Lines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as handle:
            for line in handle:
                yield line
'''


def _findings(project: Path) -> list[tuple[str, int]]:
    result = CliRunner().invoke(
        main,
        ["check", "--no-cache", "--isolated", "--output-format", "json", "--select", "SL105",
         str(project)],
    )
    assert result.exit_code in (0, 1), result.output
    return sorted(
        (Path(f["filename"]).relative_to(project).as_posix(), f["location"]["row"])
        for f in json.loads(result.stdout)
    )


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("train", "where"),
    [
        ("from pkg.data import Lines\n", "train.py"),
        ("from pkg import Lines\n", "train.py"),  # re-exported by pkg/__init__.py
        ("from .data import Lines\n", "pkg/train.py"),
        ("from . import Lines\n", "pkg/train.py"),  # the package it stands in
        ("from .. import Lines\n", "pkg/sub/train.py"),  # the package above
        ("from pkg.data import Lines as Text\n", "train.py"),
    ],
)
def test_loader_in_another_file(tmp_path: Path, train: str, where: str) -> None:
    built = "Text" if "as Text" in train else "Lines"
    project = _project(tmp_path, {
        "pkg/__init__.py": "from .data import Lines\n",
        "pkg/data.py": LINES,
        where: train + f"from torch.utils.data import DataLoader\n\n"
        f"loader = DataLoader({built}('a.txt'), num_workers=4)\n",
    })
    assert _findings(project) == [("pkg/data.py", 8)]


def test_module_attribute(tmp_path: Path) -> None:
    project = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/data.py": LINES,
        "train.py": "from pkg import data\nfrom torch.utils.data import DataLoader\n\n"
        "loader = DataLoader(data.Lines('a.txt'), num_workers=2)\n",
    })
    assert _findings(project) == [("pkg/data.py", 8)]


def test_no_workers_in_the_other_file(tmp_path: Path) -> None:
    project = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/data.py": LINES,
        "train.py": "from pkg.data import Lines\nfrom torch.utils.data import DataLoader\n\n"
        "loader = DataLoader(Lines('a.txt'), num_workers=0)\n",
    })
    assert _findings(project) == []


def test_same_name_elsewhere_is_not_the_class(tmp_path: Path) -> None:
    project = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/data.py": LINES,
        "other/__init__.py": "",
        "other/data.py": LINES,
        "train.py": "from pkg.data import Lines\nfrom torch.utils.data import DataLoader\n\n"
        "loader = DataLoader(Lines('a.txt'), num_workers=2)\n",
    })
    assert _findings(project) == [("pkg/data.py", 8)]


def test_unknown_module_reaches_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/data.py": LINES,
        "train.py": "from textlib import Lines\nfrom torch.utils.data import DataLoader\n\n"
        "loader = DataLoader(Lines('a.txt'), num_workers=2)\n",
    })
    assert _findings(project) == []


def test_local_class_wins_over_import(tmp_path: Path) -> None:
    # train.py builds its own (map-style) Lines: pkg/data.py's is never built into a loader.
    project = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/data.py": LINES,
        "train.py": "from torch.utils.data import DataLoader, Dataset\n\n\n"
        "class Lines(Dataset):\n    pass\n\n\n"
        "loader = DataLoader(Lines(), num_workers=2)\n",
    })
    assert _findings(project) == []


MAKE_LOADER = '''\
from torch.utils.data import DataLoader


def make_loader(dataset, batch_size, workers={workers}):
    return DataLoader(dataset, batch_size=batch_size, num_workers=workers)


def other(dataset):
    return dataset
'''


@pytest.mark.parametrize(
    ("call", "workers", "expected"),
    [
        ("make_loader(Lines('a.txt'), 32)", "4", [("pkg/data.py", 8)]),
        ("make_loader(dataset, 32)", "4", [("pkg/data.py", 8)]),  # dataset = Lines(...)
        ("make_loader(batch_size=32, dataset=Lines('a.txt'))", "4", [("pkg/data.py", 8)]),
        ("make_loader(Lines('a.txt'), 32)", "0", []),
        ("make_loader([], Lines('a.txt'))", "4", []),  # not the dataset parameter
        ("other(Lines('a.txt'))", "4", []),
    ],
)
def test_loader_built_by_a_project_function(
    tmp_path: Path, call: str, workers: str, expected: list[tuple[str, int]]
) -> None:
    project = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/data.py": LINES,
        "pkg/loaders.py": MAKE_LOADER.replace("{workers}", workers),
        "train.py": "from pkg.data import Lines\nfrom pkg.loaders import make_loader, other\n\n\n"
        f"def main():\n    dataset = Lines('a.txt')\n    train_loader = {call}\n"
        "    return train_loader\n",
    })
    assert _findings(project) == expected


def test_same_function_name_elsewhere(tmp_path: Path) -> None:
    project = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/data.py": LINES,
        "pkg/loaders.py": MAKE_LOADER.replace("{workers}", "4"),
        "train.py": "from pkg.data import Lines\nfrom helpers import make_loader\n\n"
        "train_loader = make_loader(Lines('a.txt'), 32)\n",
    })
    assert _findings(project) == []


@pytest.mark.parametrize(
    ("subclass", "expected"),
    [
        ("class TrainDataset(Lines):\n    suffix = '.txt'\n", [("pkg/data.py", 8)]),
        ("class Middle(Lines):\n    pass\n\n\nclass TrainDataset(Middle):\n    pass\n",
         [("pkg/data.py", 8)]),
        # Each rank reads its own file: the subclass splits what the base walks.
        ("class TrainDataset(Lines):\n    def __init__(self, path, rank):\n"
         "        super().__init__(f'{path}.{rank}')\n", []),
        ("class TrainDataset(Lines):\n    def __iter__(self):\n        yield 1\n", []),
    ],
)
def test_loader_built_on_a_subclass(
    tmp_path: Path, subclass: str, expected: list[tuple[str, int]]
) -> None:
    project = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/data.py": LINES,
        "pkg/train_data.py": "from pkg.data import Lines\n\n\n" + subclass,
        "train.py": "from pkg.train_data import TrainDataset\nfrom torch.utils.data import "
        "DataLoader\n\nloader = DataLoader(TrainDataset('a', 0), num_workers=2)\n",
    })
    assert _findings(project) == expected


# Signs of sharding in every place a class's code may hold them: its bases, decorators, a
# nested function's parameter, a string, an attribute, a nested class; and classes with none.
SIGNS = '''\
import torch.distributed as dist


@register("Shard_Loader")
class Decorated(Base):
    pass


class ByBase(DistributedHelper):
    pass


class Quiet(Base):
    def __iter__(self):
        return iter(self.items)


class Outer(Base):
    class Inner(Base):
        def read(self, world_size):
            return world_size

    def size(self):
        return 1


class ByString(Base):
    mode = "split_by_node"


class ByAttribute(Base):
    def part(self):
        return dist.get_RANK()


def free(rank):
    class Local(Base):
        pass
    return rank
'''


def test_the_classes_that_mention_sharding_are_those_a_walk_of_each_class_finds() -> None:
    # One pass over the file's words stands for walking each class's code: the same classes.
    import ast

    from sampler_lint.analysis.iterable_datasets import (
        SHARDING_WORDS,
        _classes_mentioning_sharding,
    )
    from sampler_lint.analysis.syntax_summary import SyntaxSummary

    def walked(klass: ast.ClassDef) -> bool:
        for node in ast.walk(klass):
            if isinstance(node, ast.Name):
                word = node.id
            elif isinstance(node, ast.Attribute):
                word = node.attr
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                word = node.value
            elif isinstance(node, ast.arg):
                word = node.arg
            else:
                continue
            if any(part in word.lower() for part in SHARDING_WORDS):
                return True
        return False

    tree = ast.parse(SIGNS)
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    found = _classes_mentioning_sharding(SyntaxSummary.of(tree))
    assert {c.name for c in classes if id(c) in found} == {c.name for c in classes if walked(c)}
    assert {c.name for c in classes if id(c) in found} == {
        "Decorated", "ByBase", "Outer", "Inner", "ByString", "ByAttribute"
    }


def test_the_classes_that_read_split_identifiers_are_those_a_walk_of_each_class_finds() -> None:
    # SL104's dataset classes: the same one-pass helper, with identifiers (names, attributes,
    # keywords, parameters; never strings) that say "this process's part".
    import ast

    from sampler_lint.analysis.rank_split import SPLIT_IDENTIFIER, collect_dataset_classes

    code = SIGNS + '''
class ByKeyword(Base):
    def load(self):
        return make(num_replicas=2)


class ByStringOnly(Base):
    mode = "rank"
'''

    def walked(klass: ast.ClassDef) -> bool:
        words = []
        for node in ast.walk(klass):
            if isinstance(node, ast.Name):
                words.append(node.id)
            elif isinstance(node, ast.Attribute):
                words.append(node.attr)
            elif isinstance(node, (ast.keyword, ast.arg)) and node.arg:
                words.append(node.arg)
        return any(SPLIT_IDENTIFIER.search(word) for word in words)

    tree = ast.parse(code)
    expected = {
        node.name: walked(node) for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.bases
    }
    facts = collect_dataset_classes(ast.parse(code), "/project/data.py")["sl1_dataset_classes"]
    assert {fact.name: fact.splits for fact in facts} == expected
    assert {name for name, splits in expected.items() if splits} == {
        "Outer", "Inner", "ByAttribute", "ByKeyword"
    }
