"""Samplers, loaders and epoch loops inside one function (SL202, SL203, SL5xx): which call builds
a distributed sampler, whether a loader shuffles, which argument is its sampler, what reads as an
evaluation loader, what loop is an epoch loop."""

from __future__ import annotations

import ast
from collections.abc import Iterable

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import dotted_expression
from sampler_lint.analysis.loader_facts import (
    BATCH_SAMPLER_POSITION,
    SAMPLER_POSITION,
    is_loader_constructor,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary, argument, per_tree
from sampler_lint.rule import FileContext

# DistributedSampler and the third-party subclasses RULES.md counts as one.
DISTRIBUTED_SAMPLERS = (
    "DistributedSampler", "StatefulDistributedSampler", "DistributedSamplerWrapper",
    "DistributedLengthGroupedSampler",
)
# Library classes among those whose __init__ takes no `seed` (catalyst's wrapper takes only
# `sampler, num_replicas, rank, shuffle`): `seed=` there is a TypeError, and the caller cannot
# choose the order. (top-level package of the import, class name)
SEEDLESS_LIBRARY_SAMPLERS = frozenset({("catalyst", "DistributedSamplerWrapper")})
# Things that call set_epoch themselves when handed a loader.
EPOCH_AWARE_CALLS = (
    "fit", "validate", "test", "predict", "prepare", "setup_dataloaders", "Trainer", "train",
    "Runner", "build_runner", "Engine",
)
_EVALUATION = ("val", "valid", "test", "eval", "predict", "dev")


def constructor(call: cst.Call) -> cst.BaseExpression:
    """The expression a call constructs from: ``X[T](...)`` counts as ``X(...)``."""
    func = call.func
    return func.value if isinstance(func, cst.Subscript) else func


def constructed(call: cst.Call) -> str | None:
    """The dotted name of what a call constructs (:func:`constructor`)."""
    return dotted_name(constructor(call))


def is_distributed_sampler(name: str | None) -> bool:
    return name is not None and name.rsplit(".", 1)[-1] in DISTRIBUTED_SAMPLERS


def is_seedless_library_sampler(qualified: str | None) -> bool:
    """Whether ``qualified`` (a construction's name through the file's imports) is a library
    class of :data:`SEEDLESS_LIBRARY_SAMPLERS`."""
    if qualified is None:
        return False
    package, simple = qualified.split(".", 1)[0], qualified.rsplit(".", 1)[-1]
    return (package, simple) in SEEDLESS_LIBRARY_SAMPLERS


def distributed_sampler_calls(
    calls: Iterable[ast.Call], summary: SyntaxSummary | None = None
) -> list[ast.Call]:
    """The ``ast`` calls that may construct a distributed sampler (:func:`constructed` is one
    dotted name; ``dotted_expression`` also looks through subscripts, so it finds more); with
    the ``summary``, also those of a class the function chooses at run time
    (:func:`chosen_sampler_names`)."""
    chosen = chosen_sampler_names(summary) if summary is not None else {}
    return [
        c for c in calls if is_distributed_sampler(dotted_expression(c.func)) or (
            type(c.func) is ast.Name and summary is not None
            and id(summary.enclosing_function(c)) in chosen.get(c.func.id, ())
        )
    ]


def chooses_distributed_sampler(value: ast.expr) -> bool:
    """``sampler_cls or DistributedSampler``, ``DistributedSampler if c else sampler_cls``: a
    class picked at run time whose default is a distributed sampler (ColossalAI's plugins:
    ``distributed_sampler_cls = distributed_sampler_cls or DistributedSampler``)."""
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        operands = value.values
    elif isinstance(value, ast.IfExp):
        operands = [value.body, value.orelse]
    else:
        return False
    return any(is_distributed_sampler(dotted_expression(operand)) for operand in operands)


def chosen_sampler_names(summary: SyntaxSummary) -> dict[str, frozenset[int]]:
    """Per name, the ids of the functions that bind it to a class chosen at run time
    (:func:`chooses_distributed_sampler`, or a parameter defaulting to a distributed sampler:
    ``def build(ds, sampler_cls=DistributedSampler)``). Once per tree."""
    def make() -> dict[str, frozenset[int]]:
        found: dict[str, set[int]] = {}
        assignments: list[ast.Assign | ast.AnnAssign] = [
            *summary.nodes(ast.Assign), *summary.nodes(ast.AnnAssign),
        ]
        for node in assignments:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None or not chooses_distributed_sampler(node.value):
                continue
            function = summary.enclosing_function(node)
            for target in targets:
                if type(target) is ast.Name and function is not None:
                    found.setdefault(target.id, set()).add(id(function))
        functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
            *summary.nodes(ast.FunctionDef), *summary.nodes(ast.AsyncFunctionDef),
        ]
        for function in functions:
            arguments = function.args
            positional = [*arguments.posonlyargs, *arguments.args]
            pairs = [
                *zip(
                    positional[len(positional) - len(arguments.defaults):], arguments.defaults,
                    strict=True,
                ),
                *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True),
            ]
            for parameter, default in pairs:
                if default is not None and is_distributed_sampler(dotted_expression(default)):
                    found.setdefault(parameter.arg, set()).add(id(function))
        return {name: frozenset(ids) for name, ids in found.items()}

    return per_tree(summary.tree, "chosen distributed samplers", make)


