"""Fix hygiene: remove the imports and local bindings that a fix alone made unused.

A fix that rewrites ``x.split(math.ceil(len(x) / w))[r]`` into ``x.tensor_split(w)[r]`` leaves
``import math`` (or ``from math import ceil``) and a ``num_splits = ...`` local behind, which the
user's own flake8/ruff then reports (F401, F841). The engine calls :func:`remove_orphans` after
applying any rule's fixes, so no rule carries its own clean-up.

What counts as "made unused by the fix" is deliberately narrow:

- the name was read inside a node a fix replaced (a real load, resolved by libcst's scope
  analysis of the tree *before* the fix), so it was used before;
- after the fix, the binding it resolved to has no reference left anywhere (closures, string
  annotations and ``del`` count as references), and it is the only binding of that name in its
  scope (a name bound twice is left to a person);
- removing the binding cannot change behaviour or another module: see :func:`_removable_import`
  and :func:`_removable_local`.

Removing a binding releases the names its value read (``num_splits = math.ceil(...)`` releases
``math``), so the clean-up repeats on what it removed, with the same tests, until nothing more is
released. Anything not clearly safe is kept: an unused name is a lint warning, a removed name that
was needed is a bug.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst.metadata import (
    Assignment,
    FunctionScope,
    GlobalScope,
    ImportAssignment,
    MetadataWrapper,
    ParentNodeProvider,
    Scope,
    ScopeProvider,
)

# At most this many rounds of "a removed binding released another": a fix releases a local, the
# local releases an import. Two suffice for every shape seen; the cap keeps it bounded.
_MAX_ROUNDS = 4

# A function that calls one of these can read its locals by name: keep every local there.
_DYNAMIC_SCOPE_CALLS = frozenset({"locals", "vars", "eval", "exec"})

# Calls whose result depends only on their arguments and that cannot run user code on a
# side-effect-free argument: removing the binding of such a value cannot change what happens.
# `len`, `.size()`, `.numel()` and `.shape` are how the rules measure tensors and lists.
_PURE_FUNCTIONS = frozenset({"len", "abs", "min", "max", "int", "float", "round", "math.ceil",
                             "math.floor", "ceil", "floor"})
_PURE_METHODS = frozenset({"size", "numel", "dim"})


Parents = Mapping[cst.CSTNode, cst.CSTNode]
Removal = tuple[cst.CSTNode, "cst.CSTNode | cst.RemovalSentinel"]


@dataclass(frozen=True)
class _Binding:
    """Where a binding lives, stated so it can be found again in the fixed tree (node identity
    does not survive a libcst transform): the scope's path and the bound name."""

    scope_path: tuple[tuple[str, str, int], ...]
    name: str


def remove_orphans(
    before: cst.Module, after: cst.Module, replaced: Sequence[cst.CSTNode], *,
    keep_module_imports: bool = False,
) -> cst.Module:
    """``after`` without the imports and locals that the replacement of ``replaced`` (nodes of
    ``before``) left unused. Returns ``after`` itself when nothing is removed.
    ``keep_module_imports``: the module's own imports are its public API (a package's
    ``__init__.py``), so only function-level bindings may go."""
    released = _released_bindings(before, replaced)
    for _ in range(_MAX_ROUNDS):
        if not released:
            break
        current = after
        wrapper = MetadataWrapper(current, unsafe_skip_copy=True)
        scopes = wrapper.resolve(ScopeProvider)
        parents = wrapper.resolve(ParentNodeProvider)
        paths = _scope_paths(current, scopes)
        removals: dict[int, cst.CSTNode | cst.RemovalSentinel] = {}
        removed_statements: list[cst.CSTNode] = []
        for binding in released:
            found = _find_binding(paths, binding)
            if found is None:
                continue
            scope, assignment = found
            if keep_module_imports and isinstance(scope, GlobalScope):
                continue
            statement = _removable(current, scope, assignment, parents)
            if statement is None:
                continue
            removals[id(statement[0])] = statement[1]
            removed_statements.append(statement[0])
        if not removals:
            break
        after = current.visit(_Remover(removals))
        # What the removed statements read may now be unused in turn (resolved in the tree that
        # still held them).
        released = _released_bindings(current, removed_statements, wrapper)
    return after


