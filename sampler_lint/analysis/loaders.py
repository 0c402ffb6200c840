"""Where a DataLoader comes from: can it carry a batch sampler? (SL2xx)

SL201 must tell framework code that receives its users' loaders (any of which may have been built
with ``batch_sampler=``) from a script whose every loader is built with ``sampler=``. It follows a
loader expression back through the project: local assignments, function returns, constructor and
function arguments, ``self.<attr>`` set in ``__init__``. The project-wide part comes from index
facts collected with Python's ``ast`` (:func:`collect_loader_facts`); the part inside the file
being linted is read from the libcst tree (:func:`origins_at`). Both describe an expression in the
same small vocabulary (:data:`Origin`), and :func:`can_carry_batch_sampler` resolves it.

The answer is conservative where it must be: anything the project cannot show (a parameter of a
function nobody in the project calls, a factory from a library, ``**kwargs``) can carry a batch
sampler.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from typing import Any

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import (
    ModuleResolver,
    ProjectIndex,
    facts_in_file,
)
from sampler_lint.analysis.keyed import (
    ANY_KEY,
    dict_get_ast,
    dict_get_cst,
    key_meets,
    keyed_stores_ast,
    keyed_stores_cst,
    keys_of,
    read_key_cst,
    string_key_pairs_cst,
    subscript_key_ast,
)
from sampler_lint.analysis.loader_facts import (
    FACT_ALIASES,
    FACT_CALLS,
    FACT_CLASSES,
    FACT_EPOCH_USERS,
    FACT_FACTORY_NAMES,
    FACT_FACTORY_RETURNS,
    FACT_FORWARDS,
    FACT_NAMES,
    FACT_PACKAGE_NAMES,
    FACT_RETURNS,
    FACT_SELF,
    MAX_DEPTH,
    NONE,
    SAMPLER_IS_BATCH_SAMPLER,
    STORED_OVER,
    UNKNOWN,
    EpochUse,
    Origin,
    dict_origin,
    file_key,
    get_origin,
    gives,
    is_call_receiver,
    is_loader_constructor,
    is_package_init,
    key_origin,
    loader_origin,
    merge_origins,
    method_owner,
    opened_alternatives,
    parameter_position,
    passed_arguments,
    super_method,
    with_keyed_stores,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary, dotted_chain, per_tree
from sampler_lint.analysis.tree import scope_body_statements
from sampler_lint.rule import FileContext

# ------------------------------------------------------------------------------------------------
# The file side: origins of a libcst expression


def origins_at(context: FileContext, node: cst.BaseExpression) -> list[Origin]:
    """The origins of a loader expression at ``node`` in the file being linted."""
    # A value may read itself back (`out["w"] = out["w"] * 2`, then `out` read under "w"):
    # asked again while it is being answered, it adds nothing to what the other ways give.
    active: set[int] = context.__dict__.setdefault("_sl2_origins_active", set())
    if id(node) in active:
        return []
    active.add(id(node))
    try:
        return _origins_at(context, node)
    finally:
        active.discard(id(node))


def _origins_at(context: FileContext, node: cst.BaseExpression) -> list[Origin]:
    path = file_key(str(context.path))
    function = context.enclosing_function(node)
    klass = context.enclosing_class(node)
    if isinstance(node, cst.Name) and node.value == "None":
        return [NONE]
    if isinstance(node, cst.IfExp):
        return origins_at(context, node.body) + origins_at(context, node.orelse)
    if isinstance(node, cst.Call):
        got = dict_get_cst(node, context.parent)
        if got is not None:  # `loaders.get("train")`: a read, or the default
            holder, at, default = got
            read = _read_under(context, function, holder, at) + (
                origins_at(context, default) if default is not None else [NONE]
            )
            if isinstance(holder, cst.Name):
                receiver = merge_origins(origins_at(context, holder))
                if is_call_receiver(receiver):  # a dict a call returned, or an object's `get`
                    return [get_origin(("objmethod", path, receiver, "get"), read)]
            return read
        name = dotted_name(node.func)
        if is_loader_constructor(name) or _names_loader_class(context, node.func, function):
            keywords = [arg.keyword.value if arg.keyword else None for arg in node.args
                        if arg.keyword is not None or arg.star == "**"]
            positional = sum(1 for arg in node.args if arg.keyword is None and not arg.star)
            return [loader_origin(keywords, positional)]
        method = _super_method_cst(node.func)
        if method is not None and klass is not None and function is not None:
            return [("super", path, klass.name.value, method)]
        if name is None:
            return [UNKNOWN]
        if name.count(".") == 1 and name.split(".")[0] in ("self", "cls") and klass is not None:
            return [("method", path, klass.name.value, name.rsplit(".", 1)[-1])]
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            receiver = merge_origins(origins_at(context, func.value))
            if is_call_receiver(receiver):
                return [("objmethod", path, receiver, func.attr.value)]
        passed = passed_arguments(
            sum(1 for arg in node.args if arg.keyword is None and not arg.star),
            [arg.keyword.value if arg.keyword else None for arg in node.args
             if arg.keyword is not None or arg.star == "**"],
            any(arg.star == "*" for arg in node.args),
        )
        return [("call", path, name.rsplit(".", 1)[-1], passed)]
    if isinstance(node, cst.Tuple):
        items = tuple(merge_origins(origins_at(context, e.value)) for e in node.elements)
        return [("tuple", items)]
    if isinstance(node, cst.Dict):
        pairs = string_key_pairs_cst(node)
        if pairs is None:
            return [UNKNOWN]
        return [dict_origin(
            (key, merge_origins(origins_at(context, value))) for key, value in pairs
        )]
    if isinstance(node, cst.DictComp):
        return [dict_origin([(ANY_KEY, merge_origins(origins_at(context, node.value)))])]
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
            inner = merge_origins(origins_at(context, node.value))
            return [("item", inner, int(index.value.value, 0))]
        key = read_key_cst(node, context.parent)
        if key is not None:
            return _read_under(context, function, node.value, key)
        return [UNKNOWN]
    if isinstance(node, cst.Name) and function is not None:
        position = _cst_parameter_position(function, node.value, klass is not None)
        if position is not None:
            classes = [klass.name.value] if klass is not None else []
            owner = method_owner(function.name.value, classes)
            return [("param", path, owner, position, node.value)]
        values = context.assignments(function).get(node.value, [])
        found = [o for value in values for o in origins_at(context, value)]
        for value, position in _unpacked(function, node.value):  # `a, b = f()`
            found.append(("item", merge_origins(origins_at(context, value)), position))
        if any(origin[0] in STORED_OVER for origin in found):
            stores = keyed_stores_cst(function, node.value)  # `loaders["train"] = ...`
            found = with_keyed_stores(found, None if stores is None else [
                (key, merge_origins(origins_at(context, value))) for key, value in stores
            ])
        return found or [UNKNOWN]
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and klass is not None
    ):
        return [("self", path, klass.name.value, node.attr.value)]
    return [UNKNOWN]


def _super_method_cst(func: cst.BaseExpression) -> str | None:
    """``name`` for the callee of ``super().name(...)`` (or ``super(Class, self).name``): the
    libcst twin of ``loader_facts.super_method``."""
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Call)
        and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
        and len(func.value.args) in (0, 2)
        and not any(arg.keyword is not None or arg.star for arg in func.value.args)
    ):
        return func.attr.value
    return None


# ------------------------------------------------------------------------------------------------
# The same, from Python's ast, for a pre-filter: None where it cannot be sure to answer as
# origins_at does


#: Where an origin names the file: the pre-filter does not know the path; :func:`at_path`
#: puts it in.
THIS_FILE = "\x00this file"
# How far a name is followed through its assignments before the twin gives up.
_TWIN_DEPTH = 6


class _Unsure(Exception):
    pass


def origins_ast(summary: SyntaxSummary, node: ast.expr) -> list[Origin] | None:
    """The ``ast`` twin of :func:`origins_at` for a node of the file (its path spelled
    :data:`THIS_FILE`): the same origins, or ``None`` when it cannot be sure to read them as
    libcst does. libcst's table of assignments leaves out the statements of a one-line suite
    (``if c: x = f()``, also after a backslash), which ``ast`` does not mark, so a name is
    followed only when every statement that assigns it starts its own logical line
    (``summary.source`` tells). Extra origins would not be safe either: an unknown alternative
    merged into a receiver hides the class whose method libcst would follow."""
    try:
        return _origins_ast(summary, node, 0)
    except (_Unsure, RecursionError):
        return None


def at_path(origins: Any, path: str) -> Any:
    """``origins`` with :data:`THIS_FILE` replaced by ``path`` (a :func:`file_key`)."""
    if origins == THIS_FILE:
        return path
    if type(origins) is tuple:
        return tuple(at_path(item, path) for item in origins)
    if type(origins) is list:
        return [at_path(item, path) for item in origins]
    return origins


def _origins_ast(summary: SyntaxSummary, node: ast.expr, depth: int) -> list[Origin]:
    if depth > _TWIN_DEPTH:
        raise _Unsure
    function, klass = summary.enclosing_function(node), summary.enclosing_class(node)
    if isinstance(node, ast.Constant) and node.value is None:
        return [NONE]
    if isinstance(node, ast.IfExp):
        return _origins_ast(summary, node.body, depth) + _origins_ast(
            summary, node.orelse, depth
        )
    if isinstance(node, ast.Call):
        if dict_get_ast(node) is not None:
            raise _Unsure  # `loaders.get("train")`: dicts are read with libcst alone
        name = dotted_chain(node.func)
        if is_loader_constructor(name) or _names_loader_class_ast(summary, node.func, function):
            keywords = [keyword.arg for keyword in node.keywords]
            positional = sum(1 for arg in node.args if not isinstance(arg, ast.Starred))
            return [loader_origin(keywords, positional)]
        method = super_method(node.func)
        if method is not None and klass is not None and function is not None:
            return [("super", THIS_FILE, klass.name, method)]
        if name is None:
            return [UNKNOWN]
        if name.count(".") == 1 and name.split(".")[0] in ("self", "cls") and klass is not None:
            return [("method", THIS_FILE, klass.name, name.rsplit(".", 1)[-1])]
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            receiver = merge_origins(_origins_ast(summary, func.value, depth + 1))
            if is_call_receiver(receiver):
                return [("objmethod", THIS_FILE, receiver, func.attr)]
        passed = passed_arguments(
            sum(1 for arg in node.args if not isinstance(arg, ast.Starred)),
            [keyword.arg for keyword in node.keywords],
            any(isinstance(arg, ast.Starred) for arg in node.args),
        )
        return [("call", THIS_FILE, name.rsplit(".", 1)[-1], passed)]
    if isinstance(node, ast.Tuple):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise _Unsure  # libcst reads the starred element's value
        return [("tuple", tuple(
            merge_origins(_origins_ast(summary, e, depth)) for e in node.elts
        ))]
    if isinstance(node, (ast.Dict, ast.DictComp)) or (
        isinstance(node, ast.Subscript) and subscript_key_ast(node) is not None
    ):
        raise _Unsure  # dicts of loaders are read with libcst alone
    if isinstance(node, ast.Subscript):
        index = node.slice
        if isinstance(index, ast.Constant) and type(index.value) is int:
            inner = merge_origins(_origins_ast(summary, node.value, depth))
            return [("item", inner, index.value)]
        return [UNKNOWN]
    if isinstance(node, ast.Name) and function is not None:
        position = parameter_position(function, node.id, klass is not None)
        if position is not None:
            classes = [klass.name] if klass is not None else []
            owner = method_owner(function.name, classes)
            return [("param", THIS_FILE, owner, position, node.id)]
        values = _assigned_in(summary, function, node.id)
        found = [o for value in values for o in _origins_ast(summary, value, depth + 1)]
        for value, position in _unpacked_ast(summary, function, node.id):
            found.append(("item", merge_origins(_origins_ast(summary, value, depth + 1)),
                          position))
        if any(origin[0] in STORED_OVER for origin in found) \
                and keyed_stores_ast(summary, function, node.id):
            raise _Unsure  # keys stored over what a call returned: read with libcst alone
        return found or [UNKNOWN]
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and klass is not None
    ):
        return [("self", THIS_FILE, klass.name, node.attr)]
    return [UNKNOWN]


def _scope_statements(summary: SyntaxSummary, function: ast.AST) -> list[ast.stmt]:
    """The statements whose scope is ``function`` (nested functions and classes left out), the
    statements of ``scope_body_statements``."""
    def make() -> list[ast.stmt]:
        found: list[ast.stmt] = []
        stack: list[ast.AST] = list(reversed(getattr(function, "body", [])))
        while stack:
            statement = stack.pop()
            if not isinstance(statement, ast.stmt):
                continue
            found.append(statement)
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            children: list[ast.AST] = []
            for attr in ("body", "orelse", "finalbody", "handlers", "cases"):
                value = getattr(statement, attr, None)
                if isinstance(value, list):
                    for item in value:
                        if isinstance(item, (ast.ExceptHandler, ast.match_case)):
                            children.extend(item.body)
                        else:
                            children.append(item)
            stack.extend(reversed(children))
        return found

    return per_tree(function, "scope statements", make)


def _starts_its_line(summary: SyntaxSummary, statement: ast.stmt) -> bool:
    """Whether ``statement`` starts its logical line: nothing but indentation before it on its
    line, and no backslash ending the line before (then libcst holds it in a statement line
    of its own block, not in a one-line suite)."""
    lines = summary.source_lines
    number = statement.lineno
    if not lines or number > len(lines):
        return False
    before = lines[number - 1].encode("utf-8")[: statement.col_offset]
    if before.strip():
        return False
    return number == 1 or not lines[number - 2].endswith("\\")


def _assigned_in(summary: SyntaxSummary, function: ast.AST, name: str) -> list[ast.expr]:
    """The values assigned to ``name`` in ``function``'s scope, exactly those libcst's table
    holds: :class:`_Unsure` when a statement that assigns it may not start its logical line."""
    values: list[ast.expr] = []
    for statement in _scope_statements(summary, function):
        if isinstance(statement, ast.Assign):
            targets: list[ast.expr] = statement.targets
            value: ast.expr | None = statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        assert value is not None
        named = [value for t in targets if isinstance(t, ast.Name) and t.id == name]
        if named and not _starts_its_line(summary, statement):
            raise _Unsure
        values += named
    return values


def _unpacked_ast(
    summary: SyntaxSummary, function: ast.AST, name: str
) -> list[tuple[ast.expr, int]]:
    """The twin of :func:`_unpacked`; :class:`_Unsure` as for :func:`_assigned_in`."""
    found: list[tuple[ast.expr, int]] = []
    for statement in _scope_statements(summary, function):
        if not isinstance(statement, ast.Assign):
            continue
        for target in statement.targets:
            if not isinstance(target, (ast.Tuple, ast.List)) or any(
                isinstance(e, ast.Starred) for e in target.elts
            ):
                continue
            for i, element in enumerate(target.elts):
                if isinstance(element, ast.Name) and element.id == name:
                    if not _starts_its_line(summary, statement):
                        raise _Unsure
                    found.append((statement.value, i))
    return found


def _names_loader_class_ast(
    summary: SyntaxSummary, func: ast.expr, function: ast.AST | None
) -> bool:
    """The twin of :func:`_names_loader_class`."""
    if not (isinstance(func, ast.Name) and function is not None):
        return False
    opened = opened_alternatives(_assigned_in(summary, function, func.id))
    return bool(opened) and all(is_loader_constructor(dotted_chain(v)) for v in opened)


def _unpacked(function: cst.FunctionDef, name: str) -> list[tuple[cst.BaseExpression, int]]:
    """``(value, i)`` for every ``..., name, ... = value`` in the function, ``name`` at i."""
    found: list[tuple[cst.BaseExpression, int]] = []
    for statement in scope_body_statements(function):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Assign):
                continue
            for target in small.targets:
                inner = target.target
                if not isinstance(inner, (cst.Tuple, cst.List)) or any(
                    isinstance(e, cst.StarredElement) for e in inner.elements
                ):
                    continue
                for i, element in enumerate(inner.elements):
                    if isinstance(element.value, cst.Name) and element.value.value == name:
                        found.append((small.value, i))
    return found


def _read_under(
    context: FileContext, function: cst.FunctionDef | None, holder: cst.BaseExpression,
    key: str,
) -> list[Origin]:
    """The origins of what ``holder`` holds under ``key`` (``holder[key]``), with what this
    function stores there itself (``loaders = build()``, then ``loaders["train"] = ...``)."""
    stored: list[Origin] = []
    if isinstance(holder, cst.Name) and function is not None:
        stores = keyed_stores_cst(function, holder.value)
        if stores is None:
            return [UNKNOWN]
        stored = [
            o for at, value in stores if key_meets(key, at) for o in origins_at(context, value)
        ]
    return [key_origin(merge_origins(origins_at(context, holder)), key), *stored]


def _names_loader_class(
    context: FileContext, func: cst.BaseExpression, function: cst.FunctionDef | None
) -> bool:
    """``loader_class(...)`` after ``loader_class = DataLoader`` in this function."""
    if not (isinstance(func, cst.Name) and function is not None):
        return False
    values = list(context.assignments(function).get(func.value, []))
    opened: list[cst.BaseExpression] = []
    while values:
        value = values.pop()
        if isinstance(value, cst.IfExp):
            values.extend([value.body, value.orelse])
        else:
            opened.append(value)
    return bool(opened) and all(is_loader_constructor(dotted_name(v)) for v in opened)


def _cst_parameter_position(function: cst.FunctionDef, name: str, is_method: bool) -> int | None:
    params = function.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if is_method and positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    if name in positional:
        return positional.index(name)
    if name in [p.name.value for p in params.kwonly_params]:
        return -1
    return None


# ------------------------------------------------------------------------------------------------
# Resolution


def can_carry_batch_sampler(index: ProjectIndex, origins: Iterable[Origin]) -> bool:
    """``False`` only when the project shows that every loader reaching these origins is built
    without ``batch_sampler=`` (and without ``**kwargs`` that could hold one)."""
    origins = list(origins)
    if not origins:
        return True
    return any(_may_carry(index, origin, 0, frozenset()) for origin in origins)


def _may_carry(index: ProjectIndex, origin: Origin, depth: int, seen: frozenset[Origin]) -> bool:
    if depth > MAX_DEPTH or origin in seen:
        return True
    seen = seen | {origin}
    kind = origin[0]
    if kind == "none":
        return False
    if kind == "loader":
        # Built without `batch_sampler=`, a loader's batch sampler is torch's default one drawing
        # from `loader.sampler` (the one passed as `sampler=`, or the default Random/Sequential
        # sampler that never shuffles by epoch): `set_epoch` on `loader.sampler` is all it needs.
        _, _, batch = origin
        return bool(batch)
    if kind in ("call", "method", "objmethod", "super"):
        returned = _returned(index, origin)
        if not returned and kind == "call":
            # A project wrapper that forwards what it lacks (`PrefetchLoader(loader)`): its
            # `.sampler` and `.batch_sampler` are those of what it wraps.
            returned = _forwarded(index, origin)
        return not returned or any(_may_carry(index, o, depth + 1, seen) for o in returned)
    if kind in ("tuple", "dict"):
        return False  # a tuple has no `.sampler`: that path never reaches the call (or fails)
    if kind in ("item", "key"):
        _, inner, at = origin
        return _part_may_carry(index, inner, ((kind, at),), depth + 1, seen)
    if kind == "any":
        return any(_may_carry(index, o, depth + 1, seen) for o in origin[1])
    if kind == "get":
        return _may_carry(index, _got(index, origin), depth + 1, seen)
    if kind == "over":  # the object the call returned (its keys are not its `.sampler`)
        return _may_carry(index, origin[1], depth + 1, seen)
    if kind in ("param", "self"):
        values = _held(index, origin)
        return not values or any(_may_carry(index, o, depth + 1, seen) for o in values)
    return True


def _part_may_carry(
    index: ProjectIndex, value: Origin, parts: tuple[tuple[str, Any], ...], depth: int,
    seen: frozenset[Origin],
) -> bool:
    """Whether what ``value`` holds at ``parts`` may carry a batch sampler: ``("item", i)``
    is element ``i`` (of a returned tuple, or of a list a function appends to), ``("key",
    k)`` the value under ``k`` (of a dict literal and its function's stores), outermost first
    (``loaders["train"]`` of ``_, loaders = build()``), through functions that return what
    other functions return, arguments and ``self.<attr>``."""
    if not parts:
        return _may_carry(index, value, depth, seen)
    if depth > MAX_DEPTH:
        return True
    kind: str = value[0]
    if kind == "any":
        return any(_part_may_carry(index, o, parts, depth + 1, seen) for o in value[1])
    if kind == "get":
        return _part_may_carry(index, _got(index, value), parts, depth + 1, seen)
    if kind == "self" and parts[0][0] == "key":
        # What the class's methods store under the key themselves (`self.loaders["train"] =
        # ...`; under any key, for `self.loaders[phase]`), or an unknown value when they
        # change the dict some other way.
        _, path, klass, attribute = value
        at = parts[0][1]
        names = (
            *(f"{attribute}[{key}]" for key in keys_of(at)), f"{attribute}[*]",
            f"{attribute}[{ANY_KEY}]",
        )
        stored = _assigned_on_self(
            index, klass, path, names, prefix=f"{attribute}[" if at == ANY_KEY else None
        )
        if any(_part_may_carry(index, o, parts[1:], depth + 1, seen) for o in stored):
            return True
        # Then what the attribute is assigned, but a dict without the key when the methods
        # store under it (`self.loaders = {}`, then `self.loaders["train"] = ...`).
        held = _held(index, value)
        return not held or any(
            _part_may_carry(index, o, parts, depth + 1, seen)
            for o in held if not (stored and _lacks(o, at))
        )
    if kind == "over":
        # Under a key the function stored at: what it stored, or (a store on one path only)
        # what the call's dict held there.
        _, inner, stored = value
        if parts[0][0] == "key" and any(
            _part_may_carry(index, o, parts[1:], depth + 1, seen)
            for key, o in stored if key_meets(parts[0][1], key)
        ):
            return True
        return _part_may_carry(index, inner, parts, depth + 1, seen)
    if kind in ("call", "method", "objmethod", "super", "param", "self"):
        found = _returned(index, value) if kind in ("call", "method", "objmethod", "super") \
            else _held(index, value)
        return not found or any(_part_may_carry(index, o, parts, depth + 1, seen) for o in found)
    if kind in ("item", "key"):  # a part of a part: `loaders[0]["train"]`
        return _part_may_carry(index, value[1], ((kind, value[2]), *parts), depth + 1, seen)
    (part, at), rest = parts[0], parts[1:]
    if part == "item" and kind == "tuple":
        elements = value[1]
        return not 0 <= at < len(elements) or _part_may_carry(
            index, elements[at], rest, depth + 1, seen
        )
    if part == "item" and kind == "list":  # any element may be at ``at``
        return not value[1] or any(
            _part_may_carry(index, o, rest, depth + 1, seen) for o in value[1]
        )
    if part == "key" and kind == "dict":
        # Under the key: what is held there, and what a comprehension holds under every key;
        # under any key (`loaders[phase]`), every value. A key the dict is not seen to get:
        # unknown.
        pairs: tuple[tuple[str, Origin], ...] = value[1]
        held = [o for key, o in pairs if key_meets(at, key)]
        return not held or any(_part_may_carry(index, o, rest, depth + 1, seen) for o in held)
    if part == "key" and kind in ("tuple", "list") and (at == ANY_KEY or len(keys_of(at)) > 1):
        # `loaders[i]`; and `loaders[phase]` of a loop over keys, which is no dict after all
        return not value[1] or any(
            _part_may_carry(index, o, rest, depth + 1, seen) for o in value[1]
        )
    # A loader or None is no tuple or dict on that path (unpacking a loader yields batches).
    return kind not in ("loader", "none")


def _lacks(origin: Origin, key: str) -> bool:
    """Whether ``origin`` is a dict that holds nothing under ``key`` (under any key, for
    :data:`ANY_KEY`: an empty dict)."""
    return origin[0] == "dict" and not any(key_meets(key, held) for held, _ in origin[1])


def _assigned_on_self(
    index: ProjectIndex, klass: str, path: str, attributes: tuple[str, ...],
    prefix: str | None = None,
) -> list[Origin]:
    """What the methods of ``klass`` (defined at ``path``), of its project bases and of its
    project subclasses assign to ``self.<attribute>`` (and to every attribute name starting
    with ``prefix``: ``loaders[`` for what is stored under any key): a base class's
    ``__init__`` in another file may set what a subclass's method reads (USB's
    ``AlgorithmBase.loader_dict``), and a subclass may set it again."""
    return [
        o for family_class, home in sorted(_class_family(index, klass, path))
        for c, _, a, o in facts_in_file(index, FACT_SELF, home, 1)
        if c == family_class and (a in attributes or (prefix and a.startswith(prefix)))
    ]


def _got(index: ProjectIndex, origin: Origin) -> Origin:
    """What ``x.get(key)`` gives (a ``get`` origin, :func:`get_origin`): the method of a project
    class when ``x`` is an object the project builds, else the dict's value under ``key``."""
    method: Origin = origin[1]
    read: Origin = origin[2]
    return method if _instance_classes(index, method[2], 0) is not None else read


def _held(index: ProjectIndex, origin: Origin) -> list[Origin]:
    """What a ``param`` origin may be passed by the project's calls of its function, or what
    a ``self`` origin may be assigned in its class (empty: nothing known)."""
    if origin[0] == "self":
        _, path, klass, attr = origin
        return _assigned_on_self(index, klass, path, (attr,))
    _, path, owner, position, name = origin
    passed = []
    # Whoever calls it spells its name: only those files are read.
    for callee, caller, positional, keywords in index.get_for(FACT_CALLS, owner):
        if callee != owner or not _reaches(index, caller, path, owner):
            continue
        keyword = dict(keywords).get(name)
        if keyword is not None:
            passed.append(keyword)
        elif 0 <= position < len(positional):
            passed.append(positional[position])
        else:
            passed.append(UNKNOWN)  # passed some other way (a default, *args)
    return passed


def _forwarded(index: ProjectIndex, call: Origin) -> list[Origin]:
    """Where ``.sampler`` and ``.batch_sampler`` come from on the object the ``call`` origin
    builds, when it builds a project class that shows it (``FACT_FORWARDS``) in every file it
    may come from: what ``self.attr`` may hold for a wrapper that forwards to it, ``none`` for
    a class that has neither attribute (``x.sampler`` fails there: no batch sampler is missed)
    or whose ``sampler`` property gives the batch sampler of what it wraps (it is reached).
    Empty when one of those files shows neither (then nothing is known of the object)."""
    caller, name = call[1], call[2]
    found: list[Origin] = []
    for home in _resolve_class(index, name, caller):
        attributes = [
            attribute for klass, _, attribute in facts_in_file(index, FACT_FORWARDS, home, 1)
            if klass == name
        ]
        if attributes in ([""], [SAMPLER_IS_BATCH_SAMPLER]):
            found.append(NONE)  # no `.sampler` at all, or the batch sampler: none is missed
            continue
        stored = _assigned_on_self(index, name, home, tuple(attributes))
        if not stored:
            return []
        found += stored
    return found


def _returned(index: ProjectIndex, origin: Origin) -> list[Origin]:
    """What the function a ``call``, ``method``, ``objmethod`` or ``super`` origin names may
    return."""
    if origin[0] == "call":
        caller, name = origin[1], origin[2]
        passed = origin[3] if len(origin) > 3 else None
        found = [
            o for path, defined_as in _function_homes(index, caller, name, any_file=False)
            for function, _, origins, _ in facts_in_file(index, FACT_RETURNS, path, 1)
            if function == defined_as
            for o in origins
        ]
        if not found:  # not the project's: a library factory whose loaders are known?
            found = _library_returned(index, caller, name)
        return _reachable(found, passed)
    if origin[0] == "objmethod":
        _, caller, receiver, name = origin
        instances = _instance_classes(index, receiver, 0)
        if instances is None:  # not an instance the project shows: a function of that name
            return _returned(index, ("call", caller, name, None))
        # Built as exactly that class: the class and its project bases (an inherited method);
        # a method inherited from a library is found nowhere, so unknown.
        family = set().union(*(
            _class_family(index, k, home, subclasses=False) for k, home in instances
        ))
        return _methods_returned(index, family, name)
    _, caller, klass, name = origin
    if origin[0] == "super":  # a definition in a base: the class itself, or below it, is not
        bases = _class_family(index, klass, caller, subclasses=False) - {(klass, caller)}
        return _methods_returned(index, bases, name)
    return _methods_returned(index, _class_family(index, klass, caller), name)


# Library factories whose loaders are known, by (module, name) as imported, in the origins a
# project function's facts would give: timm's `create_loader` hands `sampler=` to DataLoader (or
# its multi-epochs loader), and the `PrefetchLoader` it may wrap that in passes `.sampler`
# through, unless the caller asks for `scheduled_batching` (recent timm), which builds a
# `batch_sampler=`. timm's train.py pattern, copied by NVIDIA's GPUNet, was flagged. Read only
# when the project defines no such function itself (a checkout of timm has its own facts).
_SAMPLER_ONLY: Origin = ("loader", True, False)
_TIMM_LOADERS: tuple[Origin, ...] = (
    _SAMPLER_ONLY,
    ("given", (("scheduled_batching", -1),), ("loader", True, True)),  # by keyword only
)
_LIBRARY_LOADERS: dict[tuple[str, str], tuple[Origin, ...]] = {
    ("timm.data", "create_loader"): _TIMM_LOADERS,
    ("timm.data.loader", "create_loader"): _TIMM_LOADERS,
}


def _library_returned(index: ProjectIndex, caller: str, name: str) -> list[Origin]:
    """What the library function imported into ``caller`` as ``name`` is known to return
    (:data:`_LIBRARY_LOADERS`; nothing when it is not known)."""
    _, imported = _names(index).get(caller)
    originals = {(module, name) for local, module in imported if local == name}
    originals |= {
        (module, original)
        for _, local, module, original in facts_in_file(index, FACT_ALIASES, caller, 0)
        if local == name
    }
    return [
        origin for key in sorted(originals) if key in _LIBRARY_LOADERS
        for origin in _LIBRARY_LOADERS[key]
    ]


def _methods_returned(
    index: ProjectIndex, family: set[tuple[str, str]], name: str
) -> list[Origin]:
    """What the method ``name`` of the classes ``family`` (``(class, file)``) may return."""
    files = dict.fromkeys(sorted(path for _, path in family))
    return _reachable([
        o for function, path, origins, owner in _defined_in(index, FACT_RETURNS, files)
        if function == name and (owner, path) in family
        for o in origins
    ], None)


_MAX_FACTORY_DEPTH = 3


def _instance_classes(
    index: ProjectIndex, receiver: Origin, depth: int
) -> frozenset[tuple[str, str]] | None:
    """``(class, file)`` of every project class ``receiver`` may be an instance of: a
    ``ProjectClass(...)`` construction, or a call of a project factory whose every ``return`` is
    one (``strategy = get_strategy(args)``), resolved by module path; ``None`` when some value
    it may hold is anything else (a library object, an unknown call): the caller stays
    conservative. A factory returning ``None`` on some path adds no class (a method called on
    ``None`` fails instead)."""
    cache: dict[tuple[Origin, int], frozenset[tuple[str, str]] | None]
    cache = index.__dict__.setdefault("_sl2_instances", {})
    key = (receiver, depth)
    if key in cache:
        return cache[key]
    cache[key] = None  # a factory returning its own result: nothing shown
    found: frozenset[tuple[str, str]] | None = None
    if depth <= _MAX_FACTORY_DEPTH:
        if receiver[0] == "any":
            parts = [_instance_classes(index, o, depth) for o in receiver[1]]
            if all(p is not None for p in parts):
                found = frozenset().union(*(p for p in parts if p is not None)) or None
        elif receiver[0] == "call":
            found = _constructed_or_returned(index, receiver, depth)
    cache[key] = found
    return found


def _constructed_or_returned(
    index: ProjectIndex, call: Origin, depth: int
) -> frozenset[tuple[str, str]] | None:
    caller, name = call[1], call[2]
    homes = _resolve_class(index, name, caller)
    if homes:
        return frozenset((name, home) for home in homes)
    returned = _returned(index, call) or _factory_returned(index, call)
    if not returned:
        return None
    classes: set[tuple[str, str]] = set()
    for value in returned:
        if value[0] == "none":
            continue
        inner = _instance_classes(index, value, depth + 1)
        if inner is None:
            return None
        classes |= inner
    return frozenset(classes) or None


def _factory_returned(index: ProjectIndex, call: Origin) -> list[Origin]:
    """What the function a ``call`` origin names returns, read from the files it resolves to
    that have no loader facts (their text names no loader): the home of a factory of project
    objects (OpenRLHF's ``get_strategy``), which the loader facts skip. From then on the names
    such a file defines and imports are known, so that what it returns resolves from there."""
    caller, name = call[1], call[2]
    passed = call[3] if len(call) > 3 else None
    names = _names(index)
    found: list[Origin] = []
    for path, function_name in _function_homes(index, caller, name, any_file=True):
        if facts_in_file(index, FACT_NAMES, path, 0):
            continue  # indexed for loaders: `_returned` read its returns
        returns = [
            origins for function, _, origins, owner in facts_in_file(
                index, FACT_FACTORY_RETURNS, path, 1
            )
            if function == function_name and not owner
        ]
        if returns:
            names.read_as_factory(path)
            found += [origin for origins in returns for origin in origins]
    return _reachable(found, passed)


def _function_homes(
    index: ProjectIndex, caller: str, name: str, any_file: bool
) -> list[tuple[str, str]]:
    """``(file, its name there)`` for each file where the function ``name`` called in the file
    ``caller`` may be defined: those :func:`_reach` finds, and those an import under another
    name leads to (`from .build import build_loader as bl`); ``any_file``: files without loader
    facts too (:func:`_reach_with`)."""
    names = _names(index)
    homes = [(path, name) for path in _reach_with(names, caller, name, any_file)]
    modules = names.any_modules if any_file else names.modules
    for _, local, module, original in facts_in_file(index, FACT_ALIASES, caller, 0):
        if local == name:
            homes += [
                (path, original)
                for path in _offered(names, caller, module, original, modules=modules)
            ]
    return list(dict.fromkeys(homes))


def _reachable(
    returned: list[Origin], passed: tuple[int, tuple[str, ...]] | None
) -> list[Origin]:
    """The returned values a call passing ``passed`` may get: a value returned only when an
    optional parameter is given is left out for a call that does not give it."""
    found = []
    for origin in returned:
        if origin[0] == "given":
            if not gives(passed, origin[1]):
                continue
            origin = origin[2]
        found.append(origin)
    return found


def _resolve_class(index: ProjectIndex, name: str, used_in: str) -> list[str]:
    """The files defining the project class ``name`` as seen from ``used_in``."""
    cache: dict[tuple[str, str], list[str]] = index.__dict__.setdefault("_sl2_resolved", {})
    if (name, used_in) not in cache:
        def defines(where: str) -> bool:
            return any(klass == name for klass, _, _ in facts_in_file(
                index, FACT_CLASSES, where, 1
            ))

        cache[(name, used_in)] = [used_in] if defines(used_in) else [
            where for where in _reach(index, used_in, name) if defines(where)
        ]
    return cache[(name, used_in)]


def _class_family(
    index: ProjectIndex, klass: str, path: str, subclasses: bool = True
) -> set[tuple[str, str]]:
    """``(class, file)`` for ``klass`` defined in ``path``, its project bases and (unless
    ``subclasses`` is false: an instance built as exactly ``klass``) its project subclasses,
    transitively: where ``self.method`` may be defined. A base or subclass in another
    file counts when that file's imports reach it (two recipes each defining a class of the same
    name are not related)."""
    cache: dict[tuple[str, str, bool], set[tuple[str, str]]]
    cache = index.__dict__.setdefault("_sl2_families", {})
    if (klass, path, subclasses) in cache:
        return cache[(klass, path, subclasses)]
    def resolve(name: str, used_in: str) -> list[str]:
        return _resolve_class(index, name, used_in)

    # A class and its subclasses spell its name (``class name``, ``class Child(name)``): each
    # step asks only about the name it is at.
    start = (klass, path)
    up = {start}
    stack = [start]
    while stack:
        name, where = stack.pop()
        for candidate, _, parents in facts_in_file(index, FACT_CLASSES, where, 1):
            if candidate != name:
                continue
            for parent in parents:
                for parent_path in resolve(parent, where):
                    if (parent, parent_path) not in up:
                        up.add((parent, parent_path))
                        stack.append((parent, parent_path))
    down = {start}
    stack = [start] if subclasses else []
    while stack:
        name, where = stack.pop()
        for child, child_path, parents in index.get_for(FACT_CLASSES, name):
            if name not in parents:
                continue
            if where in resolve(name, child_path):
                if (child, child_path) not in down:
                    down.add((child, child_path))
                    stack.append((child, child_path))
    cache[(klass, path, subclasses)] = up | down
    return up | down


_NO_NAMES: tuple[frozenset[str], frozenset[tuple[str, str]]] = (frozenset(), frozenset())


class _Modules(ModuleResolver):
    """Resolves imports to the project files that have loader facts, asking about each file it
    meets (:func:`facts_in_file`) instead of knowing every file up front; or, ``any_file``, to
    every file there (for a factory, whose file may name no loader: :func:`_factory_returned`)."""

    def __init__(self, names: _Names, any_file: bool = False) -> None:
        super().__init__(())
        self._names = names
        self._any_file = any_file

    def is_known(self, path: str) -> bool:
        return self._any_file or self._names.has(path)

    def _may_be(self, path: str) -> bool:
        # Standard input's buffer and `--since`'s revision hold files that are not on disk.
        return not self._names.on_disk or os.path.exists(path)


class _Names:
    """Per-file name facts (defined names, imports), read file by file as questions meet them,
    with the module resolver and the memo of where a name used in a file may be defined: one
    call per loader origin must not scan the project."""

    def __init__(self, index: ProjectIndex) -> None:
        self._index = index
        self.on_disk = index.files_on_disk()  # a path that is not there holds no names
        self._by_file: dict[str, tuple[frozenset[str], frozenset[tuple[str, str]]] | None] = {}
        self.modules = _Modules(self)
        self.any_modules = _Modules(self, any_file=True)
        self.reach_memo: dict[tuple[str, str, bool], tuple[str, ...]] = {}
        self._factories: set[str] = set()  # files read for their factories' returns

    def _row(self, path: str) -> tuple[frozenset[str], frozenset[tuple[str, str]]] | None:
        if path not in self._by_file:
            rows = facts_in_file(self._index, FACT_NAMES, path, 0)
            if not rows and is_package_init(path):
                # A package that names no loader may still re-export what the question follows.
                rows = facts_in_file(self._index, FACT_PACKAGE_NAMES, path, 0)
            if not rows and path in self._factories:
                rows = facts_in_file(self._index, FACT_FACTORY_NAMES, path, 0)
            self._by_file[path] = (
                (frozenset(rows[-1][1]), frozenset(rows[-1][2])) if rows else None
            )
        return self._by_file[path]

    def has(self, path: str) -> bool:
        return self._row(path) is not None

    def read_as_factory(self, path: str) -> None:
        """Know the names of ``path``, a file without loader facts that holds a factory a
        question follows (:func:`_factory_returned`), as those of an indexed file."""
        if path not in self._factories:
            self._factories.add(path)
            self._by_file.pop(path, None)
            for key in [key for key in self.reach_memo if key[0] == path]:
                del self.reach_memo[key]

    def get(self, path: str) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
        return self._row(path) or _NO_NAMES


def _names(index: ProjectIndex) -> _Names:
    cached = index.__dict__.get("_sl2_names")
    if cached is None:
        cached = index.__dict__["_sl2_names"] = _Names(index)
    return cached


def _reach(index: ProjectIndex, caller: str, name: str) -> tuple[str, ...]:
    """The files where ``name`` as used in the file ``caller`` may be defined: ``caller``
    itself, and unless it defines its own ``name``, the files its imports lead to by module path
    (``from pkg.trainer import Trainer`` reaches ``pkg/trainer.py``, never an unrelated
    ``recipes/trainer.py``), also through a package or module that re-exports it, and the modules
    it imports whole (``import pkg.module``, then ``module.name(...)``). An import the project
    cannot resolve reaches nothing. Only the files on the way are read."""
    return _reach_with(_names(index), caller, name, any_file=False)


def _reach_with(names: _Names, caller: str, name: str, any_file: bool) -> tuple[str, ...]:
    """:func:`_reach`; ``any_file``: to files without loader facts too."""
    key = (caller, name, any_file)
    found = names.reach_memo.get(key)
    if found is None:
        modules = names.any_modules if any_file else names.modules
        files = [caller]
        defined, imported = names.get(caller)
        if name not in defined:
            for local, module in sorted(imported):
                if local in (name, "*"):  # from <module> import name (or *)
                    files += _offered(names, caller, module, name, modules=modules)
                elif not local:
                    files += modules.resolve(caller, module)
        found = names.reach_memo[key] = tuple(dict.fromkeys(files))
    return found


def _offered(
    names: _Names, importer: str, module: str, name: str, depth: int = 0,
    seen: frozenset[str] = frozenset(), modules: _Modules | None = None,
) -> list[str]:
    """The files whose ``name`` the file ``importer`` gets by ``from <module> import name``: the
    module's files by module path, and the files they re-export it from (:func:`_providers`)."""
    modules = modules or names.modules
    return [
        provider for module_file in modules.resolve(importer, module)
        for provider in _providers(names, module_file, name, depth, seen, modules)
    ]


def _providers(
    names: _Names, module_file: str, name: str, depth: int, seen: frozenset[str],
    modules: _Modules,
) -> list[str]:
    """The files whose ``name`` the module at ``module_file`` offers: itself, and unless it
    defines its own, those of the modules it imports ``name`` from (``timm/data/__init__.py``
    holding ``from .loader import create_loader``, or ``from .build import *``: USB's
    ``semilearn/core/utils``), a few re-exports deep; a cycle of re-exports adds nothing."""
    found = [module_file]
    if depth > 3 or module_file in seen:
        return found
    defined, imported = names.get(module_file)
    if name in defined:
        return found
    seen = seen | {module_file}
    for local, module in sorted(imported):
        if local in (name, "*"):  # `from .build import *` in a package's __init__.py
            found += _offered(names, module_file, module, name, depth + 1, seen, modules)
    return found


def _reaches(index: ProjectIndex, caller: str, defined_at: str, name: str) -> bool:
    """Whether ``name`` as used in the file ``caller`` can be the one defined in ``defined_at``
    (:func:`_reach`)."""
    return defined_at in _reach(index, caller, name)


def _defined_in(index: ProjectIndex, kind: str, paths: Iterable[str]) -> list[Any]:
    """The facts of ``kind`` (whose second field is their file) made in ``paths``."""
    return [fact for path in paths for fact in facts_in_file(index, kind, path, 1)]


def project_epoch_uses(
    index: ProjectIndex, caller: str, name: str
) -> list[tuple[str, int, EpochUse]] | None:
    """How the project function ``name``, as called from the file ``caller`` (resolved by
    module path), uses its parameters; ``None`` when the name resolves to no project function
    the index knows."""
    caller = file_key(caller)
    rows = [
        row for row in _defined_in(index, FACT_EPOCH_USERS, _reach(index, caller, name))
        if row[0] == name and row[1] != caller
    ]
    files = {row[1] for row in rows}
    if len(files) != 1:
        return None
    return [(parameter, position, use) for _, _, parameter, position, use in rows]
