"""Custom batch samplers and what Lightning's DDP re-instantiation does to them (SL501, SL502).

Under DDP, Lightning and Fabric re-create each loader's batch sampler around a
``DistributedSampler`` (``_dataloader_init_kwargs_resolve_sampler``): a ``BatchSampler`` subclass
built inside a ``*_dataloader`` hook with its saved arguments, ``sampler`` replaced; any other class
that has ``batch_size`` and ``drop_last`` as ``cls(sampler, batch_size=..., drop_last=...)``, every
other argument back to its default; anything else is rejected. This module keeps, per project
class, what that depends on (its ``__init__``, its ``__iter__``, what it reads of the sampler) and
answers, for the whole project, which classes are batch samplers and which of them break.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from sampler_lint.analysis.frameworks import (
    batch_sampler_sites,
    injection_on_for,
    lightning_near,
    sampler_arguments,
)
from sampler_lint.analysis.index import FactCollector, ProjectIndex, classes_named, statements
from sampler_lint.analysis.loader_facts import file_key
from sampler_lint.analysis.sampler_family import (
    CLASS_FACT_WORDS,
    FACT,
    TORCH_ATTRIBUTES,
    ClassAttributes,
    chain_of,
    project_ancestors,
    torch_sampler,
)
from sampler_lint.analysis.syntax_summary import walk

FACT_SHAPES = "sl5_class_shapes"

# What the injected sampler offers: a class that reads anything else of its sampler breaks when
# Lightning hands it a DistributedSampler.
_DISTRIBUTED_OFFERS = TORCH_ATTRIBUTES["DistributedSampler"] | {"set_epoch"}
_RECREATED_WITH = ("batch_size", "drop_last")


@dataclass(frozen=True)
class Signature:
    """An ``__init__``'s parameters, ``self`` left out: ``(name, has a default)``."""

    positional: tuple[tuple[str, bool], ...]
    star_args: bool
    keyword_only: tuple[tuple[str, bool], ...]
    star_kwargs: bool

    def accepts(self, name: str) -> bool:
        named = (*self.positional, *self.keyword_only)
        return self.star_kwargs or any(n == name for n, _ in named)

    def callable_as_fallback(self) -> bool:
        """Callable as ``cls(sampler, batch_size=..., drop_last=...)``."""
        if not (self.accepts("batch_size") and self.accepts("drop_last")):
            return False
        if not self.positional:
            return self.star_args
        required = [n for n, default in (*self.positional[1:], *self.keyword_only) if not default]
        return all(n in _RECREATED_WITH for n in required)

    def lost_on_fallback(self) -> list[str]:
        """The arguments the fallback re-creation resets to their defaults."""
        return [
            n for n, _ in (*self.positional[1:], *self.keyword_only) if n not in _RECREATED_WITH
        ]

    def takes_the_batch_sampler_triple(self) -> bool:
        """``(sampler, batch_size, drop_last, <defaulted>...)``: what BatchSampler's own
        signature promises, so Lightning's saved-arguments path re-creates it."""
        return (
            bool(self.positional) and self.positional[0][0] == "sampler"
            and self.callable_as_fallback() and not self.star_args
        )


@dataclass(frozen=True)
class ClassShape:
    name: str
    path: str
    init: Signature | None  # its own __init__
    super_init: str  # how its __init__ calls the base's: "none", "bare" (no arguments), "other"
    has_iter: bool
    has_len: bool
    iter_yields_batches: bool  # its own __iter__ yields lists (or slices) of indices
    iter_reads_sampler: bool  # its own __iter__ reads self.sampler
    # sampler.X / self.sampler.X that DistributedSampler lacks
    foreign_reads: tuple[str, ...]


def _signature(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Signature:
    args = function.args
    positional = [*args.posonlyargs, *args.args][1:]  # self left out
    required = max(len(positional) - len(args.defaults), 0)
    return Signature(
        tuple((a.arg, i >= required) for i, a in enumerate(positional)),
        args.vararg is not None,
        tuple(
            (a.arg, d is not None) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
        ),
        args.kwarg is not None,
    )


def _super_init(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    found = "none"
    for node in walk(function):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "__init__"):
            continue
        owner = node.func.value
        is_super = isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and (
            owner.func.id == "super"
        )
        if is_super and not node.args and not node.keywords:
            found = "bare" if found == "none" else found
        else:
            return "other"  # super().__init__(args), Sampler.__init__(self), or a member's init
    return found


def _is_self_sampler(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute) and node.attr == "sampler"
        and isinstance(node.value, ast.Name) and node.value.id == "self"
    )


