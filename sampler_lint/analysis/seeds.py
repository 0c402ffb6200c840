"""Seeds: which expressions differ between ranks, and which shared seed is visible (SL3xx)."""

from __future__ import annotations

import ast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import class_names_in, import_may_name, may_be_project_module
from sampler_lint.analysis.loader_calls import (
    chosen_sampler_cst,
    constructed,
    constructor,
    is_distributed_sampler,
    is_seedless_library_sampler,
    loader_sampler_argument,
)
from sampler_lint.analysis.loader_facts import file_key
from sampler_lint.analysis.matching import get_arg, is_rank_like
from sampler_lint.analysis.sampler_family import (
    CLASS_FACTS,
    chain_of,
    constructed_class,
    find_class,
    lineage,
    project_classes_named,
    project_subclass_names,
    torch_bases_of,
)
from sampler_lint.analysis.seed_facts import (
    INIT_FACTS,
    OPTION_CALL,
    SEED_POSITION,
    import_stems,
    init_paths,
    init_takes_seed,
    is_seed_method,
    seed_keys,
    seeded_epoch_names,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary, names_rank, per_tree
from sampler_lint.analysis.tree import bound_on_every_path, descendants, scope_body_statements
from sampler_lint.rule import FileContext

# Calls whose value differs between processes.
_PER_PROCESS_CALLS = ("time.time", "time.time_ns", "os.getpid", "time.perf_counter")
_PER_PROCESS_MODULES = ("uuid", "random", "numpy.random", "np.random", "secrets")
# The first names of the two above, for the pre-filter's twin (os.getpid, numpy.random).
_PER_PROCESS_ROOTS = ("time", "os", "uuid", "random", "numpy", "np", "secrets")
# Calls that seed everything: their argument is the run's shared seed.
SEEDING_CALLS = (
    "manual_seed", "seed_everything", "set_seed", "fix_random_seeds", "set_random_seed",
)
def seed_argument(call: cst.Call) -> cst.Arg | None:
    return get_arg(call, SEED_POSITION, "seed")


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    return list(descendants(node))


def rank_dependent_part(
    context: FileContext, expr: cst.BaseExpression, *, follow: bool = True,
    trust_seeding: bool = True,
) -> cst.BaseExpression | None:
    """The sub-expression that makes ``expr`` differ between ranks (a rank, the time, the pid,
    ``random``... unless the module seeds it first: :func:`_seeded_before`; never, without
    ``trust_seeding``), through one local assignment; ``None`` when it is the same on every
    rank. A keyword's name and a lambda's parameter are names, not values (``f(seed, rank=0)``
    is the same on every rank)."""
    nodes = _walk(expr)
    labels = {id(n.keyword) for n in nodes if isinstance(n, cst.Arg) and n.keyword is not None}
    labels |= {id(n.name) for n in nodes if isinstance(n, cst.Param)}
    for node in nodes:
        if not isinstance(node, (cst.Name, cst.Attribute, cst.Call)) or id(node) in labels:
            continue
        named = isinstance(node, (cst.Name, cst.Attribute))
        if named and is_rank_like(context, node, follow=False):
            return node
        if isinstance(node, cst.Call):
            if is_rank_like(context, node, follow=False):
                return node
            called = context.qualified_name(node.func) or ""
            if called in _PER_PROCESS_CALLS or any(
                called.startswith(module + ".") for module in _PER_PROCESS_MODULES
            ):
                if not (trust_seeding and _seeded_before(context, called, node)):
                    return node
    if follow and isinstance(expr, cst.Name):
        # Any assignment that reaches this read (`seed = cfg.seed`, later on some path
        # `seed = seed + rank`) may be the value used.
        for value in reaching_values(context, expr):
            culprit = rank_dependent_part(
                context, value, follow=False, trust_seeding=trust_seeding
            )
            if culprit is not None:
                return culprit  # inside the assigned value, so the message can name it
    return None


def may_differ_between_ranks(expr: ast.expr, summary: SyntaxSummary) -> bool:
    """For syntax pre-filters, the ``ast`` twin of :func:`rank_dependent_part`, looser: a rank
    name or call, or a call reached from a module whose values differ per process (``time``,
    ``os``, ``random``, ``numpy``, ``uuid``, ``secrets``, under any import alias), in ``expr``
    or, for a plain name, in any value the file assigns it (the visitor follows the values that
    reach the read, in its scope)."""
    if _names_per_process_value(expr, summary):
        return True
    if type(expr) is not ast.Name:
        return False
    return any(
        _names_per_process_value(value, summary)
        for value in _values_by_name(summary).get(expr.id, ())
    )


def _names_per_process_value(expr: ast.expr, summary: SyntaxSummary) -> bool:
    roots = _per_process_roots(summary)
    for node in ast.walk(expr):
        kind = type(node)
        if kind is ast.Name or kind is ast.Attribute:
            if names_rank(node, summary.vocabulary):  # type: ignore[arg-type]
                return True
        elif kind is ast.Call:
            call: ast.Call = node  # type: ignore[assignment]
            if names_rank(call, summary.vocabulary):
                return True
            head = call.func
            while type(head) is ast.Attribute:
                head = head.value
            if type(head) is ast.Name and head.id in roots:
                return True
    return False


def _per_process_roots(summary: SyntaxSummary) -> frozenset[str]:
    """The first names of calls that may resolve into a per-process module: the modules' own
    names (``np.random`` unimported qualifies as itself) and every name an import of them binds."""
    def make() -> frozenset[str]:
        roots = set(_PER_PROCESS_ROOTS)
        for statement in summary.nodes(ast.Import):
            for alias in statement.names:
                if alias.name.split(".")[0] in _PER_PROCESS_ROOTS:
                    roots.add(alias.asname or alias.name.split(".")[0])
        for found in summary.nodes(ast.ImportFrom):
            whole = (found.module or "").split(".")[0] in _PER_PROCESS_ROOTS
            roots.update(
                alias.asname or alias.name for alias in found.names
                if whole or alias.name in _PER_PROCESS_ROOTS  # `from . import random`
            )
        return frozenset(roots)

    return per_tree(summary.tree, "per process roots", make)


def _values_by_name(summary: SyntaxSummary) -> dict[str, list[ast.expr]]:
    """Every value the file assigns to each name, augmented assignments included (the
    visitor's reaching values count ``seed += rank``)."""
    def make() -> dict[str, list[ast.expr]]:
        values = {name: list(found) for name, found in summary.values_by_target().items()}
        for augmented in summary.nodes(ast.AugAssign):
            if type(augmented.target) is ast.Name:
                values.setdefault(augmented.target.id, []).append(augmented.value)
        return values

    return per_tree(summary.tree, "values by name", make)


def reaching_values(context: FileContext, name: cst.Name) -> list[cst.BaseExpression]:
    """The values assigned to ``name`` in its scope that may reach this read: the last
    assignment before it in a block around the read, and every assignment after that one (in a
    branch, so possibly run) that still precedes the read. Augmented assignments
    (``seed += rank``) count as values. With no assignment before the read (a loop carrying the
    value round), every assignment of the scope."""
    scope = context.enclosing_scope(name)
    use = context.enclosing_statement(name)
    every: list[tuple[cst.CSTNode, cst.BaseExpression, bool]] = []  # statement, value, kills
    before = 0
    for statement in scope_body_statements(scope):
        if statement is use:
            before = len(every)
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                every.extend((statement, v, k) for v, k in _assigned_values(small, name.value))
    earlier = every[:before]
    if not earlier:
        return [value for _, value, _ in every]
    around = set(map(id, context.ancestors(name)))
    start = 0
    for i, (statement, _, kills) in enumerate(earlier):
        if kills and id(context.parent(statement)) in around:
            start = i  # assigned in a block that holds the read: earlier values are dead
    return [value for _, value, _ in earlier[start:]]


def _assigned_values(
    small: cst.BaseSmallStatement, name: str
) -> list[tuple[cst.BaseExpression, bool]]:
    """(value, replaces the previous value) for each assignment of ``name`` in one statement."""
    if isinstance(small, cst.Assign):
        return [(small.value, True) for t in small.targets if dotted_name(t.target) == name]
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        return [(small.value, True)] if dotted_name(small.target) == name else []
    if isinstance(small, cst.AugAssign) and dotted_name(small.target) == name:
        return [(small.value, False)]
    return []


def class_like(func: ast.expr) -> bool:
    """For syntax pre-filters: ``Name(...)`` or ``module.Name(...)`` with a capitalised last
    name, which may construct a project subclass of ``DistributedSampler``."""
    if isinstance(func, ast.Subscript):
        func = func.value
    last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return last[:1].isupper()


#: What :func:`is_distributed_construction` reads: a rule that asks it lists these collectors.
CONSTRUCTION_COLLECTORS = (CLASS_FACTS, INIT_FACTS)


def is_distributed_construction(context: FileContext, call: cst.Call) -> bool:
    """``call`` builds a ``DistributedSampler`` a seed can be passed to: torch's or a known
    third-party subclass by name (not one known to take no seed: catalyst's
    ``DistributedSamplerWrapper``), unless the name is the project's own class (a copy deriving
    from ``Sampler``, which may take no seed at all: judged as a subclass is); or a project
    subclass at any depth (through the index). A project class qualifies when it keeps torch's
    ``__init__``, or its own takes ``seed`` or ``**kwargs`` and it is given at most the dataset
    positionally (its own ``__init__`` may order the rest otherwise)."""
    name = constructed(call)
    if name is None:
        return False
    if chosen_sampler_cst(context, call):
        return True  # `sampler_cls or DistributedSampler`: torch's unless the caller says
    index, path = context.index, str(context.path)
    simple = name.rsplit(".", 1)[-1]
    if is_distributed_sampler(name):
        defined_at = _own_class_file(context, call, simple)
        if defined_at is None:  # the library's class: torch's, or one known to take no seed
            return not is_seedless_library_sampler(context.qualified_name(constructor(call)))
        return _takes_a_seed(context, call, simple, defined_at)
    if name.split(".")[0] == "self":
        return False
    if simple not in project_subclass_names(index, "DistributedSampler"):
        # No project subclass of that name: one question about every subclass (which the
        # index stage asked already) instead of one about each class-like call of the file.
        return False
    if "DistributedSampler" not in torch_bases_of(index, name, path):
        return False
    found = constructed_class(index, name, path)
    return found is not None and _takes_a_seed(context, call, found.name, found.path)


def _own_class_file(context: FileContext, call: cst.Call, name: str) -> str | None:
    """The project file defining the class that ``call``, named like a library class (``name``:
    its last name), builds: this file, when it defines a class of that name, or one the import
    of the name leads to by module path (``from .samplers import DistributedSampler``, a
    package that re-exports it included). ``None``: the library's class, or a name the file
    neither defines nor imports from the project."""
    index, here = context.index, file_key(str(context.path))
    defined: set[str] | None = context.__dict__.get("_class_names")
    if defined is None:  # once per file: a test file builds dozens of samplers
        defined = context.__dict__["_class_names"] = class_names_in(context.source)
    if name in defined and (
        find_class(index, name, here) is not None or here in init_paths(index, name)
    ):
        return here  # (a docstring line that starts with `class DistributedSampler` is none)
    module = (context.qualified_name(constructor(call)) or "").rpartition(".")[0]
    if not module or not may_be_project_module(index, here, module):
        return None  # not imported, or a library's (torch's, torchdata's): no question asked
    defining = {cls.path for cls in project_classes_named(index, name)}
    defining |= init_paths(index, name)  # a class without bases has no class facts
    return next(
        (where for where in sorted(defining) if import_may_name(index, here, module, where)),
        None,
    )


def _takes_a_seed(context: FileContext, call: cst.Call, name: str, path: str) -> bool:
    """Whether ``call``, which builds the project class ``name`` defined at ``path``, may be
    given ``seed=``: the nearest ``__init__`` up its project bases takes ``seed`` or
    ``**kwargs`` and the call passes at most the dataset positionally, or none overrides torch's
    ``DistributedSampler``'s (a class without bases, or deriving from ``Sampler``, that
    defines none takes no seed)."""
    index = context.index
    cls = find_class(index, name, path)  # None: a class without bases
    steps = [(k.name, k.path) for k in lineage(index, cls)] if cls is not None else [(name, path)]
    for step, where in steps:
        takes = init_takes_seed(index, step, where)
        if takes is not None:
            positional = [a for a in call.args if a.keyword is None and not a.star]
            return takes and len(positional) <= 1
    return cls is not None and "DistributedSampler" in chain_of(index, cls).torch_bases


def seed_reaches_set_epoch(
    context: FileContext, node: cst.Call, factory: cst.FunctionDef | None
) -> bool:
    """The run's seed reaches this sampler's order through ``set_epoch(seed + epoch)``
    (``DistributedSampler`` shuffles with ``seed + epoch``): called on the sampler, or on
    ``L.sampler`` of a loader built from it, in the same function; or, for a factory, on what a
    caller anywhere in the project got back from it."""
    if factory is not None and any(
        any(is_shared_seed_name(context, n) for n in names)
        for names in seeded_epoch_names(context.index, factory.name.value)
    ):
        return True
    holder = _assigned_to(context, node)
    if holder is None:
        return False
    klass = context.enclosing_class(node) if holder.startswith("self.") else None
    scope: cst.CSTNode = klass or context.enclosing_function(node) or context.module
    receivers = {holder}
    for statement in _walk(scope):  # a class's methods too, for `self.loader`
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
                sampler = loader_sampler_argument(small.value)
                if sampler is not None and dotted_name(sampler) == holder:
                    for target in small.targets:
                        loader = dotted_name(target.target)
                        if loader is not None:
                            receivers.update(loader + s for s in _SAMPLER_SUFFIXES)
    for call in _walk(scope):
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "set_epoch"
            and call.args
            and dotted_name(call.func.value) in receivers
        ):
            names = [dotted_name(n) or "" for n in _walk(call.args[0].value)]
            if any(is_shared_seed_name(context, n) for n in names if n):
                return True
    return False