# ------------------------------------------------------------------------------------------------
# Which bindings the replaced code read


def _released_bindings(
    module: cst.Module, nodes: Sequence[cst.CSTNode], wrapper: MetadataWrapper | None = None
) -> set[_Binding]:
    if not nodes:
        return set()
    wrapper = wrapper or MetadataWrapper(module, unsafe_skip_copy=True)
    scopes = wrapper.resolve(ScopeProvider)
    inside = {id(n) for node in nodes for n in _subtree(node)}
    paths = {id(scope): path for path, scope in _scope_paths(module, scopes).items()}
    released: set[_Binding] = set()
    for scope in {s for s in scopes.values() if s is not None}:
        for access in scope.accesses:
            if id(access.node) not in inside:
                continue
            for referent in access.referents:
                if not isinstance(referent, (Assignment, ImportAssignment)):
                    continue  # builtins and the like
                path = paths.get(id(referent.scope))
                if path is not None:
                    released.add(_Binding(path, referent.name))
    return released


def _subtree(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


# ------------------------------------------------------------------------------------------------
# Scopes by path: the module, then functions by (kind, name, rank among same-named siblings)


def _scope_paths(
    module: cst.Module, scopes: Mapping[cst.CSTNode, Scope | None]
) -> dict[tuple[tuple[str, str, int], ...], Scope]:
    all_scopes = {s for s in scopes.values() if s is not None}
    by_node: dict[int, Scope] = {}
    found: dict[tuple[tuple[str, str, int], ...], Scope] = {}
    for scope in all_scopes:
        if isinstance(scope, GlobalScope):
            found[()] = scope
        elif isinstance(scope, FunctionScope):
            by_node[id(scope.node)] = scope

    def walk(node: cst.CSTNode, path: tuple[tuple[str, str, int], ...]) -> None:
        seen: dict[tuple[str, str], int] = {}
        for definition in _definitions(node):
            kind = type(definition).__name__
            name = definition.name.value
            rank = seen.get((kind, name), 0)
            seen[(kind, name)] = rank + 1
            here = (*path, (kind, name, rank))
            inner = by_node.get(id(definition))
            if inner is not None:
                found[here] = inner
            walk(definition.body, here)

    walk(module, ())
    return found


def _definitions(node: cst.CSTNode) -> Iterable[cst.FunctionDef | cst.ClassDef]:
    """The function and class definitions under ``node`` that are not inside another one (blocks
    of ``if`` / ``try`` / ``with`` / loops open no scope)."""
    for child in node.children:
        if isinstance(child, (cst.FunctionDef, cst.ClassDef)):
            yield child
        elif isinstance(child, (cst.BaseSuite, cst.BaseCompoundStatement, cst.BaseStatement,
                                cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally,
                                cst.MatchCase)):
            yield from _definitions(child)


def _find_binding(
    paths: dict[tuple[tuple[str, str, int], ...], Scope], binding: _Binding
) -> tuple[Scope, Assignment | ImportAssignment] | None:
    scope = paths.get(binding.scope_path)
    if scope is None:
        return None
    assignments = list(scope.assignments[binding.name])
    if len(assignments) != 1:
        return None  # bound more than once (or not at all any more): a person decides
    assignment = assignments[0]
    if not isinstance(assignment, (Assignment, ImportAssignment)) or assignment.references:
        return None
    return scope, assignment


# ------------------------------------------------------------------------------------------------
# Whether (and how) a binding can go


def _removable(
    module: cst.Module, scope: Scope, assignment: Assignment | ImportAssignment, parents: Parents
) -> Removal | None:
    """``(statement, replacement)`` removing the binding, or ``None`` to keep it."""
    if isinstance(assignment, ImportAssignment):
        return _removable_import(module, scope, assignment, parents)
    return _removable_local(module, scope, assignment, parents)


def _removable_import(
    module: cst.Module, scope: Scope, assignment: ImportAssignment, parents: Parents
) -> Removal | None:
    """An import of the module's own top level (or a function's top level) that is not a
    re-export. Kept: imports under ``if`` / ``try`` (feature detection, TYPE_CHECKING), star
    imports, ``__future__``, ``import a as a`` (the explicit re-export idiom), names listed in
    ``__all__``, and any import of an ``__init__.py``-like module that declares ``__all__``:
    another module may import the name from here, which no single file can see. A plain training
    script's ``from math import ceil`` is what this is for."""
    statement = assignment.node
    if not isinstance(statement, (cst.Import, cst.ImportFrom)):
        return None
    if isinstance(statement, cst.ImportFrom):
        if isinstance(statement.names, cst.ImportStar):
            return None
        module_name = cst.Module(body=[]).code_for_node(statement.module) if statement.module \
            else ""
        if module_name == "__future__":
            return None
    line = _parent(parents, statement)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None  # `import a; b = 1` on one line: leave the line as written
    block = _parent(parents, line)
    if not (block is module or isinstance(block, cst.IndentedBlock)):
        return None
    if isinstance(block, cst.IndentedBlock):
        if not isinstance(scope, FunctionScope) or _parent(parents, block) is not scope.node:
            return None  # inside an if / try / with: kept as written
    if isinstance(scope, GlobalScope) and _exported(module, assignment.name):
        return None
    names = statement.names
    assert not isinstance(names, cst.ImportStar)
    kept = []
    for alias in names:
        bound = _alias_binds(alias)
        if bound == assignment.name:
            if alias.asname is not None and _alias_is_reexport(alias):
                return None
            continue
        kept.append(alias)
    if len(kept) == len(names):
        return None
    if not kept:
        if isinstance(block, cst.IndentedBlock) and len(block.body) == 1:
            return None  # the block would be empty
        return line, cst.RemovalSentinel.REMOVE
    kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return line, line.with_changes(body=[statement.with_changes(names=kept)])


def _alias_binds(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    code = cst.Module(body=[]).code_for_node(alias.name)
    return code.split(".", 1)[0]


def _alias_is_reexport(alias: cst.ImportAlias) -> bool:
    asname = alias.asname
    assert asname is not None
    imported = cst.Module(body=[]).code_for_node(alias.name).rsplit(".", 1)[-1]
    return isinstance(asname.name, cst.Name) and asname.name.value == imported


def _exported(module: cst.Module, name: str) -> bool:
    """Whether the module declares ``__all__`` at all (then any of its imports may be public API)
    or names ``name`` in it. A module with ``__all__`` publishes names on purpose; one without is
    a script or a module whose imports nobody should take from it, as ruff's F401 fix assumes."""
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets: list[cst.BaseExpression] = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                    targets = [small.target]
                if any(isinstance(t, cst.Name) and t.value == "__all__" for t in targets):
                    return True
    return False


def _removable_local(
    module: cst.Module, scope: Scope, assignment: Assignment, parents: Parents
) -> Removal | None:
    """``name = <value>`` alone on its line in a function (in its body or in a branch or loop of
    it: the binding is the name's only one in the function and nothing reads it any more, so no
    path can miss it), with a side-effect-free value, in a block that keeps another statement,
    in a function that declares no ``global`` / ``nonlocal`` and never reads its locals
    dynamically. Module-level names are never removed: other modules may import them."""
    if not isinstance(scope, FunctionScope) or not isinstance(scope.node, cst.FunctionDef):
        return None
    target = assignment.node
    assign = _parent(parents, _parent(parents, target))
    # Assign -> AssignTarget -> Name
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    if assign.targets[0].target is not target:
        return None
    line = _parent(parents, assign)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    block = _parent(parents, line)
    if not isinstance(block, cst.IndentedBlock) or len(block.body) == 1:
        return None  # `if c: n = 1` on one line, or a block that would be left empty
    if not is_side_effect_free(assign.value):
        return None
    if _reads_locals_dynamically(scope.node, scope):
        return None
    return line, cst.RemovalSentinel.REMOVE


def is_side_effect_free(node: cst.BaseExpression) -> bool:
    """Evaluating ``node`` can run no user code and change nothing: names, attribute chains,
    literals, arithmetic and comparisons of those, ``len`` / ``math.ceil`` / ``int`` and the like
    of those, and the tensor measurements ``x.size(d)``, ``x.numel()``, ``x.shape[d]``. Arithmetic
    on user objects could in principle run a user ``__add__``; the rules only release values that
    measure lengths, where that is not a concern."""
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(node, cst.Attribute):
        return is_side_effect_free(node.value)
    if isinstance(node, cst.BinaryOperation):
        return is_side_effect_free(node.left) and is_side_effect_free(node.right)
    if isinstance(node, cst.UnaryOperation):
        return is_side_effect_free(node.expression)
    if isinstance(node, cst.Subscript):
        # `x.shape[0]`: an index into a shape, never a user `__getitem__` with effects.
        value = node.value
        return (
            isinstance(value, cst.Attribute) and value.attr.value == "shape"
            and is_side_effect_free(value.value)
            and all(isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Integer)
                    for e in node.slice)
        )
    if isinstance(node, cst.Call):
        if any(arg.star or arg.keyword is not None for arg in node.args):
            return False
        if not all(is_side_effect_free(arg.value) for arg in node.args):
            return False
        func = node.func
        dotted = _dotted(func)
        if dotted in _PURE_FUNCTIONS:
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in _PURE_METHODS:
            return is_side_effect_free(func.value)
    return False


def _dotted(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr.value}"
    return None


def _reads_locals_dynamically(function: cst.FunctionDef, scope: Scope) -> bool:
    """``locals()``, ``vars()``, ``eval`` or ``exec`` called (the builtins: a project function
    named ``eval`` is just a function), or a ``global`` / ``nonlocal`` declaration."""
    for node in _subtree(function.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            name = node.func.value
            if name in _DYNAMIC_SCOPE_CALLS and not _user_defined(scope, name):
                return True
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            return True
    return False


def _user_defined(scope: Scope, name: str) -> bool:
    """``name`` resolves, from ``scope``, only to bindings of the program (never the builtin)."""
    bindings = list(scope[name])
    return bool(bindings) and all(
        isinstance(b, (Assignment, ImportAssignment)) for b in bindings
    )


def _parent(parents: Parents, node: cst.CSTNode | None) -> cst.CSTNode | None:
    return None if node is None else parents.get(node)


class _Remover(cst.CSTTransformer):
    def __init__(self, removals: dict[int, cst.CSTNode | cst.RemovalSentinel]) -> None:
        super().__init__()
        self.removals = removals

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        if id(original_node) in self.removals:
            return self.removals[id(original_node)]
        return super().on_leave(original_node, updated_node)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        # The blank lines after a removed first statement (`import math` then a blank line) now
        # open the file: drop them, keep comments.
        if not original_node.body or not updated_node.body:
            return updated_node
        if self.removals.get(id(original_node.body[0])) is not cst.RemovalSentinel.REMOVE:
            return updated_node
        first = updated_node.body[0]
        lines = list(first.leading_lines)
        while lines and lines[0].comment is None:
            lines.pop(0)
        body = [first.with_changes(leading_lines=lines), *updated_node.body[1:]]
        return updated_node.with_changes(body=body)
