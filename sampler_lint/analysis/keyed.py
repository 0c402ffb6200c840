"""Dicts of loaders under constant keys: ``loaders = {"train": DataLoader(...), ...}``, then
``loaders["train"]`` or ``loaders.get("train")`` (the common shape of a training script's epoch
loop).

A dict literal whose keys are all string constants becomes the origin ``("dict", pairs)`` and
``x["train"]`` the origin ``("key", origin of x, "train")`` (a key that is no constant, in a read
or a store, and a comprehension's keys: :data:`ANY_KEY`; in the file being linted, a read
under the variable of a loop over string constants: :func:`one_of` them) (:mod:`sampler_lint.
analysis.loader_facts`). What a dict holds under a key is what the literal puts there and what the
function that built it stores later (``loaders["train"] = DataLoader(...)``, ``loaders.update(
train=...)``, ``loaders.setdefault("train", ...)``): this module finds those stores, in Python's
``ast`` (the project's facts) and in libcst (the file being linted), and gives up (``None``)
where the function may change the dict some other way: an augmented or unpacked store, a store
under some other constant (an integer, a tuple), ``del``, a method that writes keys it does not
name (``update(other)``, ``pop``...), or the dict bound to a second name. A dict
handed to another function is taken to be read there, not written (as an object's attributes
are).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.syntax_summary import SyntaxSummary, per_tree
from sampler_lint.analysis.tree import descendants, target_names

#: The key of a subscript that is no constant (`loaders[phase]`: any of the dict's values, any
#: element of a tuple or list), and of a dict comprehension's values (`{x: DataLoader(...) for x
#: in splits}`: under every key). No string key a program writes starts with a NUL.
ANY_KEY = "\x00any key"

_Parent = Callable[["cst.CSTNode"], "cst.CSTNode | None"]

#: The start of a key that is one of a few string constants, which follow it (NUL-separated):
#: ``loaders[phase]`` in the body of ``for phase in ["train", "val"]:`` (:func:`one_of`).
_ONE_OF = "\x00one of\x00"


def one_of(keys: Iterable[str]) -> str:
    """The key of a read that gets the value under one of ``keys``."""
    unique = sorted(set(keys))
    return unique[0] if len(unique) == 1 else _ONE_OF + "\x00".join(unique)


def keys_of(key: str) -> tuple[str, ...]:
    """The keys ``key`` stands for: those of :func:`one_of`, else ``key`` itself."""
    return tuple(key[len(_ONE_OF):].split("\x00")) if key.startswith(_ONE_OF) else (key,)


def key_meets(read: str, stored: str) -> bool:
    """Whether a value held under the key ``stored`` may be what a read under ``read`` gets:
    the same key, either of them :data:`ANY_KEY` (``loaders[phase]`` may read what
    ``loaders["train"] = ...`` stored, and ``loaders["train"]`` what ``loaders[name] = ...``
    did), or a key :func:`one_of` them stands for. The one test of every reader of a dict's
    keys."""
    if read == stored or ANY_KEY in (read, stored):
        return True
    return not set(keys_of(read)).isdisjoint(keys_of(stored))


#: The methods that change a dict (the others only read it).
_WRITES = frozenset({
    "clear", "pop", "popitem", "setdefault", "update", "__setitem__", "__delitem__", "__ior__",
})


def string_key_pairs_ast(node: ast.Dict) -> list[tuple[str, ast.expr]] | None:
    """``(key, value)`` of a dict literal whose keys are all string constants (no ``**``)."""
    pairs = []
    for key, value in zip(node.keys, node.values, strict=True):
        if not (isinstance(key, ast.Constant) and type(key.value) is str):
            return None
        pairs.append((key.value, value))
    return pairs


def subscript_key_ast(node: ast.Subscript) -> str | None:
    """The key a subscript reads a dict at: its string constant, :data:`ANY_KEY` for one that
    is no constant (`loaders[phase]`, `loaders[-1]`), ``None`` for an integer (an item), a
    slice, a tuple or another constant."""
    return _key_ast(node.slice)


def _key_ast(index: ast.expr) -> str | None:
    if isinstance(index, ast.Constant) and type(index.value) is str:
        return index.value
    if isinstance(index, (ast.Constant, ast.Slice, ast.Tuple)):
        return None
    return ANY_KEY


def dict_get_ast(node: ast.Call) -> tuple[ast.expr, str, ast.expr | None] | None:
    """``(holder, key, default)`` of ``holder.get(key)`` or ``holder.get(key, default)``: a
    read of the dict under ``key`` (a subscript's keys: :func:`subscript_key_ast`), else
    ``default`` (``None`` when there is none); ``None`` for any other call."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "get") or node.keywords \
            or not 1 <= len(node.args) <= 2 \
            or any(isinstance(arg, ast.Starred) for arg in node.args):
        return None
    key = _key_ast(node.args[0])
    if key is None:
        return None
    return func.value, key, node.args[1] if len(node.args) == 2 else None


def keyed_stores_ast(
    summary: SyntaxSummary, function: ast.AST, name: str
) -> list[tuple[str, ast.expr]] | None:
    """``(key, value)`` for each ``name["key"] = value`` in ``function``, or ``None`` when the
    function may change the dict ``name`` holds some other way."""
    made: dict[tuple[int, str], list[tuple[str, ast.expr]] | None] = per_tree(
        summary.tree, "keyed stores", dict
    )
    key = (id(function), name)
    if key not in made:  # asked again for each read of the dict and each value it holds
        made[key] = _keyed_stores(summary, function, name)
    return made[key]


def _keyed_stores(
    summary: SyntaxSummary, function: ast.AST, name: str
) -> list[tuple[str, ast.expr]] | None:
    changes = _changes_by_name(summary)
    stores: list[tuple[str, ast.expr]] = []
    for node in changes.get(name, ()):
        if not summary.inside(node, function):
            continue
        written = written_pairs_ast(summary, node)
        if written is None:
            return None  # a method that writes unknown keys, a second name, `name |= other`
        stores.extend(written)
    return stores


def written_pairs_ast(summary: SyntaxSummary, change: ast.AST) -> list[tuple[str, ast.expr]] | None:
    """``(key, value)`` for what a change to a dict stores (:func:`_changes_by_name`,
    :func:`self_dict_changes`): ``d[key] = value`` (a computed key: :data:`ANY_KEY`, the value
    is under some key), ``d.update({"key": value}, other=value)``, ``d.setdefault(key,
    value)``; ``None`` for any other change (keys it cannot tell)."""
    if isinstance(change, ast.Subscript):
        stored = subscript_key_ast(change)
        value = stored_value(summary.parent(change), change)
        return None if stored is None or value is None else [(stored, value)]
    call = summary.parent(change)
    if not (isinstance(change, ast.Attribute) and isinstance(call, ast.Call)
            and call.func is change) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    if change.attr == "setdefault" and len(call.args) == 2 and not call.keywords:
        stored = _key_ast(call.args[0])
        return None if stored is None else [(stored, call.args[1])]
    if change.attr != "update" or len(call.args) > 1 or any(
        keyword.arg is None for keyword in call.keywords  # `**other`
    ):
        return None
    pairs = [(keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg]
    if call.args:
        given = string_key_pairs_ast(call.args[0]) if isinstance(call.args[0], ast.Dict) else None
        if given is None:
            return None
        pairs = given + pairs
    return pairs


def _changes_by_name(summary: SyntaxSummary) -> dict[str, list[ast.AST]]:
    """Per name, the nodes of a file that may change a dict it holds: a subscript stored to or
    deleted (``name[k] = v``), a method that writes (``name.update(...)``), the name given
    a second name (``other = name``) or changed in place (``name |= other``). Once per file,
    from the summary's node lists."""
    def make() -> dict[str, list[ast.AST]]:
        found: dict[str, list[ast.AST]] = {}
        for node in summary.nodes(ast.Subscript):
            if not isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name):
                found.setdefault(node.value.id, []).append(node)
        for attribute in summary.nodes(ast.Attribute):
            if attribute.attr in _WRITES and isinstance(attribute.value, ast.Name):
                found.setdefault(attribute.value.id, []).append(attribute)
        bindings: list[ast.Assign | ast.AnnAssign | ast.NamedExpr | ast.AugAssign] = [
            *summary.nodes(ast.Assign), *summary.nodes(ast.AnnAssign),
            *summary.nodes(ast.NamedExpr), *summary.nodes(ast.AugAssign),
        ]
        for binding in bindings:
            if isinstance(binding.value, ast.Name):
                found.setdefault(binding.value.id, []).append(binding)
            if isinstance(binding, ast.AugAssign) and isinstance(binding.target, ast.Name):
                found.setdefault(binding.target.id, []).append(binding)
            if isinstance(binding, ast.Assign) and len(binding.targets) > 1:
                for target in binding.targets:  # `a = b = {}`: one dict, two names
                    if isinstance(target, ast.Name):
                        found.setdefault(target.id, []).append(binding)
        return found

    return per_tree(summary.tree, "dict changes by name", make)


def stored_value(statement: ast.AST | None, target: ast.expr) -> ast.expr | None:
    """The value ``statement`` stores in ``target`` when it is a plain assignment to it."""
    if isinstance(statement, ast.Assign) and any(t is target for t in statement.targets):
        return statement.value
    if isinstance(statement, ast.AnnAssign) and statement.target is target:
        return statement.value
    return None


def string_key_pairs_cst(node: cst.Dict) -> list[tuple[str, cst.BaseExpression]] | None:
    pairs = []
    for element in node.elements:
        if not isinstance(element, cst.DictElement):
            return None  # `**other`
        key = _string(element.key)
        if key is None:
            return None
        pairs.append((key, element.value))
    return pairs


def subscript_key_cst(node: cst.Subscript) -> str | None:
    """:func:`subscript_key_ast` for libcst: a string constant, :data:`ANY_KEY` for
    an index that is no constant, ``None`` otherwise."""
    index = _index(node)
    return None if index is None else _key_cst(index)


def _index(node: cst.Subscript) -> cst.BaseExpression | None:
    """What ``node`` subscripts with: ``None`` for a slice or several (``d[a, b]``)."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    return node.slice[0].slice.value


def _key_cst(index: cst.BaseExpression) -> str | None:
    key = _string(index)
    if key is not None:
        return key
    # Constants where ``ast`` has ``ast.Constant`` (read here, not at import: lazy_libcst).
    constants = (
        cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
        cst.Ellipsis, cst.Tuple,
    )
    if isinstance(index, constants) or (
        isinstance(index, cst.Name) and index.value in ("None", "True", "False")
    ):
        return None
    return ANY_KEY


def read_key_cst(node: cst.Subscript, parent: _Parent) -> str | None:
    """:func:`subscript_key_cst` for a read, narrowed for a loop variable: ``loaders[phase]``
    in the body of ``for phase in ["train", "val"]:`` reads one of those two keys (a dict that
    also holds ``"test"`` is not read there)."""
    index = _index(node)
    return None if index is None else _read_key(index, parent)


def _read_key(index: cst.BaseExpression, parent: _Parent) -> str | None:
    key = _key_cst(index)
    if key == ANY_KEY and isinstance(index, cst.Name):
        keys = _looped_strings(index, parent)
        if keys:
            return one_of(keys)
    return key


def dict_get_cst(
    node: cst.Call, parent: _Parent
) -> tuple[cst.BaseExpression, str, cst.BaseExpression | None] | None:
    """:func:`dict_get_ast` for libcst, with :func:`read_key_cst`'s keys."""
    func = node.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "get") \
            or not 1 <= len(node.args) <= 2 \
            or any(arg.keyword is not None or arg.star for arg in node.args):
        return None
    key = _read_key(node.args[0].value, parent)
    if key is None:
        return None
    return func.value, key, node.args[1].value if len(node.args) == 2 else None


