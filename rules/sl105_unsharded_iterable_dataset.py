"""SL105 unsharded-iterable-dataset: an ``IterableDataset`` whose ``__iter__`` walks a finite
source without splitting it between workers or ranks, built into a loader with workers or under
DDP: every worker (and every rank) yields the whole source."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.index import (
    ProjectIndex,
    class_names_in,
    dotted_expression,
    import_aliases,
    qualify,
)
from sampler_lint.analysis.iterable_datasets import (
    DATASET_LOADERS,
    SHARDING_WORDS,
    DatasetLoader,
    loaders_of,
)
from sampler_lint.analysis.sampler_family import TRANSPARENT_BASES
from sampler_lint.analysis.syntax_summary import (
    SyntaxSummary,
    dotted_chain,
    parsed,
    per_tree,
    summarize,
    walk_in_order,
)
from sampler_lint.rule import Example, FileContext, Rule, Severity

_TORCH_ITERABLE = frozenset({
    "torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset",
})
# In the file: a worker_init_fn or helper that may hand each worker its part (a loader's own
# worker_init_fn is judged where the loader is built).
_FILE_WORDS = ("get_worker_info",)
# Attribute and parameter names of an inner dataset, stream or reader that a wrapper delegates
# to (it may shard itself), rather than data the class walks.
_DELEGATE_PARTS = (
    "dataset", "datapipe", "pipe", "loader", "stream", "iterable", "iterator", "reader", "source",
    "generator", "sampler", "queue", "buffer", "env", "ds", "dp", "gen", "inner", "wrapped",
    "base", "iter",
)
# Calls that make a finite collection out of files or text.
_FINITE_CALLS = frozenset({
    "open", "glob", "iglob", "listdir", "scandir", "walk", "rglob", "iterdir", "readlines",
    "reader", "DictReader", "read_csv", "read_json", "read_parquet", "read_table", "load",
    "loadtxt", "genfromtxt", "splitlines", "read_text", "jsonl", "load_jsonl", "read_lines",
})
# Wrappers a walk passes through: the walked thing is their (first) argument.
_PASS_THROUGH = frozenset({
    "enumerate", "sorted", "list", "tuple", "reversed", "tqdm", "iter", "zip", "set",
})
_PASS_THROUGH_SECOND = frozenset({"map", "filter", "starmap"})
# Methods of a finite collection that walk it.
_WALKING_METHODS = frozenset({
    "items", "values", "keys", "iterrows", "itertuples", "readlines", "splitlines", "split",
    "strip", "read", "copy", "tolist", "to_list", "to_dict", "rglob", "glob", "iterdir",
})
_INFINITE = ("cycle", "count", "repeat")
_WORKER_METHODS = ("__iter__",)


def _iterable_classes(text: str) -> set[str]:
    """The classes of this code with a base whose name, imports resolved, ends in
    ``IterableDataset``: every class :meth:`UnshardedIterableDataset._plain_iterable_dataset`
    accepts, and some more (a file Python cannot parse: every class its text names)."""
    try:
        tree = parsed(text)
    except (SyntaxError, ValueError):
        return class_names_in(text)
    return _iterable_classes_in(tree)


def _iterable_classes_in(tree: ast.Module) -> set[str]:
    aliases = import_aliases(tree)
    found = set()
    for node in _classes(tree):
        for base in node.bases:
            if isinstance(base, ast.Subscript):
                base = base.value
            dotted = dotted_expression(base) or ""
            if qualify(aliases, dotted).rsplit(".", 1)[-1] == "IterableDataset":
                found.add(node.name)
    return found


def _classes(tree: ast.Module) -> list[ast.ClassDef]:
    """The classes of ``tree`` in :func:`walk`'s order, from its summary (the syntax stage has
    made it already) rather than a walk of the whole tree for each question."""
    return SyntaxSummary.of(tree).nodes(ast.ClassDef)


class UnshardedIterableDataset(Rule):
    code = "SL105"
    name = "unsharded-iterable-dataset"
    severity = Severity.WARNING
    requires = (("IterableDataset",), ("__iter__",))
    has_syntax_filter = True
    collectors = (DATASET_LOADERS,)
    uses_index = True

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._met: dict[str, int] = {}  # classes of each name visited so far
        self._walked: dict[str, list[ast.expr | None]] | None = None

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # A class derived from IterableDataset whose __iter__ walks a finite source.
        return bool(cls.syntax_hints(summary))

    @classmethod
    def syntax_hints(cls, summary: SyntaxSummary) -> frozenset[str]:
        # The survey's parse names the classes that walk a finite source: the index stage asks
        # about those alone, and need not parse the file again.
        return frozenset(klass.name for klass in _walked_sources(summary.tree, summary.source))

    @classmethod
    def may_match_index(
        cls, index: ProjectIndex, path: str, text: str, hints: frozenset[str] | None = None
    ) -> bool:
        # A class of this file that derives from IterableDataset (what visit_ClassDef asks
        # first) and that some loader of the project runs in several processes (what it asks
        # last), one name at a time: the question reads only the files that spell the name.
        names = _iterable_classes(text) if hints is None else hints
        return any(loaders_of(index, name, path) for name in names)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        # The n-th class of a name in libcst's (source) order is the n-th of the ast tree's.
        name = node.name.value
        number = self._met[name] = self._met.get(name, -1) + 1
        if not self._plain_iterable_dataset(node) or self._mentions_sharding(node):
            return
        walks = self._walks().get(name, [])
        walked = walks[number] if number < len(walks) else None
        if walked is None:
            return
        methods = {
            item.name.value: item for item in node.body.body if isinstance(item, cst.FunctionDef)
        }
        uses = loaders_of(self.context.index, name, str(self.context.path))
        if not uses:
            return
        use = sorted(uses, key=lambda u: (not u.workers, u.path, u.line))[0]
        code = ast.get_source_segment(self.context.source, walked) or "its source"
        message = (
            f"`{name}.__iter__` walks `{code}` whole in every process that runs it, and "
            f"{_how(use, self.context.path)}: each one yields every sample (nothing here reads "
            "`get_worker_info()` or the rank, or calls a sharding helper)"
        )
        self.report(methods["__iter__"].name, message)

    def _walks(self) -> dict[str, list[ast.expr | None]]:
        """Per class name, in source order, what each class of that name walks
        (:func:`_walked_sources`), from the file parsed once more with ``ast``."""
        if self._walked is None:
            self._walked = {}
            summary = summarize(self.context.source)
            if summary is None:
                return self._walked  # libcst's grammar, not this Python's: nothing judged
            found = _walked_sources(summary.tree, self.context.source)
            classes = sorted(
                summary.nodes(ast.ClassDef), key=lambda node: (node.lineno, node.col_offset)
            )
            for node in classes:
                self._walked.setdefault(node.name, []).append(found.get(node))
        return self._walked

    # -- the class -----------------------------------------------------------------------------
    def _plain_iterable_dataset(self, node: cst.ClassDef) -> bool:
        """Derives from torch's ``IterableDataset`` directly, with nothing but typing mixins
        beside it (another base may do the splitting)."""
        found = False
        for base in node.bases:
            value = base.value
            if isinstance(value, cst.Subscript):
                value = value.value
            qualified = self.context.qualified_name(value) or ""
            if qualified in _TORCH_ITERABLE:
                found = True
            elif qualified not in TRANSPARENT_BASES:
                return False
        return found

    def _mentions_sharding(self, node: cst.ClassDef) -> bool:
        text = self.context.code_for(node)
        lowered = text.lower()
        if any(word in lowered for word in SHARDING_WORDS):
            return True
        vocabulary = self.context.vocabulary
        names = vocabulary.rank_names | vocabulary.world_size_names
        return any(re.search(rf"\b{re.escape(name)}\b", text) for name in names)

    documentation = """
    An `IterableDataset` that walks a finite source whole in every worker and every rank.

    ## What it does
    Flags the `__iter__` of a class derived directly from torch's `IterableDataset` when it
    (or a method of the class it calls) walks a finite source: a `for` loop that yields,
    `yield from`, or `return iter(...)` over a collection the class keeps (`self.files`,
    `self.samples.items()`, `range(len(self.data))` used as an index), an open file, or a
    file listing, and the class reads nothing of the processes it runs in: no
    `get_worker_info()`, no rank or world size (the configured vocabulary), no
    `split_dataset_by_node`, `.shard(...)`, `islice`, webdataset or `sharding_filter`, not
    even in a comment. Only when the project visibly runs it in several processes: a
    `DataLoader` built on an instance of the class (inline, or through a name or
    `self.<attr>` assigned one; in the class's file or in any file importing the class by
    module path; or in a project function the instance is handed to, built on that
    function's parameter; or on a project subclass that keeps its `__iter__` and reads
    nothing of the processes either) with `num_workers` given and above one (not `0` or
    `1`, nor a name only ever those), or in a file that trains with
    `DistributedDataParallel` / FSDP / `init_process_group`
    (then not under accelerate or transformers, which shard iterable datasets between
    processes themselves; not a loader named for evaluation; not a dataset whose
    constructor arguments already mention the rank or shards).

    Not flagged: infinite streams (a `while` loop, `itertools.cycle` / `count` / `repeat`),
    random generators (`for _ in range(n): yield torch.randn(...)`), wrappers that delegate
    to an inner dataset, stream or reader (`for x in self.dataset`), classes with another base
    than `IterableDataset` and typing mixins, a class file or loader file that mentions
    `get_worker_info` (a helper there may split the data per worker), loaders given
    `**kwargs`, and loaders whose `worker_init_fn` may touch the dataset (anything but a
    function of the same file mentioning neither `dataset` nor `get_worker_info`).
    Known gaps (findings missed, never added): a class whose base is a project class
    (its own `__iter__` is not judged), iterator-style datasets (`__iter__` returning
    `self` with a `__next__`), Hugging Face streaming datasets handed to a loader under
    DDP, and a file the running Python's own parser rejects (syntax newer than it knows:
    the walk is read from its `ast` tree).

    ## Why is this bad
    A `DataLoader` with `num_workers=N` copies the dataset into N processes and calls
    `__iter__` in each. For a map-style dataset the sampler hands each worker different
    indices; an iterable dataset has no sampler, so every worker walks the whole source and
    every sample arrives N times per epoch (torch's `IterableDataset` documentation says so
    and shows the fix). Under DDP the same happens across ranks: nothing shards an iterable
    dataset, so every GPU trains on the same stream. Nothing fails; the epoch is just N times
    (or W times) longer and the gradient averages over copies (huggingface/datasets #3423,
    #5360; transformers #11254).

    ## Example
    ```python
    class Lines(IterableDataset):
        def __init__(self, path):
            self.path = path

        def __iter__(self):
            with open(self.path) as f:
                for line in f:
                    yield line.strip()

    loader = DataLoader(Lines("train.txt"), batch_size=32, num_workers=4)
    ```

    ## Use instead
    ```python
    class Lines(IterableDataset):
        def __init__(self, path):
            self.path = path

        def __iter__(self):
            info = get_worker_info()
            workers, worker = (info.num_workers, info.id) if info else (1, 0)
            world = dist.get_world_size() if dist.is_initialized() else 1
            rank = dist.get_rank() if dist.is_initialized() else 0
            part, parts = rank * workers + worker, world * workers
            with open(self.path) as f:
                for number, line in enumerate(f):
                    if number % parts == part:
                        yield line.strip()
    ```
    (or split a list of shards with `itertools.islice(files, part, None, parts)`, or use
    `datasets.distributed.split_dataset_by_node` and webdataset's `split_by_node` /
    `split_by_worker`).

    ## Fix safety
    No fix: how to split a stream (by line, by file, by shard) is a design choice.

    ## References
    - torch `torch.utils.data.IterableDataset` and `get_worker_info`
    - huggingface/datasets issues #3423, #5360; huggingface/transformers issue #11254
    """

    examples = (
        Example(
            "from torch.utils.data import DataLoader, IterableDataset\n"
            "\n"
            "\n"
            "class Lines(IterableDataset):\n"
            "    def __init__(self, path):\n"
            "        self.path = path\n"
            "\n"
            "    def __iter__(self):\n"
            "        with open(self.path) as f:\n"
            "            for line in f:\n"
            "                yield line.strip()\n"
            "\n"
            "\n"
            "loader = DataLoader(Lines('train.txt'), batch_size=32, num_workers=4)\n",
            lines=(8,),
        ),
        Example(
            "from torch.utils.data import DataLoader, IterableDataset, get_worker_info\n"
            "\n"
            "\n"
            "class Lines(IterableDataset):\n"
            "    def __init__(self, path):\n"
            "        self.path = path\n"
            "\n"
            "    def __iter__(self):\n"
            "        info = get_worker_info()\n"
            "        workers, worker = (info.num_workers, info.id) if info else (1, 0)\n"
            "        with open(self.path) as f:\n"
            "            for number, line in enumerate(f):\n"
            "                if number % workers == worker:\n"
            "                    yield line.strip()\n"
            "\n"
            "\n"
            "loader = DataLoader(Lines('train.txt'), batch_size=32, num_workers=4)\n"
        ),
    )


def _how(use: DatasetLoader, here: Path) -> str:
    where = f"line {use.line}"
    if Path(use.path) != Path(here).resolve():
        where = f"{Path(use.path).name}:{use.line}"
    if use.workers:
        return f"the DataLoader at {where} runs it in several worker processes"
    return f"the DataLoader at {where} runs it on every DDP rank"


# -- the walk, read from the ``ast`` tree: the survey's syntax stage asks it of the tree it parsed
# (a class that walks nothing finite is never asked about in the index), the lint pass of the
# same tree parsed again, so the judgment lives once.

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _walked_sources(tree: ast.Module, source: str) -> dict[ast.ClassDef, ast.expr]:
    """Each class of ``tree`` deriving (by name) from ``IterableDataset`` whose ``__iter__``, or a
    method it calls, walks a finite source while it yields: the expression it walks. Classes
    whose methods run an endless loop, and files that mention ``get_worker_info``, have none.
    Judged once per parse (the syntax stage asks twice: ``may_match``, ``syntax_hints``)."""
    return per_tree(tree, "sl105 walks", lambda: _find_walks(tree, source))


def _find_walks(tree: ast.Module, source: str) -> dict[ast.ClassDef, ast.expr]:
    if any(word in source for word in _FILE_WORDS):
        return {}
    names = _iterable_classes_in(tree)
    found: dict[ast.ClassDef, ast.expr] = {}
    for node in _classes(tree):
        if node.name in names:
            walked = _walked_by(node)
            if walked is not None:
                found[node] = walked
    return found


def _walked_by(klass: ast.ClassDef) -> ast.expr | None:
    methods = {item.name: item for item in klass.body if isinstance(item, _Function)}
    if "__iter__" not in methods:
        return None
    running = _called_methods(methods, _WORKER_METHODS)
    if any(_infinite(methods[name]) for name in running):
        return None
    for name in running:
        walked = _finite_walk(methods[name], methods)
        if walked is not None:
            return walked
    return None


def _last_name(node: ast.expr) -> str:
    """The last part of a plain chain of names (``np.random.default_rng`` -> ``default_rng``)."""
    return (dotted_chain(node) or "").rsplit(".", 1)[-1]


def _arguments(call: ast.Call, starred: bool = False) -> list[ast.expr]:
    """A call's argument values in source order; ``*`` and ``**`` ones (their values) only
    when ``starred``."""
    given = [
        arg.value if isinstance(arg, ast.Starred) else arg for arg in call.args
        if starred or not isinstance(arg, ast.Starred)
    ]
    given += [keyword.value for keyword in call.keywords if starred or keyword.arg is not None]
    return sorted(given, key=lambda value: (value.lineno, value.col_offset))


def _names(node: ast.AST, name: str) -> bool:
    return any(isinstance(child, ast.Name) and child.id == name for child in walk_in_order(node))


def _called_methods(methods: dict[str, _Function], roots: tuple[str, ...]) -> list[str]:
    """``roots`` and the methods of the class they call (``self.m(...)``), transitively."""
    found = [name for name in roots if name in methods]
    for name in found:  # grows while it is walked
        for child in walk_in_order(methods[name].body):
            if isinstance(child, ast.Call):
                head, _, rest = (dotted_chain(child.func) or "").partition(".")
                if head == "self" and rest in methods and rest not in found and rest != "__init__":
                    found.append(rest)
    return found


def _infinite(method: _Function) -> bool:
    """A ``while`` loop or an endless ``itertools`` iterator: a stream, not a walk."""
    for child in walk_in_order(method.body):
        if isinstance(child, ast.While):
            return True
        if isinstance(child, ast.Call) and _last_name(child.func) in _INFINITE:
            return True
    return False


def _finite_walk(method: _Function, methods: dict[str, _Function]) -> ast.expr | None:
    """The finite source ``method`` walks while it yields, if any."""
    walker = _Walk(method, methods)
    for child in walk_in_order(method.body):
        if isinstance(child, (ast.For, ast.AsyncFor)) and _yields(child.body):
            if walker.finite(child.iter, child):
                return child.iter
        elif isinstance(child, ast.YieldFrom):
            if walker.finite(child.value, None):
                return child.value
        elif isinstance(child, ast.Return) and child.value is not None \
                and method.name in _WORKER_METHODS:
            source = _returned_source(child.value)
            if source is not None and walker.finite(source, None):
                return source
    return None


def _yields(body: list[ast.stmt]) -> bool:
    return any(isinstance(child, (ast.Yield, ast.YieldFrom)) for child in walk_in_order(body))


def _returned_source(value: ast.expr) -> ast.expr | None:
    """What ``return iter(X)`` / ``return map(f, X)`` / ``return (f(x) for x in X)`` walks."""
    if isinstance(value, ast.GeneratorExp):
        return value.generators[0].iter
    if isinstance(value, ast.Call):
        name = _last_name(value.func)
        given = _arguments(value, starred=True)
        if name == "iter" and given:
            return given[0]
        if name in _PASS_THROUGH_SECOND and len(given) > 1:
            return given[1]
    return None


class _Walk:
    """Whether an iterated expression is a finite collection of data the class holds or reads
    (never an inner dataset or stream it delegates to)."""

    def __init__(self, method: _Function, methods: dict[str, _Function]) -> None:
        self.method = method
        self.methods = methods
        self._seen: set[str] = set()

    def finite(self, node: ast.expr, loop: ast.For | ast.AsyncFor | None, depth: int = 0) -> bool:
        if depth > 6:
            return False
        if isinstance(node, ast.Call):
            name = _last_name(node.func)
            args = _arguments(node)
            if name == "range":
                # Returned or yielded whole, a range is the data (torch's own example); in a
                # loop, the counter must pick or be the items (else: a random generator).
                return bool(args) and (loop is None or self._indexes_with(loop, depth))
            if name in _PASS_THROUGH and args:
                return any(self.finite(arg, None, depth + 1) for arg in args)
            if name in _PASS_THROUGH_SECOND and len(args) > 1:
                return self.finite(args[1], None, depth + 1)
            if name in _FINITE_CALLS:
                return True
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _WALKING_METHODS:
                return self.finite(func.value, None, depth + 1)
            return False
        if isinstance(node, ast.Subscript):
            return self.finite(node.value, None, depth + 1)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return self._data_attribute(node.attr)
            return False
        if isinstance(node, ast.Name):
            return self._local(node.id, depth)
        return False

    def _indexes_with(self, loop: ast.For | ast.AsyncFor, depth: int) -> bool:
        """``for i in range(...)`` whose ``i`` picks items of data the class holds: an index of
        ``self.<attr>`` (only a map-style collection has one) or of a finite value, or an
        argument of a method of the class (``self.load(i)``); a counter alone, or an index into
        a random draw, is a generator."""
        if not isinstance(loop.target, ast.Name):
            return False
        name = loop.target.id
        for child in walk_in_order(loop.body):
            if isinstance(child, ast.Yield) and child.value is not None:
                value = child.value
                items = value.elts if isinstance(value, ast.Tuple) else [value]
                items = [item.value if isinstance(item, ast.Starred) else item for item in items]
                if any(isinstance(item, ast.Name) and item.id == name for item in items):
                    return True  # the counter is the item
            if isinstance(child, ast.Subscript) and _names(child.slice, name):
                value = child.value
                if _is_self_attribute(value) or self.finite(value, None, depth + 1):
                    return True
            elif isinstance(child, ast.Call):
                head, _, method = (dotted_chain(child.func) or "").partition(".")
                if head == "self" and method in self.methods and any(
                    _names(arg, name) for arg in _arguments(child, starred=True)
                ):
                    return True
        return False

    def _local(self, name: str, depth: int) -> bool:
        """A name of the method: bound by ``with open(...) as f`` or assigned once a finite
        value."""
        if name in self._seen:
            return False
        self._seen.add(name)
        values: list[ast.expr] = []
        for child in walk_in_order(self.method.body):
            if isinstance(child, ast.withitem) and child.optional_vars is not None:
                if dotted_chain(child.optional_vars) == name:
                    values.append(child.context_expr)
            elif isinstance(child, ast.Assign):
                values += [child.value for target in child.targets if dotted_chain(target) == name]
            elif isinstance(child, (ast.AugAssign, ast.AnnAssign)):
                if dotted_chain(child.target) == name:
                    return False
            elif isinstance(child, (ast.For, ast.AsyncFor)) and _names(child.target, name):
                return False
        return len(values) == 1 and self.finite(values[0], None, depth + 1)

    def _data_attribute(self, attribute: str) -> bool:
        """``self.<attribute>`` holds data: its name is not an inner dataset's, and the class
        assigns it a collection, a file listing, a parameter not named like a dataset, or the
        result of a function (not of a class: an object that may shard itself)."""
        if _delegate_like(attribute):
            return False
        values: list[ast.expr] = []
        parameters: dict[str, str] = {}
        target_name = f"self.{attribute}"
        for method in self.methods.values():
            for param in method.args.args:
                parameters[param.arg] = method.name
            for child in walk_in_order(method.body):
                if isinstance(child, ast.Assign):
                    values += [child.value for target in child.targets
                               if dotted_chain(target) == target_name]
                elif isinstance(child, ast.AnnAssign) and child.value is not None:
                    if dotted_chain(child.target) == target_name:
                        values.append(child.value)
        if not values:
            return False  # set by a base or from outside: unknown
        return all(self._data_value(value, parameters) for value in values)

    def _data_value(self, value: ast.expr, parameters: dict[str, str]) -> bool:
        if isinstance(value, (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp,
                              ast.SetComp)):
            return True
        if isinstance(value, ast.Name):
            return value.id in parameters and not _delegate_like(value.id)
        if isinstance(value, ast.Call):
            name = _last_name(value.func)
            # A class builds an object that may split itself; a function returns data.
            return bool(name) and not name[0].isupper() and not _delegate_like(name)
        if isinstance(value, ast.Subscript):
            return self._data_value(value.value, parameters)
        return False


def _delegate_like(name: str) -> bool:
    parts = [part for part in re.split(r"_|(?<=[a-z])(?=[A-Z])", name.lower()) if part]
    return any(part in _DELEGATE_PARTS or part.startswith(_DELEGATE_PARTS[:8]) for part in parts)


def _is_self_attribute(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )
