"""Reading a libcst tree without libcst's rebuilding traversal: children in visiting order,
descendants, parents, and the statements and assignments of a scope.

libcst's own traversal rebuilds every node on the way back up so that transformers can replace
them; reading a tree never replaces anything, and that rebuilding costs ten times the reading.
The children of a node are read from its dataclass fields instead, in the order libcst visits
them (statements in source order, a call's function before its arguments, decorators before the
function they decorate). Whitespace and comments are skipped: no rule reads them.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.per_type import PerType


def _visit_order(kind: type[cst.CSTNode]) -> tuple[str, ...]:
    """The fields of ``kind`` in the order libcst's traversal visits them, read once per node
    type (:data:`_FIELDS`) from libcst's own ``_visit_and_replace_children`` (dataclass field
    order differs: an ``Arg`` declares its value before its keyword, a ``FunctionDef`` its body
    before its return annotation). Any field that method does not name follows, in declaration
    order.

    The method names each field as a string constant (``visit_required(self, "func", ...)``),
    and a code object keeps its constants in the order the source first uses them: reading
    them is 40 times cheaper than reading the method's source (``inspect.getsource``: 36 ms
    per process that lints, for the 172 node types)."""
    code = getattr(kind._visit_and_replace_children, "__code__", None)
    constants = [c for c in code.co_consts if isinstance(c, str)] if code else []
    declared = [f.name for f in dataclasses.fields(kind)]
    ordered = [n for n in dict.fromkeys(constants) if n in declared]
    return tuple(
        name for name in ordered + [n for n in declared if n not in ordered]
        # Always whitespace: not worth a look.
        if not name.startswith(("whitespace", "leading_lines", "lines_after"))
    )


_FIELDS: PerType[type[cst.CSTNode], tuple[str, ...]] = PerType(_visit_order)


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
            stack.extend(reversed(children(current)))


def parents_of(module: cst.Module) -> dict[cst.CSTNode, cst.CSTNode]:
    """The parent of every node of ``module`` (whitespace and comments aside)."""
    return dict(parents_below(module))


def parents_below(node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
    """``(child, parent)`` for every node below ``node`` (whitespace and comments aside)."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        for child in children(current):
            yield child, current
            stack.append(child)


def _is_child(kind: type) -> bool:
    """Whether values of this type are children to visit (once per type, :data:`_IS_CHILD`:
    the ABC checks are slow)."""
    skipped = (  # whitespace and comments
        cst.BaseParenthesizableWhitespace,
        cst.TrailingWhitespace,
        cst.EmptyLine,
        cst.Newline,
        cst.Comment,
    )
    return issubclass(kind, cst.CSTNode) and not issubclass(kind, skipped)


_IS_CHILD: PerType[type, bool] = PerType(_is_child)


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    children: list[cst.CSTNode] = []
    for name in _FIELDS[type(node)]:  # runs for every node of every file linted
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            for item in value:  # a loop: a generator here cost a third of the walk's time
                if _IS_CHILD[type(item)]:
                    children.append(item)
        elif _IS_CHILD[kind]:
            children.append(value)
    return children


