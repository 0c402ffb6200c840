"""Fixes append `seed=`, `sampler=` and `generator=` to calls laid out every way; the new argument
goes where a person would put it, and the call's layout (and its comments) stay."""

from __future__ import annotations

import libcst as cst
import pytest

from sampler_lint.analysis.appending import keyword, with_argument, with_keyword_only

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


SIGNATURES = [
    # (the parameters, the parameters with the keyword-only `seed: int = 0`)
    ("ds, shuffle=True", "ds, shuffle=True, *, seed: int = 0"),
    ("\n    ds,\n    shuffle=True,\n",
     "\n    ds,\n    shuffle=True,\n    *,\n    seed: int = 0,\n"),
    ("\n    ds, shuffle=True\n", "\n    ds, shuffle=True, *, seed: int = 0\n"),
    ("\n    ds, shuffle=True  # why\n", "\n    ds, shuffle=True, *, seed: int = 0  # why\n"),
    ("ds, *, shuffle=True", "ds, *, shuffle=True, seed: int = 0"),
    ("\n    ds,\n    *,\n    shuffle=True,\n",
     "\n    ds,\n    *,\n    shuffle=True,\n    seed: int = 0,\n"),
    ("ds, *extra", "ds, *extra, seed: int = 0"),
    ("ds, *,\n      shuffle=True,\n", "ds, *,\n      shuffle=True,\n      seed: int = 0,\n"),
    ("ds, /", "ds, /, *, seed: int = 0"),
]


@pytest.mark.parametrize(("before", "after"), SIGNATURES)
def test_a_keyword_only_parameter_is_added_the_way_the_signature_is_laid_out(
    before: str, after: str
) -> None:
    function = cst.parse_statement(f"def f({before}):\n    pass\n")
    assert isinstance(function, cst.FunctionDef)
    seed = cst.Param(
        cst.Name("seed"), annotation=cst.Annotation(cst.Name("int")), default=cst.Integer("0")
    )
    assert cst.Module([with_keyword_only(function, seed)]).code == f"def f({after}):\n    pass\n"