def _batch_value(node: ast.expr | None, lists: set[str]) -> bool:
    """A value that is a list of indices: ``[...]``, a comprehension, ``list(...)`` /
    ``sorted(...)``, a slice ``xs[a:b]``, or a local bound to one."""
    if isinstance(node, (ast.List, ast.ListComp)):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in ("list", "sorted")
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Slice)
    return isinstance(node, ast.Name) and node.id in lists


def _yields_batches(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    lists: set[str] = set()
    for node in walk(function):
        if isinstance(node, ast.Assign) and _batch_value(node.value, set()):
            lists.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return any(
        isinstance(node, ast.Yield) and _batch_value(node.value, lists)
        for node in walk(function)
    )


def class_shape(node: ast.ClassDef, path: str) -> ClassShape:
    methods = {
        item.name: item for item in node.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    init = methods.get("__init__")
    iterate = methods.get("__iter__")
    foreign = set()
    for child in walk(node):
        if isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Load):
            holder = child.value
            if (isinstance(holder, ast.Name) and holder.id == "sampler") or _is_self_sampler(
                holder
            ):
                if child.attr not in _DISTRIBUTED_OFFERS and not child.attr.startswith("__"):
                    foreign.add(child.attr)
    return ClassShape(
        node.name,
        file_key(path),
        _signature(init) if init is not None else None,
        _super_init(init) if init is not None else "none",
        iterate is not None,
        "__len__" in methods,
        iterate is not None and _yields_batches(iterate),
        iterate is not None and any(_is_self_sampler(n) for n in walk(iterate)
                                    if isinstance(n, ast.Attribute)),
        tuple(sorted(foreign)),
    )


def collect_shapes(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    shapes = [
        class_shape(node, path) for node in statements(tree)
        if isinstance(node, ast.ClassDef) and node.bases
    ]
    return {FACT_SHAPES: sorted(shapes, key=lambda s: s.name)}


SHAPES = FactCollector(
    "batch sampler shapes", (CLASS_FACT_WORDS,), collect_shapes, kinds=(FACT_SHAPES,)
)


# ------------------------------------------------------------------------------------------------
# Questions about the project


def shape_of(index: ProjectIndex, fact: ClassAttributes) -> ClassShape | None:
    # A class's shape comes from the file that spells `class name`: the question reads only the
    # files that may define it (classes_named).
    shapes: list[ClassShape] = classes_named(index, FACT_SHAPES, fact.name)
    for shape in shapes:
        if (shape.name, shape.path) == (fact.name, fact.path):
            return shape
    return None


def _lineage(index: ProjectIndex, fact: ClassAttributes) -> list[ClassShape]:
    """The shapes of the class and its project bases, nearest first."""
    found = [shape_of(index, c) for c in (fact, *project_ancestors(index, fact))]
    return [shape for shape in found if shape is not None]


def nearest_init(index: ProjectIndex, fact: ClassAttributes) -> Signature | None:
    """The ``__init__`` the class runs: its own, or the nearest project base's (``None``: torch's
    own)."""
    return next((s.init for s in _lineage(index, fact) if s.init is not None), None)


def _nearest_iter(index: ProjectIndex, fact: ClassAttributes) -> ClassShape | None:
    return next((s for s in _lineage(index, fact) if s.has_iter), None)


def names_sampler_directly(fact: ClassAttributes) -> bool:
    return any(torch_sampler(base) == "Sampler" for base in fact.bases)


@dataclass(frozen=True)
class Breakage:
    """Why Lightning cannot re-create a batch sampler faithfully."""

    problem: str
    lossy_fallback: bool = False  # re-created, but with arguments or sampler attributes lost


def is_batch_sampler(index: ProjectIndex, fact: ClassAttributes) -> bool:
    chain = chain_of(index, fact)
    if "BatchSampler" in chain.torch_bases or bool(batch_sampler_sites(index, fact.name)):
        return True
    # Yielding lists makes a plain Sampler subclass a batch sampler; a DistributedSampler (or
    # any other torch sampler) that groups its indices, or a class passed as `sampler=` with
    # `batch_size=None`, is never re-created by Lightning.
    if chain.torch_bases - {"Sampler"} or bool(sampler_arguments(index, fact.name)):
        return False
    iterate = _nearest_iter(index, fact)
    return iterate is not None and iterate.iter_yields_batches


def breakage(index: ProjectIndex, fact: ClassAttributes) -> Breakage | None:
    """How Lightning's re-instantiation breaks this batch sampler, or ``None``."""
    cache: dict[tuple[str, str], Breakage | None] = index.__dict__.setdefault("_sl5_breakage", {})
    key = (fact.name, fact.path)
    if key not in cache:
        cache[key] = None  # a cycle of bases answers "no"
        cache[key] = _breakage(index, fact)
    return cache[key]


def _breakage(index: ProjectIndex, fact: ClassAttributes) -> Breakage | None:
    chain = chain_of(index, fact)
    subclasses = "BatchSampler" in chain.torch_bases
    if chain.opaque and not subclasses:
        # A base the tool cannot see may well be a BatchSampler. Asked first: most classes of
        # a project derive from such a base, and are not looked for at `batch_sampler=`.
        return None
    if not is_batch_sampler(index, fact):
        return None
    init = nearest_init(index, fact)
    if subclasses:
        if init is None or init.accepts("sampler"):
            return None
        problem = (
            "its `__init__` has no `sampler` argument, so Lightning cannot re-create it with "
            "a DistributedSampler (`TypeError: ... does not have an argument called sampler`)"
        )
    elif not {"batch_size", "drop_last"} <= chain.known:  # torch's bases' attributes count
        problem = (
            "it does not subclass BatchSampler and has no `batch_size` / `drop_last`: "
            "Lightning 2.x raises `can't inject a (distributed) sampler into your batch "
            "sampler`; 1.x fails with `object has no attribute 'batch_size'`"
        )
    elif init is None or not init.callable_as_fallback():
        problem = (
            "it does not subclass BatchSampler and `__init__` cannot be called as "
            "`cls(sampler, batch_size=..., drop_last=...)`, as Lightning re-creates it: a "
            "`TypeError` (worded `can't inject a (distributed) sampler` in 2.x when an "
            "argument is missing or given twice; `unexpected keyword argument` otherwise)"
        )
    else:
        problem = _fallback_losses(index, fact, init)
        if not problem:
            return None  # the fallback re-creates it faithfully
        return Breakage(problem, lossy_fallback=True)
    return Breakage(problem)


def _fallback_losses(index: ProjectIndex, fact: ClassAttributes, init: Signature) -> str:
    """What the fallback ``cls(DistributedSampler, batch_size=..., drop_last=...)`` gets wrong."""
    reasons = []
    foreign = sorted({read for shape in _lineage(index, fact) for read in shape.foreign_reads})
    if foreign:
        listed = ", ".join(f"`sampler.{name}`" for name in foreign)
        reasons.append(
            f"it reads {listed}, which the injected DistributedSampler lacks (AttributeError)"
        )
    lost = init.lost_on_fallback()
    if lost:
        listed = ", ".join(f"`{name}`" for name in lost)
        verb = "silently goes back to its default" if len(lost) == 1 else (
            "silently go back to their defaults"
        )
        reasons.append(f"{listed} {verb}")
    if not reasons:
        return ""
    return (
        "it does not subclass BatchSampler, so Lightning re-creates it as "
        "`cls(DistributedSampler, batch_size=..., drop_last=...)`: " + "; ".join(reasons)
    )


def subclasses_of(index: ProjectIndex, fact: ClassAttributes) -> list[ClassAttributes]:
    """The project classes whose chain passes through ``fact``."""
    return [
        other for other in dict.fromkeys(index.get(FACT))
        if other != fact and fact in project_ancestors(index, other)
    ]


def broken_subclass(
    index: ProjectIndex, fact: ClassAttributes
) -> tuple[ClassAttributes, Breakage] | None:
    """For a class that names ``Sampler`` as its base: a subclass used as a batch sampler that
    Lightning cannot re-create (the base is where ``BatchSampler`` belongs)."""
    if not names_sampler_directly(fact):
        return None
    for other in subclasses_of(index, fact):
        found = breakage(index, other)
        if found is not None and lightning_injects(index, other):
            return other, found
    return None


def lightning_injects(index: ProjectIndex, *facts: ClassAttributes) -> bool:
    """Whether Lightning / Fabric may re-create these classes' batch samplers: a file that
    imports it sits near the class or where it reaches ``batch_sampler=``, and the Trainers that
    may receive those loaders leave injection on (judged where the class is used when that is
    known, else by the whole project)."""
    used = {path for fact in facts for path in batch_sampler_sites(index, fact.name)}
    defined = {fact.path for fact in facts}
    return lightning_near(index, used | defined) and injection_on_for(index, used or defined)