_SAMPLER_SUFFIXES = (".sampler", ".batch_sampler.sampler", ".batch_sampler")


def _assigned_to(context: FileContext, node: cst.Call) -> str | None:
    """``order = DistributedSampler(...)`` -> ``"order"``."""
    parent = context.parent(node)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        return dotted_name(parent.targets[0].target)
    return None


def _seeded_before(context: FileContext, called: str, draw: cst.Call) -> bool:
    """Whether the module seeds the module ``called`` draws from (``random.seed(args.seed)``
    for ``random.randint``, ``np.random.seed(...)`` for ``np.random.rand``) before ``draw``, in
    the file's order, with a value the same on every rank: then the draw is the same on every
    rank too. ``np.random.seed(seed)`` does not seed ``random`` (a text search for
    ``random.seed(`` took it for one: EVA's `args.seed = random.randint(0, 1e6)`, one draw per
    rank, passed for a shared seed)."""
    module = called.rsplit(".", 1)[0]
    order = _node_order(context)
    at = order.get(id(draw), len(order))
    for position, call in _seeding_calls(context):
        if position >= at:
            break
        if call.args and context.qualified_name(call.func) == f"{module}.seed" \
                and rank_dependent_part(context, call.args[0].value, trust_seeding=False) is None:
            return True
    return False


