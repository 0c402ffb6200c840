"""Sampler-family classes and what their attributes are (SL4xx).

A class is in the sampler family when its chain of bases reaches one of torch's samplers, through
classes defined anywhere in the project (the index) and aliased imports. For each class the index
keeps what it assigns, what it reads and whether it is opaque (``setattr`` with a computed name,
``self.__dict__``, ``__getattr__``); torch's own attributes are known per base without importing
torch.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sampler_lint.analysis.frameworks import INDEX_REQUIRES as FRAMEWORK_REQUIRES
from sampler_lint.analysis.index import (
    DERIVES_FROM,
    FactCollector,
    ProjectIndex,
    class_names_in,
    classes_named,
    dotted_expression,
    import_aliases,
    qualify,
    statements,
)
from sampler_lint.analysis.loader_facts import file_key
from sampler_lint.analysis.syntax_summary import walk
from sampler_lint.analysis.text_shapes import COMMENT

# RULES.md: the attributes torch's samplers set (what a subclass may read without assigning).
TORCH_ATTRIBUTES: dict[str, frozenset[str]] = {
    "Sampler": frozenset(),
    "BatchSampler": frozenset({"sampler", "batch_size", "drop_last"}),
    "SequentialSampler": frozenset({"data_source"}),
    "RandomSampler": frozenset(
        {"data_source", "replacement", "generator", "_num_samples", "num_samples"}
    ),
    "SubsetRandomSampler": frozenset({"indices", "generator"}),
    "WeightedRandomSampler": frozenset({"weights", "num_samples", "replacement", "generator"}),
    "DistributedSampler": frozenset({
        "dataset", "num_replicas", "rank", "epoch", "num_samples", "total_size", "shuffle",
        "seed", "drop_last",
    }),
}
_TORCH_MODULES = ("torch.utils.data", "torch.utils.data.sampler", "torch.utils.data.distributed")
# Standard-library mixins: they add no instance attributes and no `__init__` arguments, so a class
# that also derives from one stays transparent (RULES.md SL501: mixins do not make it opaque).
TRANSPARENT_BASES = frozenset({
    "object", "builtins.object", "abc.ABC",
    "typing.Generic", "typing.Protocol", "typing_extensions.Protocol",
    "typing.Iterator", "typing.Iterable", "typing.Sized",
    "collections.abc.Iterator", "collections.abc.Iterable", "collections.abc.Sized",
})

FACT = "sl4_classes"
# A file whose classes may be in the index mentions one of these (a sampler class, or one passed as
# `batch_sampler=` or built near a trainer switch, for SL501). A rule that needs a class fact can
# require no more of a file's text than this.
CLASS_FACT_WORDS: tuple[str, ...] = ("Sampler", *FRAMEWORK_REQUIRES[0])


@dataclass(frozen=True)
class ClassAttributes:
    name: str
    path: str
    bases: tuple[str, ...]  # qualified through the file's imports
    # Sorted tuples, not sets: the index is pickled and hashed for the cache, and a set's order
    # changes from one process to the next.
    assigned: tuple[str, ...]  # self.X assigned anywhere, class-body names, literal setattr
    read: tuple[str, ...]  # self.X read anywhere in the class
    opaque: bool


def torch_sampler(qualified: str) -> str | None:
    """``torch.utils.data.DistributedSampler`` -> ``"DistributedSampler"``."""
    module, _, name = qualified.rpartition(".")
    if name in TORCH_ATTRIBUTES and module in _TORCH_MODULES:
        return name
    return None


# ------------------------------------------------------------------------------------------------
# Facts


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def class_attributes(node: ast.ClassDef, path: str, aliases: dict[str, str]) -> ClassAttributes:
    assigned: set[str] = set()
    read: set[str] = set()
    opaque = False
    for item in node.body:  # class attributes, annotations, methods, properties
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assigned.add(item.name)
            if item.name in ("__getattr__", "__getattribute__", "__setattr__"):
                opaque = True
        elif isinstance(item, ast.Assign):
            assigned.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            assigned.add(item.target.id)
    for child in walk(node):
        if isinstance(child, ast.Attribute) and _is_self(child.value):
            if child.attr == "__dict__":
                opaque = True
            elif isinstance(child.ctx, ast.Store):
                assigned.add(child.attr)
            elif isinstance(child.ctx, ast.Load):
                read.add(child.attr)
        elif isinstance(child, ast.AugAssign):
            target = child.target
            if isinstance(target, ast.Attribute) and _is_self(target.value):
                read.add(target.attr)
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            if child.func.id in ("setattr", "getattr") and child.args and _is_self(child.args[0]):
                if len(child.args) > 1 and isinstance(child.args[1], ast.Constant) and isinstance(
                    child.args[1].value, str
                ):
                    (assigned if child.func.id == "setattr" else read).add(child.args[1].value)
                elif child.func.id == "setattr":
                    opaque = True  # a computed name: anything may be set
    bases = []
    for base in node.bases:
        dotted = dotted_expression(base)
        bases.append(qualify(aliases, dotted) if dotted else "<unknown>")
    return ClassAttributes(
        node.name, file_key(path), tuple(bases), tuple(sorted(assigned)), tuple(sorted(read)),
        opaque
    )


def collect_class_facts(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    """The SL4xx/SL5xx class facts of one file."""
    aliases = import_aliases(tree)
    classes = [
        class_attributes(node, path, aliases)
        for node in statements(tree)
        if isinstance(node, ast.ClassDef) and node.bases
    ]
    return {FACT: sorted(classes, key=lambda c: (c.path, c.name))}


CLASS_FACTS = FactCollector(
    "sampler classes", (CLASS_FACT_WORDS,), collect_class_facts, kinds=(FACT,)
)


# ------------------------------------------------------------------------------------------------
# The chain of a class


@dataclass
class Chain:
    """What a class can see through its bases."""

    torch_bases: set[str]
    assigned: set[str]  # by the class and its project bases
    read: set[str]  # by the class and its project bases
    base_reads: set[str]  # read by its bases only (torch's attributes count as read by torch)
    opaque: bool

    @property
    def is_sampler(self) -> bool:
        return bool(self.torch_bases)

    @property
    def known(self) -> set[str]:
        torch = {a for base in self.torch_bases for a in TORCH_ATTRIBUTES[base]}
        return self.assigned | torch


def _classes(index: ProjectIndex) -> dict[str, list[ClassAttributes]]:
    cached = index.__dict__.get("_sl4_classes")
    if cached is None:
        cached = {}
        for fact in dict.fromkeys(index.get(FACT)):  # several rules may collect the same facts
            cached.setdefault(fact.name, []).append(fact)
        index.__dict__["_sl4_classes"] = cached
    return cached


def _named(index: ProjectIndex, name: str) -> list[ClassAttributes]:
    """The project classes called ``name``. A class's facts come from the file that spells
    ``class name``: the question reads only the files that may define it
    (:func:`classes_named`)."""
    return classes_named(index, FACT, name)


def find_class(index: ProjectIndex, name: str, path: str) -> ClassAttributes | None:
    key = file_key(path)
    for fact in _named(index, name):
        if fact.path == key:
            return fact
    return None


def classes_at(index: ProjectIndex, path: str, text: str) -> list[ClassAttributes]:
    """The classes of the file at ``path`` (``text``, its code) that :func:`find_class` can
    return, asked one name at a time (:func:`class_names_in`)."""
    found = (find_class(index, name, path) for name in sorted(class_names_in(text)))
    return [fact for fact in found if fact is not None]


def chain_of(index: ProjectIndex, cls: ClassAttributes) -> Chain:
    chain = Chain(set(), set(cls.assigned), set(cls.read), set(), cls.opaque)
    for base in _bases(index, cls, frozenset({(cls.name, cls.path)})):
        if isinstance(base, str):
            if base in TRANSPARENT_BASES:
                continue
            torch = torch_sampler(base)
            if torch is None:
                chain.opaque = True  # a base the tool cannot see into
            else:
                chain.torch_bases.add(torch)
                chain.base_reads |= TORCH_ATTRIBUTES[torch]
        else:
            chain.assigned.update(base.assigned)
            chain.read.update(base.read)
            chain.base_reads.update(base.read)
            chain.opaque = chain.opaque or base.opaque
    return chain


def _bases(
    index: ProjectIndex, cls: ClassAttributes, seen: frozenset[tuple[str, str]]
) -> Iterator[ClassAttributes | str]:
    """Every base up the chain: project classes, and qualified names where the project ends."""
    for base in cls.bases:
        simple = base.rsplit(".", 1)[-1]
        if torch_sampler(base) is not None or base in TRANSPARENT_BASES:
            yield base
            continue
        candidates = [c for c in _named(index, simple) if (c.name, c.path) not in seen]
        if len(candidates) != 1:
            yield base  # unknown, or ambiguous between several project classes: opaque
            continue
        found = candidates[0]
        yield found
        yield from _bases(index, found, seen | {(found.name, found.path)})


def project_ancestors(index: ProjectIndex, cls: ClassAttributes) -> list[ClassAttributes]:
    """The project classes up the chain of ``cls``, nearest first (depth-first, as the bases are
    listed): where an inherited ``__init__`` or ``__iter__`` comes from."""
    return [
        base for base in _bases(index, cls, frozenset({(cls.name, cls.path)}))
        if isinstance(base, ClassAttributes)
    ]


# ------------------------------------------------------------------------------------------------
# Near misses


def near_miss(a: str, b: str) -> bool:
    """RULES.md: the same letters ignoring underscores, or edit distance <= 2 for names of six
    or more characters."""
    if a == b:
        return False
    if a.replace("_", "") == b.replace("_", ""):
        return True
    return len(a) >= 6 and len(b) >= 6 and _distance(a, b) <= 2


def _distance(a: str, b: str) -> int:
    if abs(len(a) - len(b)) > 2:
        return 3
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


# ------------------------------------------------------------------------------------------------
# Constructions


def constructed_class(index: ProjectIndex, name: str, path: str) -> ClassAttributes | None:
    """The project class a construction ``name(...)`` in the file at ``path`` builds: defined in
    that file, else the one project class of that name (several or none: unknown)."""
    simple = name.rsplit(".", 1)[-1]
    local = find_class(index, simple, path)
    if local is not None:
        return local
    candidates = _named(index, simple)
    return candidates[0] if len({c.path for c in candidates}) == 1 else None


def project_classes_named(index: ProjectIndex, name: str) -> list[ClassAttributes]:
    """The project classes called ``name`` that have bases (read only from the files that may
    define one)."""
    return _named(index, name)


def torch_bases_of(index: ProjectIndex, name: str, path: str) -> set[str]:
    """The torch samplers a construction ``name(...)`` in the file at ``path`` derives from:
    ``{"DistributedSampler"}`` for torch's class and for a project subclass at any depth."""
    torch = torch_sampler(name)
    if torch is not None:
        return {torch}
    found = constructed_class(index, name, path)
    return chain_of(index, found).torch_bases if found is not None else set()


