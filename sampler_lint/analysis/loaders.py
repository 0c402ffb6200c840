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
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import libcst as cst

from sampler_lint.context import FileContext
from sampler_lint.imports import dotted_name
from sampler_lint.index import (
    FactCollector,
    ModuleResolver,
    ProjectIndex,
    dotted_expression,
    imported_module,
)
from sampler_lint.matching import scope_body_statements
from sampler_lint.syntax_summary import SyntaxSummary, argument

# An expression's provenance, as plain tuples (picklable, comparable, stable in the index):
#   ("loader", built_with_sampler, built_with_batch_sampler)  a DataLoader(...) construction
#   ("call", path, name, passed)            the result of calling `name` in the file at `path`;
#                                           `passed` is what the call passes (:func:`_passed`)
#   ("given", ((param, position), ...), origin)  in FACT_RETURNS only: a value returned only when
#                                           the caller passes one of these optional parameters
#                                           (`if plan is not None: return ...`, default `None`)
#   ("method", path, class_name, name)      the result of `self.name(...)` inside `class_name`:
#                                           its definition in that class, a base or a subclass
#   ("objmethod", path, receiver, name)     `x.name(...)` with `x`'s origin `receiver`: when `x` is
#                                           an instance of a project class, that class's method
#   ("tuple", (origin, ...))                a tuple of values (`return loader, dataset`)
#   ("any", (origin, ...))                  one of these values (`DataLoader(...) if c else None`
#                                           inside a tuple, an argument assigned in two places)
#   ("item", origin, i)                     element i of a value (`a, b = f()`, `f()[1]`)
#   ("param", path, owner, position, name)  a parameter of function `owner` defined at `path`
#   ("self", path, class_name, attr)        `self.attr` inside `class_name` defined at `path`
#   ("none",)                               `None`: no loader at all
#   ("unknown",)
Origin = tuple[Any, ...]
UNKNOWN: Origin = ("unknown",)
NONE: Origin = ("none",)

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
_SAMPLER_POSITION, _BATCH_SAMPLER_POSITION = 3, 4
_MAX_DEPTH = 8

FACT_RETURNS = "sl2_returns"  # (function name, path, origins returned, class or "")
FACT_CLASSES = "sl2_classes"  # (class name, path, simple names of its bases)
FACT_CALLS = "sl2_calls"  # (callee name, path, positional origins, keyword origins)
FACT_SELF = "sl2_self"  # (class name, path, attr, origin)
FACT_NAMES = "sl2_names"  # (path, names defined there, (name, module) imported there)
# (an imported module keeps the leading dots of a relative import: `..data`)
FACT_ALIASES = "sl2_aliases"  # (path, local name, module, original name): `import x as y`
FACT_SET_EPOCH = "sl2_set_epoch"  # dotted receivers of every `.set_epoch(...)` call
# (function name, path, parameter, position, its epoch use): how a module-level function uses
# each parameter, for SL202 to follow a loader into the project function it is handed to.
FACT_EPOCH_USERS = "sl2_epoch_users"
# Files on a loader's way mention it somehow; a file missed here can only make SL201 flag more
# (an origin without facts may carry a batch sampler). "_data" was here too: it added 549 files
# to parse over the 9 benchmark trees and changed no finding on 13 trees (Composer at #3124,
# LAVIS, catalyst and the DDP tutorials among them). Known miss: a factory of a project object
# (`strategy = get_strategy(args)`, then `strategy.setup_dataloader(...)`) in a file that names no
# loader, or a package `__init__.py` re-exporting it, is not indexed, so the object stays unknown
# (OpenRLHF); indexing every file would follow it but doubled an SL2xx-only run on detectron2.
INDEX_REQUIRES: tuple[tuple[str, ...], ...] = (
    ("DataLoader", "loader", "Loader", "set_epoch", "sampler"),
)


def is_loader_constructor(name: str | None) -> bool:
    return name is not None and name.rsplit(".", 1)[-1].endswith("DataLoader")


def _loader_origin(keywords: Iterable[str | None], positional: int) -> Origin:
    names = set(keywords)
    if None in names:  # **kwargs: anything may be in there
        return ("loader", True, True)
    sampler = "sampler" in names or positional > _SAMPLER_POSITION
    batch = "batch_sampler" in names or positional > _BATCH_SAMPLER_POSITION
    return ("loader", sampler, batch)


# ------------------------------------------------------------------------------------------------
# The project side: facts from Python's ast


def file_key(path: str) -> str:
    """One spelling per file: the index walks the project from its resolved root, the linted
    path is as the user typed it. (Not cached: a relative path means another file after a
    change of directory.)"""
    return os.path.realpath(path)


_Function = ast.FunctionDef | ast.AsyncFunctionDef


