"""What the project says about its loaders, collected once per file with Python's ``ast``.

The project side of ``sampler_lint.analysis.loaders``: every function's returned origins, every
class's bases, every call's arguments, ``self.<attr>`` assignments, names and import aliases, and
how functions use an epoch-loop parameter (SL202). Facts are plain tuples (picklable, comparable,
stable in the index); :data:`Origin` is the small vocabulary both sides describe an expression in.
"""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from sampler_lint.analysis.index import (
    FactCollector,
    ProjectIndex,
    dotted_expression,
    imported_module,
)
from sampler_lint.analysis.keyed import (
    ANY_KEY,
    dict_get_ast,
    key_meets,
    keyed_stores_ast,
    self_dict_changes,
    string_key_pairs_ast,
    subscript_key_ast,
    written_pairs_ast,
)
from sampler_lint.analysis.reaching import only_reaching_value
from sampler_lint.analysis.syntax_summary import SyntaxSummary, walk

# An expression's provenance, as plain tuples (picklable, comparable, stable in the index):
#   ("loader", built_with_sampler, built_with_batch_sampler)  a DataLoader(...) construction
#   ("call", path, name, passed)            the result of calling `name` in the file at `path`;
#                                           `passed`: what it passes (:func:`passed_arguments`)
#   ("given", ((param, position), ...), origin)  in FACT_RETURNS only: a value returned only when
#                                           the caller passes one of these optional parameters
#                                           (`if plan is not None: return ...`, default `None`)
#   ("method", path, class_name, name)      the result of `self.name(...)` inside `class_name`:
#                                           its definition in that class, a base or a subclass
#   ("super", path, class_name, name)       the result of `super().name(...)` inside
#                                           `class_name`: its definition in a project base
#   ("objmethod", path, receiver, name)     `x.name(...)` with `x`'s origin `receiver`: when `x` is
#                                           an instance of a project class, that class's method
#   ("tuple", (origin, ...))                a tuple of values (`return loader, dataset`)
#   ("any", (origin, ...))                  one of these values (`DataLoader(...) if c else None`
#                                           inside a tuple, an argument assigned in two places)
#   ("item", origin, i)                     element i of a value (`a, b = f()`, `f()[1]`)
#   ("dict", ((key, origin), ...))          a dict literal with string keys, with what its
#                                           function stores under them (analysis/keyed.py)
#   ("over", origin, ((key, origin), ...))  what a call returned (a dict, perhaps), with what
#                                           the function stores under string keys after
#                                           (`loaders = super().build(); loaders["x"] = ...`)
#   ("key", origin, key)                    the value under a string key (`loaders["train"]`),
#                                           or under any key (:data:`ANY_KEY`: `loaders[phase]`)
#   ("list", (origin, ...))                 a list each element of which is one of these: a
#                                           list literal a function only appends to and returns
#   ("param", path, owner, position, name)  a parameter of function `owner` defined at `path`
#   ("self", path, class_name, attr)        `self.attr` inside `class_name` defined at `path`
#   ("none",)                               `None`: no loader at all
#   ("unknown",)
Origin = tuple[Any, ...]
UNKNOWN: Origin = ("unknown",)
NONE: Origin = ("none",)

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
SAMPLER_POSITION, BATCH_SAMPLER_POSITION = 3, 4
MAX_DEPTH = 8
# How deep one file's expression is followed through its own names, keys and stores before it
# is unknown: a safety net far above real code (a cycle the guards miss cost a whole run).
_ORIGINS_DEPTH = 64

FACT_RETURNS = "sl2_returns"  # (function name, path, origins returned, class or "")
FACT_CLASSES = "sl2_classes"  # (class name, path, simple names of its bases)
FACT_CALLS = "sl2_calls"  # (callee name, path, positional origins, keyword origins)
FACT_SELF = "sl2_self"  # (class name, path, attr, origin)
# (class name, path, attr): a plain class whose instances' `.sampler` and `.batch_sampler` are
# those of `self.attr`, a wrapper whose `__getattr__` hands every attribute it lacks over to it
# (LAVIS's `PrefetchLoader`); attr "": a class whose instances have neither (GLM's
# `FakeDataloader`) (:func:`forwarded_attribute`); attr :data:`SAMPLER_IS_BATCH_SAMPLER`: a
# class whose `sampler` property is the batch sampler of what it wraps.
FACT_FORWARDS = "sl2_forwards"
#: A wrapper whose ``sampler`` property returns the batch sampler of what it wraps (``return
#: self.loader.batch_sampler``, NVIDIA's Efficientdet ``PrefetchLoader``): ``.sampler.set_epoch``
#: reaches that batch sampler, so none is missed.
SAMPLER_IS_BATCH_SAMPLER = "\x00batch sampler"
FACT_NAMES = "sl2_names"  # (path, names defined there, (name, module) imported there)
FACT_PACKAGE_NAMES = "sl2_package_names"  # the same, for a package __init__.py without the above
# FACT_NAMES' and FACT_RETURNS' rows of a file whose text names no loader, read only when a
# question meets it as the home of a factory of project objects (FACTORY_FACTS, below).
FACT_FACTORY_NAMES = "sl2_factory_names"
FACT_FACTORY_RETURNS = "sl2_factory_returns"
# (an imported module keeps the leading dots of a relative import: `..data`)
FACT_ALIASES = "sl2_aliases"  # (path, local name, module, original name): `import x as y`
FACT_SET_EPOCH = "sl2_set_epoch"  # dotted receivers of every `.set_epoch(...)` call
# (function name, path, parameter, position, its epoch use): how a module-level function uses
# each parameter, for SL202 to follow a loader into the project function it is handed to.
FACT_EPOCH_USERS = "sl2_epoch_users"
# Files on a loader's way mention it somehow; a file missed here can only make SL201 flag more
# (an origin without facts may carry a batch sampler). "_data" was here too: it added 549 files
# to parse over the 9 benchmark trees and changed no finding on 13 trees (Composer at #3124,
# LAVIS, catalyst and the DDP tutorials among them). Indexing every file doubled an SL2xx-only
# run on detectron2; instead, the two kinds of file a question may need although they name no
# loader are read when it meets them: a package `__init__.py` that re-exports a name
# (PACKAGE_NAMES) and the home of a factory of project objects (FACTORY_FACTS), both below.
INDEX_REQUIRES: tuple[tuple[str, ...], ...] = (
    ("DataLoader", "loader", "Loader", "set_epoch", "sampler"),
)


def is_loader_constructor(name: str | None) -> bool:
    return name is not None and name.rsplit(".", 1)[-1].endswith("DataLoader")


def get_origin(method: Origin, read: list[Origin]) -> Origin:
    """``x.get(key)`` where ``x`` is what a call returned: ``("get", method, read)``, the
    ``objmethod`` origin ``method`` when the call builds an object of a project class (its own
    ``get``), else ``read``, the dict's value under ``key`` (or the default), merged."""
    return ("get", method, merge_origins(read))


def loader_origin(keywords: Iterable[str | None], positional: int) -> Origin:
    """A ``DataLoader(...)`` construction (``None`` among ``keywords``: a ``**`` spread)."""
    names = set(keywords)
    sampler = "sampler" in names or positional > SAMPLER_POSITION
    batch = "batch_sampler" in names or positional > BATCH_SAMPLER_POSITION
    if None in names:
        # **kwargs may hold anything, but not a batch sampler beside a sampler the call passes
        # itself: torch refuses the two together, so code that spells `sampler=` chose that
        # path (NVIDIA's recipes: `DataLoader(sampler=sampler, shuffle=s, **kw)`).
        return ("loader", True, batch or not sampler)
    return ("loader", sampler, batch)


# ------------------------------------------------------------------------------------------------
# The project side: facts from Python's ast


# Resolved paths by absolute path, for one run: facts spell their file once per collector and
# per class (thousands of calls, each a system call per part of the path).
_FILE_KEYS: dict[str, str] = {}


def file_key(path: str) -> str:
    """One spelling per file: the index walks the project from its resolved root, the linted
    path is as the user typed it. Remembered by absolute path (a relative one means another
    file after a change of directory) until :func:`forget_file_keys`."""
    absolute = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    key = _FILE_KEYS.get(absolute)
    if key is None:
        key = _FILE_KEYS[absolute] = os.path.realpath(absolute)
    return key


def is_package_init(path: str | os.PathLike[str]) -> bool:
    """Whether the file is a package's ``__init__.py`` (it re-exports what it imports)."""
    return os.path.basename(path) == "__init__.py"


