"""Where an epoch set in the main process is read (SL204): which attributes a class's
``set_epoch`` rebinds, which of them its worker-side methods read, and who calls ``set_epoch`` on
batch samplers.

A DataLoader worker works on its own copy of the dataset. With ``persistent_workers=True`` that
copy is made once, when the loader is first iterated, so an attribute the main process rebinds
later (``self.epoch = epoch``) never reaches it. Writes *into* an object the workers share
(``self.epoch.value = e`` on a ``multiprocessing.Value``, ``self.epoch.fill_(e)`` or
``self.epoch[0] = e`` on a shared tensor) do reach them, and are not rebinds. The facts are read
per class with Python's ``ast`` and composed along the project's chain of bases, so a dataset
defined in another file is judged like a local one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sampler_lint.analysis.index import (
    FactCollector,
    ProjectIndex,
    classes_named,
    dotted_expression,
    import_aliases,
    qualify,
    statements,
)
from sampler_lint.analysis.loader_facts import file_key
from sampler_lint.analysis.syntax_summary import SyntaxSummary, walk
from sampler_lint.analysis.text_shapes import names_a_word

FACT_CLASSES = "sl204_epoch_classes"
FACT_BATCH_EPOCH_CALLERS = "sl204_batch_epoch_callers"
FACT_LIGHTNING_1X = "sl204_lightning_1x"

# What runs in a worker (a dataset's item and iteration methods), or, for a batch sampler, in the
# main process on every `iter(loader)`.
ENTRY_METHODS = ("__getitem__", "__getitems__", "__iter__", "__next__")
# Bases whose instances carry no attribute magic: the class is all the tool needs to see.
PLAIN_BASES = frozenset({
    "object", "builtins.object", "abc.ABC", "typing.Generic", "typing.Protocol",
    "typing.Iterator", "typing.Iterable", "typing.Sized",
    "collections.abc.Iterator", "collections.abc.Iterable", "collections.abc.Sized",
})
_TORCH_DATA = ("torch.utils.data", "torch.utils.data.dataset", "torch.utils.data.sampler")
TORCH_DATA_CLASSES = frozenset({
    "Dataset", "IterableDataset", "Sampler", "BatchSampler", "RandomSampler",
    "SequentialSampler",
})
_MAGIC = ("__setattr__", "__getattr__", "__getattribute__")
# Lightning 1.x only (removed or renamed in 2.0): a project that still uses them may run a 1.x
# version, where 1.6.5 to 1.9 did call `batch_sampler.set_epoch`.
LIGHTNING_1X_MARKERS = (
    "replace_sampler_ddp", "training_epoch_end", "validation_epoch_end", "test_epoch_end",
)


@dataclass(frozen=True)
class MethodFacts:
    name: str
    reads: tuple[str, ...]  # self.X read
    writes: tuple[str, ...]  # self.X rebound: `self.X = ...`, `self.X += ...`, `del self.X`
    calls: tuple[str, ...]  # self.m(...) called
    super_calls: tuple[str, ...]  # super().m(...) called


@dataclass(frozen=True)
class EpochClass:
    name: str
    path: str
    bases: tuple[str, ...]  # qualified through the file's imports ("<unknown>" when computed)
    methods: tuple[MethodFacts, ...]
    members: tuple[str, ...]  # methods, properties and other non-constant class attributes
    magic: bool  # defines __setattr__ / __getattr__ / __getattribute__


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _method_facts(function: ast.FunctionDef | ast.AsyncFunctionDef) -> MethodFacts:
    reads: set[str] = set()
    writes: set[str] = set()
    calls: set[str] = set()
    supers: set[str] = set()
    for node in walk(function):
        if isinstance(node, ast.Attribute) and _is_self(node.value):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                writes.add(node.attr)
            else:
                reads.add(node.attr)
        elif isinstance(node, ast.AugAssign):
            target = node.target
            if isinstance(target, ast.Attribute) and _is_self(target.value):
                writes.add(target.attr)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                owner = func.value
                if _is_self(owner):
                    calls.add(func.attr)
                elif (
                    isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name)
                    and owner.func.id == "super"
                ):
                    supers.add(func.attr)
            elif isinstance(func, ast.Name) and func.id == "setattr":
                if node.args and _is_self(node.args[0]):
                    name = node.args[1] if len(node.args) > 1 else None
                    if isinstance(name, ast.Constant) and isinstance(name.value, str):
                        writes.add(name.value)
                    else:
                        writes.add("*")  # a computed name: anything may be rebound
    return MethodFacts(
        function.name, tuple(sorted(reads)), tuple(sorted(writes)), tuple(sorted(calls)),
        tuple(sorted(supers)),
    )


def epoch_class(node: ast.ClassDef, path: str, aliases: dict[str, str]) -> EpochClass:
    methods = []
    members: set[str] = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.add(item.name)
            methods.append(_method_facts(item))
        elif isinstance(item, ast.Assign) and not isinstance(item.value, ast.Constant):
            # `epoch = 0` is a default an instance attribute shadows; anything else in the
            # class body (`epoch = property(...)`, a descriptor) may intercept the write.
            members.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            if item.value is not None and not isinstance(item.value, ast.Constant):
                members.add(item.target.id)
    bases = []
    for base in node.bases:
        dotted = dotted_expression(base)
        bases.append(qualify(aliases, dotted) if dotted else "<unknown>")
    return EpochClass(
        node.name, file_key(path), tuple(bases), tuple(methods), tuple(sorted(members)),
        bool(members & set(_MAGIC)),
    )


def _receiver_names(tree: ast.Module) -> Iterator[str]:
    """The receivers of ``<x>.set_epoch(...)`` calls that may be a batch sampler: a dotted
    receiver naming a batch sampler, or a name bound to a class construction (the class name)."""
    constructed: dict[str, set[str]] = {}
    summary = SyntaxSummary.of(tree)  # its nodes by kind: no walk of the whole tree here
    for assign in summary.nodes(ast.Assign):
        if isinstance(assign.value, ast.Call):
            called = dotted_expression(assign.value.func)
            for target in assign.targets:
                held = dotted_expression(target)
                if called and held:
                    constructed.setdefault(held, set()).add(called.rsplit(".", 1)[-1])
    for call in summary.nodes(ast.Call):
        if isinstance(call.func, ast.Attribute) and call.func.attr == "set_epoch":
            receiver = dotted_expression(call.func.value) or "<unknown>"
            yield receiver
            yield from constructed.get(receiver, ())


def collect_epoch_facts(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    aliases = import_aliases(tree)
    classes = [
        epoch_class(node, path, aliases)
        for node in statements(tree) if isinstance(node, ast.ClassDef)
    ]
    return {FACT_CLASSES: sorted(classes, key=lambda c: c.name)}


# A class whose epoch may be copied into workers mentions an epoch; its bases mention a Dataset
# or a Sampler (a base the index lacks makes the chain unknown, which flags nothing).
EPOCH_CLASSES = FactCollector(
    "epoch classes", (("epoch", "Dataset", "Sampler"),), collect_epoch_facts,
    kinds=(FACT_CLASSES,),
    # Asked about one class by name (the files that may define it are read), and each class
    # walks its methods: read only for the files whose rules left read it (SL204's), not for
    # every file the survey parses (most of this collector's time went unused).
    costly=True,
)


def collect_batch_epoch_callers(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    return {FACT_BATCH_EPOCH_CALLERS: sorted(set(_receiver_names(tree)))}


# The receivers of `set_epoch` calls, for the whole-project question "is set_epoch called on
# something that may be this batch sampler": apart from the epoch classes, so that question
# reads, from the survey's parse, the files that spell `set_epoch` (cheap: their calls only).
BATCH_EPOCH_CALLERS = FactCollector(
    "set_epoch receivers", (("set_epoch",),), collect_batch_epoch_callers,
    kinds=(FACT_BATCH_EPOCH_CALLERS,),
)


def collect_lightning_1x(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    for node in walk(tree):
        name = (
            node.attr if isinstance(node, ast.Attribute)
            else node.arg if isinstance(node, ast.keyword)
            else node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            else node.value if isinstance(node, ast.Constant) and isinstance(node.value, str)
            else None
        )
        if name in LIGHTNING_1X_MARKERS:
            return {FACT_LIGHTNING_1X: [file_key(path)]}
    return {FACT_LIGHTNING_1X: []}


LIGHTNING_1X = FactCollector(
    "lightning 1.x markers", (LIGHTNING_1X_MARKERS,), collect_lightning_1x,
    settled=lambda index: bool(index.get(FACT_LIGHTNING_1X)), kinds=(FACT_LIGHTNING_1X,),
    # A marker is a whole name, or a whole string: Lightning 2.x's own hooks spell them inside
    # theirs (`on_validation_epoch_end`), and every file that does was read for this question
    # until one held a marker (Lightning's own tree: 13 files, now 1).
    shape=lambda text: names_a_word(text, LIGHTNING_1X_MARKERS),
)


def may_run_lightning_1x(index: ProjectIndex) -> bool:
    return bool(index.get(FACT_LIGHTNING_1X))


# ------------------------------------------------------------------------------------------------
# Questions about a class


def _named(index: ProjectIndex, name: str) -> list[EpochClass]:
    # A class's facts come from the file that spells `class name`: the question reads only the
    # files that may define it (:func:`classes_named`).
    return classes_named(index, FACT_CLASSES, name)


def find_epoch_class(index: ProjectIndex, name: str, path: str) -> EpochClass | None:
    """The class a construction ``name(...)`` in the file at ``path`` builds: the one of that
    name defined in that file, else the project's only class of that name."""
    simple = name.rsplit(".", 1)[-1]
    candidates = _named(index, simple)
    key = file_key(path)
    local = [c for c in candidates if c.path == key]
    if local:
        return local[0]
    return candidates[0] if len({c.path for c in candidates}) == 1 else None


def _is_plain_base(base: str) -> bool:
    if base in PLAIN_BASES:
        return True
    module, _, name = base.rpartition(".")
    return name in TORCH_DATA_CLASSES and module in _TORCH_DATA


@dataclass
class Lineage:
    """A class and its project bases, nearest first; ``known`` when every other base is plain."""

    classes: list[EpochClass]
    known: bool

    def versions(self, method: str) -> list[MethodFacts]:
        """Every definition of ``method`` up the chain, nearest first."""
        return [m for c in self.classes for m in c.methods if m.name == method]

    def members(self) -> set[str]:
        return {name for c in self.classes for name in c.members}

    @property
    def magic(self) -> bool:
        return any(c.magic for c in self.classes)

    def reached(self, entries: tuple[str, ...]) -> tuple[set[str], set[str]]:
        """The ``self`` attributes read and rebound by the nearest definitions of ``entries`` and
        every method they call (``self.m()`` resolved from the nearest class, ``super().m()`` to
        every farther definition)."""
        reads: set[str] = set()
        writes: set[str] = set()
        seen: set[int] = set()
        queue: list[MethodFacts] = []
        for entry in entries:
            queue.extend(self.versions(entry)[:1])
        while queue:
            method = queue.pop()
            if id(method) in seen:
                continue
            seen.add(id(method))
            reads.update(method.reads)
            writes.update(method.writes)
            for called in method.calls:
                queue.extend(self.versions(called)[:1])
            for called in method.super_calls:
                queue.extend(self.versions(called)[1:])
        return reads, writes


def lineage_of(index: ProjectIndex, cls: EpochClass) -> Lineage:
    classes = [cls]
    known = True
    seen = {(cls.name, cls.path)}
    queue = [cls]
    while queue:
        current = queue.pop(0)
        for base in current.bases:
            if _is_plain_base(base):
                continue
            simple = base.rsplit(".", 1)[-1]
            candidates = [
                c for c in _named(index, simple) if (c.name, c.path) not in seen
            ]
            same_file = [c for c in candidates if c.path == current.path]
            chosen = same_file[:1] or (candidates if len(candidates) == 1 else [])
            if not chosen:
                known = False  # a library base, or several project classes of that name
                continue
            seen.add((chosen[0].name, chosen[0].path))
            classes.append(chosen[0])
            queue.append(chosen[0])
    return Lineage(classes, known)


@dataclass(frozen=True)
class StaleEpoch:
    """Attributes a main-process write rebinds that the worker-side methods read."""

    attributes: tuple[str, ...]
    entry: str  # the entry method that reads them (for the message)


def stale_in_workers(
    index: ProjectIndex, cls: EpochClass, rebound: set[str], *, need_known: bool
) -> StaleEpoch | None:
    """Which of ``rebound`` the worker side of ``cls`` reads without rebinding them itself."""
    lineage = lineage_of(index, cls)
    if lineage.magic or (need_known and not lineage.known):
        return None
    members = lineage.members()
    for entry in ENTRY_METHODS:
        reads, writes = lineage.reached((entry,))
        if "*" in writes:
            return None
        stale = (rebound & reads) - writes - members
        if stale:
            return StaleEpoch(tuple(sorted(stale)), entry)
    return None


def set_epoch_rebinds(index: ProjectIndex, cls: EpochClass) -> set[str] | None:
    """The attributes ``cls.set_epoch`` (the nearest definition, and what it calls) rebinds, or
    ``None`` when the class has no ``set_epoch`` the tool can see."""
    lineage = lineage_of(index, cls)
    if not lineage.versions("set_epoch"):
        return None
    _, writes = lineage.reached(("set_epoch",))
    return writes


def batch_sampler_epoch_called(index: ProjectIndex, class_name: str) -> bool:
    """Whether project code calls ``set_epoch`` on something that may be a batch sampler of
    class ``class_name``: a receiver named for a batch sampler (``loader.batch_sampler``,
    ``batch_sampler``, ``self.train_batches``) or a name the project binds to that class."""
    for receiver in index.get(FACT_BATCH_EPOCH_CALLERS):
        last = receiver.rsplit(".", 1)[-1]
        if last == class_name or "batch" in receiver.lower() or receiver == "<unknown>":
            return True
    return False