class _FactCollector:
    """The SL2xx facts of one file, read from the nodes the syntax summary already gathered (no
    second walk of the tree): each node's function and class are found through its parents."""

    def __init__(self, path: str, summary: SyntaxSummary) -> None:
        self.path = file_key(path)
        self.summary = summary
        self.returns: list[tuple[str, str, tuple[Origin, ...], str]] = []
        self.classes: list[tuple[str, str, tuple[str, ...]]] = []
        self.calls: list[tuple[str, str, tuple[Origin, ...], tuple[tuple[str, Origin], ...]]] = []
        self.selfs: list[tuple[str, str, str, Origin]] = []
        self.defined: set[str] = set()
        self.imported: set[tuple[str, str]] = set()
        self.aliases: set[tuple[str, str, str, str]] = set()
        self.set_epoch: set[str] = set()
        self.epoch_users: list[tuple[str, str, str, int, EpochUse]] = []
        # The scope of the node being read: the innermost function, the enclosing class names.
        self._class: list[str] = []
        self._function: list[_Function] = []
        self._tables: dict[_Function, dict[str, list[ast.expr]]] | None = None

    def collect(self) -> None:
        nodes = self.summary.nodes
        for plain in nodes(ast.Import):
            for alias in plain.names:
                self.imported.add(("", alias.name))
        for statement in nodes(ast.ImportFrom):
            module = imported_module(statement)  # `..data`: relative imports keep their dots
            for alias in statement.names:
                self.imported.add((alias.asname or alias.name, module))
                if alias.asname and alias.asname != alias.name:
                    self.aliases.add((self.path, alias.asname, module, alias.name))
                dot = "" if module.endswith(".") else "."
                joined = f"{module}{dot}{alias.name}"
                self.imported.add(("", joined))
        for definition in nodes(ast.ClassDef):
            self.defined.add(definition.name)
            bases = tuple(
                name.rsplit(".", 1)[-1]
                for name in map(dotted_expression, definition.bases) if name
            )
            self.classes.append((definition.name, self.path, bases))
        functions: list[_Function] = [*nodes(ast.FunctionDef), *nodes(ast.AsyncFunctionDef)]
        for function in functions:
            self.defined.add(function.name)
            if isinstance(self.summary.parent(function), ast.Module):
                self.epoch_users.extend(
                    (function.name, self.path, name, position, use)
                    for name, position, use in epoch_uses(function)
                )
        for ret in nodes(ast.Return):
            if ret.value is not None and self._enter(ret):
                origins = tuple(self._origins(ret.value))
                given = _required_parameters(ret, self._function[-1], bool(self._class),
                                             self.summary)
                if given:
                    origins = tuple(("given", given, o) for o in origins)
                klass = self._class[-1] if self._class else ""
                self.returns.append((self._function[-1].name, self.path, origins, klass))
        for call in nodes(ast.Call):
            self._call(call)
        for assign in nodes(ast.Assign):
            if self._enter(assign) and self._class:
                for target in assign.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        for origin in self._origins(assign.value):
                            self.selfs.append((self._class[-1], self.path, target.attr, origin))

    def _enter(self, node: ast.AST) -> bool:
        """Set the scope to ``node``'s; whether it is inside a function."""
        self._class = []
        self._function = []
        for ancestor in self.summary.ancestors(node):
            if isinstance(ancestor, ast.ClassDef):
                self._class.insert(0, ancestor.name)
            elif isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not self._function:
                    self._function.append(ancestor)
        return bool(self._function)

    def _call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "set_epoch":
            self.set_epoch.add(dotted_expression(node.func.value) or "<expression>")
        name = dotted_expression(node.func)
        if name is None or is_loader_constructor(name) or not (node.args or node.keywords):
            return
        self._enter(node)
        positional = tuple(
            _merge(self._origins(arg)) for arg in node.args if not isinstance(arg, ast.Starred)
        )
        keywords = tuple(
            (kw.arg, _merge(self._origins(kw.value))) for kw in node.keywords if kw.arg
        )
        if any(o != UNKNOWN for o in positional) or any(o != UNKNOWN for _, o in keywords):
            self.calls.append((name.rsplit(".", 1)[-1], self.path, positional, keywords))

    def _assignments(self) -> dict[str, list[ast.expr]]:
        """Name -> the values assigned to it anywhere inside the current function (nested
        functions included), for every function at once on first use."""
        if self._tables is None:
            self._tables = defaultdict(lambda: defaultdict(list))
            assignments: list[ast.Assign | ast.AnnAssign] = [
                *self.summary.nodes(ast.Assign), *self.summary.nodes(ast.AnnAssign)
            ]
            for node in assignments:
                pairs = list(_assigned_pairs(node))
                if not pairs:
                    continue
                for ancestor in self.summary.ancestors(node):
                    if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        table = self._tables[ancestor]
                        for name, value in pairs:
                            table[name].append(value)
        return self._tables.get(self._function[-1], {}) if self._function else {}

    def _names_loader_class(self, func: ast.expr) -> bool:
        """``loader_class(...)`` after ``loader_class = torch.utils.data.DataLoader`` (or a
        DataLoader subclass) in this function: a loader construction."""
        if not (isinstance(func, ast.Name) and self._function):
            return False
        values = self._assignments().get(func.id, [])
        return bool(values) and all(
            is_loader_constructor(dotted_expression(v)) for v in _alternatives(values)
        )

    # origins
    def _origins(self, node: ast.expr, depth: int = 0) -> list[Origin]:
        if isinstance(node, ast.Constant) and node.value is None:
            return [NONE]
        if isinstance(node, ast.IfExp):
            return self._origins(node.body, depth) + self._origins(node.orelse, depth)
        if isinstance(node, ast.Call):
            name = dotted_expression(node.func)
            if is_loader_constructor(name) or self._names_loader_class(node.func):
                keywords = [kw.arg for kw in node.keywords]
                return [_loader_origin(keywords, len(node.args))]
            if name is None:
                return [UNKNOWN]
            if name.count(".") == 1 and name.split(".")[0] in ("self", "cls") and self._class:
                return [("method", self.path, self._class[-1], name.rsplit(".", 1)[-1])]
            if (
                isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and depth < 3
            ):
                receiver = _merge(self._origins(node.func.value, depth + 1))
                if _is_call_receiver(receiver):
                    return [("objmethod", self.path, receiver, node.func.attr)]
            passed = _passed(
                sum(1 for a in node.args if not isinstance(a, ast.Starred)),
                [kw.arg for kw in node.keywords],
                any(isinstance(a, ast.Starred) for a in node.args),
            )
            return [("call", self.path, name.rsplit(".", 1)[-1], passed)]
        if isinstance(node, ast.Tuple):
            return [("tuple", tuple(_merge(self._origins(e, depth)) for e in node.elts))]
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and type(node.slice.value) is int
        ):
            return [("item", _merge(self._origins(node.value, depth)), node.slice.value)]
        if isinstance(node, ast.Name) and self._function:
            function = self._function[-1]
            position = _parameter_position(function, node.id, bool(self._class))
            if position is not None:
                owner = _owner(function.name, self._class)
                return [("param", self.path, owner, position, node.id)]
            values = self._assignments().get(node.id, [])
            if values and depth < 3:
                return [o for value in values for o in self._origins(value, depth + 1)]
            return [UNKNOWN]
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and self._class
        ):
            return [("self", self.path, self._class[-1], node.attr)]
        return [UNKNOWN]


