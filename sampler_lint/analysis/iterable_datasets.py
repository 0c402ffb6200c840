"""Where a dataset class is handed to a DataLoader that runs it in several processes (SL105).

The project side, read with Python's ``ast`` from every file that builds a loader: for each
``DataLoader(<dataset>, ...)`` whose dataset is visibly a construction ``Name(...)`` (inline,
through a name assigned in the same function or module, or ``self.<attr>`` assigned in the same
class), whether the loader has worker processes (``num_workers`` given and not literally 0) and
whether its file trains with DDP (``init_process_group``, ``DistributedDataParallel``, FSDP)
without a framework that shards iterable datasets itself (accelerate). Loaders whose
``worker_init_fn`` may configure the dataset per worker are not recorded.

The rule side (:func:`loaders_of`) matches a class defined in one file to those uses by module
path: the loader's file defines the class, or imports its name from a module that resolves to the
class's file (or to a package folder holding it, for a re-export).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from sampler_lint.analysis.index import (
    FactCollector,
    ModuleResolver,
    ProjectIndex,
    dotted_expression,
    imported_module,
)
from sampler_lint.analysis.loader_calls import is_evaluation_name
from sampler_lint.analysis.loader_facts import file_key, is_loader_constructor

FACT = "sl105_dataset_loaders"

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
#            pin_memory, drop_last, timeout, worker_init_fn, ...)
_NUM_WORKERS, _WORKER_INIT = 5, 10
# What trains one process per device in the loader's own file (torch's names only: a framework's
# launcher may shard iterable datasets for the user).
_DDP_NAMES = frozenset({
    "init_process_group", "DistributedDataParallel", "FullyShardedDataParallel", "fully_shard",
})
# Libraries that shard an iterable dataset between processes when they prepare a loader
# (accelerate's `prepare` wraps it in `IterableDatasetShard` or dispatches batches from rank 0).
_SHARDING_FRAMEWORKS = ("accelerate", "transformers")
# A worker_init_fn that mentions one of these may give each worker its part of the dataset.
_CONFIGURES = ("dataset", "get_worker_info")


@dataclass(frozen=True)
class DatasetLoader:
    """A loader built on an instance of the class ``name``."""

    path: str  # the loader's file (``file_key``)
    line: int
    name: str  # the class's simple name
    module: str  # where the loader's file imports ``name`` from ("" when it defines it)
    workers: bool  # num_workers given, not literally 0
    distributed: bool  # the file trains with torch DDP / FSDP


def _names_used(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.name.rsplit(".", 1)[-1])
            if node.asname:
                found.add(node.asname)
    return found


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    if len(positional) == len(call.args) and position < len(positional):
        return positional[position]
    return None


class _Scopes(ast.NodeVisitor):
    """Every loader call with its enclosing function and class, and the simple assignments of
    each scope (a function, a class's ``self.<attr>``, the module)."""

    def __init__(self) -> None:
        self.loaders: list[tuple[ast.Call, ast.AST, ast.ClassDef | None]] = []
        self.targets: dict[int, list[str]] = {}  # id(value) -> the names it is assigned to
        self.assigned: dict[int, dict[str, list[ast.expr]]] = {}
        self.functions: dict[str, list[ast.AST]] = {}
        self._scope: list[ast.AST] = []
        self._class: list[ast.ClassDef] = []

    def _table(self, scope: ast.AST) -> dict[str, list[ast.expr]]:
        return self.assigned.setdefault(id(scope), {})

    def visit_Module(self, node: ast.Module) -> None:
        self._scope.append(node)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._class.append(node)
        self.generic_visit(node)
        self._class.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.setdefault(node.name, []).append(node)
        self._scope.append(node)
        self.generic_visit(node)
        self._scope.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._record(target, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._record(node.target, node.value)
        self.generic_visit(node)

    def _record(self, target: ast.expr, value: ast.expr) -> None:
        named = dotted_expression(target)
        if named:
            self.targets.setdefault(id(value), []).append(named)
        if isinstance(target, ast.Name):
            self._table(self._scope[-1]).setdefault(target.id, []).append(value)
        elif (
            isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == "self" and self._class
        ):
            self._table(self._class[-1]).setdefault("self." + target.attr, []).append(value)

    def visit_Call(self, node: ast.Call) -> None:
        if is_loader_constructor(dotted_expression(node.func)):
            self.loaders.append((node, self._scope[-1], self._class[-1] if self._class else None))
        self.generic_visit(node)


def _constructions(
    scopes: _Scopes, value: ast.expr, function: ast.AST, klass: ast.ClassDef | None,
    module: ast.Module,
) -> Iterator[tuple[str, ast.Call]]:
    """The dotted names of the classes ``value`` may be a fresh instance of, with the call
    that builds it."""
    if isinstance(value, ast.Call):
        name = dotted_expression(value.func)
        if name:
            yield name, value
        return
    dotted = dotted_expression(value)
    if dotted is None:
        return
    if dotted.startswith("self.") and klass is not None:
        values = scopes.assigned.get(id(klass), {}).get(dotted, [])
    else:
        values = scopes.assigned.get(id(function), {}).get(dotted, [])
        if not values and function is not module:
            values = scopes.assigned.get(id(module), {}).get(dotted, [])
    for assigned in values:
        if isinstance(assigned, ast.Call):
            name = dotted_expression(assigned.func)
            if name:
                yield name, assigned


# Words of a value split by rank before the dataset is built (`Lines(files[rank::world])`).
_SPLIT_WORDS = ("rank", "world", "replica", "shard", "node", "process_index", "num_processes")


def _split_by_caller(
    scopes: _Scopes, value: ast.expr, function: ast.AST, module: ast.Module, depth: int = 0
) -> bool:
    """Whether the construction's arguments (or the names they read, two assignments deep)
    mention a rank, a world size or shards: the caller gave each process its own part."""
    for node in ast.walk(value):
        if isinstance(node, (ast.Name, ast.Attribute)):
            word = _text(node).lower()
            if any(part in word for part in _SPLIT_WORDS):
                return True
            if isinstance(node, ast.Name) and depth < 2 and node is not value:
                assigned = scopes.assigned.get(id(function), {}).get(node.id, [])
                if not assigned and function is not module:
                    assigned = scopes.assigned.get(id(module), {}).get(node.id, [])
                if any(
                    _split_by_caller(scopes, item, function, module, depth + 1)
                    for item in assigned
                ):
                    return True
    return False


def _evaluation(scopes: _Scopes, call: ast.Call, function: ast.AST) -> bool:
    """A loader named (or built in a function named) for evaluation: every rank evaluating
    the whole set wastes time but trains on nothing twice."""
    names = list(scopes.targets.get(id(call), []))
    if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names.append(function.name)
    return any(is_evaluation_name(name) for name in names)


def _configures_workers(scopes: _Scopes, value: ast.expr) -> bool:
    """Whether a ``worker_init_fn`` may give each worker its part of the dataset: anything but a
    function of this file (or lambda) that mentions neither the dataset nor the worker info."""
    if isinstance(value, ast.Constant) and value.value is None:
        return False
    if isinstance(value, ast.Lambda):
        bodies: list[ast.AST] = [value]
    elif isinstance(value, ast.Name) and value.id in scopes.functions:
        bodies = list(scopes.functions[value.id])
    else:
        return True
    return any(
        any(word in _text(node) for word in _CONFIGURES)
        for body in bodies for node in ast.walk(body)
        if isinstance(node, (ast.Name, ast.Attribute))
    )


def _text(node: ast.Name | ast.Attribute) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr


def _imported_from(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Local name -> the module it is imported from and its name there (``from ..data import
    Stream as Lines``: ``Lines`` -> ``("..data", "Stream")``)."""
    found: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                found[alias.asname or alias.name] = (imported_module(node), alias.name)
    return found


def collect_dataset_loaders(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    scopes = _Scopes()
    scopes.visit(tree)
    if not scopes.loaders:
        return {}
    used = _names_used(tree)
    if "get_worker_info" in used:
        return {}  # a worker_init_fn or a wrapper in this file may split the data per worker
    imported = _imported_from(tree)
    framework = any(
        module.lstrip(".").split(".")[0] in _SHARDING_FRAMEWORKS
        for module, _ in imported.values()
    ) or any(
        isinstance(node, ast.Import) and any(
            alias.name.split(".")[0] in _SHARDING_FRAMEWORKS for alias in node.names
        ) for node in ast.walk(tree)
    )
    distributed = not framework and bool(used & _DDP_NAMES)
    defined = {
        node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
    }
    key = file_key(path)
    facts: set[DatasetLoader] = set()
    for call, function, klass in scopes.loaders:
        if any(item.arg is None for item in call.keywords):
            continue  # **kwargs: the workers and worker_init_fn are unknown
        dataset = _argument(call, 0, "dataset")
        if dataset is None:
            continue
        init = _argument(call, _WORKER_INIT, "worker_init_fn")
        if init is not None and _configures_workers(scopes, init):
            continue
        workers_arg = _argument(call, _NUM_WORKERS, "num_workers")
        workers = workers_arg is not None and not (
            isinstance(workers_arg, ast.Constant) and workers_arg.value in (0, None)
        )
        on_ranks = distributed and not _evaluation(scopes, call, function)
        if not (workers or on_ranks):
            continue
        for dotted, built in _constructions(scopes, dataset, function, klass, tree):
            if not workers and _split_by_caller(scopes, built, function, tree):
                continue
            head, _, _ = dotted.partition(".")
            name = dotted.rsplit(".", 1)[-1]
            if "." in dotted:
                base = imported.get(head)
                if base is None:
                    continue  # `pkg.data.Stream(...)` through `import pkg`: not followed
                module = _submodule(*base, dotted)
            elif name in defined:
                module = ""
            elif name in imported:
                module, name = imported[name]
            else:
                continue
            facts.add(DatasetLoader(key, call.lineno, name, module, workers, on_ranks))
    return {FACT: sorted(facts, key=lambda f: (f.path, f.line, f.name))}


def _submodule(module: str, original: str, dotted: str) -> str:
    """``from pkg import data`` then ``data.Stream(...)``: the module ``pkg.data``."""
    parts = dotted.split(".")[1:-1]
    joined = ".".join([original, *parts])
    dot = "" if module.endswith(".") else "."
    return f"{module}{dot}{joined}"


DATASET_LOADERS = FactCollector("dataset loaders", (("DataLoader",),), collect_dataset_loaders)


# ------------------------------------------------------------------------------------------------
# The rule side


def loaders_of(index: ProjectIndex, name: str, path: str) -> list[DatasetLoader]:
    """The recorded loaders built on the class ``name`` defined in the file at ``path``."""
    key = file_key(path)
    facts = [fact for fact in dict.fromkeys(index.get(FACT)) if fact.name == name]
    if not facts:
        return []
    resolver: ModuleResolver | None = None
    found = []
    for fact in facts:
        if fact.path == key:
            if not fact.module:
                found.append(fact)
            continue
        if not fact.module:
            continue
        if resolver is None:
            resolver = ModuleResolver({f.path for f in index.get(FACT)} | {key})
        if _reaches(resolver, fact.path, fact.module, key):
            found.append(fact)
    return found


def _reaches(resolver: ModuleResolver, importer: str, module: str, target: str) -> bool:
    """``from <module> import Name`` in ``importer`` may be the class of the file ``target``:
    the module is that file, or a package folder holding it (a re-export from
    ``__init__.py``)."""
    if target in resolver.resolve(importer, module):
        return True
    dotted = module.lstrip(".")
    level = len(module) - len(dotted)
    parts = [p for p in dotted.split(".") if p]
    if level:
        base = PurePath(importer).parent
        for _ in range(level - 1):
            base = base.parent
        starts = [base]
    elif parts:
        starts = resolver.roots(importer)
    else:
        return False
    target_path = PurePath(target)
    for start in starts:
        folder = start.joinpath(*parts)
        if folder in target_path.parents:
            return True
    return False
