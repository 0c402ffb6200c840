"""Shared facts for the sharding rules (SL1xx): recognising ``X.split(S)[rank]``-shaped shards,
floor and ceil divisions by a world size, and scopes that make a division exact."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.matching import (
    expression_key,
    get_arg,
    is_rank_like,
    is_world_size_like,
    length_of,
    same_expression,
    single_assignment,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary, argument
from sampler_lint.analysis.tree import descendants, scope_body_statements
from sampler_lint.rule import Applicability, FileContext, Fix


@dataclass
class Shard:
    """``X.split(S, dim)[R]`` (or ``torch.split(X, S, dim)[R]``, ``chunk`` alike)."""

    subscript: cst.Subscript
    call: cst.Call  # the split / chunk call (possibly in an earlier assignment)
    method: str  # "split" or "chunk"
    function_style: bool  # torch.split(X, ...) rather than X.split(...)
    receiver: cst.BaseExpression
    size: cst.BaseExpression  # the split size, or the number of chunks
    dim: cst.Arg | None
    rank: cst.BaseExpression


_POSITIONS = {
    # (method style: size, dim), (function style: size, dim); keywords per style
    "split": (
        (0, 1, ("split_size", "split_size_or_sections")),
        (1, 2, ("split_size_or_sections",)),
    ),
    "chunk": ((0, 1, ("chunks",)), (1, 2, ("chunks",))),
}


def _shard_call(context: FileContext, call: cst.Call, methods: tuple[str, ...]) -> tuple[
    str, bool, cst.BaseExpression, cst.BaseExpression, cst.Arg | None
] | None:
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in methods:
        return None
    method = func.attr.value
    qualified = context.qualified_name(func)
    function_style = qualified == f"torch.{method}"
    (m_size, m_dim, m_kw), (f_size, f_dim, f_kw) = _POSITIONS[method]
    if function_style:
        tensor = get_arg(call, 0, "tensor", "input")
        size = get_arg(call, f_size, *f_kw)
        dim = get_arg(call, f_dim, "dim")
        if tensor is None or size is None or tensor.keyword is not None:
            return None
        return method, True, tensor.value, size.value, dim
    size = get_arg(call, m_size, *m_kw)
    dim = get_arg(call, m_dim, "dim")
    if size is None:
        return None
    return method, False, func.value, size.value, dim


def indexed_shards(
    summary: SyntaxSummary, methods: tuple[str, ...]
) -> list[tuple[str, list[ast.expr]]]:
    """The ``ast`` side of :func:`find_shard`: each call ``x.<method>(...)`` that a subscript
    indexes by a name, attribute or call (what a rank can be), directly or through a name
    assigned the call, as its method and the arguments that may be its size (either style)."""

    def method(node: ast.expr | None) -> str | None:
        if type(node) is ast.Call and type(node.func) is ast.Attribute:
            return node.func.attr if node.func.attr in methods else None
        return None

    assigned: dict[str, list[ast.Call]] = {}
    pairs = summary.assignments()
    for target, value in pairs:
        if method(value) is not None and type(target) is ast.Name:
            assert isinstance(value, ast.Call)
            assigned.setdefault(target.id, []).append(value)
    calls: list[ast.Call] = []
    for subscript in summary.nodes(ast.Subscript):
        if type(subscript.slice) not in (ast.Name, ast.Attribute, ast.Call):
            continue
        value = subscript.value
        if method(value) is not None:
            assert isinstance(value, ast.Call)
            calls.append(value)
        elif type(value) is ast.Name:
            calls += assigned.get(value.id, [])
    shards = []
    for call in calls:
        name = method(call)
        assert name is not None
        (m_size, _, m_kw), (f_size, _, f_kw) = _POSITIONS[name]
        sizes = [argument(call, m_size, *m_kw), argument(call, f_size, *f_kw)]
        shards.append((name, [size for size in sizes if size is not None]))
    return shards


def find_shard(
    context: FileContext, subscript: cst.Subscript, methods: tuple[str, ...]
) -> Shard | None:
    """The shard when ``subscript`` is ``<split or chunk>[rank]``, directly or through one
    assignment (``chunks = x.split(...); chunks[rank]``)."""
    if len(subscript.slice) != 1:
        return None
    element = subscript.slice[0].slice
    if not isinstance(element, cst.Index) or element.star is not None:
        return None
    # Cheap structural checks first: the rank test may need the scope's assignments.
    value = subscript.value
    if isinstance(value, cst.Call):
        if not (isinstance(value.func, cst.Attribute) and value.func.attr.value in methods):
            return None
        call: cst.BaseExpression | None = value
    elif isinstance(value, cst.Name):
        call = single_assignment(context, value)
    else:
        return None
    if not isinstance(call, cst.Call):
        return None
    found = _shard_call(context, call, methods)
    if found is None or not is_rank_like(context, element.value):
        return None
    method, function_style, receiver, size, dim = found
    return Shard(subscript, call, method, function_style, receiver, size, dim, element.value)


@dataclass
class Division:
    dividend: cst.BaseExpression  # A
    divisor: cst.BaseExpression  # W
    through_name: bool  # written as a name assigned elsewhere


def floor_division(context: FileContext, node: cst.BaseExpression) -> Division | None:
    """``A // W`` with a world-size-like ``W``, directly or through one assignment."""
    through = False
    if isinstance(node, cst.Name):
        value = single_assignment(context, node)
        if value is None:
            return None
        node, through = value, True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.FloorDivide):
        if is_world_size_like(context, node.right):
            return Division(node.left, node.right, through)
    return None