def _passed(
    positional: int, keywords: Iterable[str | None], star: bool
) -> tuple[int, tuple[str, ...]] | None:
    """What a call passes: the number of positional arguments and the keyword names, or
    ``None`` when ``*args`` / ``**kwargs`` may pass anything."""
    names = list(keywords)
    if star or None in names:
        return None
    return (positional, tuple(sorted(n for n in names if n is not None)))


def _gives(passed: tuple[int, tuple[str, ...]] | None, required: Iterable[tuple[str, int]]) -> bool:
    """Whether a call passing ``passed`` may pass one of the ``required`` parameters."""
    if passed is None:
        return True
    positional, keywords = passed
    return any(name in keywords or 0 <= position < positional for name, position in required)


def _required_parameters(
    node: ast.stmt, function: _Function, is_method: bool, summary: SyntaxSummary
) -> tuple[tuple[str, int], ...]:
    """The optional parameters (default ``None`` or ``False``) that must have been passed for
    ``node`` to run: it sits in the branch of an ``if`` that tests one of them (``if plan is not
    None:``, ``if plan:``, the ``else`` of ``if plan is None:``), or after an ``if`` of the
    opposite test that always leaves the function (``if plan is None: return ...``)."""
    falsy = _falsy_defaults(function)
    if not falsy:
        return ()
    required: set[str] = set()
    child: ast.AST = node
    for ancestor in summary.ancestors(node):
        if isinstance(ancestor, ast.If):
            if child in ancestor.body:
                required |= _tested(ancestor.test, falsy, truthy=True)
            elif child in ancestor.orelse:
                required |= _tested(ancestor.test, falsy, truthy=False)
        for block in ("body", "orelse", "finalbody"):
            statements = getattr(ancestor, block, None)
            if isinstance(statements, list) and child in statements:
                for earlier in statements[: statements.index(child)]:
                    if isinstance(earlier, ast.If) and not earlier.orelse and _leaves(earlier):
                        required |= _tested(earlier.test, falsy, truthy=False)
        if ancestor is function:
            break
        child = ancestor
    found = []
    for name in sorted(required):
        position = _parameter_position(function, name, is_method)
        if position is not None:
            found.append((name, position))
    return tuple(found)


