"""Shared matchers that rules build on: argument lookup, world-size / rank recognition, lengths,
local assignments. Written once here so that every rule agrees on what the vocabulary means.
"""

from __future__ import annotations

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.tree import assignment_table
from sampler_lint.analysis.vocabulary import RANK_CALLS
from sampler_lint.rule import FileContext

# ------------------------------------------------------------------------------------------------
# Calls and arguments


def get_arg(call: cst.Call, position: int | None, *keywords: str) -> cst.Arg | None:
    """The argument bound to a positional-or-keyword parameter, or ``None``.

    ``position`` is the parameter's 0-based position (``None`` for keyword-only). A ``*args`` before
    that position makes the binding unknowable, so ``None`` is returned then too.
    """
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in keywords:
            return arg
    if position is None:
        return None
    for index, arg in enumerate(call.args):
        if arg.keyword is not None or arg.star == "**":
            break
        if arg.star == "*":
            return None
        if index == position:
            return arg
    return None


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


def call_name(call: cst.Call) -> str | None:
    """The dotted name of what is called (``torch.split``, ``x.split``)."""
    return dotted_name(call.func)


def method_name(call: cst.Call) -> str | None:
    """``split`` for ``anything.split(...)``."""
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def is_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.Imaginary)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return is_literal(node.expression)
    return False


def is_name_value(node: cst.BaseExpression | None, value: str) -> bool:
    return isinstance(node, cst.Name) and node.value == value


# ------------------------------------------------------------------------------------------------
# Comparing and copying expressions

_WHITESPACE = str.maketrans("", "", " \t\r\n\\")


def expression_key(node: cst.CSTNode) -> str:
    """A whitespace-insensitive text form, for comparing expressions written two ways."""
    return cst.Module(body=[]).code_for_node(node).translate(_WHITESPACE)


def same_expression(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return expression_key(a) == expression_key(b)


def is_pure_reference(node: cst.BaseExpression) -> bool:
    """A name or attribute chain: safe to repeat in a fix (no call, no subscript of a call)."""
    return dotted_name(node) is not None


def is_repeatable(node: cst.BaseExpression) -> bool:
    """An expression a fix may duplicate: names, attribute chains, literals, subscripts of those
    with literal or name indices, and arithmetic over them. Calls are never repeatable."""
    if is_pure_reference(node) or is_literal(node):
        return True
    if isinstance(node, cst.Subscript):
        return is_repeatable(node.value) and all(
            isinstance(el.slice, cst.Index) and is_repeatable(el.slice.value) for el in node.slice
        )
    if isinstance(node, cst.BinaryOperation):
        return is_repeatable(node.left) and is_repeatable(node.right)
    if isinstance(node, cst.UnaryOperation):
        return is_repeatable(node.expression)
    return False


def strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(node, "lpar", None):
        return node.with_changes(lpar=[], rpar=[])
    return node


def assignments_in(scope: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """Values assigned to ``name`` anywhere in ``scope`` (see :func:`assignment_table`)."""
    return assignment_table(scope).get(name, [])


def single_assignment(context: FileContext, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The value of a name assigned exactly once in the enclosing function (or module), following
    RULES.md's "also through one local assignment". ``None`` when it is not a plain name, is
    assigned several times, or never."""
    if not isinstance(node, cst.Name):
        return None
    scope = context.enclosing_scope(node)
    values = context.assignments(scope).get(node.value, [])
    if len(values) != 1:
        return None
    return values[0]


# ------------------------------------------------------------------------------------------------
# The vocabulary of RULES.md


def _is_environ_world_size(node: cst.BaseExpression) -> bool:
    """``int(os.environ["WORLD_SIZE"])`` and ``int(os.environ.get("WORLD_SIZE", 1))``."""
    if isinstance(node, cst.Call) and dotted_name(node.func) == "int" and node.args:
        inner = node.args[0].value
        text = expression_key(inner)
        return "environ" in text and "WORLD_SIZE" in text
    return False


def is_world_size_like(
    context: FileContext, node: cst.BaseExpression, *, follow: bool = True
) -> bool:
    vocab = context.vocabulary
    name = dotted_name(node)
    if name is not None and vocab.is_world_size_name(name):
        return True
    if isinstance(node, cst.Call):
        called = dotted_name(node.func)
        if called is not None and called.rsplit(".", 1)[-1] == "get_world_size":
            return True
        if _is_environ_world_size(node):
            return True
    if follow:
        value = single_assignment(context, node)
        if value is not None:
            return is_world_size_like(context, value, follow=False)
    return False


def is_rank_like(context: FileContext, node: cst.BaseExpression, *, follow: bool = True) -> bool:
    vocab = context.vocabulary
    name = dotted_name(node)
    if name is not None and vocab.is_rank_name(name):
        return True
    if isinstance(node, cst.Call):
        called = dotted_name(node.func)
        if called is not None and called.rsplit(".", 1)[-1] in RANK_CALLS:
            return True
    if follow:
        value = single_assignment(context, node)
        if value is not None:
            return is_rank_like(context, value, follow=False)
    return False


_ONE_D_METHODS = ("view", "reshape", "flatten")
_ONE_D_CALLS = ("arange", "randperm")


def _is_visibly_1d(context: FileContext, node: cst.BaseExpression, follow: bool = True) -> bool:
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute):
            attr = func.attr.value
            if attr == "flatten" and not node.args:
                return True
            if attr in ("view", "reshape") and len(node.args) == 1:
                value = node.args[0].value
                if isinstance(value, cst.UnaryOperation) and expression_key(value) == "-1":
                    return True
            if attr in _ONE_D_CALLS:
                return True
        elif isinstance(func, cst.Name) and func.value in _ONE_D_CALLS:
            return True
    if follow:
        assigned = single_assignment(context, node)
        if assigned is not None:
            return _is_visibly_1d(context, assigned, follow=False)
    return False


def length_of(
    context: FileContext, node: cst.BaseExpression
) -> tuple[cst.BaseExpression, int] | None:
    """``(X, d)`` when ``node`` is the length of ``X`` along dim ``d``: ``X.size(d)``,
    ``X.shape[d]``, ``len(X)`` (d = 0), ``X.numel()`` when ``X`` is visibly 1-D."""
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Name) and func.value == "len" and len(node.args) == 1:
            if not node.args[0].star:
                return node.args[0].value, 0
        if isinstance(func, cst.Attribute):
            attr = func.attr.value
            if attr == "size" and len(node.args) == 1 and not node.args[0].star:
                dim = _int_value(node.args[0].value)
                if dim is not None:
                    return func.value, dim
            if attr == "numel" and not node.args and _is_visibly_1d(context, func.value):
                return func.value, 0
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        value = node.value
        element = node.slice[0].slice
        if (
            isinstance(value, cst.Attribute)
            and value.attr.value == "shape"
            and isinstance(element, cst.Index)
        ):
            dim = _int_value(element.value)
            if dim is not None:
                return value.value, dim
    return None


def _int_value(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
    ):
        return -int(node.expression.value, 0)
    return None


def int_value(node: cst.BaseExpression | None) -> int | None:
    return None if node is None else _int_value(node)
