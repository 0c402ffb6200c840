"""Seeds: which expressions differ between ranks, and which shared seed is visible (SL3xx)."""

from __future__ import annotations

import libcst as cst

from sampler_lint.context import FileContext
from sampler_lint.imports import dotted_name
from sampler_lint.matching import get_arg, is_rank_like, single_assignment
from sampler_lint.walk import descendants

# Calls whose value differs between processes.
_PER_PROCESS_CALLS = ("time.time", "time.time_ns", "os.getpid", "time.perf_counter")
_PER_PROCESS_MODULES = ("uuid", "random", "numpy.random", "np.random", "secrets")
# Calls that seed everything: their argument is the run's shared seed.
SEEDING_CALLS = (
    "manual_seed", "seed_everything", "set_seed", "fix_random_seeds", "set_random_seed",
)
# DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)
SEED_POSITION = 4


def seed_argument(call: cst.Call) -> cst.Arg | None:
    return get_arg(call, SEED_POSITION, "seed")


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    return list(descendants(node))


def rank_dependent_part(
    context: FileContext, expr: cst.BaseExpression, *, follow: bool = True
) -> cst.BaseExpression | None:
    """The sub-expression that makes ``expr`` differ between ranks (a rank, the time, the pid,
    ``random``...), through one local assignment; ``None`` when it is the same on every rank."""
    for node in _walk(expr):
        if not isinstance(node, (cst.Name, cst.Attribute, cst.Call)):
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
                if not _seeded_module(context, called):
                    return node
    if follow and isinstance(expr, cst.Name):
        value = single_assignment(context, expr)
        if value is not None and rank_dependent_part(context, value, follow=False) is not None:
            return expr
    return None


def _seeded_module(context: FileContext, called: str) -> bool:
    """``random.seed(args.seed)`` earlier in the module makes ``random.*`` the same on every
    rank (when the seed itself is)."""
    module = called.rsplit(".", 1)[0]
    code = context.source
    return f"{module.rsplit('.', 1)[-1]}.seed(" in code


def visible_shared_seed(context: FileContext, node: cst.CSTNode) -> str | None:
    """The code of a seed that is the same on every rank and visible at ``node``: a local,
    parameter or module global named like a seed, ``self.<seed>`` set in the class, an
    ``<ns>.seed`` attribute the code reads, or the argument of a seeding call in the module."""
    scopes = [a for a in context.ancestors(node) if isinstance(a, cst.FunctionDef)]
    # Parameters and locals of the function and the functions around it, innermost first.
    for function in scopes:
        for param in _parameters(function):
            if is_shared_seed_name(context, param):
                return param
        for name, values in context.assignments(function).items():
            if "." not in name and is_shared_seed_name(context, name) and _shared(context, values):
                return name
    for name, values in context.assignments(context.module).items():
        if "." not in name and is_shared_seed_name(context, name) and _shared(context, values):
            return name
    klass = context.enclosing_class(node)
    if klass is not None:
        for name, values in context.assignments(klass).items():
            if name.startswith("self.") and is_shared_seed_name(context, name) and _shared(
                context, values
            ):
                return name
    # `args.seed`-style attributes the code reads, and seeding calls' arguments.
    for candidate in _walk(context.module):
        if isinstance(candidate, cst.Attribute) and isinstance(candidate.value, cst.Name):
            dotted = dotted_name(candidate)
            if dotted and dotted.split(".")[0] not in ("self", "torch", "np", "random"):
                seedlike = is_shared_seed_name(context, candidate.attr.value)
                if seedlike and _reachable(context, node, candidate):
                    return dotted
        if isinstance(candidate, cst.Call) and candidate.args:
            called = (dotted_name(candidate.func) or "").rsplit(".", 1)[-1]
            value = candidate.args[0].value
            if called in SEEDING_CALLS and isinstance(value, (cst.Name, cst.Attribute)):
                if rank_dependent_part(context, value) is None and _reachable(
                    context, node, value
                ):
                    return dotted_name(value)
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
    for function in (a for a in context.ancestors(node) if isinstance(a, cst.FunctionDef)):
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == shared:
                default = param.default
                return default is None or (isinstance(default, cst.Name)
                                           and default.value == "None")
    return False


def _parameters(function: cst.FunctionDef) -> list[str]:
    params = function.params
    return [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]


def _shared(context: FileContext, values: list[cst.BaseExpression]) -> bool:
    return bool(values) and all(rank_dependent_part(context, v) is None for v in values)


def _reachable(context: FileContext, node: cst.CSTNode, candidate: cst.CSTNode) -> bool:
    """A name read at ``candidate`` can be read at ``node``: the head of its dotted name is a
    parameter or local of a function around ``node``, or a module-level name."""
    head = (dotted_name(candidate) or "").split(".")[0]
    if not head:
        return False
    for function in (a for a in context.ancestors(node) if isinstance(a, cst.FunctionDef)):
        if head in _parameters(function) or head in context.assignments(function):
            return True
    module_names = context.assignments(context.module)
    return head in module_names or head in context.imports.aliases