def lineage(index: ProjectIndex, cls: ClassAttributes) -> list[ClassAttributes]:
    """``cls`` and its project bases, nearest first (torch's and unknown bases left out)."""
    seen = frozenset({(cls.name, cls.path)})
    return [cls, *(b for b in _bases(index, cls, seen) if isinstance(b, ClassAttributes))]


def subclasses_of(index: ProjectIndex, cls: ClassAttributes) -> list[ClassAttributes]:
    """The project classes whose chain passes through ``cls``."""
    return [
        other
        for facts in _classes(index).values()
        for other in facts
        if other is not cls and any(
            (b.name, b.path) == (cls.name, cls.path) for b in lineage(index, other)[1:]
        )
    ]


def project_subclass_names(index: ProjectIndex, torch_class: str) -> frozenset[str]:
    """The names of the project classes that derive from torch's ``torch_class`` at any depth
    (cached per index): a construction of one of them names it (:func:`constructed_class`
    finds a class by its last name).

    Found downwards, one name at a time, reading only the files that hold a name: every class
    on a chain that ends at ``torch_class`` spells the last name of its base, so following "a
    class with a base of that name" down from ``torch_class`` meets each of them; each met is
    judged by :func:`chain_of`, as when every class of the project is judged."""
    key = f"_sl_project_subclasses_{torch_class}"
    cached: frozenset[str] | None = index.__dict__.get(key)
    if cached is None:
        found: set[str] = set()
        asked: set[str] = set()
        names = [torch_class]
        while names:
            name = names.pop()
            if name in asked:
                continue
            asked.add(name)
            # Only a file with a class header that spells the name can hold such a class: a
            # file that imports or builds the class is not parsed for this question.
            for fact in dict.fromkeys(index.get_for(FACT, DERIVES_FROM + name)):
                if not any(base.rsplit(".", 1)[-1] == name for base in fact.bases):
                    continue  # the file spells the name, but not as this class's base
                names.append(fact.name)
                if torch_class in chain_of(index, fact).torch_bases:
                    found.add(fact.name)
        cached = index.__dict__[key] = frozenset(found)
    return cached


