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
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sampler_lint.analysis.index import (
    FactCollector,
    ProjectIndex,
    dotted_expression,
    facts_named,
    import_may_name,
    imported_module,
)
from sampler_lint.analysis.loader_calls import is_evaluation_name
from sampler_lint.analysis.loader_facts import file_key, is_loader_constructor
from sampler_lint.analysis.syntax_summary import SyntaxSummary, per_tree, walk

FACT = "sl105_dataset_loaders"
FACT_PARAMETERS = "sl105_parameter_loaders"
FACT_PASSED = "sl105_datasets_passed"
FACT_SUBCLASSES = "sl105_subclasses"

# Any of these in a class (a name, an attribute, a string; in the rule also a comment) is a sign
# it splits its source per worker or per rank, or knows it runs in several processes.
SHARDING_WORDS = (
    "worker", "rank", "world", "replica", "shard", "split_by_node", "split_dataset_by_node",
    "process_index", "num_processes", "distributed", "wds", "webdataset", "islice", "hvd",
    "horovod", "nodesplitter", "split_by",
)
_SHARDING = re.compile("|".join(map(re.escape, SHARDING_WORDS)))

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


@dataclass(frozen=True)
class Subclass:
    """A class of the project with its bases, as :func:`loaders_of` follows them down from a
    dataset class to the subclasses a loader may be built on."""

    path: str
    name: str
    bases: tuple[tuple[str, str], ...]  # (name, module) as for DatasetLoader
    overrides: bool  # defines __iter__ itself, or reads something of the processes


@dataclass(frozen=True)
class ParameterLoader:
    """A loader built on a parameter of the module-level function ``function``."""

    path: str
    line: int
    function: str
    position: int  # -1: keyword-only
    parameter: str
    workers: bool
    distributed: bool


@dataclass(frozen=True)
class DatasetPassed:
    """A construction of the class ``name`` handed to the function ``callee``."""

    path: str
    line: int
    callee: str
    callee_module: str  # "" when the file defines it
    position: int  # -1: by keyword
    keyword: str
    name: str
    module: str
    split: bool  # the construction's arguments are split by rank already