def _node_order(context: FileContext) -> dict[int, int]:
    """The position of each node of the file in source order, by id."""
    found: dict[int, int] | None = context.__dict__.get("_seed_order")
    if found is None:
        nodes, _ = _module_nodes(context)
        found = context.__dict__["_seed_order"] = {id(n): i for i, n in enumerate(nodes)}
    return found


def _seeding_calls(context: FileContext) -> list[tuple[int, cst.Call]]:
    """``(position, call)`` of each call of a function named ``seed`` in the file, in order."""
    found: list[tuple[int, cst.Call]] | None = context.__dict__.get("_seed_calls")
    if found is None:
        nodes, _ = _module_nodes(context)
        found = context.__dict__["_seed_calls"] = [
            (position, node) for position, node in enumerate(nodes)
            if isinstance(node, cst.Call) and (
                (isinstance(node.func, cst.Attribute) and node.func.attr.value == "seed")
                or (isinstance(node.func, cst.Name) and node.func.value == "seed")
            )
        ]
    return found


def visible_shared_seed(context: FileContext, node: cst.CSTNode) -> str | None:
    """The code of a seed that is the same on every rank and visible at ``node``: a local,
    parameter or module global named like a seed, ``self.<seed>`` set in the class, an
    ``<ns>.seed`` attribute the code reads, or the argument of a seeding call in the module."""
    scopes = [a for a in context.ancestors(node) if isinstance(a, cst.FunctionDef)]
    # Parameters and locals of the function and the functions around it, innermost first.
    for function in scopes:
        for param in _parameters(function):
            if is_shared_seed_name(context, param) and not _made_rank_dependent(
                context, param, function
            ):
                return param
        for name, values in context.assignments(function).items():
            if "." not in name and is_shared_seed_name(context, name) and _shared(
                context, values
            ) and _bound_before(context, function, name, node) and not _made_rank_dependent(
                context, name, function
            ):
                return name
    for name, values in context.assignments(context.module).items():
        if "." not in name and is_shared_seed_name(context, name) and _shared(context, values):
            return name
    klass = context.enclosing_class(node)
    if klass is not None and scopes and "self" in _parameters(scopes[-1]):
        found = _self_seed(context, klass)
        if found is not None:
            return found
    # `args.seed`-style attributes the code reads, and seeding calls' arguments.
    nodes, methods = _module_nodes(context)
    for candidate in nodes:
        if id(candidate) in methods:
            continue  # `gen.manual_seed` is a method: a seed is a value
        if isinstance(candidate, cst.Attribute) and isinstance(candidate.value, cst.Name):
            dotted = dotted_name(candidate)
            if dotted and dotted.split(".")[0] not in ("self", "torch", "np", "random"):
                seedlike = is_shared_seed_name(context, candidate.attr.value)
                if seedlike and _reachable(context, node, candidate) and not (
                    _made_rank_dependent(context, dotted)
                ):
                    return dotted
        if isinstance(candidate, cst.Call) and candidate.args:
            called = dotted_name(candidate.func) or ""
            value = candidate.args[0].value
            if called.rsplit(".", 1)[-1] in SEEDING_CALLS and isinstance(
                value, (cst.Name, cst.Attribute)
            ) and _seeds_the_run(context, called):
                seed = dotted_name(value)
                if rank_dependent_part(context, value) is None and _reachable(
                    context, node, value
                ) and seed is not None and not _made_rank_dependent(context, seed):
                    return seed
    return _project_key(context, node, scopes)