def spells_project_subclass(index: ProjectIndex, text: str, torch_class: str) -> bool:
    """Whether ``text`` names a project class that derives from torch's ``torch_class``: a
    file that spells none of them cannot construct one (an index-stage question)."""
    return any(name in text for name in project_subclass_names(index, torch_class))


def calls_project_subclass(index: ProjectIndex, text: str, torch_class: str) -> bool:
    """Whether ``text`` may call a project class that derives from torch's ``torch_class``:
    spells one of their names, as a whole name, followed by ``(`` or ``[`` (``X(...)``,
    ``m.X(...)``, ``X[T](...)``), with only blanks, closing parentheses (``(X)(...)``), line
    continuations or comments between. A file that only imports such a class, tests an
    object against it or defines it (``class X(Base):``, the subclass's own module) constructs
    none (:func:`constructed` reads the callee's name)."""
    key = f"_sl_project_subclass_call_{torch_class}"
    found: tuple[tuple[str, ...], re.Pattern[str] | None] | None = index.__dict__.get(key)
    if found is None:
        names = tuple(sorted(project_subclass_names(index, torch_class)))
        found = index.__dict__[key] = (names, re.compile(
            r"\b(?:" + "|".join(map(re.escape, names)) + rf")(?:[\s)\\]|{COMMENT})*[(\[]"
        ) if names else None)
    names, pattern = found
    # A substring search first: the pattern, which starts with a choice of names, is tried at
    # every word of the text (Lightning's index stage: 42 ms for 71 files, most spelling none).
    return pattern is not None and any(name in text for name in names) and any(
        not _DEFINED.search(text, max(0, match.start() - 64), match.start())
        for match in pattern.finditer(text)
    )


