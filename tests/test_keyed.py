"""Stores under string keys of a dict (``sampler_lint.analysis.keyed``): the ``ast`` reading
(project facts) and the libcst reading (the linted file) agree, and both give up wherever the
function may change the dict another way."""

from __future__ import annotations

import ast
import textwrap

import libcst
import pytest

from sampler_lint.analysis.keyed import (
    ANY_KEY,
    dict_get_ast,
    dict_get_cst,
    key_meets,
    keyed_stores_ast,
    keyed_stores_cst,
    keys_of,
    one_of,
    self_dict_changes,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary

CASES = [
    ("d = {}\nd['train'] = a\nd['valid'] = b\nuse(d['train'])\n", [("train", "a"), ("valid", "b")]),
    ("d = {'train': a}\nfor x in d.items():\n    pass\nd.get('train')\nf(d)\n", []),
    # Under a computed key: stored under some key, which a read under any key may meet.
    ("d = {}\nd[name] = a\nd[-1] = b\nd[f'x{name}'] = b\n",
     [(ANY_KEY, "a"), (ANY_KEY, "b"), (ANY_KEY, "b")]),
    ("d = {}\nd[0] = a\n", None),
    ("d = {}\nd[a, b] = a\n", None),
    ("d = {}\nd[b'x'] = a\n", None),
    ("d = {}\nd['train'] += a\n", None),
    ("d = {}\nd |= other\n", None),
    # Methods that store keys they name: stores; others, or keys unknown: a change.
    ("d = {}\nd.update(train=a)\n", [("train", "a")]),
    ("d = {}\nd.update({'train': a}, valid=b)\n", [("train", "a"), ("valid", "b")]),
    ("d = {}\nd.setdefault('train', a)\n", [("train", "a")]),
    ("d = {}\nd.setdefault(name, a)\n", [(ANY_KEY, "a")]),
    ("d = {}\nd.update(other)\n", None),
    ("d = {}\nd.update({name: a})\n", None),
    ("d = {}\nd.update(**other)\n", None),
    ("d = {}\nd.update([('train', a)])\n", None),
    ("d = {}\nd.setdefault('train')\n", None),
    ("d = {}\nd.pop('train')\n", None),
    ("d = {}\nput = d.update\nput(train=a)\n", None),
    ("d = {}\ndel d['train']\n", None),
    ("d = {}\ne = d\n", None),
    ("d = {}\nx, d['train'] = a, b\n", None),
    ("d = {}\nfor d['train'] in xs:\n    pass\n", None),
    ("d = {}\nd['train']: Loader = a\n", [("train", "a")]),
    ("d = e = {}\nd['train'] = a\n", None),
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


@pytest.mark.parametrize(("body", "changed"), [
    ("self.loaders = {'train': a}\n", []),
    ("self.loaders['train'] = a\n", ["loaders"]),
    ("self.loaders.update(train=a)\n", ["loaders"]),
    ("held = self.loaders\n", ["loaders"]),
    ("self.loaders = held = {}\n", ["loaders"]),
    ("self.loaders |= other\n", ["loaders"]),
    ("use(self.loaders['train'], self.loaders.get('valid'))\n", []),
])
def test_changes_to_a_dict_kept_on_self_are_found(body: str, changed: list[str]) -> None:
    code = "class T:\n    def f(self, a, other):\n" + textwrap.indent(body, "        ")
    summary = SyntaxSummary.of(ast.parse(code))
    assert sorted({attribute for attribute, _ in self_dict_changes(summary)}) == changed


@pytest.mark.parametrize(("read", "stored", "meets"), [
    ("train", "train", True),
    ("train", "val", False),
    (ANY_KEY, "val", True),
    ("val", ANY_KEY, True),
    (one_of(["train", "val"]), "val", True),
    (one_of(["train", "val"]), "test", False),
    (one_of(["train", "val"]), ANY_KEY, True),
    (one_of(["val", "train"]), one_of(["test", "train"]), True),
    (one_of(["train", "train"]), "train", True),
])
def test_a_read_meets_the_stores_under_the_keys_it_may_read(
    read: str, stored: str, meets: bool
) -> None:
    assert key_meets(read, stored) is meets


def test_one_of_a_single_key_is_that_key() -> None:
    assert one_of(["train", "train"]) == "train"
    assert keys_of(one_of(["val", "train"])) == ("train", "val")
    assert keys_of("train") == ("train",)


@pytest.mark.parametrize(("call", "expected"), [
    ("d.get('train')", ("d", "train", None)),
    ("self.loaders.get('train', fallback)", ("self.loaders", "train", "fallback")),
    ("d.get(name)", ("d", ANY_KEY, None)),
    ("d.get(f'{name}_loader')", ("d", ANY_KEY, None)),
    # Not a read under a string key: an item, bytes, keywords, unpacked or no arguments.
    ("d.get(0)", None),
    ("d.get(b'train')", None),
    ("d.get(None)", None),
    ("d.get(key='train')", None),
    ("d.get(*names)", None),
    ("d.get()", None),
    ("d.get('a', 'b', 'c')", None),
    ("d.pop('train')", None),
])
def test_both_readings_see_the_same_dict_get(
    call: str, expected: tuple[str, str, str | None] | None
) -> None:
    tree = ast.parse(call, mode="eval").body
    assert isinstance(tree, ast.Call)
    found_ast = dict_get_ast(tree)
    node = libcst.parse_expression(call)
    assert isinstance(node, libcst.Call)
    found_cst = dict_get_cst(node, lambda _: None)
    assert (None if found_ast is None else (
        ast.unparse(found_ast[0]), found_ast[1],
        None if found_ast[2] is None else ast.unparse(found_ast[2]),
    )) == expected
    module = libcst.Module(body=[])
    assert (None if found_cst is None else (
        module.code_for_node(found_cst[0]), found_cst[1],
        None if found_cst[2] is None else module.code_for_node(found_cst[2]),
    )) == expected