def _made_rank_dependent(
    context: FileContext, name: str, function: cst.FunctionDef | None = None
) -> bool:
    """Whether ``function`` (``None``: any code of the file, for an attribute such as
    ``args.seed``, whose namespace object every function shares) gives ``name`` a value that
    differs between ranks, anywhere in it (``args.seed += rank``,
    ``seed = seed + dist.get_rank()``): passed to a DistributedSampler, such a seed gives each
    rank its own permutation and the shards overlap (SL302 reports that code)."""
    statements = (
        _module_statements(context) if function is None else scope_body_statements(function)
    )
    for statement in statements:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            for value, _ in _assigned_values(small, name):
                if rank_dependent_part(context, value) is not None:
                    return True
    return False


def _module_statements(context: FileContext) -> list[cst.CSTNode]:
    """Every simple statement line of the file, functions' and classes' included, once."""
    found: list[cst.CSTNode] | None = context.__dict__.get("_seed_statements")
    if found is None:
        nodes, _ = _module_nodes(context)
        found = context.__dict__["_seed_statements"] = [
            n for n in nodes if isinstance(n, cst.SimpleStatementLine)
        ]
    return found


def _seeds_the_run(context: FileContext, called: str) -> bool:
    """Whether a seeding call, named ``called`` (its dotted name), seeds the run rather than one
    generator: ``g.manual_seed(epoch)`` (a ``torch.Generator`` in a local or an attribute)
    seeds that generator with what it is given, an epoch or a worker's number, not the run's
    seed. ``manual_seed`` counts when the name it is called through is imported
    (``torch.manual_seed``, ``th.cuda.manual_seed``, ``from torch import manual_seed``). SL303
    asks another question (is it the global RNG?) and keeps its own list."""
    if called.rsplit(".", 1)[-1] != "manual_seed":
        return True
    return called.split(".", 1)[0] in context.imports.aliases


