"""Appending an argument to a call, or a parameter to a signature, the way the list is laid out.

Fixes add ``seed=``, ``sampler=`` or ``generator=`` to calls written every way: on one line, one
argument a line with a trailing comma, or broken after ``(`` with the ``)`` on a line of its own.
The new element goes where a person would put it: after the last one on its line when the list
has no trailing comma (the line break, and any comment, before the closing bracket stays before
it), and on a line of its own, with the trailing comma, when the list has one.
"""

from __future__ import annotations

from typing import Any, TypeVar

import sampler_lint.analysis.lazy_libcst as cst

# Strings: this module is imported with the rules, before libcst is (see lazy_libcst).
Element = TypeVar("Element", "cst.Arg", "cst.Param")


def with_argument(call: cst.Call, argument: cst.Arg) -> cst.Call:
    """``call`` with ``argument`` appended (``f(a)`` -> ``f(a, seed=s)``)."""
    args = append(list(call.args), argument, call.whitespace_before_args)
    return call.with_changes(args=args)


def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    """``name=value``, spaced as PEP 8 spaces keyword arguments."""
    return cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


def append(
    elements: list[Element], new: Element, opening: cst.BaseParenthesizableWhitespace | None
) -> list[Element]:
    """``elements`` with ``new`` last. ``opening`` is the whitespace after the opening bracket
    (``Call.whitespace_before_args``): with a trailing comma and a single element, its line break
    and indentation are the ones the new element takes."""
    if not elements:
        return [new]
    *head, last = elements
    if isinstance(last.comma, cst.Comma):
        # One element a line: the new one takes the closing comma (and the line break before the
        # bracket); the old last one takes the separator the elements already use.
        separator: cst.Comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        if head and isinstance(head[-1].comma, cst.Comma):
            separator = head[-1].comma
        elif isinstance(opening, cst.ParenthesizedWhitespace):
            separator = cst.Comma(
                whitespace_after=opening.with_changes(first_line=cst.TrailingWhitespace())
            )
        return [*head, last.with_changes(comma=separator), new.with_changes(comma=last.comma)]
    # No trailing comma: `, new` on the last element's line; what followed it (a space, a comment,
    # the line break before the bracket) now follows the new element.
    after = _after(last)
    last = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    if after is not None:
        last = last.with_changes(**{after: cst.SimpleWhitespace("")})
        new = new.with_changes(**{after: getattr(elements[-1], after)})
    return [*head, last, new]


def _after(element: Any) -> str | None:
    """The name of the field holding the whitespace after an element (Arg and Param differ)."""
    for name in ("whitespace_after_arg", "whitespace_after_param"):
        if hasattr(element, name):
            return name
    return None