def ceil_division(context: FileContext, node: cst.BaseExpression) -> Division | None:
    """``math.ceil(A / W)``, ``-(-A // W)``, ``(A + W - 1) // W``: directly or through one
    assignment."""
    through = False
    if isinstance(node, cst.Name):
        value = single_assignment(context, node)
        if value is None:
            return None
        node, through = value, True
    node = _unparen(node)
    if isinstance(node, cst.Call) and len(node.args) == 1:
        called = context.qualified_name(node.func) or ""
        inner = _unparen(node.args[0].value)
        if called.rsplit(".", 1)[-1] == "ceil" and isinstance(inner, cst.BinaryOperation):
            if isinstance(inner.operator, cst.Divide) and is_world_size_like(context, inner.right):
                return Division(inner.left, inner.right, through)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _unparen(node.expression)
        if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.FloorDivide):
            left = _unparen(inner.left)
            if (
                isinstance(left, cst.UnaryOperation)
                and isinstance(left.operator, cst.Minus)
                and is_world_size_like(context, inner.right)
            ):
                return Division(left.expression, inner.right, through)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.FloorDivide):
        divisor = node.right
        left = _unparen(node.left)
        if is_world_size_like(context, divisor) and isinstance(left, cst.BinaryOperation):
            # (A + W - 1) // W parses as ((A + W) - 1) // W
            if isinstance(left.operator, cst.Subtract) and expression_key(left.right) == "1":
                total = _unparen(left.left)
                if isinstance(total, cst.BinaryOperation) and isinstance(total.operator, cst.Add):
                    if same_expression(total.right, divisor):
                        return Division(total.left, divisor, through)
    return None


def _unparen(node: cst.BaseExpression) -> cst.BaseExpression:
    return node


def is_length_of(
    context: FileContext, amount: cst.BaseExpression, target: cst.BaseExpression, dim: int
) -> bool:
    """Whether ``amount`` is the length of ``target`` along ``dim`` (through one assignment)."""
    measured = length_of(context, amount)
    if measured is None and isinstance(amount, cst.Name):
        value = single_assignment(context, amount)
        if value is not None:
            measured = length_of(context, value)
    if measured is None:
        return False
    what, measured_dim = measured
    return measured_dim == dim and same_expression(what, target)


