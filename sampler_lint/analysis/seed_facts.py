"""Project facts about seeds (SL3xx), read with Python's ``ast``.

- the seed keys the project defines or reads on a namespace (``defaults.SEED = 7``,
  ``torch.manual_seed(opts.SEED)``, ``parser.add_argument("--seed")``): a function that holds
  that namespace sees its seed, even when its module never reads the key;
- the project functions whose loader (or sampler) gets ``set_epoch(E)`` with a seed inside ``E``
  (``loader.sampler.set_epoch(args.seed + epoch)``): ``DistributedSampler`` shuffles with
  ``seed + epoch``, so the run's seed does reach the order of what such a function builds;
- the project classes that override ``__init__``, and whether it still takes a ``seed`` (or
  ``**kwargs``): a ``DistributedSampler`` subclass can be passed a seed only then.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from sampler_lint.analysis.index import (
    FactCollector,
    ProjectIndex,
    classes_named,
    dotted_expression,
    facts_in_file,
    import_aliases,
    imported_module,
    statements,
)
from sampler_lint.analysis.loader_calls import distributed_sampler_calls, may_shuffle
from sampler_lint.analysis.loader_facts import FACT_PACKAGE_NAMES, PACKAGE_NAMES, file_key
from sampler_lint.analysis.sampler_family import CLASS_FACT_WORDS
from sampler_lint.analysis.syntax_summary import SyntaxSummary, argument, is_constant, walk

FACT_KEYS = "sl3_seed_keys"  # (namespace, key, path): `cfg`, `TRAIN.SEED`
FACT_IMPORTS = "sl3_imports"  # (path, module stems it imports): see _import_stems
FACT_SEED_METHODS = "sl3_seed_methods"  # (class, path, name): `def seed(self, s)`, no property
FACT_SEEDED_EPOCH = "sl3_seeded_epoch"  # (function name, names inside set_epoch's argument)
FACT_INITS = "sl3_inits"  # InitSignature
FACT_NAMED = "sl3_named_samplers"  # paths of files that build a DistributedSampler by its name
# Paths of files that build one by its name with a seed that may be fixed (see may_fix_the_seed).
FACT_FIXED_SEED = "sl3_named_samplers_fixed_seed"

# DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)
SEED_POSITION = 4

# Heads that are never a configuration namespace.
_NOT_NAMESPACES = frozenset({"self", "cls", "torch", "np", "numpy", "random", "os", "tf", "jax"})
# Heads named for an object that has a seed of its own (`sampler.seed`, `train_dataset.seed`): not a
# run's configuration.
_OBJECT_WORDS = ("sampler", "loader", "dataset", "gen", "rng", "model", "worker", "env")
# Calls whose result is the parsed command line (`args = parser.parse_args()`).
_PARSE_CALLS = ("parse_args", "parse_known_args", "get_args", "parse_opt", "parse_option")
# Attribute chains that hold a loader's sampler: `loader.sampler`, `loader.batch_sampler.sampler`.
_SAMPLER_SUFFIXES = (".batch_sampler.sampler", ".sampler", ".batch_sampler")


@dataclass(frozen=True)
class InitSignature:
    name: str
    path: str
    takes_seed: bool  # a parameter named `seed`, or **kwargs


# The name a parsed command line is assumed to have, and the call that declares an option: a
# file with `add_argument("--seed")` records the key `args.seed` whether or not it spells `args`.
PARSED_NAMESPACE = "args"
OPTION_CALL = "add_argument"


def _seedish(name: str) -> bool:
    """Cheap, vocabulary-free test; the rule applies the configured vocabulary afterwards."""
    return "seed" in name.rsplit(".", 1)[-1].lower()


def _option_key(call: ast.Call) -> str | None:
    """``add_argument("--random-seed")`` -> ``random_seed``; ``dest=`` wins."""
    for keyword in call.keywords:
        if keyword.arg == "dest" and isinstance(keyword.value, ast.Constant):
            value = keyword.value.value
            return value if isinstance(value, str) else None
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith(
            "--"
        ):
            return arg.value[2:].replace("-", "_")
    return None


def _names_a_parser(name: str) -> bool:
    """Whether a name assigned from a parse-like call holds a parser, not a parsed command line:
    ``parser = parse_args(parser)`` in NVIDIA's recipes, where the function adds options and
    returns its argument. The options are keys of the namespace parsed later (``args``), not of
    the parser: a seed passed as ``parser.seed`` fails when the sampler is built. (A name handed
    to the call says nothing: ``args = parser.parse_args(args)`` parses a list of strings.)"""
    return "parser" in name.lower()


def collect_seed_facts(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    summary = SyntaxSummary.of(tree)
    modules = set(import_aliases(tree))
    keys: set[tuple[str, str]] = set()
    # Namespaces that hold the parsed command line in this file.
    parsed = {PARSED_NAMESPACE}
    for target, value in summary.assignments():
        if isinstance(value, ast.Call) and isinstance(target, ast.Name):
            called = (dotted_expression(value.func) or "").rsplit(".", 1)[-1]
            if called in _PARSE_CALLS and not _names_a_parser(target.id):
                parsed.add(target.id)
    called_funcs = {id(call.func) for call in summary.nodes(ast.Call)}
    for attribute in summary.nodes(ast.Attribute):
        if id(attribute) in called_funcs or not _seedish(attribute.attr):
            continue  # `rng.seed(0)` calls a method; a seed is a value
        dotted = dotted_expression(attribute)
        if dotted is None:
            continue
        head, _, key = dotted.partition(".")
        if head in _NOT_NAMESPACES or head in modules or not key:
            continue
        if any(word in head.lower() for word in _OBJECT_WORDS):
            continue
        keys.add((head, key))
    for call in summary.nodes(ast.Call):
        if isinstance(call.func, ast.Attribute) and call.func.attr == OPTION_CALL:
            option = _option_key(call)
            if option is not None and _seedish(option):
                keys.update((namespace, option) for namespace in parsed)
    key = file_key(path)
    return {
        FACT_KEYS: sorted((namespace, name, key) for namespace, name in keys),
        FACT_IMPORTS: [(key, _import_stems(tree, key))],
        FACT_SEED_METHODS: sorted(_seed_methods(summary, key)),
        FACT_SEEDED_EPOCH: sorted(_seeded_epochs(summary)),
    }


def _seeded_epochs(summary: SyntaxSummary) -> set[tuple[str, tuple[str, ...]]]:
    """``x = f(...)`` then ``x.sampler.set_epoch(seed + epoch)`` in the same file:
    ``(f, ("seed", "epoch"))``."""
    built: dict[tuple[ast.AST | None, str], set[str]] = {}
    for target, value in summary.assignments():
        name = dotted_expression(target)
        if name is not None and isinstance(value, ast.Call):
            called = dotted_expression(value.func)
            if called is not None:
                key = (_holder_scope(summary, target, name), name)
                built.setdefault(key, set()).add(called.rsplit(".", 1)[-1])
    found: set[tuple[str, tuple[str, ...]]] = set()
    for call in summary.nodes(ast.Call):
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "set_epoch" and call.args):
            continue
        names = tuple(sorted(_names_in(call.args[0])))
        if not any(_seedish(n) for n in names):
            continue
        receiver = dotted_expression(func.value)
        if receiver is None:
            continue
        holders = {receiver}
        for suffix in _SAMPLER_SUFFIXES:
            if receiver.endswith(suffix):
                holders.add(receiver[: -len(suffix)])
        for holder in holders:
            scope = _holder_scope(summary, call, holder)
            for function in built.get((scope, holder), ()):
                found.add((function, names))
    return found


def _holder_scope(summary: SyntaxSummary, node: ast.AST, name: str) -> ast.AST | None:
    """Where a name lives: ``self.x`` in the class, a plain name in the innermost function."""
    kinds: tuple[type[ast.AST], ...] = (ast.FunctionDef, ast.AsyncFunctionDef)
    if name.startswith("self."):
        kinds = (ast.ClassDef,)
    for ancestor in summary.ancestors(node):
        if isinstance(ancestor, kinds):
            return ancestor
    return None


def _names_in(node: ast.expr) -> set[str]:
    found: set[str] = set()
    for child in walk(node):
        if isinstance(child, (ast.Name, ast.Attribute)):
            dotted = dotted_expression(child)
            if dotted is not None:
                found.add(dotted)
    return found


def _import_stems(tree: ast.Module, path: str) -> tuple[str, ...]:
    """What a file imports, as path stems: ``feeds/factory`` for ``from feeds.factory import x``
    or ``from feeds import factory`` (matched against the end of a path), and an absolute stem
    for a relative import (``/root/feeds/factory`` for ``from .factory import x``)."""
    here = os.path.dirname(path)
    stems: set[str] = set()
    for node in statements(tree):
        if isinstance(node, ast.Import):
            stems.update(alias.name.replace(".", "/") for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = (node.module or "").replace(".", "/")
            if node.level:
                base = here
                for _ in range(node.level - 1):
                    base = os.path.dirname(base)
                module = f"{base}/{module}" if module else base
            stems.add(module)
            stems.update(f"{module}/{alias.name}" for alias in node.names)
    return tuple(sorted(s for s in stems if s))


def _seed_methods(summary: SyntaxSummary, path: str) -> set[tuple[str, str, str]]:
    """Seed-named methods that are not properties: ``self.seed`` there is a bound method."""
    found = set()
    for klass in summary.nodes(ast.ClassDef):
        for item in klass.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _seedish(item.name):
                decorators = {dotted_expression(d) or "" for d in item.decorator_list}
                if not any(d.rsplit(".", 1)[-1].endswith("property") for d in decorators):
                    found.add((klass.name, path, item.name))
    return found


def parameter_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function's parameters bind (``*args`` and ``**kwargs`` aside)."""
    arguments = function.args
    return {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}