def _looped_strings(name: cst.Name, parent: _Parent) -> list[str] | None:
    """The string constants ``name`` takes as the target of the nearest loop around it whose
    body holds it (``for phase in ("train", "val"):``), or ``None``: another loop target, a
    name the body may bind again, a comprehension or function in between."""
    child: cst.CSTNode = name
    above = parent(name)
    while above is not None:
        if isinstance(above, (
            cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module, cst.ListComp, cst.SetComp,
            cst.DictComp, cst.GeneratorExp,
        )):
            return None
        if isinstance(above, cst.For) and name.value in target_names(above.target):
            if child is not above.body or not _is_name(above.target, name.value) \
                    or not isinstance(above.iter, (cst.List, cst.Tuple, cst.Set)):
                return None
            keys = [_string(element.value) for element in above.iter.elements]
            if not keys or None in keys or _binds(above.body, name.value):
                return None
            return [key for key in keys if key is not None]
        child, above = above, parent(above)
    return None


def _binds(body: cst.CSTNode, name: str) -> bool:
    """Whether ``name`` may be bound again inside ``body``: assigned (plainly, augmented,
    annotated, by ``:=``), a loop, ``with ... as``, ``except ... as`` or ``case`` target,
    imported, deleted, defined or declared global."""
    for node in descendants(body):
        if isinstance(node, cst.AssignTarget):
            target: cst.CSTNode | None = node.target
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.Del)):
            target = node.target
        elif isinstance(node, cst.AsName):
            target = node.name
        elif isinstance(node, cst.ImportAlias) and node.asname is None:
            # `from splits import phase`; `import phase.x` binds `phase`.
            if node.evaluated_name.split(".")[0] == name:
                return True
            continue
        elif isinstance(node, cst.MatchAs | cst.MatchStar):
            target = node.name  # `case [phase]:`
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            if any(item.name.value == name for item in node.names):
                return True
            continue
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            target = node.name
        else:
            continue
        # The names a target binds, not those it reads (`loaders[phase] = ...` binds no `phase`).
        if target is not None and name in target_names(target):
            return True
    return False


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString) and "f" not in node.prefix.lower() \
            and "b" not in node.prefix.lower():
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def keyed_stores_cst(
    function: cst.CSTNode, name: str
) -> list[tuple[str, cst.BaseExpression]] | None:
    """:func:`keyed_stores_ast` for a libcst function."""
    stores: list[tuple[str, cst.BaseExpression]] = []
    called: set[int] = set()  # methods of the dict whose call was read (`update`, ...)
    for node in descendants(function):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and _is_name(node.func.value, name) and node.func.attr.value in _WRITES:
            written = _written_pairs_cst(node)
            if written is None:
                return None
            stores.extend(written)
            called.add(id(node.func))
        elif isinstance(node, cst.Assign):
            if _is_name(node.value, name) or (
                len(node.targets) > 1 and any(_is_name(t.target, name) for t in node.targets)
            ):
                return None  # a second name for the dict
            for target in node.targets:
                if _on(target.target, name):
                    key = subscript_key_cst(target.target)  # type: ignore[arg-type]
                    if key is None:
                        return None
                    stores.append((key, node.value))
                elif any(_on(inner, name) for inner in descendants(target.target)):
                    return None  # unpacked into
        elif isinstance(node, cst.AugAssign):
            if _is_name(node.target, name) or _on(node.target, name) \
                    or _is_name(node.value, name):
                return None  # `name |= other`, `name[k] += x`, `other += name`
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None and _is_name(node.value, name):
                return None
            if _on(node.target, name):
                key = subscript_key_cst(node.target)  # type: ignore[arg-type]
                if key is None or node.value is None:
                    return None
                stores.append((key, node.value))
        elif isinstance(node, cst.NamedExpr) and _is_name(node.value, name):
            return None
        elif isinstance(node, (cst.Del, cst.For, cst.CompFor)):
            if any(_on(inner, name) for inner in descendants(node.target)):
                return None
        elif isinstance(node, cst.Attribute) and _is_name(node.value, name) \
                and node.attr.value in _WRITES and id(node) not in called:
            return None  # a method that writes, not called here (`put = loaders.update`)
    return stores