def forget_file_keys() -> None:
    """Forget the resolved paths: a run starts with this, as a link may change between two runs
    of one process (an editor's server)."""
    _FILE_KEYS.clear()


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
        self.forwards: list[tuple[str, str, str]] = []
        self.defined: set[str] = set()
        self.imported: set[tuple[str, str]] = set()
        self.aliases: set[tuple[str, str, str, str]] = set()
        self.set_epoch: set[str] = set()
        self.epoch_users: list[tuple[str, str, str, int, EpochUse]] = []
        # The scope of the node being read: the innermost function, the enclosing class names.
        self._class: list[str] = []
        self._function: list[_Function] = []
        self._tables: dict[_Function, dict[str, list[ast.expr]]] | None = None
        self._module_table: dict[str, list[ast.expr]] | None = None
        # Each function's optional parameters, once: a function with many returns (a generated
        # pipeline's __call__) used to walk its whole body again for every one of them.
        self._falsy: dict[_Function, dict[str, object]] = {}
        self._active: set[int] = set()  # the nodes whose origins are being worked out
        # Per function and name: the values of a list it only appends to (_appended_elements).
        self._lists: dict[tuple[_Function, str], list[ast.expr] | None] = {}

    def collect(self) -> None:
        nodes = self.summary.nodes
        self.collect_names_and_returns()
        for definition in nodes(ast.ClassDef):
            bases = tuple(
                name.rsplit(".", 1)[-1]
                for name in map(dotted_expression, definition.bases) if name
            )
            self.classes.append((definition.name, self.path, bases))
            forwarded = forwarded_attribute(definition)
            if forwarded is not None:
                self.forwards.append((definition.name, self.path, forwarded))
        functions: list[_Function] = [*nodes(ast.FunctionDef), *nodes(ast.AsyncFunctionDef)]
        for function in functions:
            if isinstance(self.summary.parent(function), ast.Module):
                self.epoch_users.extend(
                    (function.name, self.path, name, position, use)
                    for name, position, use in epoch_uses(function)
                )
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
        self._collect_self_dict_changes()

    def _collect_self_dict_changes(self) -> None:
        """What methods store in a dict kept on ``self`` (``self.loaders["train"] = ...``,
        ``self.loaders.update(train=...)``), as ``FACT_SELF`` rows of the attribute
        ``loaders[train]`` (under a computed key, ``loaders[<ANY_KEY>]``); any other change to
        it (``update`` of another dict, an alias that may be changed) as an unknown value
        under ``loaders[*]``: a question about ``self.loaders["train"]`` reads all three."""
        for attribute, change in self_dict_changes(self.summary):
            if not (self._enter(change) and self._class):
                continue
            written = written_pairs_ast(self.summary, change)
            if written is None:
                self.selfs.append((self._class[-1], self.path, f"{attribute}[*]", UNKNOWN))
                continue
            for key, value in written:
                for origin in self._origins(value):
                    self.selfs.append((self._class[-1], self.path, f"{attribute}[{key}]", origin))

    def collect_names_and_returns(self, functions_only: bool = False) -> None:
        """The names the file defines and imports, and what its functions return (only those
        outside classes, ``functions_only``: all a factory's file is read for)."""
        nodes = self.summary.nodes
        self.imported, self.aliases = _imports(self.summary, self.path)
        self.defined.update(node.name for node in _definitions(self.summary))
        for ret in nodes(ast.Return):
            if ret.value is not None and self._enter(ret) and not (
                functions_only and self._class
            ):
                origins = tuple(self._origins(ret.value))
                function = self._function[-1]
                falsy = self._falsy.get(function)
                if falsy is None:
                    falsy = self._falsy[function] = _falsy_defaults(function)
                given = _required_parameters(ret, function, bool(self._class), self.summary,
                                             falsy)
                if given:
                    origins = tuple(("given", given, o) for o in origins)
                klass = self._class[-1] if self._class else ""
                self.returns.append((self._function[-1].name, self.path, origins, klass))

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
            merge_origins(self._origins(arg))
            for arg in node.args
            if not isinstance(arg, ast.Starred)
        )
        keywords = tuple(
            (kw.arg, merge_origins(self._origins(kw.value))) for kw in node.keywords if kw.arg
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

    def _appended_list(self, name: str, values: list[ast.expr], depth: int) -> Origin | None:
        """``("list", elements)`` when ``name`` is only ever assigned list literals in the
        current function, and every other use of it there appends one value or returns it
        (BLIP's ``loaders = []``, ``loaders.append(DataLoader(...))`` in a loop, ``return
        loaders``, unpacked by the caller): each element is one of those values. ``None`` for
        any other use (extended, ``+=``, indexed, passed on), which may put anything in it."""
        function = self._function[-1]
        key = (function, name)
        if key not in self._lists:
            self._lists[key] = _appended_elements(self.summary, function, name, values)
        elements = self._lists[key]
        if elements is None:
            return None
        found = {merge_origins(self._origins(e, depth + 1)) for e in elements}
        return ("list", tuple(sorted(found, key=repr)))

    def _module_assignments(self) -> dict[str, list[ast.expr]]:
        """Name -> the values assigned to it outside every function and class, once."""
        if self._module_table is None:
            self._module_table = defaultdict(list)
            # The module's statements and those of its blocks (`if __name__ == "__main__":`,
            # `try`...), never a function's or a class's: no walk below the statements.
            pending: list[ast.AST] = list(self.summary.tree.body)
            found: list[ast.Assign | ast.AnnAssign] = []
            while pending:
                node = pending.pop()
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                if isinstance(node, (ast.Assign, ast.AnnAssign)):
                    found.append(node)
                    continue
                for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    block = getattr(node, field, None)
                    if isinstance(block, list):
                        pending.extend(block)
            for node in sorted(found, key=lambda n: (n.lineno, n.col_offset)):  # source order
                for name, value in _assigned_pairs(node):
                    self._module_table[name].append(value)
        return self._module_table

    def _read_under(self, holder: ast.expr, key: str, depth: int) -> list[Origin]:
        """The origins of what ``holder`` holds under ``key`` (``holder[key]``)."""
        stored = self._stored_under(holder, key, depth)
        if stored is None:
            return [UNKNOWN]
        return [key_origin(merge_origins(self._origins(holder, depth)), key), *stored]

    def _stored_under(self, holder: ast.expr, key: str, depth: int) -> list[Origin] | None:
        """What the scope reading ``holder[key]`` stores there itself, when ``holder`` is a
        name (a dict it got from a call may be changed here: ``loaders = build();
        loaders["train"] = ...``); ``None`` when the scope may change it some other way."""
        if not isinstance(holder, ast.Name) or (self._class and not self._function):
            return []
        scope = self._function[-1] if self._function else self.summary.tree
        stores = keyed_stores_ast(self.summary, scope, holder.id)
        if stores is None:
            return None
        return [
            origin for stored, value in stores if key_meets(key, stored)
            for origin in self._origins(value, depth + 1)
        ]

    def _with_stores(
        self, found: list[Origin], scope: ast.AST, name: str, depth: int
    ) -> list[Origin]:
        """``found`` with what ``scope`` stores under string keys of a dict ``name`` holds."""
        if not any(origin[0] in STORED_OVER for origin in found):
            return found
        stores = keyed_stores_ast(self.summary, scope, name)
        return with_keyed_stores(found, None if stores is None else [
            (key, merge_origins(self._origins(value, depth + 1))) for key, value in stores
        ])

    def _names_loader_class(self, func: ast.expr) -> bool:
        """``loader_class(...)`` after ``loader_class = torch.utils.data.DataLoader`` (or a
        DataLoader subclass) in this function: a loader construction."""
        if not (isinstance(func, ast.Name) and self._function):
            return False
        values = self._assignments().get(func.id, [])
        return bool(values) and all(
            is_loader_constructor(dotted_expression(v)) for v in opened_alternatives(values)
        )

    # origins
    def _origins(self, node: ast.expr, depth: int = 0) -> list[Origin]:
        # A value may read itself back (`out["w"] = out["w"] * 2`, then `out` read under
        # "w"): asked again while it is being answered, it adds nothing to what the other ways
        # give. A chain too long for a real file is unknown (a cycle no guard saw cost a run).
        if id(node) in self._active:
            return []
        if depth > _ORIGINS_DEPTH:
            return [UNKNOWN]
        self._active.add(id(node))
        try:
            return self._origins_of(node, depth)
        finally:
            self._active.discard(id(node))

    def _origins_of(self, node: ast.expr, depth: int) -> list[Origin]:
        if isinstance(node, ast.Constant) and node.value is None:
            return [NONE]
        if isinstance(node, ast.IfExp):
            return self._origins(node.body, depth) + self._origins(node.orelse, depth)
        if isinstance(node, ast.Call):
            got = dict_get_ast(node)
            if got is not None:  # `loaders.get("train")`: a read, or the default
                holder, at, default = got
                read = self._read_under(holder, at, depth) + (
                    self._origins(default, depth) if default is not None else [NONE]
                )
                if isinstance(holder, ast.Name) and depth < 3:
                    receiver = merge_origins(self._origins(holder, depth + 1))
                    if is_call_receiver(receiver):  # a call's dict, or an object's `get`
                        return [get_origin(("objmethod", self.path, receiver, "get"), read)]
                return read
            name = dotted_expression(node.func)
            if is_loader_constructor(name) or self._names_loader_class(node.func):
                keywords = [kw.arg for kw in node.keywords]
                return [loader_origin(keywords, len(node.args))]
            if self._class and self._function and (method := super_method(node.func)):
                return [("super", self.path, self._class[-1], method)]
            if name is None:
                return [UNKNOWN]
            if name.count(".") == 1 and name.split(".")[0] in ("self", "cls") and self._class:
                return [("method", self.path, self._class[-1], name.rsplit(".", 1)[-1])]
            if (
                isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and depth < 3
            ):
                receiver = merge_origins(self._origins(node.func.value, depth + 1))
                if is_call_receiver(receiver):
                    return [("objmethod", self.path, receiver, node.func.attr)]
            passed = passed_arguments(
                sum(1 for a in node.args if not isinstance(a, ast.Starred)),
                [kw.arg for kw in node.keywords],
                any(isinstance(a, ast.Starred) for a in node.args),
            )
            return [("call", self.path, name.rsplit(".", 1)[-1], passed)]
        if isinstance(node, ast.Tuple):
            return [("tuple", tuple(merge_origins(self._origins(e, depth)) for e in node.elts))]
        if isinstance(node, ast.Dict):
            pairs = string_key_pairs_ast(node)
            if pairs is None:
                return [UNKNOWN]
            return [dict_origin(
                (key, merge_origins(self._origins(value, depth))) for key, value in pairs
            )]
        if isinstance(node, ast.DictComp):
            return [dict_origin([(ANY_KEY, merge_origins(self._origins(node.value, depth)))])]
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and type(node.slice.value) is int
        ):
            return [("item", merge_origins(self._origins(node.value, depth)), node.slice.value)]
        if isinstance(node, ast.Subscript) and (key := subscript_key_ast(node)) is not None:
            return self._read_under(node.value, key, depth)
        if isinstance(node, ast.Name) and self._function:
            function = self._function[-1]
            position = parameter_position(function, node.id, bool(self._class))
            if position is not None:
                owner = method_owner(function.name, self._class)
                return [("param", self.path, owner, position, node.id)]
            values = self._assignments().get(node.id, [])
            if values and depth < 3:
                listed = self._appended_list(node.id, values, depth)
                if listed is not None:
                    return [listed]
                if len(values) > 1:
                    # Rebound as a loader is wrapped (`loader = Wrapper(loader)`): the one
                    # value that reaches this use, when the code proves there is only one.
                    reaching = only_reaching_value(self.summary, function, node)
                    if reaching is not None:
                        values = [reaching]
                found = [o for value in values for o in self._origins(value, depth + 1)]
                return self._with_stores(found, function, node.id, depth)
            return [UNKNOWN]
        if isinstance(node, ast.Name) and not self._class:
            # Module-level code (a script's `if __name__ == "__main__":` block): the values the
            # module assigns the name outside any function or class.
            values = self._module_assignments().get(node.id, [])
            if values and depth < 3:
                found = [o for value in values for o in self._origins(value, depth + 1)]
                return self._with_stores(found, self.summary.tree, node.id, depth)
            return [UNKNOWN]
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and self._class
        ):
            return [("self", self.path, self._class[-1], node.attr)]
        return [UNKNOWN]