def _names_used(summary: SyntaxSummary) -> set[str]:
    found = {node.id for node in summary.nodes(ast.Name)}
    found.update(node.attr for node in summary.nodes(ast.Attribute))
    for alias in summary.nodes(ast.alias):
        found.add(alias.name.rsplit(".", 1)[-1])
        if alias.asname:
            found.add(alias.asname)
    return found


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    if len(positional) == len(call.args) and position < len(positional):
        return positional[position]
    return None


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Scopes:
    """Every loader call and every other call with arguments, with its enclosing function (or
    the module) and class, and the simple assignments of each scope (a function, a class's
    ``self.<attr>``, the module); read from the file's syntax summary (no walk of its own)."""

    def __init__(self, tree: ast.Module, summary: SyntaxSummary) -> None:
        self.summary = summary
        self.loaders: list[tuple[ast.Call, ast.AST, ast.ClassDef | None]] = []
        self.targets: dict[int, list[str]] = {}  # id(value) -> the names it is assigned to
        #: Other calls of a name with arguments, and the name; where each one is is found only
        #: for those handed a project dataset (most are not, and finding the scope is not free).
        self.calls: list[tuple[ast.Call, str]] = []
        self.assigned: dict[int, dict[str, list[ast.expr]]] = {}
        self.functions: dict[str, list[ast.AST]] = {}
        #: :func:`_split_by_caller`'s answers, by the value, its scope and the depth asked at.
        self.split: dict[tuple[int, int, int], bool] = {}
        self.module = tree
        functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
            *summary.nodes(ast.FunctionDef), *summary.nodes(ast.AsyncFunctionDef)
        ]
        for function in functions:
            self.functions.setdefault(function.name, []).append(function)
        for target, value in summary.assignments():
            if value is not None:
                self._record(target, value)
        for call in summary.nodes(ast.Call):
            called = dotted_expression(call.func)
            if is_loader_constructor(called):
                self.loaders.append(self.where(call))
            elif called and (call.args or call.keywords):
                self.calls.append((call, called))

    def where(self, node: ast.AST) -> tuple[Any, ast.AST, ast.ClassDef | None]:
        """``node``, the function it is in (the module when none) and the class it is in."""
        function: ast.AST | None = None
        klass: ast.ClassDef | None = None
        for ancestor in self.summary.ancestors(node):
            if function is None and isinstance(ancestor, _FUNCTIONS):
                function = ancestor
            elif klass is None and isinstance(ancestor, ast.ClassDef):
                klass = ancestor
        return node, function if function is not None else self.module, klass

    def _record(self, target: ast.expr, value: ast.expr) -> None:
        named = dotted_expression(target)
        if named:
            self.targets.setdefault(id(value), []).append(named)
        # Only a name and `self.<attr>` are followed: the others' scope is never looked up.
        if isinstance(target, ast.Name):
            _, scope, _ = self.where(target)
            self.assigned.setdefault(id(scope), {}).setdefault(target.id, []).append(value)
        elif (
            isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            _, _, klass = self.where(target)
            if klass is not None:
                table = self.assigned.setdefault(id(klass), {})
                table.setdefault("self." + target.attr, []).append(value)


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
_SPLIT = re.compile("|".join(map(re.escape, _SPLIT_WORDS)))


def _split_by_caller(
    scopes: _Scopes, value: ast.expr, function: ast.AST, module: ast.Module, depth: int = 0
) -> bool:
    """Whether the construction's arguments (or the names they read, two assignments deep)
    mention a rank, a world size or shards: the caller gave each process its own part."""
    # Asked for each construction handed to a function or a loader, and again for each value
    # its names were assigned: Lightning, diffusers and fairseq asked 56,000 times about 3,300
    # constructions.
    key = (id(value), id(function), depth)
    known = scopes.split.get(key)
    if known is None:
        known = scopes.split[key] = _splits(scopes, value, function, module, depth)
    return known


def _splits(
    scopes: _Scopes, value: ast.expr, function: ast.AST, module: ast.Module, depth: int
) -> bool:
    for node in walk(value):
        if isinstance(node, (ast.Name, ast.Attribute)):
            if _SPLIT.search(_text(node).lower()):
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
        for body in bodies for node in walk(body)
        if isinstance(node, (ast.Name, ast.Attribute))
    )


def _text(node: ast.Name | ast.Attribute) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr


def _imported_from(summary: SyntaxSummary) -> dict[str, tuple[str, str]]:
    """Local name -> the module it is imported from and its name there (``from ..data import
    Stream as Lines``: ``Lines`` -> ``("..data", "Stream")``)."""
    found: dict[str, tuple[str, str]] = {}
    for node in summary.nodes(ast.ImportFrom):
        for alias in node.names:
            found[alias.asname or alias.name] = (imported_module(node), alias.name)
    return found