def _written_pairs_cst(call: cst.Call) -> list[tuple[str, cst.BaseExpression]] | None:
    """:func:`written_pairs_ast` for a libcst call of a dict's method."""
    method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    keywords = [arg for arg in call.args if arg.keyword is not None]
    if any(arg.star for arg in call.args):
        return None
    if method == "setdefault" and len(positional) == 2 and not keywords:
        stored = _key_cst(positional[0])
        return None if stored is None else [(stored, positional[1])]
    if method != "update" or len(positional) > 1:
        return None
    pairs = [(arg.keyword.value, arg.value) for arg in keywords if arg.keyword is not None]
    if positional:
        given = string_key_pairs_cst(positional[0]) \
            if isinstance(positional[0], cst.Dict) else None
        if given is None:
            return None
        pairs = given + pairs
    return pairs


def _is_name(node: cst.CSTNode, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _on(node: cst.CSTNode, name: str) -> bool:
    """A subscript of ``name``: ``name[...]``."""
    return isinstance(node, cst.Subscript) and _is_name(node.value, name)


def self_dict_changes(summary: SyntaxSummary) -> list[tuple[str, ast.AST]]:
    """``(attr, node)`` for each node of a file that may change a dict kept on ``self.attr``:
    a subscript of it stored to or deleted, a method of it that writes, or ``self.attr`` given
    a second name (``loaders = self.loaders``, which may then be changed)."""
    def on_self(node: ast.AST) -> str | None:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "self":
            return node.attr
        return None

    found: list[tuple[str, ast.AST]] = []
    for node in summary.nodes(ast.Subscript):
        attribute = on_self(node.value)
        if attribute is not None and not isinstance(node.ctx, ast.Load):
            found.append((attribute, node))
    for method in summary.nodes(ast.Attribute):
        if method.attr in _WRITES:
            attribute = on_self(method.value)
            if attribute is not None:
                found.append((attribute, method))
    bindings: list[ast.Assign | ast.AnnAssign | ast.NamedExpr | ast.AugAssign] = [
        *summary.nodes(ast.Assign), *summary.nodes(ast.AnnAssign),
        *summary.nodes(ast.NamedExpr), *summary.nodes(ast.AugAssign),
    ]
    for binding in bindings:
        attribute = on_self(binding.value) if binding.value is not None else None
        if attribute is not None:
            found.append((attribute, binding))
        if isinstance(binding, ast.Assign) and len(binding.targets) > 1:
            for target in binding.targets:  # `self.loaders = loaders = {}`
                attribute = on_self(target)
                if attribute is not None:
                    found.append((attribute, binding))
        if isinstance(binding, ast.AugAssign):
            attribute = on_self(binding.target)
            if attribute is not None:
                found.append((attribute, binding))  # `self.loaders |= other`
    return found
