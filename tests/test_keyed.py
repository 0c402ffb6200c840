"""Stores under string keys of a dict (``sampler_lint.analysis.keyed``): the ``ast`` reading
(project facts) and the libcst reading (the linted file) agree, and both give up wherever the
function may change the dict another way."""

from __future__ import annotations

import ast
import textwrap

import libcst
import pytest

from sampler_lint.analysis.keyed import keyed_stores_ast, keyed_stores_cst
from sampler_lint.analysis.syntax_summary import SyntaxSummary

CASES = [
    ("d = {}\nd['train'] = a\nd['valid'] = b\nuse(d['train'])\n", [("train", "a"), ("valid", "b")]),
    ("d = {'train': a}\nfor x in d.items():\n    pass\nd.get('train')\nf(d)\n", []),
    ("d = {}\nd[name] = a\n", None),
    ("d = {}\nd['train'] += a\n", None),
    ("d = {}\nd |= other\n", None),
    ("d = {}\nd.update(train=a)\n", None),
    ("d = {}\nd.setdefault('train', a)\n", None),
    ("d = {}\ndel d['train']\n", None),
    ("d = {}\ne = d\n", None),
    ("d = {}\nx, d['train'] = a, b\n", None),
    ("d = {}\nfor d['train'] in xs:\n    pass\n", None),
    ("d = {}\nd['train']: Loader = a\n", [("train", "a")]),
]


@pytest.mark.parametrize(("body", "expected"), CASES)
def test_both_readings_find_the_same_stores(
    body: str, expected: list[tuple[str, str]] | None
) -> None:
    code = "def f(a, b, name, other, xs):\n" + textwrap.indent(body, "    ")
    tree = ast.parse(code)
    function = tree.body[0]
    found_ast = keyed_stores_ast(SyntaxSummary.of(tree), function, "d")
    module = libcst.parse_module(code)
    found_cst = keyed_stores_cst(module.body[0], "d")
    as_text_ast = None if found_ast is None else [(k, ast.unparse(v)) for k, v in found_ast]
    as_text_cst = None if found_cst is None else [
        (k, module.code_for_node(v)) for k, v in found_cst
    ]
    assert as_text_ast == expected
    assert as_text_cst == expected
