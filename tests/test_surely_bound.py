"""analysis.tree.binds_surely and bound_on_every_path: whether a name is bound on every path
to a node, which decides whether a fix may pass it (SL301's `seed=seed`, SL202's
`sampler.set_epoch`). A name bound on some paths only would raise UnboundLocalError there."""

from __future__ import annotations

import libcst as cst
import pytest

from sampler_lint.analysis.tree import binds_surely, bound_on_every_path, descendants


def _statement(code: str) -> cst.BaseStatement:
    return cst.parse_module(code).body[0]


@pytest.mark.parametrize(
    ("code", "binds"),
    [
        ("seed = 1\n", True),
        ("seed, workers = 1, 2\n", True),
        ("(a, [b, *seed]) = values\n", True),
        ("table[seed] = 1\n", False),  # reads `seed`, binds nothing
        ("self.seed = 1\n", False),
        ("seed: int\n", False),
        ("seed: int = 1\n", True),
        ("x = 1; seed = 2\n", True),
        ("if a:\n    seed = 1\n", False),  # no else: the test may be false
        ("if a:\n    seed = 1\nelse:\n    seed = 2\n", True),
        ("if a:\n    seed = 1\nelse:\n    other = 2\n", False),
        ("if a:\n    seed = 1\nelif b:\n    seed = 2\nelse:\n    seed = 3\n", True),
        ("if a:\n    seed = 1\nelif b:\n    seed = 2\n", False),
        ("if a is None:\n    raise ValueError\nelse:\n    seed = a\n", True),
        ("with open(p) as f:\n    seed = int(f.read())\n", True),
        ("try:\n    seed = int(s)\nexcept ValueError:\n    seed = 0\n", True),
        ("try:\n    seed = int(s)\nexcept ValueError:\n    pass\n", False),
        ("for run in runs:\n    seed = run\n", False),  # may run no time
        ("while waiting:\n    seed = poll()\n", False),
    ],
)
def test_binds_surely(code: str, binds: bool) -> None:
    assert binds_surely(_statement(code), "seed") is binds


def _bound_at_sampler(code: str) -> bool:
    module = cst.parse_module(code)
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    parents = wrapper.resolve(cst.metadata.ParentNodeProvider)
    scope: cst.CSTNode = next(
        (n for n in descendants(module) if isinstance(n, cst.FunctionDef)), module
    )
    call = next(
        n for n in descendants(module)
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "Sampler"
    )
    ancestors = []
    node: cst.CSTNode = call
    while node in parents:
        node = parents[node]
        ancestors.append(node)
    return bound_on_every_path(ancestors, scope, "seed", call)


@pytest.mark.parametrize(
    ("code", "bound"),
    [
        ("def f():\n    seed = 1\n    Sampler(seed)\n", True),
        ("def f():\n    Sampler(seed)\n    seed = 1\n", False),  # bound after
        ("def f(a):\n    if a:\n        seed = 1\n        Sampler(seed)\n", True),
        # bound in a branch that does not hold the sampler
        ("def f(a):\n    if not a:\n        seed = 1\n    if a:\n        Sampler(seed)\n", False),
        ("def f(a):\n    if a:\n        seed = 1\n    else:\n        Sampler(seed)\n", False),
        ("def f(a):\n    if a:\n        seed = 1\n    else:\n        seed = 2\n    Sampler(seed)\n",
         True),
        ("def f(a):\n    seed = 1; Sampler(seed)\n", True),
        ("def f(a):\n    if a: seed = 1; Sampler(seed)\n", True),
        # a nested function's own `seed` is not the outer one's
        ("def f():\n    def g():\n        seed = 1\n        Sampler(seed)\n", False),
        ("def f():\n    seed = 1\n    def g():\n        Sampler(seed)\n", True),
        # a script's own statements (no function: the module is the scope)
        ("seed = 1\nfor epoch in range(3):\n    Sampler(seed)\n", True),
        ("if a:\n    seed = 1\nfor epoch in range(3):\n    Sampler(seed)\n", False),
    ],
)
def test_bound_on_every_path(code: str, bound: bool) -> None:
    assert _bound_at_sampler(code) is bound