def collect_dataset_loaders(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    """The loaders of this file built on a construction (or on a parameter of a module-level
    function), and the constructions this file hands to functions."""
    summary = SyntaxSummary.of(tree)
    used = _names_used(summary)
    if "get_worker_info" in used:
        return {}  # a worker_init_fn or a wrapper in this file may split the data per worker
    scopes = _Scopes(tree, summary)
    imported = _imported_from(summary)
    framework = any(
        module.lstrip(".").split(".")[0] in _SHARDING_FRAMEWORKS
        for module, _ in imported.values()
    ) or any(
        alias.name.split(".")[0] in _SHARDING_FRAMEWORKS
        for node in summary.nodes(ast.Import) for alias in node.names
    )
    distributed = not framework and bool(used & _DDP_NAMES)
    defined = {node.name for node in summary.nodes(ast.ClassDef)}
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    key = file_key(path)
    facts: set[DatasetLoader] = set()
    parameters: set[ParameterLoader] = set()
    for call, function, klass in scopes.loaders:
        use = _loader_use(scopes, call, function, distributed)
        if use is None:
            continue
        workers, on_ranks, dataset = use
        for dotted, built in _constructions(scopes, dataset, function, klass, tree):
            if not workers and _split_by_caller(scopes, built, function, tree):
                continue
            reference = _reference(dotted, defined, imported)
            if reference is not None:
                facts.add(DatasetLoader(key, call.lineno, *reference, workers, on_ranks))
        if isinstance(dataset, ast.Name) and isinstance(function, ast.FunctionDef):
            position = _parameter(dataset, function, tree, scopes)
            if position is not None:
                parameters.add(ParameterLoader(
                    key, call.lineno, function.name, position, dataset.id, workers, on_ranks
                ))
    passed = _passed(scopes, tree, key, defined, functions, imported)
    subclasses = _subclasses(summary, key, defined, imported)
    return {
        FACT_SUBCLASSES: subclasses,
        FACT: sorted(facts, key=lambda f: (f.path, f.line, f.name)),
        FACT_PARAMETERS: sorted(parameters, key=lambda f: (f.path, f.line, f.function)),
        # repr last: a call may pass several constructions at one place (set order varies).
        FACT_PASSED: sorted(passed, key=lambda f: (f.path, f.line, f.callee, f.position, repr(f))),
    }


def _subclasses(
    summary: SyntaxSummary, key: str, defined: set[str], imported: dict[str, tuple[str, str]]
) -> list[Subclass]:
    found = []
    for node in summary.nodes(ast.ClassDef):
        bases = []
        for base in node.bases:
            dotted = dotted_expression(base)
            reference = _reference(dotted, defined, imported) if dotted else None
            if reference is not None:
                bases.append(reference)
        if not bases:
            continue
        overrides = any(
            isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in (
                "__iter__", "__next__"
            ) for item in node.body
        ) or id(node) in _classes_mentioning_sharding(summary)
        found.append(Subclass(key, node.name, tuple(bases), overrides))
    return sorted(found, key=lambda c: (c.path, c.name))


def _classes_mentioning_sharding(summary: SyntaxSummary) -> set[int]:
    """The ids of the classes of the file that mention a sign of sharding (a name, an attribute,
    a string or a parameter holding one of :data:`SHARDING_WORDS`, in any case) anywhere in
    their code, bases and decorators included."""
    def make() -> set[int]:
        words: list[tuple[ast.AST, str]] = [(node, node.id) for node in summary.nodes(ast.Name)]
        words += [(node, node.attr) for node in summary.nodes(ast.Attribute)]
        words += [
            (node, node.value) for node in summary.nodes(ast.Constant)
            if isinstance(node.value, str)
        ]
        words += [(node, node.arg) for node in summary.nodes(ast.arg)]
        return summary.classes_holding(
            words, lambda word: _SHARDING.search(word.lower()) is not None
        )

    return per_tree(summary.tree, "classes mentioning sharding", make)



def _loader_use(
    scopes: _Scopes, call: ast.Call, function: ast.AST, distributed: bool
) -> tuple[bool, bool, ast.expr] | None:
    """Whether the loader runs its dataset in workers, on every DDP rank, and its dataset
    argument; ``None`` when neither, or when the call hides them."""
    if any(item.arg is None for item in call.keywords):
        return None  # **kwargs: the workers and worker_init_fn are unknown
    dataset = _argument(call, 0, "dataset")
    if dataset is None:
        return None
    init = _argument(call, _WORKER_INIT, "worker_init_fn")
    if init is not None and _configures_workers(scopes, init):
        return None
    workers_arg = _argument(call, _NUM_WORKERS, "num_workers")
    workers = workers_arg is not None and not _at_most_one(scopes, workers_arg, function)
    on_ranks = distributed and not _evaluation(scopes, call, function)
    if not (workers or on_ranks):
        return None
    return workers, on_ranks, dataset


def _at_most_one(scopes: _Scopes, value: ast.expr, function: ast.AST) -> bool:
    """``0``, ``1`` or ``None``, or a name only ever given those (assigned in the function, or
    a parameter defaulting to one that the function never reassigns): no more than one worker
    process walks the dataset, as far as this file shows."""
    def literal(node: ast.expr | None) -> bool:
        return isinstance(node, ast.Constant) and node.value in (0, 1, None)

    if literal(value):
        return True
    if not isinstance(value, ast.Name):
        return False
    assigned = scopes.assigned.get(id(function), {}).get(value.id, [])
    if assigned:
        return all(literal(item) for item in assigned)
    if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = function.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults: list[tuple[ast.arg, ast.expr | None]] = list(zip(
            positional[len(positional) - len(arguments.defaults):], arguments.defaults,
            strict=True,
        ))
        defaults += list(zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True))
        return any(arg.arg == value.id and literal(default) for arg, default in defaults)
    return False


