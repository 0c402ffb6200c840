"""A read-only traversal of a libcst tree that calls the rules' ``visit_*`` / ``leave_*`` methods.

libcst's own traversal (``visit_batched``) rebuilds every node on the way back up, so that
transformers can replace them; linting never replaces anything, and that rebuilding was two
thirds of the time of a whole run. This walk reads each node's children the way
``sampler_lint.analysis.tree`` does (in libcst's visiting order, whitespace and comments aside)
and records the parent of every node on the way (the rules' ``context.parents``), so no second
traversal is needed for it either.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.tree import children

Handler = Callable[[Any], object]


class Visitor(Protocol):
    """What the walk needs of a visitor: a rule, or any libcst batchable visitor."""

    @property
    def METADATA_DEPENDENCIES(self) -> Collection[Any]: ...  # libcst's name

    def get_visitors(self) -> Mapping[str, Callable[[Any], object]]: ...


_METHODS: dict[type[Visitor], tuple[tuple[str, str, str], ...]] = {}


def _methods(kind: type[Visitor], visitor: Visitor) -> tuple[
    tuple[str, str, str], ...
]:
    """``(visit|leave, node type, method name)`` for the methods a rule class wrote, once per
    class (libcst's ``get_visitors`` leaves out the base class's empty stubs, but scans every
    member each time)."""
    methods = _METHODS.get(kind)
    if methods is None:
        found = []
        for name in visitor.get_visitors():
            prefix, _, node_type = name.partition("_")
            found.append((prefix, node_type, name))
        methods = _METHODS[kind] = tuple(found)
    return methods


def _handlers(visitors: Sequence[Visitor]) -> tuple[
    dict[str, list[Handler]], dict[str, list[Handler]]
]:
    """Node type name -> the visitors' ``visit_<Node>`` (and ``leave_<Node>``) methods."""
    visit: dict[str, list[Handler]] = {}
    leave: dict[str, list[Handler]] = {}
    for visitor in visitors:
        for prefix, node_type, name in _methods(type(visitor), visitor):
            target = visit if prefix == "visit" else leave
            target.setdefault(node_type, []).append(getattr(visitor, name))
    return visit, leave


def supported(visitors: Sequence[Visitor]) -> bool:
    """This walk calls ``visit_<Node>`` and ``leave_<Node>`` only; attribute visitors
    (``visit_<Node>_<field>``) and metadata need libcst's traversal."""
    return not any(
        "_" in node_type or visitor.METADATA_DEPENDENCIES
        for visitor in visitors
        for _, node_type, _ in _methods(type(visitor), visitor)
    )


def walk(
    module: cst.Module,
    visitors: Sequence[Visitor],
    parents: dict[cst.CSTNode, cst.CSTNode] | None = None,
    visiting: list[cst.CSTNode | None] | None = None,
) -> dict[cst.CSTNode, cst.CSTNode]:
    """Call the visitors' methods over ``module``; return the parent of every visited node.

    ``parents`` is filled as the walk goes: a node's parent is recorded before the node is
    visited, so while a visitor runs, every ancestor of the node it was given is known.
    ``visiting[0]`` is set to the node whose visitors run (the node below which the parents are
    not yet known: see ``FileContext.parent``)."""
    visit, leave = _handlers(visitors)
    if parents is None:
        parents = {}
    if visiting is None:
        visiting = [None]
    # An explicit stack rather than recursion: deeply nested expressions must not overflow.
    stack: list[tuple[cst.CSTNode, bool]] = [(module, False)]
    while stack:
        node, leaving = stack.pop()
        kind = type(node).__name__
        if leaving:
            handlers = leave.get(kind, ())
        else:
            handlers = visit.get(kind, ())
            if kind in leave:  # most kinds have no leave_ method: nothing to come back for
                stack.append((node, True))
            for child in reversed(children(node)):
                parents[child] = node
                stack.append((child, False))
        if handlers:
            # Leaving, the parents below the node are all known already.
            visiting[0] = None if leaving else node
            for handler in handlers:
                handler(node)
    return parents
