"""Fixes append `seed=`, `sampler=` and `generator=` to calls laid out every way; the new argument
goes where a person would put it, and the call's layout (and its comments) stay."""

from __future__ import annotations

import libcst as cst
import pytest

from sampler_lint.analysis.appending import append, keyword, with_argument

LAYOUTS = [
    # (the call, the call with `seed=s` appended)
    ("f(ds)", "f(ds, seed=s)"),
    ("f()", "f(seed=s)"),
    ("f(\n    ds, shuffle=True\n)", "f(\n    ds, shuffle=True, seed=s\n)"),
    ("f(\n    ds,\n    shuffle=True,\n)", "f(\n    ds,\n    shuffle=True,\n    seed=s,\n)"),
    ("f(\n    ds,\n)", "f(\n    ds,\n    seed=s,\n)"),
    ("f(ds,\n  shuffle=True)", "f(ds,\n  shuffle=True, seed=s)"),
    ("f(\n    ds, shuffle=True  # why\n)", "f(\n    ds, shuffle=True, seed=s  # why\n)"),
    ("f(  # note\n    ds,\n)", "f(  # note\n    ds,\n    seed=s,\n)"),  # the comment stays once
    ("f(ds, )", "f(ds, seed=s, )"),
    ("f(ds,\n  shuffle=True,\n)", "f(ds,\n  shuffle=True,\n  seed=s,\n)"),  # as the others are
]


@pytest.mark.parametrize(("before", "after"), LAYOUTS)
def test_an_argument_is_appended_the_way_the_call_is_laid_out(before: str, after: str) -> None:
    call = cst.parse_expression(before)
    assert isinstance(call, cst.Call)
    appended = with_argument(call, keyword("seed", cst.Name("s")))
    assert cst.Module([]).code_for_node(appended) == after


def test_a_parameter_is_appended_the_same_way() -> None:
    function = cst.parse_statement("def f(\n    *,\n    shuffle=True\n):\n    pass\n")
    assert isinstance(function, cst.FunctionDef)
    params = append(
        list(function.params.kwonly_params), cst.Param(cst.Name("seed")), None
    )
    new = function.with_changes(params=function.params.with_changes(kwonly_params=params))
    assert cst.Module([new]).code == "def f(\n    *,\n    shuffle=True, seed\n):\n    pass\n"