def _reference(
    dotted: str, defined: set[str], imported: dict[str, tuple[str, str]]
) -> tuple[str, str] | None:
    """A class or function named in this file as ``(its name, the module it is imported from)``
    (module ``""``: defined here); ``None`` when the name comes from elsewhere."""
    head, _, _ = dotted.partition(".")
    name = dotted.rsplit(".", 1)[-1]
    if "." in dotted:
        base = imported.get(head)
        if base is None:
            return None  # `pkg.data.Stream(...)` through `import pkg`: not followed
        return name, _submodule(*base, dotted)
    if name in defined:
        return name, ""
    if name in imported:
        module, original = imported[name]
        return original, module
    return None


def _parameter(
    dataset: ast.Name, function: ast.FunctionDef, module: ast.Module, scopes: _Scopes
) -> int | None:
    """The position of ``dataset`` among the parameters of the module-level function around
    the loader, when it is one of them and never reassigned there."""
    if function not in module.body:
        return None
    if scopes.assigned.get(id(function), {}).get(dataset.id):
        return None
    names = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    if dataset.id in names:
        return names.index(dataset.id)
    if dataset.id in [a.arg for a in function.args.kwonlyargs]:
        return -1
    return None


# Modules whose functions never build a project's loader.
_LIBRARIES = ("torch", "numpy", "transformers", "datasets", "lightning", "pytorch_lightning",
              "accelerate", "tqdm", "itertools", "functools", "builtins", "os", "typing")


def _passed(
    scopes: _Scopes, tree: ast.Module, key: str, defined: set[str], functions: set[str],
    imported: dict[str, tuple[str, str]],
) -> set[DatasetPassed]:
    """Constructions of project classes handed to project functions: ``make_loader(Lines(p),
    4)`` or ``train(dataset=Lines(p))`` (inline or through a name of the same scope)."""
    found: set[DatasetPassed] = set()
    for call, callee_dotted in scopes.calls:
        callee = _reference(callee_dotted, functions, imported)
        if callee is None or callee[1].lstrip(".").split(".")[0] in _LIBRARIES:
            continue
        _, function, klass = scopes.where(call)
        arguments: list[tuple[int, str, ast.expr]] = []
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            arguments.append((position, "", arg))
        arguments += [(-1, k.arg, k.value) for k in call.keywords if k.arg is not None]
        for position, keyword, value in arguments:
            for dotted, built in _constructions(scopes, value, function, klass, tree):
                reference = _reference(dotted, defined, imported)
                if reference is None or reference[1].lstrip(".").split(".")[0] in _LIBRARIES:
                    continue
                split = _split_by_caller(scopes, built, function, tree)
                found.add(DatasetPassed(
                    key, call.lineno, *callee, position, keyword, *reference, split
                ))
    return found


def _submodule(module: str, original: str, dotted: str) -> str:
    """``from pkg import data`` then ``data.Stream(...)``: the module ``pkg.data``."""
    parts = dotted.split(".")[1:-1]
    joined = ".".join([original, *parts])
    dot = "" if module.endswith(".") else "."
    return f"{module}{dot}{joined}"


