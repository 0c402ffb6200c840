"""A read-only traversal of a libcst tree that calls the rules' ``visit_*`` / ``leave_*`` methods.

libcst's own traversal (``visit_batched``) rebuilds every node on the way back up, so that
transformers can replace them; linting never replaces anything, and that rebuilding was two
thirds of the time of a whole run. This walk reads each node's children from its dataclass fields
instead, and records the parent of every node on the way (the rules' ``context.parents``), so
no second traversal is needed for it either.

Children are visited in the order libcst visits them for everything the rules look at: statements
in a body in source order, a call's function before its arguments, decorators before the function
they decorate. Whitespace and comments are skipped: no rule reads them (noqa comments are read from
the text).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import libcst as cst

_SKIPPED = (
    cst.BaseParenthesizableWhitespace,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Newline,
    cst.Comment,
)

_VISITED_FIELD = re.compile(r'visit_\w+\(\s*self,\s*"(\w+)"')
_FIELDS: dict[type[cst.CSTNode], tuple[str, ...]] = {}


def _fields(kind: type[cst.CSTNode]) -> tuple[str, ...]:
    """The fields of ``kind`` in the order libcst's traversal visits them, read once per node
    type from libcst's own ``_visit_and_replace_children`` (dataclass field order differs: an
    ``Arg`` declares its value before its keyword, a ``FunctionDef`` its body before its return
    annotation). Any field that source does not name follows, in declaration order."""
    names = _FIELDS.get(kind)
    if names is None:
        try:
            source = inspect.getsource(kind._visit_and_replace_children)
        except (OSError, TypeError):  # no source shipped: declaration order
            source = ""
        declared = [f.name for f in dataclasses.fields(kind)]
        ordered = [n for n in dict.fromkeys(_VISITED_FIELD.findall(source)) if n in declared]
        names = tuple(
            name for name in ordered + [n for n in declared if n not in ordered]
            # Always whitespace: not worth a look.
            if not name.startswith(("whitespace", "leading_lines", "lines_after"))
        )
        _FIELDS[kind] = names
    return names


Handler = Callable[[Any], object]


_METHODS: dict[type[cst.BatchableCSTVisitor], tuple[tuple[str, str, str], ...]] = {}


def _methods(kind: type[cst.BatchableCSTVisitor], visitor: cst.BatchableCSTVisitor) -> tuple[
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


def _handlers(visitors: Sequence[cst.BatchableCSTVisitor]) -> tuple[
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


def supported(visitors: Sequence[cst.BatchableCSTVisitor]) -> bool:
    """This walk calls ``visit_<Node>`` and ``leave_<Node>`` only; attribute visitors
    (``visit_<Node>_<field>``) and metadata need libcst's traversal."""
    return not any(
        "_" in node_type or visitor.METADATA_DEPENDENCIES
        for visitor in visitors
        for _, node_type, _ in _methods(type(visitor), visitor)
    )


def walk(
    module: cst.Module,
    visitors: Sequence[cst.BatchableCSTVisitor],
    parents: dict[cst.CSTNode, cst.CSTNode] | None = None,
) -> dict[cst.CSTNode, cst.CSTNode]:
    """Call the visitors' methods over ``module``; return the parent of every visited node.

    ``parents`` is filled as the walk goes: a node's parent is recorded before the node is
    visited, so while a visitor runs, every ancestor of the node it was given is known."""
    visit, leave = _handlers(visitors)
    if parents is None:
        parents = {}
    # An explicit stack rather than recursion: deeply nested expressions must not overflow.
    stack: list[tuple[cst.CSTNode, bool]] = [(module, False)]
    while stack:
        node, leaving = stack.pop()
        kind = type(node).__name__
        if leaving:
            for handler in leave.get(kind, ()):
                handler(node)
            continue
        for handler in visit.get(kind, ()):
            handler(node)
        stack.append((node, True))
        children = _children(node)
        for child in reversed(children):
            parents[child] = node
            stack.append((child, False))
    return parents


def descendants(
    node: cst.CSTNode, prune: Callable[[cst.CSTNode], bool] | None = None
) -> Iterator[cst.CSTNode]:
    """``node`` and everything below it, depth first in source order, whitespace aside, without
    libcst's rebuilding traversal; a node for which ``prune`` is true is yielded but not entered.
    For helpers that search a subtree (``node.visit(...)`` costs ten times more)."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        yield current
        if prune is None or not prune(current):
            stack.extend(reversed(_children(current)))


def parents_of(module: cst.Module) -> dict[cst.CSTNode, cst.CSTNode]:
    """The parent of every node of ``module`` (whitespace and comments aside)."""
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        for child in _children(node):
            parents[child] = node
            stack.append(child)
    return parents


_IS_CHILD: dict[type, bool] = {}


def _is_child(kind: type) -> bool:
    """Whether values of this type are children to visit (cached: the ABC checks are slow)."""
    known = _IS_CHILD.get(kind)
    if known is None:
        known = _IS_CHILD[kind] = issubclass(kind, cst.CSTNode) and not issubclass(kind, _SKIPPED)
    return known


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    children: list[cst.CSTNode] = []
    for name in _fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            children.extend(item for item in value if _is_child(type(item)))
        elif _is_child(kind):
            children.append(value)
    return children