def _module_nodes(context: FileContext) -> tuple[list[cst.CSTNode], set[int]]:
    """Every node of the file, and the ids of the called functions among them, listed once per
    file: each shuffling sampler without a seed looks through all of them (a test file builds
    dozens)."""
    found: tuple[list[cst.CSTNode], set[int]] | None = context.__dict__.get("_seed_nodes")
    if found is None:
        nodes = _walk(context.module)
        found = context.__dict__["_seed_nodes"] = (
            nodes, {id(c.func) for c in nodes if isinstance(c, cst.Call)}
        )
    return found


def _self_seed(context: FileContext, klass: cst.ClassDef) -> str | None:
    """``self.<seed>`` assigned in the class body or in ``__init__`` (rank-free), or assigned by
    a project base class: visible in every method."""
    tables = [context.assignments(klass)]
    for item in klass.body.body:
        if isinstance(item, cst.FunctionDef) and item.name.value == "__init__":
            tables.append(context.assignments(item))
    for table in tables:
        for name, values in table.items():
            if name.startswith("self.") and name.count(".") == 1 and is_shared_seed_name(
                context, name
            ) and _shared(context, values):
                return name
    fact = constructed_class(context.index, klass.name.value, str(context.path))
    if fact is not None:
        for base in lineage(context.index, fact)[1:]:
            for attr in base.assigned:
                if is_shared_seed_name(context, attr) and not is_seed_method(
                    context.index, base.name, base.path, attr
                ):
                    return f"self.{attr}"  # an attribute or a property: a value
    return None