# A file that builds a loader names it; one that hands a dataset to a function building one
# usually names the result (`train_loader = make_loader(...)`); a subclass of a dataset class
# is usually called a dataset. (A file missed here only hides findings.)
DATASET_LOADERS = FactCollector(
    "dataset loaders", (("DataLoader", "loader", "Loader", "Dataset"),),
    collect_dataset_loaders,
    kinds=(FACT_SUBCLASSES, FACT, FACT_PARAMETERS, FACT_PASSED),
    # Costly: SL105 asks only about the classes whose `__iter__` walks a finite source (its
    # syntax stage judges that), and only the files that spell one are read for it. Read from
    # every parse of the survey, as it once was, these facts served a question in 0 to 3 of the
    # 14 to 222 files read per tree (Lightning, diffusers, Megatron-LM, DeepSpeed, PyG, fairseq,
    # timm, composer, icefall): 1.2 ms of the survey per file.
    costly=True,
)


# ------------------------------------------------------------------------------------------------
# The rule side


def loaders_of(index: ProjectIndex, name: str, path: str) -> list[DatasetLoader]:
    """The recorded loaders built on the class ``name`` defined in the file at ``path``, or on
    a project subclass that inherits its ``__iter__`` and reads nothing of the processes:
    directly, or through a parameter of the project function the construction is handed to."""
    key = file_key(path)
    found = _loaders_of(index, name, key)
    for subclass in _inheriting(index, name, key):
        found += _loaders_of(index, subclass.name, subclass.path)
    return found


def _inheriting(index: ProjectIndex, name: str, key: str, depth: int = 0) -> list[Subclass]:
    """The project subclasses of the class ``name`` at ``key`` (a few levels down) that use
    its ``__iter__`` as it is. (A subclass's file spells the name of its base: the question
    reads only the files that hold ``name``, :meth:`ProjectIndex.get_for`.)"""
    if depth > 3:
        return []
    found = []
    for subclass in dict.fromkeys(index.get_for(FACT_SUBCLASSES, name)):
        if subclass.overrides or (subclass.name, subclass.path) == (name, key):
            continue
        if any(
            base == name and _names(index, subclass.path, module, key)
            for base, module in subclass.bases
        ):
            found.append(subclass)
            found += _inheriting(index, subclass.name, subclass.path, depth + 1)
    return found


def _loaders_of(index: ProjectIndex, name: str, key: str) -> list[DatasetLoader]:
    # A loader built on `name`, or a construction of `name` handed to a function, is code that
    # spells `name`; the function that builds the loader spells its own name.
    direct: list[DatasetLoader] = facts_named(index, FACT, name)
    passed: list[DatasetPassed] = facts_named(index, FACT_PASSED, name)
    found = [fact for fact in direct if _names(index, fact.path, fact.module, key)]
    for handed in passed:
        if not _names(index, handed.path, handed.module, key):
            continue
        functions: list[ParameterLoader] = index.get_for(FACT_PARAMETERS, handed.callee)
        for function in functions:
            if function.function != handed.callee or not _takes(function, handed):
                continue
            if not _names(index, handed.path, handed.callee_module, function.path):
                continue
            distributed = function.distributed and not handed.split
            if function.workers or distributed:
                found.append(DatasetLoader(
                    function.path, function.line, name, "", function.workers, distributed
                ))
    return found


def _takes(function: ParameterLoader, handed: DatasetPassed) -> bool:
    if handed.keyword:
        return handed.keyword == function.parameter
    return handed.position == function.position


def _names(index: ProjectIndex, user: str, module: str, target: str) -> bool:
    """Whether a name used in the file ``user`` (imported from ``module``, or defined there
    when ``module`` is empty) is the one defined in the file ``target``."""
    if not module:
        return user == target
    return user != target and import_may_name(index, user, module, target)
