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


def with_keyword_only(function: cst.FunctionDef, param: cst.Param) -> cst.FunctionDef:
    """``function`` with the keyword-only ``param`` after its other parameters (and a bare ``*``
    before it when it has neither ``*args`` nor keyword-only ones). Not for a signature with
    ``**kwargs``, which must stay last."""
    params = function.params
    opening = function.whitespace_before_params
    kwonly = list(params.kwonly_params)
    star = params.star_arg
    if kwonly:
        previous = star.comma if isinstance(star, (cst.Param, cst.ParamStar)) else None
        return function.with_changes(params=params.with_changes(
            kwonly_params=append(kwonly, param, opening, previous)
        ))
    if isinstance(star, cst.Param):  # after `*args`
        before = params.params[-1].comma if params.params else None
        star, new = append([star], param, opening, before)
        return function.with_changes(params=params.with_changes(star_arg=star, kwonly_params=[new]))
    positional = list(params.params)
    if not positional:
        return function.with_changes(params=params.with_changes(
            star_arg=cst.ParamStar(), kwonly_params=[param]
        ))
    # `*, param` after the last positional parameter, laid out as the parameters are.
    *head, last = positional
    if isinstance(last.comma, cst.Comma):
        separator = _separator(head[-1].comma if head else None, opening)
        bare = cst.ParamStar(comma=separator)
        positional[-1] = last.with_changes(comma=separator)
        param = param.with_changes(comma=last.comma)
    else:
        bare = cst.ParamStar(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        positional[-1] = last.with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
            whitespace_after_param=cst.SimpleWhitespace(""),
        )
        param = param.with_changes(whitespace_after_param=last.whitespace_after_param)
    return function.with_changes(params=params.with_changes(
        params=positional, star_arg=bare, kwonly_params=[param]
    ))


def _separator(
    previous: cst.Comma | cst.MaybeSentinel | None,
    opening: cst.BaseParenthesizableWhitespace | None,
) -> cst.Comma:
    """The comma that goes between two elements of a list laid out one a line: the one the list
    already uses, else a line break and the indentation that follows the opening bracket, else
    ``, ``."""
    if isinstance(previous, cst.Comma):
        return previous
    if isinstance(opening, cst.ParenthesizedWhitespace):
        return cst.Comma(
            whitespace_after=opening.with_changes(first_line=cst.TrailingWhitespace())
        )
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def append(
    elements: list[Element], new: Element, opening: cst.BaseParenthesizableWhitespace | None,
    previous: cst.Comma | cst.MaybeSentinel | None = None,
) -> list[Element]:
    """``elements`` with ``new`` last. ``opening`` is the whitespace after the opening bracket
    (``Call.whitespace_before_args``) and ``previous`` the comma of what comes before the first
    element (keyword-only parameters follow ``*,``): with a trailing comma and a single element,
    the new one takes the line break and indentation they give."""
    if not elements:
        return [new]
    *head, last = elements
    if isinstance(last.comma, cst.Comma):
        # One element a line: the new one takes the closing comma (and the line break before the
        # bracket); the old last one takes the separator the elements already use.
        separator = _separator(head[-1].comma if head else previous, opening)
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