def _falsy_defaults(function: _Function) -> dict[str, object]:
    """Parameter -> its default, for defaults that are literally ``None`` or ``False``."""
    args = function.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults,
                     strict=True))
    keyword_only = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    pairs += [(a, d) for a, d in keyword_only if d is not None]
    # A parameter the function rebinds (`plan = plan or default_plan()`) may be set whatever
    # the caller passed: only the untouched ones count.
    rebound = {
        n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    return {
        a.arg: d.value for a, d in pairs
        if isinstance(d, ast.Constant) and (d.value is None or d.value is False)
        and a.arg not in rebound
    }


def _tested(test: ast.expr, falsy: dict[str, object], truthy: bool) -> set[str]:
    """The parameters that ``test`` being ``truthy`` proves were given a value other than their
    default: ``p`` / ``p is not None`` when true, ``not p`` / ``p is None`` when false (``is not
    None`` only for a ``None`` default)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and truthy:
        return set().union(*(_tested(v, falsy, True) for v in test.values))
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) and not truthy:
        return set().union(*(_tested(v, falsy, False) for v in test.values))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _tested(test.operand, falsy, not truthy)
    if isinstance(test, ast.Name) and test.id in falsy:
        return {test.id} if truthy else set()
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id in falsy
        and len(test.ops) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and falsy[test.left.id] is None
    ):
        if isinstance(test.ops[0], ast.IsNot):
            return {test.left.id} if truthy else set()
        if isinstance(test.ops[0], ast.Is):
            return set() if truthy else {test.left.id}
    return set()


def _leaves(statement: ast.If) -> bool:
    """An ``if`` whose body always ends by leaving the function (``return`` / ``raise``)."""
    return bool(statement.body) and isinstance(statement.body[-1], (ast.Return, ast.Raise))


def _assigned_pairs(node: ast.Assign | ast.AnnAssign) -> list[tuple[str, ast.expr]]:
    """``(name, value)`` for each plain name an assignment binds: ``a, b = f()`` binds ``b`` to
    element 1 of ``f()``'s value."""
    if isinstance(node, ast.AnnAssign):
        if node.value is not None and isinstance(node.target, ast.Name):
            return [(node.target.id, node.value)]
        return []
    pairs: list[tuple[str, ast.expr]] = []
    for target in node.targets:
        if isinstance(target, ast.Name):
            pairs.append((target.id, node.value))
        elif isinstance(target, (ast.Tuple, ast.List)) and not any(
            isinstance(e, ast.Starred) for e in target.elts
        ):
            for i, element in enumerate(target.elts):
                if isinstance(element, ast.Name):
                    item = ast.Subscript(node.value, ast.Constant(i), ast.Load())
                    pairs.append((element.id, item))
    return pairs


def _alternatives(values: list[ast.expr]) -> list[ast.expr]:
    """Values with conditional expressions opened: ``A if c else B`` is ``A`` or ``B``."""
    opened: list[ast.expr] = []
    for value in values:
        if isinstance(value, ast.IfExp):
            opened.extend(_alternatives([value.body, value.orelse]))
        else:
            opened.append(value)
    return opened


_MAX_ALTERNATIVES = 6


def _merge(origins: list[Origin]) -> Origin:
    """One origin for a value with several possible ones (a call-site argument, a tuple element,
    a receiver): the one they agree on, or ``("any", ...)`` of the alternatives so that a
    loader-or-``None`` element of a returned tuple stays followable. An unknown alternative,
    or too many, make the whole unknown (resolving it would answer "may carry" anyway)."""
    unique: list[Origin] = []
    for origin in origins:
        for alternative in (origin[1] if origin[0] == "any" else (origin,)):
            if alternative not in unique:
                unique.append(alternative)
    if not unique or UNKNOWN in unique or len(unique) > _MAX_ALTERNATIVES:
        return UNKNOWN
    if len(unique) == 1:
        return unique[0]
    return ("any", tuple(sorted(unique, key=repr)))


def _is_call_receiver(origin: Origin) -> bool:
    """A receiver ``x`` of ``x.method(...)`` worth following: the result of a call (a class
    constructed, or a factory that may return one), or one of several such results."""
    alternatives: tuple[Origin, ...] = origin[1] if origin[0] == "any" else (origin,)
    return all(o[0] == "call" for o in alternatives)


def _owner(function: str, classes: list[str]) -> str:
    """Whom callers name: ``__init__`` is called through its class."""
    if function == "__init__" and classes:
        return classes[-1]
    return function


def _parameter_position(
    function: ast.FunctionDef | ast.AsyncFunctionDef, name: str, is_method: bool
) -> int | None:
    """The position callers pass ``name`` at (``self`` not counted), ``-1`` for keyword-only."""
    positional = [a.arg for a in function.args.posonlyargs + function.args.args]
    if is_method and positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    if name in positional:
        return positional.index(name)
    if name in [a.arg for a in function.args.kwonlyargs]:
        return -1
    return None


# How a function uses one of its parameters, for SL202: ("sets", "loops", "hands_on") flags:
#   sets      the function calls `set_epoch` on anything
#   loops     an epoch loop in it iterates the parameter
#   hands_on  it hands the parameter to a call that does not just iterate or read it
EpochUse = tuple[bool, bool, bool]
_ITERATING_CALLS = ("iter", "enumerate", "tqdm", "zip", "trange", "islice", "chain")
_READING_CALLS = (
    "len", "print", "isinstance", "hasattr", "getattr", "str", "repr", "type", "id", "range",
    "int", "float", "bool", "format", "info", "debug", "warning", "log",
)


def epoch_uses(function: _Function) -> list[tuple[str, int, EpochUse]]:
    """``(parameter, position, use)`` for the parameters of a module-level function."""
    args = function.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    parameters = [(name, i) for i, name in enumerate(positional)]
    parameters += [(a.arg, -1) for a in args.kwonlyargs]
    nodes = list(ast.walk(function))
    sets = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and n.func.attr == "set_epoch" for n in nodes
    )
    found = [("", -2, (sets, False, False))]  # the function itself: known to the index
    for name, position in parameters:
        loops = hands_on = False
        for node in nodes:
            if isinstance(node, (ast.For, ast.AsyncFor)) and _is_epoch_loop_ast(node):
                loops = loops or any(_iterates(inner, name) for inner in ast.walk(node))
            elif isinstance(node, ast.Call) and any(
                isinstance(a, ast.Name) and a.id == name
                for a in [*node.args, *(k.value for k in node.keywords)]
            ):
                called = (dotted_expression(node.func) or "").rsplit(".", 1)[-1]
                if called not in _ITERATING_CALLS and called not in _READING_CALLS:
                    hands_on = True
        if loops or hands_on or sets:
            found.append((name, position, (sets, loops, hands_on)))
    return found