_PAD = re.compile(r"\bpad|_pad|padded|padding", re.IGNORECASE)


def division_made_exact(
    context: FileContext, node: cst.CSTNode, dividend: cst.BaseExpression,
    divisor: cst.BaseExpression,
) -> bool:
    """Whether the scope around ``node`` makes ``A // W`` exact or hands out the remainder:
    ``A % W`` anywhere (``assert A % W == 0``, ``if A % W: raise``, a remainder handed out), or
    ``A`` padded to a multiple of ``W`` first."""
    scope = context.enclosing_function(node) or context.module
    dividend_keys = {expression_key(dividend)}
    if isinstance(dividend, cst.Name):
        value = single_assignment(context, dividend)
        if value is not None:
            dividend_keys.add(expression_key(value))
    divisor_key = expression_key(divisor)
    for stmt in scope_body_statements(scope):
        for modulo in _modulos(stmt):
            if expression_key(modulo.right) == divisor_key and (
                expression_key(modulo.left) in dividend_keys
            ):
                return True
    text = context.code_for(scope)
    return bool(_PAD.search(text))


def _modulos(stmt: cst.CSTNode) -> list[cst.BinaryOperation]:
    """The ``%`` operations of one statement: nested blocks are statements of their own, and
    functions and classes other scopes."""
    return [
        node for node in descendants(stmt, prune=_own_scope_or_block)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo)
    ]


def _own_scope_or_block(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.IndentedBlock, cst.FunctionDef, cst.ClassDef))


# ------------------------------------------------------------------------------------------------
# Fixes shared by SL101 and SL102

#: What the unsafe re-sharding fixes (SL101, SL102, SL103) risk: parts that differ by one item.
#: `drop_last=True` is no guard (4,095 items, 4 ranks, batch 1,024: parts 1,024 / 1,024 / 1,024 /
#: 1,023 give 1, 1, 1, 0 batches), so the line names the guards that are.
SHARD_SIZE_RISK = (
    "parts then differ by one item, so ranks may run different step counts and hang in DDP's "
    "all-reduce (drop_last=True does not prevent it); keep them in step with join(), an "
    "all-reduced MIN of the step count, or padding as DistributedSampler does"
)


def tensor_split_fix(context: FileContext, shard: Shard, world_size: cst.BaseExpression) -> Fix:
    """``X.tensor_split(W, dim=d)`` in place of the split or chunk call (shared with SL102).
    Continuation lines aligned with the call's bracket move with it; the size local or the
    ``ceil`` import the old size used is removed by the engine when nothing else reads it."""
    call = shard.call
    args: list[cst.Arg] = []
    size_arg_seen = False
    for arg in call.args:
        if arg.value is shard.size:
            size_arg_seen = True
            args.append(
                arg.with_changes(value=world_size, keyword=None, equal=cst.MaybeSentinel.DEFAULT)
            )
        else:
            args.append(arg)
    assert size_arg_seen
    assert isinstance(call.func, cst.Attribute)
    # realign subclasses libcst's transformer, so importing it imports libcst: only a fix does.
    from sampler_lint.analysis.realign import realign_call

    new_call = realign_call(context, call, call.with_changes(
        func=call.func.with_changes(attr=cst.Name("tensor_split")), args=_positional_first(args)
    ))
    world = one_line(context.code_for(world_size))
    return Fix(
        replacements=[(call, new_call)],
        applicability=Applicability.UNSAFE,
        message=f"Use `{one_line(context.code_for(new_call))}`: exactly `{world}` parts, "
        "none dropped",
    )