def scope_body_statements(scope: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every statement of a scope, nested blocks included, nested functions and classes excluded."""
    body: object = getattr(scope, "body", None)
    stack: list[cst.CSTNode] = []
    if isinstance(body, cst.BaseSuite):
        stack.extend(reversed(list(body.body)))
    elif isinstance(body, (list, tuple)):
        stack.extend(reversed(list(body)))
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        children: list[cst.CSTNode] = []
        for attr in ("body", "orelse", "finalbody", "handlers"):
            value = getattr(stmt, attr, None)
            if isinstance(value, cst.BaseSuite):
                children.extend(value.body)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, cst.CSTNode):
                        children.append(item)
            elif isinstance(value, cst.CSTNode):
                children.append(value)
        if isinstance(stmt, cst.Match):
            children.extend(stmt.cases)
        stack.extend(reversed(children))


def assignment_table(scope: cst.CSTNode) -> dict[str, list[cst.BaseExpression]]:
    """Values assigned to each name or dotted attribute chain (``self.per_rank``) by simple or
    annotated assignments anywhere in ``scope``. ``FileContext.assignments`` caches it."""
    table: dict[str, list[cst.BaseExpression]] = {}
    for stmt in scope_body_statements(scope):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    name = dotted_name(target.target)
                    if name is not None:
                        table.setdefault(name, []).append(small.value)
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                name = dotted_name(small.target)
                if name is not None:
                    table.setdefault(name, []).append(small.value)
    return table


def binds_surely(statement: cst.CSTNode, name: str) -> bool:
    """Whether running ``statement`` to its end always binds ``name``: an assignment to it
    (unpacking included), a ``with`` body that does, an ``if`` each of whose branches
    (``else`` included) does, a ``try`` whose body and every handler do. A branch that returns,
    raises, breaks or continues counts as binding: the code after the statement is not reached
    through it. A loop may run no time, so it never binds surely."""
    if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return any(binds_surely(small, name) for small in statement.body)
    if isinstance(statement, cst.Assign):
        return any(name in target_names(t.target) for t in statement.targets)
    if isinstance(statement, (cst.AnnAssign, cst.AugAssign)):
        # `seed: int` alone binds nothing; `seed += 1` needs it bound already
        value = statement.value if isinstance(statement, cst.AnnAssign) else True
        return value is not None and name in target_names(statement.target)
    if isinstance(statement, cst.With):
        return _suite_binds_surely(statement.body, name)
    if isinstance(statement, cst.If):
        orelse = statement.orelse
        if orelse is None or not _suite_binds_surely(statement.body, name):
            return False  # the test may be false, or this branch may not bind
        if isinstance(orelse, cst.If):
            return binds_surely(orelse, name)
        return _suite_binds_surely(orelse.body, name)
    if isinstance(statement, cst.Try):
        return _suite_binds_surely(statement.body, name) and all(
            _suite_binds_surely(handler.body, name) for handler in statement.handlers
        )
    return False


def _suite_binds_surely(suite: cst.BaseSuite, name: str) -> bool:
    return any(binds_surely(statement, name) for statement in suite.body) or leaves(suite)


def leaves(suite: cst.BaseSuite) -> bool:
    """Whether a block ends by leaving it (``return``, ``raise``, ``continue``, ``break``): the
    code after the statement that holds it is not reached through it."""
    last: cst.CSTNode | None = suite.body[-1] if suite.body else None
    if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and last.body:
        last = last.body[-1]
    return isinstance(last, (cst.Return, cst.Raise, cst.Continue, cst.Break))


def target_names(target: cst.CSTNode) -> set[str]:
    """The names an assignment (or ``for``, ``as``) target binds (``a``; ``a, (b, *c)``), not
    those it only reads (``x[a]``, ``a.b``)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        names: set[str] = set()
        for element in target.elements:
            names |= target_names(element.value)
        return names
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return set()


def bound_on_every_path(
    ancestors: list[cst.CSTNode], scope: cst.CSTNode, name: str, node: cst.CSTNode
) -> bool:
    """Whether a local ``name`` of ``scope`` (a function, or the module) is bound on every path
    that reaches
    ``node``, whose ancestors (innermost first) are ``ancestors``: some statement before it, in
    a block of ``scope`` around it, binds it surely (:func:`binds_surely`). One in a branch that
    does not hold ``node`` does not count (``seed`` set under ``if not distributed:`` is unbound
    under ``if distributed:``), nor one after it, nor one in a function or class nested in
    ``scope`` around ``node`` (a name of its own)."""
    chain = [node]
    for ancestor in ancestors:
        if ancestor is scope:
            if isinstance(scope, cst.Module):
                chain.append(scope)  # its statements are its own block
            break
        chain.append(ancestor)
    else:
        return False  # not inside ``scope``
    for depth in range(len(chain) - 1, -1, -1):
        if isinstance(chain[depth], (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            chain = chain[depth:]  # only the blocks of ``scope`` itself
            break
    for child, block in itertools.pairwise(chain):
        if isinstance(block, (cst.IndentedBlock, cst.SimpleStatementSuite,
                              cst.SimpleStatementLine, cst.Module)):
            for statement in block.body:
                if statement is child:
                    break
                if binds_surely(statement, name):
                    return True
    return False