def collect_inits(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    """Each class's own ``__init__`` in one file, and whether a seed can be passed to it."""
    inits = _inits(SyntaxSummary.of(tree), path)
    return {FACT_INITS: sorted(inits, key=lambda i: (i.path, i.name))}


def _inits(summary: SyntaxSummary, path: str) -> list[InitSignature]:
    found = []
    for klass in summary.nodes(ast.ClassDef):
        for item in klass.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                takes = "seed" in parameter_names(item) or item.args.kwarg is not None
                found.append(InitSignature(klass.name, file_key(path), takes))
    return found


SEED_FACTS = FactCollector(
    "seeds", (("seed", "Seed", "SEED"),), collect_seed_facts,
    kinds=(FACT_KEYS, FACT_IMPORTS, FACT_SEED_METHODS, FACT_SEEDED_EPOCH),
)
# Read from every file that may define a class of the sampler family (the class facts' words)
# and an ``__init__``, whatever else it spells: a subclass whose file never says "seed" takes no
# seed parameter, and the fix must not pass it one (it may still take ``**kwargs``).
INIT_FACTS = FactCollector(
    "sampler inits", (CLASS_FACT_WORDS, ("__init__",)), collect_inits, kinds=(FACT_INITS,)
)
# What :func:`seed_keys` reads: the seed facts, and the re-exports of the packages on the way
# to a module (:func:`_packages_exporting`).
SEED_KEY_COLLECTORS = (SEED_FACTS, PACKAGE_NAMES)


def may_fix_the_seed(call: ast.Call) -> bool:
    """A sampler construction that may shuffle with torch's default seed or a literal one (the
    shape of SL301): no ``**kwargs``, ``shuffle`` not literally ``False``, and no seed or an
    integer literal."""
    if any(keyword.arg is None for keyword in call.keywords) or not may_shuffle(call):
        return False
    seed = argument(call, SEED_POSITION, "seed")
    return seed is None or is_constant(seed, int)


def collect_named_constructions(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    summary = SyntaxSummary.of(tree)
    calls = distributed_sampler_calls(summary.nodes(ast.Call), summary)
    here = [file_key(path)]
    return {
        FACT_NAMED: here if calls else [],
        FACT_FIXED_SEED: here if any(may_fix_the_seed(call) for call in calls) else [],
    }


#: The words of a file that may build a distributed sampler by name (the third-party ones of
#: ``loader_calls.DISTRIBUTED_SAMPLERS`` spell "DistributedSampler" too). A file without them
#: can only build a project subclass: ``sampler_family.calls_project_subclass`` judges that
#: from its text.
NAMED_SAMPLER_WORDS = ("DistributedSampler", "DistributedLengthGroupedSampler")

NAMED_SAMPLER_FACTS = FactCollector(
    "distributed samplers built by name",
    (NAMED_SAMPLER_WORDS,),
    collect_named_constructions,
    kinds=(FACT_NAMED, FACT_FIXED_SEED),
)


# ------------------------------------------------------------------------------------------------
# Questions


def builds_named_sampler(index: ProjectIndex, path: str, fixed_seed: bool = False) -> bool:
    """Whether the file at ``path`` builds a ``DistributedSampler`` by its name (``fixed_seed``:
    one whose seed may be fixed, :func:`may_fix_the_seed`)."""
    kind = FACT_FIXED_SEED if fixed_seed else FACT_NAMED
    # A question about one file: an index built on demand reads that file alone, not every
    # file of the project that builds a sampler (a pre-commit run over one recipe read them all).
    return bool(facts_in_file(index, kind, file_key(path), None))


def seed_keys(
    index: ProjectIndex, namespace: str, path: str, imported: tuple[str, ...]
) -> list[str]:
    """The seed keys defined or read on ``namespace`` (``TRAIN.SEED``) in the file at ``path``,
    in a file it imports (``imported``: its import stems) or in a file that imports it: in a tree
    of independent example scripts, one script's ``args.data_seed`` says nothing about
    another's ``args``."""
    here = file_key(path)
    # A key on `namespace` comes from code that spells it, or, for the assumed name of the
    # parsed command line, from an option declared with `add_argument`.
    tokens = (namespace, OPTION_CALL) if namespace == PARSED_NAMESPACE else (namespace,)
    found: set[str] = set()
    for token in tokens:
        facts, imports, modules = _facts_near(index, token, here, imported)
        found.update(
            key for head, key, where in facts
            if head == namespace
            and (where == here or _related(imports, modules, where, imported))
        )
    return sorted(found)


def _facts_near(
    index: ProjectIndex, token: str, here: str, imported: tuple[str, ...]
) -> tuple[list[tuple[str, str, str]], dict[str, tuple[str, ...]], tuple[str, ...]]:
    """The seed keys a question about ``token`` from the file ``here`` may use, the import
    stems of the files that may import ``here``, and the modules an import of ``here`` may name:
    ``here`` and the packages that re-export it (:func:`_packages_exporting`). The keys are
    those of ``here``, of the files its import stems name, and of the files that spell both
    ``token`` and the name of one of those modules (an import of it spells it). Only those
    files are read (ProjectIndex.get_for). A package's ``__init__.py``, or a module beside a
    folder of its own name, can be imported without its name spelled (``from . import x``):
    then every file that spells ``token``."""
    module = here[:-3] if here.endswith(".py") else here
    name = os.path.basename(module)
    if name == "__init__" or not name.isidentifier() or os.path.isdir(module):
        return index.get_for(FACT_KEYS, token), _imports_for(index, token), (here,)
    both = f"{token}+{name}"
    facts: list[tuple[str, str, str]] = [*facts_in_file(index, FACT_KEYS, here, 2)]
    for target in _stem_files(here, imported):
        facts += facts_in_file(index, FACT_KEYS, target, 2)
    facts += index.get_for(FACT_KEYS, both)
    imports = _imports_for(index, both)
    modules = [here]
    for package in _packages_exporting(index, here):
        spelled = f"{token}+{os.path.basename(os.path.dirname(package))}"
        facts += index.get_for(FACT_KEYS, spelled)
        imports = {**imports, **_imports_for(index, spelled)}
        modules.append(package)
    return facts, imports, tuple(modules)


# How many packages up a module's import is followed through re-exports: `data/__init__.py`
# importing from `data/build.py`, and `src/__init__.py` from `src/data` above it.
_PACKAGE_HOPS = 3


def _packages_exporting(index: ProjectIndex, here: str) -> list[str]:
    """The ``__init__.py`` of ``here``'s package when it imports from ``here``, and the one
    above it when that imports from this package, and so on: ``from data import build_loader``
    reaches ``data/build.py`` through ``from .build import build_loader`` in
    ``data/__init__.py``, and spells ``data``, never ``build`` (Swin-Transformer's ``main.py``,
    whose seed then never reached the question about its sampler). Only each ``__init__.py``
    on the way is read (:data:`PACKAGE_NAMES`)."""
    memo: dict[str, list[str]] = index.__dict__.setdefault("_sl3_packages", {})
    if here in memo:  # asked once per namespace and token of every candidate sampler
        return memo[here]
    found: list[str] = []
    memo[here] = found
    current = here
    for _ in range(_PACKAGE_HOPS):
        folder = os.path.dirname(_module_of(current))
        if not os.path.basename(folder).isidentifier():
            break  # not a folder an import can name
        package = os.path.join(folder, "__init__.py")
        rows = facts_in_file(index, FACT_PACKAGE_NAMES, package, 0)
        if not rows:
            break
        stems = import_stems({source for _, source in rows[-1][2]}, package)
        if not any(_names(stem, current, package) for stem in stems):
            break
        found.append(package)
        current = package
    return found


def _stem_files(here: str, imported: tuple[str, ...]) -> list[str]:
    """The files the import stems of the file ``here`` may name (:func:`_names`): a relative
    stem is the module itself; an absolute one starts at ``here``'s folder or a folder above."""
    folder = PurePath(here).parent
    folders = [str(path) for path in (folder, *folder.parents)]
    files: list[str] = []
    for stem in imported:
        modules = [stem] if stem.startswith("/") else [
            f"{folder.rstrip('/')}/{stem}" for folder in folders
        ]
        for module in modules:
            files += [f"{module}.py", f"{module}/__init__.py"]
    return list(dict.fromkeys(files))


def _imports_for(index: ProjectIndex, token: str) -> dict[str, tuple[str, ...]]:
    """Each file's import stems, of the files that hold ``token`` (memoised per index)."""
    tables: dict[str, dict[str, tuple[str, ...]]] = index.__dict__.setdefault("_sl3_imports", {})
    table = tables.get(token)
    if table is None:
        table = tables[token] = dict(index.get_for(FACT_IMPORTS, token))
    return table


def _related(
    imports: dict[str, tuple[str, ...]], modules: tuple[str, ...], where: str,
    imported: tuple[str, ...],
) -> bool:
    """Whether the file ``where`` is one that ``modules[0]`` (the file asking) imports
    (``imported``: its stems) or one that imports one of ``modules`` (``imports``: each file's
    stems; :func:`_facts_near`)."""
    here = modules[0]
    return any(_names(stem, where, here) for stem in imported) or any(
        _names(stem, module, where) for stem in imports.get(where, ()) for module in modules
    )


def imported_modules(tree: ast.Module) -> set[str]:
    """The ``ast`` twin of what a libcst ``ImportTable`` holds of the file's imports, as
    ``seeds._project_key`` reads it (its ``modules`` and its aliases' targets): every module
    imported or imported from, and the full name of every name imported (``.x`` for ``from .
    import x``). Names later rebound are kept too: more stems only relate more files."""
    found: set[str] = set()
    for node in statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
                found.add(alias.name if alias.asname else alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            module = imported_module(node)
            found.add(module)
            for alias in node.names:
                if alias.name == "*":
                    break  # a star binds no alias
                if module.endswith("."):
                    found.add(module + alias.name)
                else:
                    found.add(f"{module}.{alias.name}" if module else alias.name)
    return found


def import_stems(modules: set[str], path: str) -> tuple[str, ...]:
    """:func:`_import_stems` for the dotted modules of a libcst ``ImportTable`` (``.factory``,
    ``feeds.factory.make``)."""
    here = os.path.dirname(file_key(path))
    stems = set()
    for module in modules:
        dots = len(module) - len(module.lstrip("."))
        rest = module[dots:].replace(".", "/")
        if dots:
            base = here
            for _ in range(dots - 1):
                base = os.path.dirname(base)
            rest = f"{base}/{rest}" if rest else base
        if rest:
            stems.add(rest)
    return tuple(sorted(stems))


def _names(stem: str, path: str, importer: str) -> bool:
    """An import stem of the file at ``importer`` names the module at ``path``: relative stems
    are already absolute; an absolute import resolves from the importer's own folder (a script's
    folder is on ``sys.path``) or a folder above it (a package or ``src/`` root). Never by file
    name alone: ``import utils`` in one example script is not another example's ``utils.py``."""
    module = _module_of(path)
    if stem.startswith("/"):
        return module == stem
    if not module.endswith("/" + stem):
        return False
    root = module[: -len(stem) - 1]
    return importer.startswith(root + "/")


def _module_of(path: str) -> str:
    """The module a file is, as a path: ``pkg/data`` for ``pkg/data.py`` and for
    ``pkg/data/__init__.py``."""
    module = path[:-3] if path.endswith(".py") else path
    return module[: -len("/__init__")] if module.endswith("/__init__") else module


def is_seed_method(index: ProjectIndex, klass: str, path: str, name: str) -> bool:
    # A class's methods come from the file that spells `class klass` (ProjectIndex.get_for).
    wanted = (klass, file_key(path), name)
    return any(tuple(f) == wanted for f in index.get_for(FACT_SEED_METHODS, klass))


def seeded_epoch_names(index: ProjectIndex, function: str) -> list[tuple[str, ...]]:
    """For each ``set_epoch`` that reaches what ``function`` returns: the names in its argument."""
    # Made where `x = function(...)` is assigned: the file spells the function's name.
    return [
        names for name, names in index.get_for(FACT_SEEDED_EPOCH, function) if name == function
    ]


def init_paths(index: ProjectIndex, name: str) -> set[str]:
    """The files that define a class ``name`` with an ``__init__`` of its own (bases or not)."""
    return {fact.path for fact in classes_named(index, FACT_INITS, name)}


def init_takes_seed(index: ProjectIndex, name: str, path: str) -> bool | None:
    """Whether class ``name`` (defined at ``path``) overrides ``__init__`` with a ``seed`` or
    ``**kwargs`` parameter; ``None`` when it does not override ``__init__``."""
    key = file_key(path)
    inits: list[InitSignature] = classes_named(index, FACT_INITS, name)  # `class name` files
    for fact in inits:
        if fact.path == key:
            return bool(fact.takes_seed)
    return None