def _iterates(node: ast.AST, name: str) -> bool:
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return isinstance(node.iter, ast.Name) and node.iter.id == name
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in _ITERATING_CALLS and any(
            isinstance(a, ast.Name) and a.id == name for a in node.args
        )
    return False


def _is_epoch_loop_ast(loop: ast.For | ast.AsyncFor) -> bool:
    """The ``ast`` twin of :func:`is_epoch_loop`."""
    if not isinstance(loop.target, ast.Name):
        return False
    if "epoch" in loop.target.id.lower():
        return True
    iterable = loop.iter
    if not isinstance(iterable, ast.Call):
        return False
    called = (dotted_expression(iterable.func) or "").rsplit(".", 1)[-1]
    if called not in ("range", "trange", "tqdm"):
        return False
    return any(
        (isinstance(n, ast.Name) and "epoch" in n.id.lower())
        or (isinstance(n, ast.Attribute) and "epoch" in n.attr.lower())
        for arg in iterable.args for n in ast.walk(arg)
    )


def project_epoch_uses(
    index: ProjectIndex, caller: str, name: str
) -> list[tuple[str, int, EpochUse]] | None:
    """How the project function ``name``, as called from the file ``caller`` (resolved by
    module path), uses its parameters; ``None`` when the name resolves to no project function
    the index knows."""
    names = _names(index)
    caller = file_key(caller)
    rows = [
        row for row in index.get(FACT_EPOCH_USERS)
        if row[0] == name and row[1] != caller and _reaches(names, caller, row[1], name)
    ]
    files = {row[1] for row in rows}
    if len(files) != 1:
        return None
    return [(parameter, position, use) for _, _, parameter, position, use in rows]


def collect_loader_facts(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    """The SL2xx facts of one file."""
    collector = _FactCollector(path, SyntaxSummary.of(tree))
    collector.collect()
    return {
        FACT_RETURNS: sorted(collector.returns, key=repr),
        FACT_CLASSES: sorted(collector.classes),
        FACT_ALIASES: sorted(collector.aliases),
        FACT_CALLS: sorted(collector.calls, key=repr),
        FACT_SELF: sorted(collector.selfs, key=repr),
        FACT_NAMES: [(
            collector.path, tuple(sorted(collector.defined)), tuple(sorted(collector.imported))
        )],
        FACT_SET_EPOCH: sorted(collector.set_epoch),
        FACT_EPOCH_USERS: sorted(collector.epoch_users),
    }


LOADER_FACTS = FactCollector("loader provenance", INDEX_REQUIRES, collect_loader_facts)


# ------------------------------------------------------------------------------------------------
# The file side: origins of a libcst expression


def origins_at(context: FileContext, node: cst.BaseExpression) -> list[Origin]:
    """The origins of a loader expression at ``node`` in the file being linted."""
    path = file_key(str(context.path))
    function = context.enclosing_function(node)
    klass = context.enclosing_class(node)
    if isinstance(node, cst.Name) and node.value == "None":
        return [NONE]
    if isinstance(node, cst.IfExp):
        return origins_at(context, node.body) + origins_at(context, node.orelse)
    if isinstance(node, cst.Call):
        name = dotted_name(node.func)
        if is_loader_constructor(name) or _names_loader_class(context, node.func, function):
            keywords = [arg.keyword.value if arg.keyword else None for arg in node.args
                        if arg.keyword is not None or arg.star == "**"]
            positional = sum(1 for arg in node.args if arg.keyword is None and not arg.star)
            return [_loader_origin(keywords, positional)]
        if name is None:
            return [UNKNOWN]
        if name.count(".") == 1 and name.split(".")[0] in ("self", "cls") and klass is not None:
            return [("method", path, klass.name.value, name.rsplit(".", 1)[-1])]
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            receiver = _merge(origins_at(context, func.value))
            if _is_call_receiver(receiver):
                return [("objmethod", path, receiver, func.attr.value)]
        passed = _passed(
            sum(1 for arg in node.args if arg.keyword is None and not arg.star),
            [arg.keyword.value if arg.keyword else None for arg in node.args
             if arg.keyword is not None or arg.star == "**"],
            any(arg.star == "*" for arg in node.args),
        )
        return [("call", path, name.rsplit(".", 1)[-1], passed)]
    if isinstance(node, cst.Tuple):
        return [("tuple", tuple(_merge(origins_at(context, e.value)) for e in node.elements))]
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
            inner = _merge(origins_at(context, node.value))
            return [("item", inner, int(index.value.value, 0))]
        return [UNKNOWN]
    if isinstance(node, cst.Name) and function is not None:
        position = _cst_parameter_position(function, node.value, klass is not None)
        if position is not None:
            classes = [klass.name.value] if klass is not None else []
            owner = _owner(function.name.value, classes)
            return [("param", path, owner, position, node.value)]
        values = context.assignments(function).get(node.value, [])
        found = [o for value in values for o in origins_at(context, value)]
        for value, position in _unpacked(function, node.value):  # `a, b = f()`
            found.append(("item", _merge(origins_at(context, value)), position))
        return found or [UNKNOWN]
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and klass is not None
    ):
        return [("self", path, klass.name.value, node.attr.value)]
    return [UNKNOWN]


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
    if depth > _MAX_DEPTH or origin in seen:
        return True
    seen = seen | {origin}
    kind = origin[0]
    names = _names(index)
    if kind == "none":
        return False
    if kind == "loader":
        # Built without `batch_sampler=`, a loader's batch sampler is torch's default one drawing
        # from `loader.sampler` (the one passed as `sampler=`, or the default Random/Sequential
        # sampler that never shuffles by epoch): `set_epoch` on `loader.sampler` is all it needs.
        _, _, batch = origin
        return bool(batch)
    if kind in ("call", "method", "objmethod"):
        returned = _returned(index, origin)
        return not returned or any(_may_carry(index, o, depth + 1, seen) for o in returned)
    if kind == "tuple":
        return False  # a tuple has no `.sampler`: that path never reaches the call (or fails)
    if kind == "any":
        return any(_may_carry(index, o, depth + 1, seen) for o in origin[1])
    if kind == "item":
        _, inner, position = origin
        return _item_may_carry(index, inner, position, depth + 1, seen)
    if kind == "param":
        _, path, owner, position, name = origin
        passed = []
        for callee, caller, positional, keywords in index.get(FACT_CALLS):
            if callee != owner or not _reaches(names, caller, path, owner):
                continue
            keyword = dict(keywords).get(name)
            if keyword is not None:
                passed.append(keyword)
            elif 0 <= position < len(positional):
                passed.append(positional[position])
            else:
                passed.append(UNKNOWN)  # passed some other way (a default, *args)
        return not passed or any(_may_carry(index, o, depth + 1, seen) for o in passed)
    if kind == "self":
        _, path, klass, attr = origin
        assigned = [
            o for c, p, a, o in index.get(FACT_SELF) if c == klass and p == path and a == attr
        ]
        return not assigned or any(_may_carry(index, o, depth + 1, seen) for o in assigned)
    return True


def _item_may_carry(
    index: ProjectIndex, value: Origin, position: int, depth: int, seen: frozenset[Origin]
) -> bool:
    """Whether element ``position`` of ``value`` may carry a batch sampler: the element of a
    returned tuple, through functions that return what other functions return."""
    if depth > _MAX_DEPTH:
        return True
    if value[0] == "tuple":
        elements = value[1]
        if not 0 <= position < len(elements):
            return True
        return _may_carry(index, elements[position], depth + 1, seen)
    if value[0] == "any":
        return any(_item_may_carry(index, o, position, depth + 1, seen) for o in value[1])
    if value[0] in ("call", "method", "objmethod"):
        returned = _returned(index, value)
        return not returned or any(
            _item_may_carry(index, r, position, depth + 1, seen) for r in returned
        )
    # A loader or None is not a tuple on that path (unpacking a loader yields batches).
    return value[0] not in ("loader", "none")