def one_line(code: str, limit: int = 80) -> str:
    """``code`` on one line for a help message (whitespace runs collapsed, trailing commas inside
    brackets kept as written), shortened with ``…`` past ``limit`` characters."""
    text = " ".join(code.split()).replace("( ", "(").replace(" )", ")")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _positional_first(args: list[cst.Arg]) -> list[cst.Arg]:
    """Keep positional arguments before keywords (a keyword size became positional)."""
    positional = [a for a in args if a.keyword is None and not a.star]
    others = [a for a in args if a.keyword is not None or a.star]
    ordered = positional + others
    if ordered == args:
        return args
    fixed = []
    for index, arg in enumerate(ordered):
        comma: cst.Comma | cst.MaybeSentinel = (
            cst.MaybeSentinel.DEFAULT if index == len(ordered) - 1 else cst.Comma(
                whitespace_after=cst.SimpleWhitespace(" ")
            )
        )
        fixed.append(arg.with_changes(comma=comma))
    return fixed


def modulos_in_scope(context: FileContext, node: cst.CSTNode) -> list[cst.BinaryOperation]:
    """Every ``a % b`` in the function holding ``node`` (or the module), nested blocks included."""
    scope = context.enclosing_function(node) or context.module
    found: list[cst.BinaryOperation] = []
    for stmt in scope_body_statements(scope):
        found.extend(_modulos(stmt))
    return found


def _resolved_key(context: FileContext, node: cst.BaseExpression) -> str:
    """The key of ``node``, or of its single assignment when it is a name (``size`` for
    ``size = dist.get_world_size()`` compares equal to the call)."""
    if isinstance(node, cst.Name):
        value = single_assignment(context, node)
        if value is not None:
            return expression_key(value)
    return expression_key(node)


def _factors(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """``8 * W`` -> ``[8, W]``; anything else -> ``[node]``."""
    node = _unparen(node)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return _factors(node.left) + _factors(node.right)
    return [node]


def remainder_by_multiple_of(
    context: FileContext, node: cst.CSTNode, world_size: cst.BaseExpression
) -> bool:
    """Whether the functions around ``node`` (the innermost and any it is nested in), or the
    module's own statements, take a remainder by a world size or a multiple of one (``n % W``,
    ``n % (8 * W)``): the length is then checked or padded to a multiple of it, so chunks by ``W``
    come out even. Names are compared through their single assignment, so
    ``size = dist.get_world_size()`` at module level matches the call in a function; within the
    functions around ``node`` any world-size expression counts (a test pads by ``size`` from MPI and
    chunks by ``dist.get_world_size()``), at module level only the same expression does."""
    wanted = _resolved_key(context, world_size)
    # In the functions around the node, any world size counts; at module level only the same one.
    local = modulos_in_scope(context, node)
    functions = [a for a in context.ancestors(node) if isinstance(a, cst.FunctionDef)]
    for outer in functions[1:]:
        for stmt in scope_body_statements(outer):
            local.extend(_modulos(stmt))
    module: list[cst.BinaryOperation] = []
    if functions:
        for stmt in context.module.body:
            if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                module.extend(_modulos(stmt))
    for modulo in local:
        for factor in _factors(modulo.right):
            if _resolved_key(context, factor) == wanted or is_world_size_like(context, factor):
                return True
    for modulo in module:
        if any(_resolved_key(context, f) == wanted for f in _factors(modulo.right)):
            return True
    return False


_GATHERED = re.compile(r"\ball_gather(_into_tensor|_object)?\(")


def gathered_in_scope(context: FileContext, node: cst.CSTNode) -> bool:
    """The function holding ``node`` all-gathers: a tensor gathered from ``W`` equal parts splits
    back into ``W`` equal parts, so the division by ``W`` is exact by construction."""
    function = context.enclosing_function(node)
    return function is not None and bool(_GATHERED.search(context.code_for(function)))


def chunk_count_guarded(context: FileContext, shard: Shard) -> bool:
    """The rank's chunk is read under a test of the number of chunks
    (``if len(splits) > rank: mine = splits[rank] else: mine = empty``): a short chunk list is
    handled, not an IndexError."""
    rank = expression_key(shard.rank)
    for ancestor in context.ancestors(shard.subscript):
        test = None
        if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)):
            test = ancestor.test
        if test is None:
            continue
        text = re.sub(r"\s+", "", context.code_for(test))
        if "len(" in text and rank in text:
            return True
    return False


