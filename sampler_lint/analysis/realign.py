"""Keep continuation lines aligned when a fix renames a callee (``.split(`` -> ``.tensor_split(``).

A fix keeps the user's line breaks (small diffs), but a continuation line aligned with the call's
opening bracket (a visual indent) must then move with the bracket, or pycodestyle reports E128.
Hanging indents (a line break right after the bracket, or lines indented less than the bracket)
do not depend on the bracket's column and are left alone.
"""

from __future__ import annotations

from typing import TypeVar

import libcst as cst

from sampler_lint.analysis.positions import positions_around
from sampler_lint.rule import FileContext

_Node = TypeVar("_Node", bound="cst.CSTNode")


def realign_call(context: FileContext, old: cst.Call, new: cst.Call) -> cst.Call:
    """``new`` (``old`` with a longer or shorter callee) with every continuation line that sat at
    or right of ``old``'s bracket moved by the change in the bracket's column."""
    delta = len(_code(new.func)) - len(_code(old.func))
    old_code = context.code_for(old)
    if delta == 0 or ("\n" not in old_code and "\r" not in old_code):
        return new
    if "\t" in context.code_for(context.enclosing_statement(old) or old):
        return new  # columns of tabs depend on the reader's settings
    # The statement's positions alone: a whole file's took longer than linting it.
    positions = positions_around(context, [old])
    statement = context.enclosing_statement(old)
    if old.func not in positions or statement is None or statement not in positions:
        return new
    func_end = positions[old.func].end
    if positions[old].start.line != func_end.line:
        return new  # the callee itself spans lines: leave the layout to a person
    # Columns are 0-based; the first argument of a visual indent sits right after the bracket.
    bracket = func_end.column + len(_code(old.whitespace_after_func))
    block_indent = positions[statement].start.column
    return new.with_changes(args=[
        _shift(arg, bracket, block_indent, delta) for arg in new.args
    ], whitespace_before_args=_shift(new.whitespace_before_args, bracket, block_indent, delta))


def _shift(node: _Node, bracket: int, block_indent: int, delta: int) -> _Node:
    return node.visit(_Shifter(bracket, block_indent, delta))  # type: ignore[return-value]


class _Shifter(cst.CSTTransformer):
    def __init__(self, bracket: int, block_indent: int, delta: int) -> None:
        super().__init__()
        self.bracket = bracket
        self.block_indent = block_indent
        self.delta = delta

    def leave_ParenthesizedWhitespace(
        self, original_node: cst.ParenthesizedWhitespace, updated_node: cst.ParenthesizedWhitespace
    ) -> cst.ParenthesizedWhitespace:
        spaces = updated_node.last_line.value
        column = len(spaces) + (self.block_indent if updated_node.indent else 0)
        if column <= self.bracket:
            return updated_node  # a hanging indent: not tied to the bracket's column
        width = max(0, len(spaces) + self.delta)
        return updated_node.with_changes(last_line=cst.SimpleWhitespace(" " * width))


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)