def dict_origin(pairs: Iterable[tuple[str, Origin]]) -> Origin:
    """``("dict", ((key, origin), ...))`` for a dict's values under string keys (the last value
    of a key written twice), in key order; unknown when it holds only unknown values (most
    dicts a call is passed, `{"lr": lr}`: nothing to follow, no fact to keep)."""
    held = dict(pairs)
    if held and all(origin == UNKNOWN for origin in held.values()):
        return UNKNOWN
    return ("dict", tuple(sorted(held.items(), key=lambda pair: pair[0])))


def key_origin(inner: Origin, key: str) -> Origin:
    """``("key", inner, key)``: the value under ``key`` of ``inner`` (unknown of an unknown)."""
    return UNKNOWN if inner == UNKNOWN else ("key", inner, key)


#: The origins a function may store keys over: a dict literal, or what a call returned.
STORED_OVER = frozenset({"dict", "call", "method", "objmethod", "super"})


def with_keyed_stores(
    found: list[Origin], stores: list[tuple[str, Origin]] | None
) -> list[Origin]:
    """``found`` with each dict among them holding also what the function stores under its
    keys (``stores``; ``None``: it may change the dict some other way, so the dict is unknown),
    and each value a call returned wrapped with those stores (``("over", ...)``), when there
    are any. (A call's value the function may change some other way is left as it is: most
    are no dict at all, and an alias of a loader, `other = loader`, must not hide it.)"""
    if not any(origin[0] in STORED_OVER for origin in found):
        return found
    if stores is None:
        return [UNKNOWN if origin[0] == "dict" else origin for origin in found]
    stored: dict[str, list[Origin]] = {}
    for key, value in stores:
        stored.setdefault(key, []).append(value)
    merged = []
    for origin in found:
        if origin[0] == "dict":
            held = {key: [value, *stored.get(key, ())] for key, value in origin[1]}
            held.update((key, values) for key, values in stored.items() if key not in held)
            origin = dict_origin((key, merge_origins(values)) for key, values in held.items())
        elif origin[0] in STORED_OVER and stored:  # what a call returned, keys stored over it
            origin = ("over", origin, tuple(sorted(
                ((key, merge_origins(values)) for key, values in stored.items()),
                key=lambda pair: pair[0],
            )))
        merged.append(origin)
    return merged


def super_method(func: ast.expr) -> str | None:
    """``name`` for the callee of ``super().name(...)`` (or ``super(Class, self).name``)."""
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
        and len(func.value.args) in (0, 2)
        and not func.value.keywords
    ):
        return func.attr
    return None


def passed_arguments(
    positional: int, keywords: Iterable[str | None], star: bool
) -> tuple[int, tuple[str, ...]] | None:
    """What a call passes: the number of positional arguments and the keyword names, or
    ``None`` when ``*args`` / ``**kwargs`` may pass anything."""
    names = list(keywords)
    if star or None in names:
        return None
    return (positional, tuple(sorted(n for n in names if n is not None)))


def gives(passed: tuple[int, tuple[str, ...]] | None, required: Iterable[tuple[str, int]]) -> bool:
    """Whether a call passing ``passed`` may pass one of the ``required`` parameters."""
    if passed is None:
        return True
    positional, keywords = passed
    return any(name in keywords or 0 <= position < positional for name, position in required)


def _required_parameters(
    node: ast.stmt, function: _Function, is_method: bool, summary: SyntaxSummary,
    falsy: dict[str, object],
) -> tuple[tuple[str, int], ...]:
    """The optional parameters (default ``None`` or ``False``) that must have been passed for
    ``node`` to run: it sits in the branch of an ``if`` that tests one of them (``if plan is not
    None:``, ``if plan:``, the ``else`` of ``if plan is None:``), or after an ``if`` of the
    opposite test that always leaves the function (``if plan is None: return ...``).
    ``falsy``: :func:`_falsy_defaults` of ``function``."""
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
        position = parameter_position(function, name, is_method)
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
    pairs = [
        (a, d) for a, d in pairs
        if isinstance(d, ast.Constant) and (d.value is None or d.value is False)
    ]
    if not pairs:
        return {}  # no walk of the body for a function without such a parameter
    # A parameter the function rebinds (`plan = plan or default_plan()`) may be set whatever
    # the caller passed: only the untouched ones count.
    rebound = {
        n.id for n in walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
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


def _appended_elements(
    summary: SyntaxSummary, function: _Function, name: str, values: list[ast.expr]
) -> list[ast.expr] | None:
    """The values a list named ``name`` may hold in ``function``, when every value assigned to
    it is a list literal (``values``) and every other use of it appends one value or returns the
    list; ``None`` otherwise. Once per function and name: a function passes many names on."""
    if not all(
        isinstance(v, ast.List) and not any(isinstance(e, ast.Starred) for e in v.elts)
        for v in values
    ):
        return None
    elements = [e for v in values if isinstance(v, ast.List) for e in v.elts]
    for use in walk(function):
        if not (isinstance(use, ast.Name) and use.id == name):
            continue
        parent = summary.parent(use)
        if isinstance(use.ctx, ast.Store) and isinstance(parent, (ast.Assign, ast.AnnAssign)):
            continue  # one of ``values`` (a plain assignment; `+=` or a loop target is not)
        if isinstance(use.ctx, ast.Load) and isinstance(parent, ast.Return):
            continue
        call = summary.parent(parent) if parent is not None else None
        if (
            isinstance(use.ctx, ast.Load)
            and isinstance(parent, ast.Attribute) and parent.attr == "append"
            and isinstance(call, ast.Call) and call.func is parent
            and len(call.args) == 1 and not call.keywords
            and not isinstance(call.args[0], ast.Starred)
        ):
            elements.append(call.args[0])
            continue
        return None
    return elements


def opened_alternatives(values: list[ast.expr]) -> list[ast.expr]:
    """Values with conditional expressions opened: ``A if c else B`` is ``A`` or ``B``."""
    opened: list[ast.expr] = []
    for value in values:
        if isinstance(value, ast.IfExp):
            opened.extend(opened_alternatives([value.body, value.orelse]))
        else:
            opened.append(value)
    return opened


_MAX_ALTERNATIVES = 6


def merge_origins(origins: list[Origin]) -> Origin:
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


def is_call_receiver(origin: Origin) -> bool:
    """A receiver ``x`` of ``x.method(...)`` worth following: the result of a call (a class
    constructed, or a factory that may return one), or one of several such results."""
    alternatives: tuple[Origin, ...] = origin[1] if origin[0] == "any" else (origin,)
    return all(o[0] == "call" for o in alternatives)


def method_owner(function: str, classes: list[str]) -> str:
    """Whom callers name: ``__init__`` is called through its class."""
    if function == "__init__" and classes:
        return classes[-1]
    return function


def parameter_position(
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
    sets = False
    looped: set[str] = set()  # names an epoch loop iterates
    handed: set[str] = set()  # names handed to a call that neither iterates nor only reads
    # One walk for every parameter: the function's names are gathered, then looked up.
    for node in walk(function):
        if isinstance(node, (ast.For, ast.AsyncFor)) and is_epoch_loop_ast(node):
            looped.update(_iterated(node))
        elif isinstance(node, ast.Call):
            func = node.func
            sets = sets or (isinstance(func, ast.Attribute) and func.attr == "set_epoch")
            names = [
                a.id for a in [*node.args, *(k.value for k in node.keywords)]
                if isinstance(a, ast.Name)
            ]
            if names:
                called = (dotted_expression(func) or "").rsplit(".", 1)[-1]
                if called not in _ITERATING_CALLS and called not in _READING_CALLS:
                    handed.update(names)
    found = [("", -2, (sets, False, False))]  # the function itself: known to the index
    for name, position in parameters:
        loops, hands_on = name in looped, name in handed
        if loops or hands_on or sets:
            found.append((name, position, (sets, loops, hands_on)))
    return found


def _iterated(loop: ast.AST) -> set[str]:
    """The names iterated within ``loop``: by a ``for`` or a comprehension, or handed to one of
    the iterating calls (``enumerate(loader)``)."""
    names: set[str] = set()
    for node in walk(loop):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            if isinstance(node.iter, ast.Name):
                names.add(node.iter.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in _ITERATING_CALLS:
                names.update(a.id for a in node.args if isinstance(a, ast.Name))
    return names


def is_epoch_loop_ast(loop: ast.For | ast.AsyncFor) -> bool:
    """The ``ast`` twin of :func:`sampler_lint.analysis.loader_calls.is_epoch_loop`, true
    wherever it is (pre-filters rely on it). libcst spells attribute names, keyword names and
    lambda parameters as ``Name`` nodes too, and reads keyword arguments as arguments: so
    ``range(args.epochs)`` and ``tqdm(range(n), total=n_epochs)`` mention an epoch for both."""
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
    for value in [*iterable.args, *(keyword.value for keyword in iterable.keywords)]:
        for node in walk(value):
            name = (
                node.id if isinstance(node, ast.Name)
                else node.attr if isinstance(node, ast.Attribute)
                else node.arg if isinstance(node, (ast.keyword, ast.arg))
                else None
            )
            if name and "epoch" in name.lower():
                return True
    return False


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
        FACT_FORWARDS: sorted(collector.forwards),
        FACT_NAMES: [(
            collector.path, tuple(sorted(collector.defined)), tuple(sorted(collector.imported))
        )],
        FACT_SET_EPOCH: sorted(collector.set_epoch),
        FACT_EPOCH_USERS: sorted(collector.epoch_users),
    }


# What a loader wrapper must not define itself for its `.sampler` / `.batch_sampler` to be the
# wrapped loader's.
_LOADER_PARTS = frozenset({"sampler", "batch_sampler"})


def forwarded_attribute(klass: ast.ClassDef) -> str | None:
    """Where the instances of ``klass`` get ``.sampler`` and ``.batch_sampler``, when the class
    shows it: ``attr`` when every attribute lookup it cannot answer goes to ``self.attr``, ``""``
    when it has neither attribute at all. Either way: no base but ``object``, no decorator or
    metaclass, no ``__getattribute__``, nothing of those names defined or stored on any object
    in the class (nor a ``setattr``, ``vars`` or ``__dict__`` that could store them), and either
    no ``__getattr__`` or one ``__getattr__(self, name)`` that returns
    ``getattr(self.attr, name)`` or ``self.attr.__getattribute__(name)``, directly or through
    one local. Anything else: ``None`` (the class may hold a sampler of its own). An object
    given the attributes from outside (``wrapper.batch_sampler = ...``) is not seen."""
    if klass.decorator_list or klass.keywords or any(
        not (isinstance(base, ast.Name) and base.id == "object") for base in klass.bases
    ):
        return None
    getattrs = []
    batch_sampler_property = False
    for node in walk(klass):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == "sampler" and node in klass.body and _gives_wrapped_batch_sampler(
                node
            ):
                batch_sampler_property = True
                continue
            if node.name == "__getattribute__" or node.name in _LOADER_PARTS:
                return None
            if node.name == "__getattr__":
                if node not in klass.body:
                    return None  # defined some other way: not read here
                getattrs.append(node)
        elif isinstance(node, ast.Attribute) and (
            node.attr == "__dict__"
            or (node.attr in _LOADER_PARTS and not isinstance(node.ctx, ast.Load))
        ):
            return None
        elif isinstance(node, ast.Name) and node.id in (*_LOADER_PARTS, "setattr", "vars"):
            # A class-level `sampler = ...`, or a `setattr(self, name, ...)` anywhere.
            if node.id in ("setattr", "vars") or node in _class_level_targets(klass):
                return None
    if batch_sampler_property:
        return SAMPLER_IS_BATCH_SAMPLER  # the property answers `.sampler` before `__getattr__`
    if not getattrs:
        return ""
    if len(getattrs) != 1 or not isinstance(getattrs[0], ast.FunctionDef):
        return None
    return _forwarded_by(getattrs[0])


def _statements(method: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The body of ``method`` without its docstring."""
    body = list(method.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        return body[1:]
    return body


def _gives_wrapped_batch_sampler(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``@property def sampler(self): return self.<attr>.batch_sampler``."""
    arguments = method.args
    if isinstance(method, ast.AsyncFunctionDef) or len(method.decorator_list) != 1 \
            or not (isinstance(method.decorator_list[0], ast.Name)
                    and method.decorator_list[0].id == "property") \
            or arguments.posonlyargs or arguments.vararg or arguments.kwonlyargs \
            or arguments.kwarg or len(arguments.args) != 1:
        return False
    body = _statements(method)
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    value = body[0].value
    return isinstance(value, ast.Attribute) and value.attr == "batch_sampler" \
        and isinstance(value.value, ast.Attribute) and isinstance(value.value.value, ast.Name) \
        and value.value.value.id == arguments.args[0].arg


def _class_level_targets(klass: ast.ClassDef) -> list[ast.expr]:
    return [
        target for statement in klass.body
        for target in (
            statement.targets if isinstance(statement, ast.Assign)
            else [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign))
            else []
        )
    ]


def _forwarded_by(method: ast.FunctionDef) -> str | None:
    """``attr`` for ``def __getattr__(self, name): return getattr(self.attr, name)`` (or
    ``self.attr.__getattribute__(name)``, or either kept in one local and returned)."""
    arguments = method.args
    if arguments.posonlyargs or arguments.vararg or arguments.kwonlyargs or arguments.kwarg \
            or len(arguments.args) != 2:
        return None
    receiver, asked = (argument.arg for argument in arguments.args)
    body = _statements(method)
    if len(body) == 2 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1 \
            and isinstance(body[0].targets[0], ast.Name) and isinstance(body[1], ast.Return) \
            and isinstance(body[1].value, ast.Name) \
            and body[1].value.id == body[0].targets[0].id:
        value: ast.expr | None = body[0].value
    elif len(body) == 1 and isinstance(body[0], ast.Return):
        value = body[0].value
    else:
        return None
    if not (isinstance(value, ast.Call) and len(value.args) in (1, 2) and not value.keywords):
        return None
    func = value.func
    if isinstance(func, ast.Name) and func.id == "getattr" and len(value.args) == 2:
        wrapped, name = value.args
    elif isinstance(func, ast.Attribute) and func.attr == "__getattribute__" \
            and len(value.args) == 1:
        wrapped, name = func.value, value.args[0]
    else:
        return None
    if not (isinstance(name, ast.Name) and name.id == asked):
        return None
    if isinstance(wrapped, ast.Attribute) and isinstance(wrapped.value, ast.Name) \
            and wrapped.value.id == receiver:
        return wrapped.attr
    return None


def _imports(
    summary: SyntaxSummary, path: str
) -> tuple[set[tuple[str, str]], set[tuple[str, str, str, str]]]:
    """``(local name, module)`` for every import of the file (``("", module)`` for a module
    itself), and ``(path, alias, module, original)`` for every name imported under another."""
    imported: set[tuple[str, str]] = set()
    aliases: set[tuple[str, str, str, str]] = set()
    for plain in summary.nodes(ast.Import):
        for alias in plain.names:
            imported.add(("", alias.name))
    for statement in summary.nodes(ast.ImportFrom):
        module = imported_module(statement)  # `..data`: relative imports keep their dots
        for alias in statement.names:
            imported.add((alias.asname or alias.name, module))
            if alias.asname and alias.asname != alias.name:
                aliases.add((path, alias.asname, module, alias.name))
            dot = "" if module.endswith(".") else "."
            imported.add(("", f"{module}{dot}{alias.name}"))
    return imported, aliases


def collect_package_names(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    """What a package's ``__init__.py`` defines and imports (as ``FACT_NAMES`` holds it), for
    a package whose ``__init__.py`` names no loader: ``from .qm9 import QM9DataModule`` there
    is how `from pkg.data import QM9DataModule` reaches the class (NVIDIA's SE3Transformer)."""
    key = file_key(path)
    if not is_package_init(key):
        return {FACT_PACKAGE_NAMES: []}
    summary = SyntaxSummary.of(tree)
    defined = {node.name for node in _definitions(summary)}
    imported, _ = _imports(summary, key)
    return {FACT_PACKAGE_NAMES: [(key, tuple(sorted(defined)), tuple(sorted(imported)))]}


def _definitions(
    summary: SyntaxSummary,
) -> list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every class and function the file defines, at any depth (``FACT_NAMES``' defined names)."""
    return [
        *summary.nodes(ast.ClassDef), *summary.nodes(ast.FunctionDef),
        *summary.nodes(ast.AsyncFunctionDef),
    ]


def set_epoch_receivers(index: ProjectIndex) -> set[str]:
    """The receivers of every ``.set_epoch(...)`` call in the project (``FACT_SET_EPOCH``): each
    comes from a file that spells ``set_epoch``, and only those files are read for it."""
    return set(index.get_for(FACT_SET_EPOCH, "set_epoch"))


LOADER_FACTS = FactCollector(
    "loader provenance", INDEX_REQUIRES, collect_loader_facts,
    kinds=(FACT_RETURNS, FACT_CLASSES, FACT_ALIASES, FACT_CALLS, FACT_SELF, FACT_FORWARDS,
           FACT_NAMES, FACT_SET_EPOCH, FACT_EPOCH_USERS),
    costly=True,  # every call's arguments traced; asked by name about a few files
)

# Read only for a package's `__init__.py` that a question's import resolution meets and that has
# no loader facts (its text names no loader): the known miss above, for packages.
PACKAGE_NAMES = FactCollector(
    "package re-exports", (("import",),), collect_package_names,
    kinds=(FACT_PACKAGE_NAMES,), costly=True,
)


def collect_factory_facts(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    """A file's defined and imported names and its functions' returns, as the loader facts
    hold them, under names of their own: for the home of a factory of project objects whose
    text names no loader (OpenRLHF's ``utils.py``: ``strategy = DeepspeedStrategy(...)``,
    ``return strategy``), which ``strategy = get_strategy(args)`` then
    ``strategy.setup_dataloader(...)`` must follow."""
    collector = _FactCollector(path, SyntaxSummary.of(tree))
    collector.collect_names_and_returns(functions_only=True)
    return {
        FACT_FACTORY_NAMES: [(
            collector.path, tuple(sorted(collector.defined)), tuple(sorted(collector.imported))
        )],
        FACT_FACTORY_RETURNS: sorted(collector.returns, key=repr),
    }


def _names_no_loader(text: str) -> bool:
    """The loader facts skip this file: a file they read already holds its functions' returns
    (so one left for SL201 is not collected twice, nor an editor's whole index)."""
    return not LOADER_FACTS.admits(text)


# Read only for a file that a question about the object a call returns reaches by module path
# and that has no loader facts (its text names no loader): the factory's `return`.
FACTORY_FACTS = FactCollector(
    "project factories", (("return",),), collect_factory_facts,
    kinds=(FACT_FACTORY_NAMES, FACT_FACTORY_RETURNS), costly=True, shape=_names_no_loader,
)

#: What the rules that follow loaders across files collect.
LOADER_COLLECTORS = (LOADER_FACTS, PACKAGE_NAMES, FACTORY_FACTS)