def _project_key(
    context: FileContext, node: cst.CSTNode, scopes: list[cst.FunctionDef]
) -> str | None:
    """A seed key the project defines or reads on a namespace (``opts.SEED``, ``cfg.TRAIN.SEED``,
    ``args.seed`` from ``add_argument("--seed")``) that a function around the node holds as a
    parameter or local."""
    imports = context.imports
    modules = {*imports.modules, *imports.aliases.values()}
    imported = import_stems(modules, str(context.path))
    for function in scopes:
        held = [*_parameters(function), *(
            name for name in context.assignments(function)
            if _bound_before(context, function, name, node)
        )]
        for namespace in held:
            if "." in namespace or namespace in ("self", "cls"):
                continue
            for key in seed_keys(context.index, namespace, str(context.path), imported):
                seed = f"{namespace}.{key}"
                if is_shared_seed_name(context, key) and not _made_rank_dependent(context, seed):
                    return seed
    return None


_SHARED_PREFIXES = (
    "random", "base", "global", "data", "shuffle", "train", "run", "master", "manual", "rng",
    "sampler", "shared", "init", "default", "exp", "experiment",
)


def is_shared_seed_name(context: FileContext, name: str) -> bool:
    """Named like the run's seed: ``seed``, ``random_seed``, ``args.seed``; not a seed for a
    narrower purpose (``batch_choice_seed``, ``worker_seed``)."""
    last = name.rsplit(".", 1)[-1]
    if not context.vocabulary.is_seed_name(last):
        return False
    lowered = last.lower()
    if lowered in ("seed", "seed_value", "seed_val") or last in context.vocabulary.seed_names:
        return True
    return lowered.endswith("_seed") and lowered[: -len("_seed")] in _SHARED_PREFIXES