# ------------------------------------------------------------------------------------------------
# Shapes where the length is a multiple of W or large by construction (SL102, SL103)


def in_autograd_backward(context: FileContext, node: cst.CSTNode) -> bool:
    """``node`` is in the ``backward`` of an ``autograd.Function``: the gradient has the shape of
    the forward's output, which (for the all-gather functions that shard it back) is ``W`` equal
    parts, so splitting it ``W`` ways is exact."""
    function = context.enclosing_function(node)
    klass = context.enclosing_class(node)
    if function is None or klass is None or function.name.value != "backward":
        return False
    bases = " ".join(context.code_for(arg.value) for arg in klass.bases)
    return "Function" in bases


def padded_in_scope(context: FileContext, node: cst.CSTNode) -> bool:
    """The function holding ``node`` pads (a name or call mentioning ``pad``): the length is then
    made a multiple of the world size before sharding."""
    function = context.enclosing_function(node)
    return function is not None and bool(_PAD.search(context.code_for(function)))


_COLLECTIVES = frozenset({
    "all_reduce", "all_gather", "all_gather_into_tensor", "broadcast", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
})


def passed_to_collective(
    context: FileContext, node: cst.CSTNode, receiver: cst.BaseExpression
) -> bool:
    """``receiver`` is an argument of a collective (``dist.all_reduce(buf)``) in the function
    holding ``node``: a communication buffer, whose size every rank agrees on and which is not a
    dataset being sharded."""
    function = context.enclosing_function(node)
    if function is None:
        return False
    keys = {expression_key(receiver)}
    # One step back: `sign = buf.sign().add_(1)` after `all_reduce(buf)` is the same buffer's
    # size (a chain of methods and attributes on it, no other operand).
    if isinstance(receiver, cst.Name):
        value = single_assignment(context, receiver)
        root = _chain_root(value) if value is not None else None
        if root is not None:
            keys.add(expression_key(root))
    for call in descendants(function):
        if not isinstance(call, cst.Call):
            continue
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else (
            func.value if isinstance(func, cst.Name) else ""
        )
        if name in _COLLECTIVES and any(expression_key(a.value) in keys for a in call.args):
            return True
    return False


def _chain_root(node: cst.BaseExpression) -> cst.Name | None:
    """``buf`` for ``buf.sign().add_(1).float()`` (methods and attributes only; a call may take
    only literal arguments, so no second tensor decides the shape)."""
    while True:
        if isinstance(node, cst.Name):
            return node
        if isinstance(node, cst.Attribute):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if not all(isinstance(a.value, (cst.Integer, cst.Float, cst.UnaryOperation))
                       for a in node.args):
                return None
            node = node.func.value
        else:
            return None


_CONSTRUCTORS = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "arange"})
_CONSTANT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def constant_length(context: FileContext, receiver: cst.BaseExpression) -> bool:
    """The receiver's length is a constant of the program (a literal, or an UPPER_CASE name):
    ``torch.zeros(BUFFER_NUMEL)`` directly or through one assignment, or an UPPER_CASE constant
    itself. Its chunks by ``W`` do not depend on the data, and a short chunk list would need more
    ranks than any run of the program has."""
    value: cst.BaseExpression | None = receiver
    if isinstance(receiver, cst.Name):
        if _CONSTANT_NAME.match(receiver.value):
            return True
        value = single_assignment(context, receiver)
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    name = func.attr.value if isinstance(func, cst.Attribute) else (
        func.value if isinstance(func, cst.Name) else ""
    )
    if name not in _CONSTRUCTORS or not value.args:
        return False
    size = value.args[0].value
    return _is_constant(size)


def _is_constant(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Name):
        return bool(_CONSTANT_NAME.match(node.value))
    if isinstance(node, cst.BinaryOperation):
        return _is_constant(node.left) and _is_constant(node.right)
    return False