def chosen_sampler_cst(context: FileContext, call: cst.Call) -> bool:
    """:func:`chosen_sampler_names` for a libcst call: it calls a name the function around it
    binds to a class chosen at run time whose default is a distributed sampler (read from the
    function's assignment table, which the file's context keeps: every call of a file is asked
    about)."""
    if not isinstance(call.func, cst.Name):
        return False
    function = context.enclosing_function(call)
    if function is None:
        return False
    name = call.func.value
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name and param.default is not None \
                and is_distributed_sampler(dotted_name(param.default)):
            return True
    return any(
        is_distributed_sampler(dotted_name(alternative))
        for value in context.assignments(function).get(name, ())
        for alternative in _alternatives(value)
    )


def _alternatives(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values ``a or b or c`` (libcst nests it: ``(a or b) or c``) or ``b if t else c`` may
    be; none for any other expression."""
    if isinstance(value, cst.IfExp):
        return [value.body, value.orelse]
    if not (isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or)):
        return []
    operands: list[cst.BaseExpression] = []
    for side in (value.left, value.right):
        operands += _alternatives(side) if isinstance(side, cst.BooleanOperation) and isinstance(
            side.operator, cst.Or
        ) else [side]
    return operands


def shuffles(call: cst.Call) -> bool:
    """A DistributedSampler(...) whose ``shuffle`` is not literally ``False`` (torch's default
    is ``True``; a value from configuration may be ``True``)."""
    # DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)
    from sampler_lint.analysis.matching import get_arg

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
    from sampler_lint.analysis.matching import get_arg

    arg = get_arg(call, SAMPLER_POSITION, "sampler")
    if arg is not None:
        return arg.value
    batch = get_arg(call, BATCH_SAMPLER_POSITION, "batch_sampler")
    if batch is not None and isinstance(batch.value, cst.Call):
        inner = get_arg(batch.value, 0, "sampler")
        if inner is not None:
            return inner.value
    return None


def loader_sampler_expression(call: ast.Call) -> ast.expr | None:
    """The ``ast`` twin of :func:`loader_sampler_argument`."""
    found = argument(call, SAMPLER_POSITION, "sampler")
    if found is not None:
        return found
    batch = argument(call, BATCH_SAMPLER_POSITION, "batch_sampler")
    if type(batch) is ast.Call:
        return argument(batch, 0, "sampler")
    return None


def assigned_loaders(summary: SyntaxSummary) -> list[tuple[str, ast.Call]]:
    """``target = DataLoader(...)`` as ``(target, call)``, for every target the rules'
    assignment table holds (``tree.assignment_table``: each target of an assignment, annotated
    ones, attribute chains such as ``self.loader``): what a pre-filter asks before a visitor
    looks a loader up by name."""
    return [
        (name, value) for target, value in summary.assignments()
        if type(value) is ast.Call and is_loader_constructor(dotted_expression(value.func))
        and (name := dotted_expression(target)) is not None
    ]


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
