"""The second pre-filter stage: a summary of a file's syntax from Python's own parser.

After the text pre-filter, a file whose text mentions what a rule needs is still often far from a
match (Lightning: 97 of 646 files mention ranks, world sizes and ``//``; 15 have the shapes).
``ast.parse`` is several times cheaper than libcst's parse and traversal, so the engine parses
with it first and asks each rule's :meth:`~sampler_lint.rule.Rule.may_match` whether the file
could hold its pattern; only files some rule still wants are parsed with libcst. A rule may look
at the node kinds and called names, or at the nodes of a kind themselves (one walk of the tree
serves every rule). Like the text stage, a rule's answer must never hide a finding: answer
``True`` whenever unsure.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from sampler_lint.analysis.per_type import PerType
from sampler_lint.analysis.vocabulary import RANK_CALLS, WORLD_SIZE_CALLS, Vocabulary

Node = TypeVar("Node", bound=ast.AST)
Made = TypeVar("Made")


# Fields that never hold a node worth a look: names and flags, and ``ctx`` (the Load / Store /
# Del marker of every name, a third of all nodes: those kinds are not in a summary).
_NEVER_NODES = frozenset({
    "id", "attr", "name", "arg", "module", "level", "type_comment", "kind", "conversion",
    "is_async", "ctx", "simple",
})


def _node_fields(kind: type[ast.AST]) -> tuple[str, ...]:
    """The fields of a node type that may hold a node."""
    if kind is ast.Constant:
        return ()  # a constant's value is a Python value, never a node (a twelfth of all nodes)
    return tuple(name for name in kind._fields if name not in _NEVER_NODES)


_NODE_FIELDS: PerType[type[ast.AST], tuple[str, ...]] = PerType(_node_fields)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk``'s nodes in its breadth-first order, less the ``ctx`` markers (``Load``,
    ``Store``, ``Del``), about three times faster: the fact collectors walk every function of
    the files they read, and ``ast.walk`` was most of their time."""
    queue = [node]
    append = queue.append
    for current in queue:  # the queue grows while it is read
        yield current
        for name in _NODE_FIELDS[type(current)]:
            value = getattr(current, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        append(item)
            elif isinstance(value, ast.AST):
                append(value)


def walk_in_order(nodes: ast.AST | list[ast.stmt]) -> Iterator[ast.AST]:
    """``nodes`` and everything below them, depth first in source order (the ``ast`` twin of
    :func:`sampler_lint.analysis.tree.descendants`), less the ``ctx`` markers: for a judgment
    that takes the first match in the code's own order."""
    stack: list[ast.AST] = list(reversed(nodes)) if isinstance(nodes, list) else [nodes]
    while stack:
        current = stack.pop()
        yield current
        below: list[ast.AST] = []
        for name in _NODE_FIELDS[type(current)]:
            value = getattr(current, name, None)
            if type(value) is list:
                below.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                below.append(value)
        stack.extend(reversed(below))


class SyntaxSummary:
    """Node kinds, called and imported names, and the nodes of each kind, of one ``ast`` tree."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        by_kind: dict[type[ast.AST], list[ast.AST]] = defaultdict(list)
        parents: dict[ast.AST, ast.AST] = {}
        # ast.walk's breadth-first order, recording each node's parent on the way; children read
        # from the fields that can hold nodes (2.5 times faster than ast.iter_child_nodes).
        queue: list[ast.AST] = [tree]
        append = queue.append
        for node in queue:
            kind = type(node)
            by_kind[kind].append(node)
            for name in _NODE_FIELDS[kind]:
                value = getattr(node, name, None)
                if type(value) is list:
                    for item in value:
                        if isinstance(item, ast.AST):
                            parents[item] = node
                            append(item)
                elif isinstance(value, ast.AST):
                    parents[value] = node
                    append(value)
        self._by_kind = by_kind
        self._parents = parents
        #: Class names of every node in the tree (``"Subscript"``, ``"FloorDiv"``, ``"Slice"``...).
        self.kinds: frozenset[str] = frozenset(kind.__name__ for kind in by_kind)
        #: The last name of every called function (``x.split(...)`` -> ``"split"``, ``X[T](...)``
        #: -> ``"X"``) and the original name of everything imported (``from itertools import
        #: islice as cut`` -> ``"islice"``), so an aliased import still counts.
        self.names: frozenset[str] = frozenset(self._names())
        #: What counts as a rank, a world size or a seed in the run that asks (the engine sets
        #: the configured one before the rules' syntax filters read the summary).
        self.vocabulary = Vocabulary()
        #: The code the tree was parsed from, when the engine gives it (``""``: unknown).
        self.source = ""
        #: The run's rule options (``strict-seed``...), when the engine gives them (``None``:
        #: unknown, so a filter that depends on one cannot narrow by it).
        self.options: Mapping[str, Any] | None = None

    @property
    def source_lines(self) -> list[str]:
        """``source`` split where Python's parser counts lines (not at form feeds)."""
        # Kept with the code it was split from: the code may be set after a first question.
        cached: tuple[str, list[str]] | None = self.__dict__.get("_lines")
        if cached is None or cached[0] is not self.source:
            lines = re.split(r"\r\n|\r|\n", self.source) if self.source else []
            cached = self.__dict__["_lines"] = (self.source, lines)
        return cached[1]

    def given(
        self, source: str, vocabulary: Vocabulary, options: Mapping[str, Any] | None
    ) -> SyntaxSummary:
        """The summary as a run's pre-filters read it: with the code it was parsed from, the
        run's vocabulary and its rule options (the engine's two syntax stages call this)."""
        self.source, self.vocabulary, self.options = source, vocabulary, options
        return self

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The innermost function around ``node`` (what ``FileContext.enclosing_function``
        answers for the same node in libcst)."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return ancestor
        return None

    def enclosing_class(self, node: ast.AST) -> ast.ClassDef | None:
        """The innermost class around ``node``, across functions (as in libcst)."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, ast.ClassDef):
                return ancestor
        return None

    def code_of(self, scope: ast.AST | None) -> str:
        """The code of a definition (:meth:`code_between` it and itself), or, for ``None`` (the
        module), the whole code."""
        return self.source if scope is None else self.code_between(scope, scope)

    def code_between(self, first: ast.AST, last: ast.AST) -> str:
        """The code from the first character of ``first`` to the end of ``last``'s last line
        (its comment included): for a definition, or a definition's statements, a part of what
        libcst prints for the same node, so a word found here is a word a visitor reading that
        code finds. ``""`` when the code is unknown."""
        lines = self.source_lines
        start, end = getattr(first, "lineno", None), getattr(last, "end_lineno", None)
        if not lines or start is None or end is None or end > len(lines):
            return ""
        column: int = getattr(first, "col_offset", 0)  # in UTF-8 bytes, as the parser counts
        head = lines[start - 1].encode("utf-8")[column:].decode("utf-8", "replace")
        return "\n".join([head, *lines[start:end]])

    @classmethod
    def of(cls, tree: ast.Module) -> SyntaxSummary:
        """The summary of ``tree``, made once however many pre-filters and fact collectors ask."""
        return per_tree(tree, "summary", lambda: cls(tree))

    def nodes(self, kind: type[Node]) -> list[Node]:
        """Every node of exactly this type, in ``ast.walk`` order."""
        return self._by_kind.get(kind, [])  # type: ignore[return-value]

    def assignments(self) -> list[tuple[ast.expr, ast.expr | None]]:
        """``(target, value)`` for every target of every assignment, annotated ones included
        (their value may be ``None``)."""
        pairs: list[tuple[ast.expr, ast.expr | None]] = [
            (target, assign.value) for assign in self.nodes(ast.Assign) for target in assign.targets
        ]
        pairs += [(assign.target, assign.value) for assign in self.nodes(ast.AnnAssign)]
        return pairs

    def values_by_target(self) -> dict[str, list[ast.expr]]:
        """The values of :meth:`assignments` by target (:func:`dotted_expression`: names and
        attribute chains, looked through subscripts), once per tree: what a pre-filter follows
        where a visitor follows a name's assignments in its scope (a superset of those)."""
        def make() -> dict[str, list[ast.expr]]:
            values: dict[str, list[ast.expr]] = {}
            for target, value in self.assignments():
                name = dotted_expression(target)
                if name is not None and value is not None:
                    values.setdefault(name, []).append(value)
            return values

        return per_tree(self.tree, "values by target", make)

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self._parents.get(node)

    def ancestors(self, node: ast.AST) -> list[ast.AST]:
        """The nodes enclosing ``node``, innermost first."""
        found = []
        parent = self._parents.get(node)
        while parent is not None:
            found.append(parent)
            parent = self._parents.get(parent)
        return found

    def inside(self, node: ast.AST, scope: ast.AST) -> bool:
        """Whether ``scope`` encloses ``node`` (the module encloses every node of its tree)."""
        return any(ancestor is scope for ancestor in self.ancestors(node))

    def classes_holding(
        self, words: Iterable[tuple[ast.AST, str]], matches: Callable[[str], bool]
    ) -> set[int]:
        """The ids of the classes whose code (bases and decorators included) holds one of
        ``words`` (a node and the word it spells) that ``matches``: every class of the file at
        once, from the words up. Walking each class's code for them was most of some fact
        collectors' time (a large model class walked again for each question about it)."""
        verdicts: dict[str, bool] = {}  # a file says `self` and `x` hundreds of times
        found: set[int] = set()
        for node, word in words:
            hit = verdicts.get(word)
            if hit is None:
                hit = verdicts[word] = matches(word)
            if hit:
                found.update(
                    id(above) for above in self.ancestors(node) if isinstance(above, ast.ClassDef)
                )
        return found

    def import_bindings(self) -> dict[str, set[str]]:
        """Each name the file's imports bind, anywhere in it, with every path they bind it to
        (``import torch.distributed as dist``: ``dist`` -> ``torch.distributed``; ``import a.b``:
        ``a`` -> ``a``): the ``ast`` twin of ``analysis.imports.ImportTable``, which keeps one
        path per name where this keeps all (a name imported in two branches has both)."""

        def make() -> dict[str, set[str]]:
            bound: dict[str, set[str]] = {}
            for node in self.nodes(ast.Import):
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    bound.setdefault(name, set()).add(alias.name if alias.asname else name)
            for statement in self.nodes(ast.ImportFrom):
                module = "." * statement.level + (statement.module or "")
                for alias in statement.names:
                    path = f"{module}.{alias.name}" if module else alias.name
                    bound.setdefault(alias.asname or alias.name, set()).add(path)
            return bound

        return per_tree(self.tree, "import bindings", make)

    def may_resolve_to(
        self, callee: ast.expr, prefixes: tuple[str, ...], last_names: Iterable[str]
    ) -> bool:
        """Whether ``callee`` may name something under one of ``prefixes`` (``"torch."``) whose
        last name is one of ``last_names``, as ``ImportTable.qualify`` reads it: a name or
        attribute chain whose head is imported resolves through an import of it (any of them:
        ``DL`` imported as ``torch.utils.data.DataLoader``), an unimported chain as written, and
        an unimported bare name (a class or function of the file) never."""
        if type(callee) is ast.Attribute and callee.attr not in last_names:
            return False  # qualifying changes the head only: a chain keeps its last name
        dotted = dotted_expression(callee)
        if dotted is None:
            return False
        head = dotted.partition(".")[0]
        paths = self.import_bindings().get(head)
        if not paths:
            qualified = {dotted} if "." in dotted else set()
        else:
            qualified = {qualify({head: path}, dotted) for path in paths}
        return any(
            name.startswith(prefixes) and name.rsplit(".", 1)[-1] in last_names
            for name in qualified
        )

    def _names(self) -> set[str]:
        names: set[str] = set()
        for call in self.nodes(ast.Call):
            func = call.func
            if type(func) is ast.Subscript:  # X[T](...) constructs X
                func = func.value
            if type(func) is ast.Name:
                names.add(func.id)
            elif type(func) is ast.Attribute:
                names.add(func.attr)
        imports: list[ast.Import | ast.ImportFrom] = [
            *self.nodes(ast.Import), *self.nodes(ast.ImportFrom)
        ]
        for statement in imports:
            for alias in statement.names:
                names.add(alias.name.rsplit(".", 1)[-1])
        return names


def qualify(aliases: dict[str, str], dotted: str) -> str:
    """``dist.get_rank`` -> ``torch.distributed.get_rank`` through ``aliases`` (local name ->
    what it was imported as)."""
    head, _, rest = dotted.partition(".")
    target = aliases.get(head)
    if target is None:
        return dotted
    return f"{target}.{rest}" if rest else target


def per_tree(tree: ast.AST, key: str, make: Callable[[], Made]) -> Made:
    """What ``make`` gives for ``tree``, made once however many pre-filters and fact collectors
    of one parse ask (kept on the tree: it lives as long as the parse)."""
    memo: dict[str, Any] = tree.__dict__.setdefault("_sampler_lint_memo", {})
    if key not in memo:
        memo[key] = make()
    made: Made = memo[key]
    return made


def dotted_expression(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names, looking through subscripts (``Sampler[int]`` is
    ``Sampler``); ``None`` for anything else (a call: ``six.with_metaclass(...)``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted_expression(node.value)
        return f"{inner}.{node.attr}" if inner else None
    if isinstance(node, ast.Subscript):  # Generic[T], Sampler[int]
        return dotted_expression(node.value)
    return None


def dotted_chain(node: ast.AST) -> str | None:
    """``a.b.c`` for a plain chain of names and attributes, else ``None`` (the ``ast`` twin of
    libcst's :func:`sampler_lint.analysis.imports.dotted_name`; no subscript looked through)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted_chain(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None


def names_rank(node: ast.expr, vocabulary: Vocabulary) -> bool:
    """The ``ast`` twin of :func:`analysis.matching.is_rank_like` without following a name: a
    rank name of the vocabulary (its last part), or a call of one of ``RANK_CALLS``."""
    return _names(node, vocabulary.is_rank_name, RANK_CALLS)


def names_world_size(node: ast.expr, vocabulary: Vocabulary) -> bool:
    """The ``ast`` twin of :func:`analysis.matching.is_world_size_like` without following a name:
    a world-size name of the vocabulary (its last part), a call of one of ``WORLD_SIZE_CALLS``,
    or a call of ``int`` (which may read ``os.environ["WORLD_SIZE"]``)."""
    return _names(node, vocabulary.is_world_size_name, (*WORLD_SIZE_CALLS, "int"))


def _names(node: ast.expr, is_name: Callable[[str], bool], calls: tuple[str, ...]) -> bool:
    """A name or attribute whose last part ``is_name`` accepts, or a call of one of ``calls``."""
    if isinstance(node, ast.Name):
        return is_name(node.id)
    if isinstance(node, ast.Attribute):
        return is_name(node.attr)
    if isinstance(node, ast.Call):
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        return called in calls
    return False


def within(node: ast.expr | ast.stmt, outer: ast.stmt) -> bool:
    """Whether ``node`` lies inside ``outer`` (by position; a decorator counts as inside)."""
    decorators: list[ast.expr] = getattr(outer, "decorator_list", [])
    first = decorators[0] if decorators else outer
    start = (first.lineno, first.col_offset)
    end = (outer.end_lineno or outer.lineno, outer.end_col_offset or 0)
    return start <= (node.lineno, node.col_offset) and (
        node.end_lineno or node.lineno, node.end_col_offset or 0
    ) <= end


def argument(call: ast.Call, position: int | None, *keywords: str) -> ast.expr | None:
    """The value bound to a positional-or-keyword parameter of ``call``, as
    :func:`analysis.matching.get_arg` finds it in libcst: a keyword first, else the argument
    at ``position`` unless a ``*args`` comes at or before it; ``None`` when not visibly bound."""
    for keyword in call.keywords:
        if keyword.arg is not None and keyword.arg in keywords:
            return keyword.value
    if position is None or len(call.args) <= position:
        return None
    if any(type(arg) is ast.Starred for arg in call.args[: position + 1]):
        return None
    return call.args[position]


def is_constant(node: ast.expr | None, *types: type) -> bool:
    """A literal whose value is exactly of one of ``types`` (``bool`` is not ``int`` here)."""
    return type(node) is ast.Constant and type(node.value) in types


@functools.lru_cache(maxsize=1)
def parsed(text: str) -> ast.Module:
    """``ast.parse(text)``, the last text's tree remembered: a file is read by ``ast`` at several
    points of one run (the pre-survey that decides whether a few named files need the project at
    all, their survey, the syntax stage, the finding positions of the lint pass) and one parse
    serves them all, with what each made of the tree (:func:`per_tree`). The tree is shared:
    its readers never change it."""
    return ast.parse(text)


def summarize(text: str) -> SyntaxSummary | None:
    """The summary, or ``None`` when Python cannot parse the text (libcst then decides)."""
    try:
        return SyntaxSummary.of(parsed(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
