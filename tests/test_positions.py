"""``positions.positions_near`` gives exactly the positions a whole-file generation gives, or
nothing: checked node by node over odd shapes and the fixtures."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from sampler_lint.analysis.positions import positions_near, positions_of
from sampler_lint.analysis.tree import parents_of

FIXTURES = sorted(Path(__file__).parent.joinpath("fixtures").glob("*/*.py"))

ODD = {
    "decorators": (
        "# header\n\nimport x\n\n\n# above\n@a  # one\n\n# between\n@b(\n    1,\n)\n"
        "def f(\n    a,\n):\n    # inside\n    return a  # tail\n    # footer\n\n"
        "class C(x.Base):\n    @property\n    def p(self): return self.q\n"
    ),
    "branches": (
        "if a:\n    b = 1\nelif c:\n    d = 2\nelif e:\n    pass\nelse:\n    f()\n"
        "try:\n    g()\nexcept E as err:\n    h(err)\nexcept (F, G):\n    pass\nelse:\n"
        "    i = 1\nfinally:\n    j()\n"
        "for k in l:\n    if k: continue\nelse:\n    m = [\n        1,\n    ]\n"
        "while n:\n    o; p = 2; q()\n"
        "with r as s, t:\n    u = s.split(v // w)[x]\n"
        "match y:\n    case [1, *rest]:\n        z = rest\n    case _:\n        pass\n"
    ),
    "crlf and tabs": "def f():\r\n\tif a:\r\n\t\treturn b\r\n\treturn c\r\n",
    "async": (
        "async def f():\n    async with a as b:\n        async for c in b:\n"
        "            await c\n"
    ),
    "continuations": "x = 1 + \\\n    2\ny = (\n    3\n)\ns = '''\na\n'''; t = 4\n",
    "nested blocks": (
        "class A:\n    class B:\n        def f(self):\n            try:\n                pass\n"
        "            except* E:\n                g()\n"
    ),
}


def _check(code: str) -> int:
    module = cst.parse_module(code)
    full = positions_of(module)
    parents = parents_of(module)
    checked = 0
    for node in list(full):
        if node is module:
            continue
        near = positions_near(module, code, [node], parents.get)
        if near is None:
            continue
        assert node in near
        for other, where in near.items():
            assert full[other] == where, (type(other).__name__, where, full[other])
        checked += 1
    return checked


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_shapes(name: str) -> None:
    assert _check(ODD[name]) > 0


@pytest.mark.parametrize("path", FIXTURES[:12], ids=lambda path: f"{path.parent.name}/{path.name}")
def test_fixtures(path: Path) -> None:
    _check(path.read_text(encoding="utf-8"))


def test_a_source_that_is_not_the_tree_gives_nothing() -> None:
    code = "def f():\n    return a.split(n // w)[r]\n"
    module = cst.parse_module(code)
    parents = parents_of(module)
    node = next(n for n in positions_of(module) if isinstance(n, cst.Return))
    assert positions_near(module, code.replace("a.split", "b.split"), [node], parents.get) is None


ALIGNED = (
    "def shard(x, world_size, rank):\n"
    "    per_rank = len(x) // world_size\n"
    "    if rank >= 0:\n"
    "        parts = x.split(per_rank,\n"
    "                        dim=0)[rank]\n"
    "        return parts\n"
)


def test_a_renamed_callee_moves_the_lines_aligned_with_its_bracket() -> None:
    """SL101's fix renames ``split`` to ``tensor_split``: the continuation line aligned with the
    bracket moves with it, measured from the statement's positions alone (``realign``)."""
    from sampler_lint.api import lint_code

    result = lint_code(ALIGNED, fix=True, unsafe_fixes=True)
    assert result.fixed is not None
    assert "        parts = x.tensor_split(world_size,\n" \
           "                               dim=0)[rank]\n" in result.fixed
    hanging = ALIGNED.replace("x.split(per_rank,\n                        dim",
                              "x.split(\n            per_rank, dim")
    result = lint_code(hanging, fix=True, unsafe_fixes=True)
    assert result.fixed is not None
    assert "x.tensor_split(\n            world_size, dim=0)[rank]" in result.fixed
