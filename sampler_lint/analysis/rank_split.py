"""Datasets that are already split between processes (SL104): a class that reads the rank, the
world size, the DataLoader worker or a sharding helper, or that is iterable (an
``IterableDataset`` cannot take a sampler; splitting it is its own job), and expressions that
build or slice a dataset with such words.

The words are read from identifiers, never from strings or comments: ``self.rank``,
``dist.get_world_size()``, ``get_worker_info()``, ``ds.shard(...)``, ``split_dataset_by_node``,
``wds.split_by_node``."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from sampler_lint.analysis.index import (
    FactCollector,
    ProjectIndex,
    classes_named,
    dotted_expression,
    statements,
)
from sampler_lint.analysis.loader_facts import file_key
from sampler_lint.analysis.syntax_summary import SyntaxSummary, per_tree

FACT = "sl1_dataset_classes"

# An identifier that says "this process's part": the rank or the number of processes, the
# DataLoader worker, a shard, a split by node. `(^|_)` / `($|_)` keep `ranking`, `crank` and
# `worldwide` out.
SPLIT_IDENTIFIER = re.compile(
    r"(?:^|_)(?:rank|world_size|num_replicas|replicas|process_index|num_processes|worker_info|"
    r"num_workers_total)(?:$|_)|shard|split_by_node|split_by_worker|nodesplitter|"
    r"split_dataset_by_node",
    re.IGNORECASE,
)
# The collector's pre-filter: a file whose classes may split or stream, or derive from a project
# class that does (a dataset class almost always names some `...Dataset`).
WORDS: tuple[str, ...] = (
    "rank", "world_size", "replicas", "process_index", "num_processes", "worker_info", "shard",
    "split_by_node", "split_by_worker", "nodesplitter", "Dataset",
)
_ITERABLE_BASES = ("IterableDataset", "IterDataPipe")
_MAX_DEPTH = 6


@dataclass(frozen=True)
class DatasetClass:
    name: str
    path: str
    bases: tuple[str, ...]  # the last name of each base
    splits: bool  # reads a SPLIT_IDENTIFIER anywhere in its body
    iterable: bool  # derives from an IterableDataset directly


def _splitting_classes(tree: ast.Module) -> set[int]:
    """The ids of the classes whose code reads or writes a name, an attribute, a keyword or a
    parameter that :data:`SPLIT_IDENTIFIER` matches."""
    summary = SyntaxSummary.of(tree)

    def make() -> set[int]:
        words: list[tuple[ast.AST, str]] = [(node, node.id) for node in summary.nodes(ast.Name)]
        words += [(node, node.attr) for node in summary.nodes(ast.Attribute)]
        words += [(node, node.arg) for node in summary.nodes(ast.keyword) if node.arg]
        words += [(node, node.arg) for node in summary.nodes(ast.arg) if node.arg]
        return summary.classes_holding(
            words, lambda word: SPLIT_IDENTIFIER.search(word) is not None
        )

    return per_tree(tree, "classes reading split identifiers", make)


def collect_dataset_classes(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    found = []
    key = file_key(path)
    for node in statements(tree):
        if not isinstance(node, ast.ClassDef) or not node.bases:
            continue
        bases = tuple(
            (dotted_expression(b) or "<unknown>").rsplit(".", 1)[-1] for b in node.bases
        )
        found.append(DatasetClass(
            node.name, key, bases,
            id(node) in _splitting_classes(tree),
            any(b in _ITERABLE_BASES for b in bases),
        ))
    return {FACT: sorted(found, key=lambda c: (c.path, c.name))}


DATASET_CLASSES = FactCollector(
    "dataset classes", (WORDS,), collect_dataset_classes, kinds=(FACT,),
    # Asked about one class by name (the files that may define it are read): read only for the
    # files whose rules left read it (SL104's), not for every file the survey parses.
    costly=True,
)


def _named(index: ProjectIndex, name: str) -> list[DatasetClass]:
    # A class's fact comes from the file that spells `class name`: the question reads only the
    # files that may define it (:func:`classes_named`).
    return classes_named(index, FACT, name)


def class_is_split(index: ProjectIndex, name: str, depth: int = 0) -> bool:
    """Whether some project class called ``name`` (its last name), or one of its project bases
    at any depth, splits its data by process or worker, or is an iterable dataset. Several
    classes of that name: any of them counts (a wrong "split" only silences the rule)."""
    last = name.rsplit(".", 1)[-1]
    if last in _ITERABLE_BASES:
        return True
    if depth > _MAX_DEPTH:
        return False
    for fact in _named(index, last):
        if fact.splits or fact.iterable:
            return True
        if any(class_is_split(index, base, depth + 1) for base in fact.bases if base != last):
            return True
    return False