def _returned(index: ProjectIndex, origin: Origin) -> list[Origin]:
    """What the function a ``call`` or ``method`` origin names may return."""
    names = _names(index)
    if origin[0] == "call":
        caller, name = origin[1], origin[2]
        passed = origin[3] if len(origin) > 3 else None
        found = [
            o for function, path, origins, _ in index.get(FACT_RETURNS)
            if function == name and _reaches(names, caller, path, name)
            for o in origins
        ]
        for where, local, module, original in index.get(FACT_ALIASES):
            if where == caller and local == name:  # `from .build import build_loader as bl`
                found += [
                    o for function, path, origins, _ in index.get(FACT_RETURNS)
                    if function == original and _from_module(names, path, module, original, caller)
                    for o in origins
                ]
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
        return _reachable([
            o for function, path, origins, owner in index.get(FACT_RETURNS)
            if function == name and (owner, path) in family
            for o in origins
        ], None)
    _, caller, klass, name = origin
    family = _class_family(index, klass, caller)
    return _reachable([
        o for function, path, origins, owner in index.get(FACT_RETURNS)
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
    returned = _returned(index, call)
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


def _reachable(
    returned: list[Origin], passed: tuple[int, tuple[str, ...]] | None
) -> list[Origin]:
    """The returned values a call passing ``passed`` may get: a value returned only when an
    optional parameter is given is left out for a call that does not give it."""
    found = []
    for origin in returned:
        if origin[0] == "given":
            if not _gives(passed, origin[1]):
                continue
            origin = origin[2]
        found.append(origin)
    return found


def _resolve_class(index: ProjectIndex, name: str, used_in: str) -> list[str]:
    """The files defining the project class ``name`` as seen from ``used_in``."""
    cache: dict[tuple[str, str], list[str]] = index.__dict__.setdefault("_sl2_resolved", {})
    if (name, used_in) not in cache:
        names = _names(index)
        files = [where for klass, where, _ in index.get(FACT_CLASSES) if klass == name]
        if used_in in files:
            cache[(name, used_in)] = [used_in]
        else:
            cache[(name, used_in)] = [w for w in files if _reaches(names, used_in, w, name)]
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
    classes: list[tuple[str, str, tuple[str, ...]]] = index.get(FACT_CLASSES)
    by_name: dict[str, list[tuple[str, tuple[str, ...]]]] = defaultdict(list)
    children: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for name, where, parents in classes:
        by_name[name].append((where, parents))
        for parent in parents:
            children[parent].append((name, where))

    def resolve(name: str, used_in: str) -> list[str]:
        return _resolve_class(index, name, used_in)

    start = (klass, path)
    up = {start}
    stack = [start]
    while stack:
        name, where = stack.pop()
        for candidate, parents in by_name.get(name, []):
            if candidate != where:
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
        for child, child_path in children.get(name, []):
            if where in resolve(name, child_path):
                if (child, child_path) not in down:
                    down.add((child, child_path))
                    stack.append((child, child_path))
    cache[(klass, path, subclasses)] = up | down
    return up | down


class _Names:
    """Per-file name facts of the project (defined names, imports), with the module resolver and
    the memo that re-export lookups need: one call per loader origin must not scan the project."""

    def __init__(self, index: ProjectIndex) -> None:
        self.by_file: dict[str, tuple[frozenset[str], frozenset[tuple[str, str]]]] = {
            path: (frozenset(defined), frozenset(imported))
            for path, defined, imported in index.get(FACT_NAMES)
        }
        self.modules = ModuleResolver(self.by_file)
        self.provides_memo: dict[tuple[str, str, str], bool] = {}

    def get(
        self, path: str, default: tuple[frozenset[str], frozenset[tuple[str, str]]]
    ) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
        return self.by_file.get(path, default)


def _names(index: ProjectIndex) -> _Names:
    cached = index.__dict__.get("_sl2_names")
    if cached is None:
        cached = index.__dict__["_sl2_names"] = _Names(index)
    return cached


def _reaches(names: _Names, caller: str, defined_at: str, name: str) -> bool:
    """Whether ``name`` as used in the file ``caller`` can be the one defined in ``defined_at``:
    the same file, or an import that resolves by module path to that file (``from pkg.trainer
    import Trainer`` reaches ``pkg/trainer.py``, never an unrelated ``recipes/trainer.py``), also
    through a package or module that re-exports it. A file that defines its own ``name`` uses
    that one; an import the project cannot resolve reaches nothing."""
    if caller == defined_at:
        return True
    defined, imported = names.get(caller, (frozenset(), frozenset()))
    if name in defined:
        return False
    for local, module in imported:
        if local == name and _from_module(names, defined_at, module, name, caller):
            return True  # from <module> import name
        if not local and defined_at in names.modules.resolve(caller, module):
            return True  # import pkg.module, then module.name(...)
    return False


def _from_module(
    names: _Names, defined_at: str, module: str, name: str, importer: str = ""
) -> bool:
    """Whether ``name`` imported from ``module`` in the file ``importer`` can be the one defined
    in ``defined_at``: the module is that file, or re-exports the name from it."""
    return any(
        _provides(names, found, name, defined_at, 0)
        for found in names.modules.resolve(importer, module)
    )


def _provides(names: _Names, module_file: str, name: str, defined_at: str, depth: int) -> bool:
    """Whether the module at ``module_file`` offers ``name`` from ``defined_at``: it is that
    file, or it imports ``name`` from a module that does (``timm/data/__init__.py`` holding
    ``from .loader import create_loader``), a few re-exports deep."""
    if module_file == defined_at:
        return True
    if depth > 3:
        return False
    key = (module_file, name, defined_at)
    known = names.provides_memo.get(key)
    if known is None:
        names.provides_memo[key] = False  # a cycle of re-exports provides nothing
        defined, imported = names.get(module_file, (frozenset(), frozenset()))
        known = name not in defined and any(
            local == name and _provides(names, inner, name, defined_at, depth + 1)
            for local, module in imported
            for inner in names.modules.resolve(module_file, module)
        )
        names.provides_memo[key] = known
    return known


# ------------------------------------------------------------------------------------------------
# Samplers, loaders and epoch loops inside one function (SL202, SL203)

# DistributedSampler and the third-party subclasses RULES.md counts as one.
DISTRIBUTED_SAMPLERS = (
    "DistributedSampler", "StatefulDistributedSampler", "DistributedSamplerWrapper",
    "DistributedLengthGroupedSampler",
)
# Things that call set_epoch themselves when handed a loader.
EPOCH_AWARE_CALLS = (
    "fit", "validate", "test", "predict", "prepare", "setup_dataloaders", "Trainer", "train",
    "Runner", "build_runner", "Engine",
)
_EVALUATION = ("val", "valid", "test", "eval", "predict", "dev")


def constructed(call: cst.Call) -> str | None:
    """The dotted name of what a call constructs: ``X[T](...)`` counts as ``X(...)``."""
    func = call.func
    if isinstance(func, cst.Subscript):
        func = func.value
    return dotted_name(func)


def is_distributed_sampler(name: str | None) -> bool:
    return name is not None and name.rsplit(".", 1)[-1] in DISTRIBUTED_SAMPLERS


def distributed_sampler_calls(calls: Iterable[ast.Call]) -> list[ast.Call]:
    """The ``ast`` calls that may construct a distributed sampler (:func:`constructed` is one
    dotted name; ``dotted_expression`` also looks through subscripts, so it finds more)."""
    return [c for c in calls if is_distributed_sampler(dotted_expression(c.func))]


def shuffles(call: cst.Call) -> bool:
    """A DistributedSampler(...) whose ``shuffle`` is not literally ``False`` (torch's default
    is ``True``; a value from configuration may be ``True``)."""
    # DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)
    from sampler_lint.matching import get_arg

    arg = get_arg(call, 3, "shuffle")
    return not (arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False")


def may_shuffle(call: ast.Call) -> bool:
    """The ``ast`` twin of :func:`shuffles`."""
    arg = argument(call, 3, "shuffle")
    return not (isinstance(arg, ast.Constant) and arg.value is False)


def is_evaluation_name(name: str) -> bool:
    """``val_loader``, ``test_sampler``, ``eval_dl``: named for evaluation data."""
    parts = name.lower().replace(".", "_").split("_")
    return any(part in _EVALUATION or part.startswith(("val", "eval", "test")) for part in parts)


def loader_sampler_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The ``sampler=`` of a DataLoader construction, or the sampler inside its
    ``batch_sampler=BatchSampler(<sampler>, ...)``."""
    from sampler_lint.matching import get_arg

    arg = get_arg(call, _SAMPLER_POSITION, "sampler")
    if arg is not None:
        return arg.value
    batch = get_arg(call, _BATCH_SAMPLER_POSITION, "batch_sampler")
    if batch is not None and isinstance(batch.value, cst.Call):
        inner = get_arg(batch.value, 0, "sampler")
        if inner is not None:
            return inner.value
    return None


def is_epoch_loop(loop: cst.For) -> bool:
    """``for <counter> in ...`` over epochs: the counter names an epoch (``epoch``,
    ``cur_epoch``), or it is a plain name ranging over something that mentions epochs
    (``for i in range(args.start_epoch, args.epochs)``, ``for ep in trange(num_epochs)``)."""
    if not isinstance(loop.target, cst.Name):
        return False
    if "epoch" in loop.target.value.lower():
        return True
    iterable = loop.iter
    if not isinstance(iterable, cst.Call):
        return False
    name = (dotted_name(iterable.func) or "").rsplit(".", 1)[-1]
    if name not in ("range", "trange", "tqdm"):
        return False
    mentioned: list[str] = []

    class _Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            mentioned.append(node.value)

    for arg in iterable.args:
        arg.value.visit(_Names())
    return any("epoch" in n.lower() for n in mentioned)