# `class` or `def` right before a name: it is being defined, not called. (A prefix group in the
# pattern above would cost the regular expression engine its fast scan for the names' letters.)
_DEFINED = re.compile(r"\b(?:class|def)[ \t]+$")


def is_distributed_sampler_class(index: ProjectIndex, name: str, path: str) -> bool:
    """Whether the project class ``name`` (its last name), as used in the file at ``path``, has
    torch's ``DistributedSampler`` up its chain of bases (see :func:`constructed_class`)."""
    found = constructed_class(index, name, path)
    return found is not None and "DistributedSampler" in chain_of(index, found).torch_bases


# ------------------------------------------------------------------------------------------------
# Samplers that shard by rank (SL504)

# What a sampler that splits the data between processes reads of itself.
RANK_ATTRIBUTES = frozenset({
    "rank", "num_replicas", "world_size", "global_rank", "local_rank", "process_index",
    "num_processes",
})


def shards_by_rank(index: ProjectIndex, name: str) -> bool:
    """The project's one class called ``name`` is (or derives from) ``DistributedSampler``, or
    reads ``self.rank`` / ``self.num_replicas`` (and the like) itself or through its bases."""
    candidates = _named(index, name.rsplit(".", 1)[-1])
    if len({(c.name, c.path) for c in candidates}) != 1:
        return False  # unknown, or ambiguous between several project classes
    chain = chain_of(index, candidates[0])
    return "DistributedSampler" in chain.torch_bases or bool(chain.read & RANK_ATTRIBUTES)
