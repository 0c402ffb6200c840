"""The one assignment that reaches a use of a local name, on Python's ``ast``, when the code
proves there is only one.

The loader facts take a name's value to be any value the function ever assigns it: sound, but
a function that rebinds one name as it wraps a loader (``loader = DataLoader(...)``,
``loader = PrefetchLoader(loader)``, ``loader = IterLoader(loader)``: LAVIS and the projects
built on it) then hands every one of those values to every use. This module answers the common
straight-line case exactly and gives up everywhere else (the caller keeps every value):

- the nearest statement before the use, in its block or an enclosing one, that binds the name
  must be a plain ``name = value`` (or ``name: T = value``): its value is the one that reaches;
- nothing may bind the name in between (a statement that binds it anywhere inside, in any way,
  counts: a branch, a loop, a ``with ... as``, a walrus, an import);
- the way up from the use's block to that statement may not pass a loop that binds the name
  (a later iteration would bring the loop's own value), nor a ``try`` whose body binds it into
  a handler, ``else`` or ``finally`` (the body may have run partly);
- a use inside a lambda or comprehension, a name declared ``global`` or ``nonlocal`` anywhere in
  the function, and ``match`` blocks are left alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from sampler_lint.analysis.syntax_summary import SyntaxSummary, per_tree, walk

_Function = ast.FunctionDef | ast.AsyncFunctionDef
_DEFERRED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# `try` and, from Python 3.11, `try` with `except*`.
_TRIES: tuple[type[ast.Try], ...] = (
    ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ())
)


def only_reaching_value(
    summary: SyntaxSummary, function: _Function, use: ast.Name
) -> ast.expr | None:
    """The value of the one assignment that reaches ``use`` (a name read inside ``function``,
    its innermost function), or ``None`` when the code does not prove there is only one."""
    name = use.id
    holding = _holding(summary, function, name)
    if holding is None:
        return None
    statement = _statement_of(summary, use)
    if statement is None or isinstance(statement, (*_LOOPS, ast.FunctionDef,
                                                   ast.AsyncFunctionDef, ast.ClassDef)):
        # A loop's header runs again after its body (a `while` test; a `for` is left alone
        # too); a definition's decorators and defaults are another matter.
        return None
    current: ast.AST = statement
    while True:
        parent = summary.parent(current)
        if parent is None or isinstance(parent, (ast.Module, ast.ClassDef)):
            return None
        place = _place(parent, current)
        if place is None:
            return None
        block, position = place
        for earlier in reversed(block[:position]):
            if id(earlier) in holding:
                return _plain_value(earlier, name)
        if parent is function:
            return None  # a parameter, a closure's name or one not bound yet: not this case
        if isinstance(parent, ast.ExceptHandler):
            # The body of the `try` may have run up to any statement before the handler.
            handled = summary.parent(parent)
            if parent.name == name or not isinstance(handled, _TRIES) or any(
                id(earlier) in holding for earlier in handled.body
            ):
                return None
            current = handled
            continue
        if not _may_pass(parent, block, holding, name):
            return None
        current = parent


def _statement_of(summary: SyntaxSummary, use: ast.AST) -> ast.stmt | None:
    """The statement holding ``use``, if nothing between them defers its evaluation (a lambda)
    or scopes names anew (a comprehension)."""
    for ancestor in summary.ancestors(use):
        if isinstance(ancestor, ast.stmt):
            return ancestor
        if isinstance(ancestor, _DEFERRED):
            return None
    return None


def _place(parent: ast.AST, child: ast.AST) -> tuple[list[ast.stmt], int] | None:
    """The block of ``parent`` that holds ``child``, and where."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list):
            for position, item in enumerate(block):
                if item is child:
                    return block, position
    return None


def _may_pass(
    parent: ast.AST, block: list[ast.stmt], holding: set[int], name: str
) -> bool:
    """Whether the way from ``block`` up to ``parent``'s own place adds no value of ``name``
    (nothing that runs inside ``parent`` before the block may bind it)."""
    if isinstance(parent, ast.If):
        return not _binds(parent.test, name)
    if isinstance(parent, (ast.With, ast.AsyncWith)):
        return not any(_binds(item, name) for item in parent.items)
    if isinstance(parent, _LOOPS):
        return id(parent) not in holding  # a later iteration, or the loop's own target
    if isinstance(parent, _TRIES):
        if block is parent.body:
            return True
        # `else` and `finally` run after the body, which may have bound it (`finally`: also
        # after a handler or `else`).
        return not any(id(earlier) in holding for earlier in parent.body) and not (
            block is parent.finalbody and id(parent) in holding
        )
    return False  # `match`, and anything this module does not know


