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
from collections.abc import Callable, Sequence
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
        names = tuple(ordered + [n for n in declared if n not in ordered])
        _FIELDS[kind] = names
    return names


Handler = Callable[[Any], object]


def _handlers(visitors: Sequence[cst.BatchableCSTVisitor]) -> tuple[
    dict[str, list[Handler]], dict[str, list[Handler]]
]:
    """Node type name -> the visitors' ``visit_<Node>`` (and ``leave_<Node>``) methods, only
    those a rule wrote (libcst's ``get_visitors`` leaves out the base class's empty stubs)."""
    visit: dict[str, list[Handler]] = {}
    leave: dict[str, list[Handler]] = {}
    for visitor in visitors:
        for name, method in visitor.get_visitors().items():
            prefix, _, kind = name.partition("_")
            target = visit if prefix == "visit" else leave
            target.setdefault(kind, []).append(method)
    return visit, leave


def supported(visitors: Sequence[cst.BatchableCSTVisitor]) -> bool:
    """This walk calls ``visit_<Node>`` and ``leave_<Node>`` only; attribute visitors
    (``visit_<Node>_<field>``) and metadata need libcst's traversal."""
    return not any(
        "_" in name.partition("_")[2] or visitor.METADATA_DEPENDENCIES
        for visitor in visitors
        for name in visitor.get_visitors()
    )


def walk(
    module: cst.Module, visitors: Sequence[cst.BatchableCSTVisitor]
) -> dict[cst.CSTNode, cst.CSTNode]:
    """Call the visitors' methods over ``module``; return the parent of every visited node."""
    visit, leave = _handlers(visitors)
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
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
        children: list[cst.CSTNode] = []
        for name in _fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                if not isinstance(value, _SKIPPED):
                    children.append(value)
            elif isinstance(value, (list, tuple)):
                children.extend(
                    item for item in value
                    if isinstance(item, cst.CSTNode) and not isinstance(item, _SKIPPED)
                )
        for child in reversed(children):
            parents[child] = node
            stack.append((child, False))
    return parents