def may_be_none(context: FileContext, node: cst.CSTNode, shared: str) -> bool:
    """Whether the visible seed may be ``None`` at run time (``DistributedSampler`` then fails):
    an attribute (``args.seed`` often defaults to ``None``) or a parameter defaulting to
    ``None``. A local or global assigned a value is taken as set."""
    if "." in shared:
        return True
    param = _parameter(context, node, shared)
    return param is not None and (param.default is None or _is_none(param.default))


def _parameter(context: FileContext, node: cst.CSTNode, name: str) -> cst.Param | None:
    """The parameter ``name`` of the nearest function around ``node`` that has one."""
    for function in (a for a in context.ancestors(node) if isinstance(a, cst.FunctionDef)):
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == name:
                return param
    return None


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def defaults_to_none(context: FileContext, node: cst.CSTNode, shared: str) -> bool:
    """Whether the visible seed is shown to be ``None`` unless the run sets it: a parameter
    whose default is ``None``, or an attribute ``args.seed`` whose option this file declares
    with no default or ``default=None`` (``parser.add_argument("--seed", default=None,
    type=int)``, MoCo's and SimSiam's scripts, whose runs leave it unset by default)."""
    if "." not in shared:
        param = _parameter(context, node, shared)
        return param is not None and param.default is not None and _is_none(param.default)
    if OPTION_CALL not in context.source:
        return False  # (most files: no walk of the whole module for a declaration)
    attribute = shared.rsplit(".", 1)[-1]
    nodes, _ = _module_nodes(context)
    for call in nodes:
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                and call.func.attr.value == OPTION_CALL and _option_dest(call) == attribute:
            given = {arg.keyword.value: arg.value for arg in call.args if arg.keyword}
            required = given.get("required")
            if required is not None and not (
                isinstance(required, cst.Name) and required.value == "False"
            ):
                continue  # `required=True`: set by every run (or a value it cannot read)
            default = given.get("default")
            if default is None or _is_none(default):
                return True
    return False


def _option_dest(call: cst.Call) -> str | None:
    """The attribute an ``add_argument`` call declares: ``"--random-seed"`` -> ``random_seed``,
    ``dest=`` first (``seed_facts._option_key`` for libcst)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dest":
            value = arg.value.evaluated_value if isinstance(arg.value, cst.SimpleString) else None
            return value if isinstance(value, str) else None
    for arg in call.args:
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString):
            value = arg.value.evaluated_value
            if isinstance(value, str) and value.startswith("--"):
                return value[2:].replace("-", "_")
    return None


def _parameters(function: cst.FunctionDef) -> list[str]:
    params = function.params
    return [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]


def _shared(context: FileContext, values: list[cst.BaseExpression]) -> bool:
    return bool(values) and all(rank_dependent_part(context, v) is None for v in values)


def _bound_before(
    context: FileContext, function: cst.FunctionDef, name: str, node: cst.CSTNode
) -> bool:
    """A local ``name`` of ``function`` is bound on every path to ``node``
    (:func:`~sampler_lint.analysis.tree.bound_on_every_path`): speechbrain binds ``seed`` under
    ``if shuffle and not distributed:`` and builds its samplers under ``if distributed:``,
    where ``seed=seed`` would raise UnboundLocalError; and a seed bound after the sampler is
    built cannot be passed to it."""
    return bound_on_every_path(list(context.ancestors(node)), function, name, node)


def _reachable(context: FileContext, node: cst.CSTNode, candidate: cst.CSTNode) -> bool:
    """A name read at ``candidate`` can be read at ``node``: the head of its dotted name is a
    parameter or local of a function around ``node``, or a module-level name."""
    head = (dotted_name(candidate) or "").split(".")[0]
    if not head:
        return False
    for function in (a for a in context.ancestors(node) if isinstance(a, cst.FunctionDef)):
        if head in _parameters(function):
            return True
        if head in context.assignments(function):
            return _bound_before(context, function, head, node)
        if _bound_before(context, function, head, node):
            return True  # bound by unpacking: `args, _ = parser.parse_known_args()`
    module_names = context.assignments(context.module)
    return head in module_names or head in context.imports.aliases