def _plain_value(statement: ast.stmt, name: str) -> ast.expr | None:
    """The value of ``name = value`` (every target that binds ``name`` is the bare name, and
    the value binds nothing of that name itself)."""
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets, value = [statement.target], statement.value
    else:
        return None
    plain = False
    for target in targets:
        if isinstance(target, ast.Name) and target.id == name:
            plain = True
        elif _binds(target, name):
            return None  # also unpacked into, or stored under a subscript of itself
    return value if plain and not _binds(value, name) else None


def _binds(node: ast.AST, name: str) -> bool:
    """Whether ``node`` stores to or deletes ``name`` anywhere inside (a walrus, a target)."""
    return any(
        isinstance(inner, ast.Name) and inner.id == name and not isinstance(inner.ctx, ast.Load)
        for inner in walk(node)
    )


def _holding(summary: SyntaxSummary, function: _Function, name: str) -> set[int] | None:
    """The ids of ``function``'s statements that bind ``name`` somewhere inside (nested scopes
    included: a closure may rebind it through ``nonlocal``); ``None`` when the function
    declares it ``global`` or ``nonlocal`` anywhere. Made once per function and name."""
    made: dict[tuple[int, str], set[int] | None] = per_tree(
        summary.tree, "statements binding a name", dict
    )
    key = (id(function), name)
    if key not in made:
        made[key] = _statements_binding(summary, function, name)
    return made[key]


def _statements_binding(
    summary: SyntaxSummary, function: _Function, name: str
) -> set[int] | None:
    index = binders_by_name(summary)
    if any(summary.inside(node, function) for node in index.declared.get(name, ())):
        return None
    holding: set[int] = set()
    for node in index.binders.get(name, ()):
        chain: list[int] = []
        for ancestor in summary.ancestors(node):
            if ancestor is function:
                holding.update(chain)
                break
            if isinstance(ancestor, ast.stmt):
                chain.append(id(ancestor))
        else:
            continue  # outside the function
        if isinstance(node, ast.stmt):
            holding.add(id(node))
    return holding


@dataclass
class NameBinders:
    """Per name, every node of a file that binds it (a stored or deleted name, a definition,
    an import, an ``except ... as``, a ``match`` capture), and the ``global`` / ``nonlocal``
    statements that declare it: read once per file from the summary's node lists."""

    binders: dict[str, list[ast.AST]] = field(default_factory=dict)
    declared: dict[str, list[ast.AST]] = field(default_factory=dict)


def binders_by_name(summary: SyntaxSummary) -> NameBinders:
    return per_tree(summary.tree, "binders by name", lambda: _index_binders(summary))


def _index_binders(summary: SyntaxSummary) -> NameBinders:
    found = NameBinders()

    def add(name: str | None, node: ast.AST) -> None:
        if name:
            found.binders.setdefault(name, []).append(node)

    for node in summary.nodes(ast.Name):
        if not isinstance(node.ctx, ast.Load):
            add(node.id, node)
    definitions: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = [
        *summary.nodes(ast.FunctionDef), *summary.nodes(ast.AsyncFunctionDef),
        *summary.nodes(ast.ClassDef),
    ]
    for definition in definitions:
        add(definition.name, definition)
    imports: list[ast.Import | ast.ImportFrom] = [
        *summary.nodes(ast.Import), *summary.nodes(ast.ImportFrom)
    ]
    for statement in imports:
        for alias in statement.names:
            add(alias.asname or alias.name.split(".")[0], statement)
    for handler in summary.nodes(ast.ExceptHandler):
        add(handler.name, handler)
    captures: list[ast.MatchAs | ast.MatchStar] = [
        *summary.nodes(ast.MatchAs), *summary.nodes(ast.MatchStar)
    ]
    for pattern in captures:
        add(pattern.name, pattern)
    for mapping in summary.nodes(ast.MatchMapping):
        add(mapping.rest, mapping)
    declarations: list[ast.Global | ast.Nonlocal] = [
        *summary.nodes(ast.Global), *summary.nodes(ast.Nonlocal)
    ]
    for declaration in declarations:
        for name in declaration.names:
            found.declared.setdefault(name, []).append(declaration)
    return found
