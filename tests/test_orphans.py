"""The engine's fix hygiene (``engine/orphans.py``): a fix removes the imports and locals
that it alone left unused, and nothing else.

Each case replaces one marked expression (``REPLACE_ME(...)``, its argument standing for the code
a fix rewrote) by the name ``new`` and checks what the clean-up removes."""

from __future__ import annotations

import libcst as cst
import pytest

from sampler_lint.engine.fixes import apply_fixes
from sampler_lint.rule import Applicability, Fix


def _fix_marked(code: str, *, package_init: bool = False) -> str:
    """Replace the argument of ``REPLACE_ME(...)`` calls by ``new`` with one fix each."""
    module = cst.parse_module(code)
    marked: list[cst.Call] = []

    class Find(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "REPLACE_ME":
                marked.append(node)

    module.visit(Find())
    fixes = [
        Fix([(call, cst.Name("new"))], Applicability.SAFE, "replace") for call in marked
    ]
    fixed = apply_fixes(module, fixes, package_init=package_init)
    assert fixed is not None
    return fixed.code


REMOVED = {
    "an import only the fix read": (
        "from math import ceil\n\ndef f(x, w):\n    return REPLACE_ME(ceil(len(x) / w))\n",
        "def f(x, w):\n    return new\n",
    ),
    "one name of a shared import": (
        "from math import ceil, floor\n\ndef f(x, w):\n    return REPLACE_ME(ceil(x)), floor(w)\n",
        "from math import floor\n\ndef f(x, w):\n    return new, floor(w)\n",
    ),
    "a local, then the import it read": (
        "import math\n\n\ndef f(x, w):\n    n = math.ceil(x.size(0) / w)\n"
        "    return REPLACE_ME(n)\n",
        "def f(x, w):\n    return new\n",
    ),
    "a local bound in a branch, read only there": (
        "import math\n\n\ndef f(x, w):\n    if w > 1:\n        n = math.ceil(x.size(0) / w)\n"
        "        x = REPLACE_ME(n)\n    return x\n",
        "def f(x, w):\n    if w > 1:\n        x = new\n    return x\n",
    ),
    "a local in a function calling the project's own `eval`": (
        "def eval(m):\n    return m\n\n\ndef f(x, w):\n    n = len(x) // w\n"
        "    eval(x)\n    return REPLACE_ME(n)\n",
        "def eval(m):\n    return m\n\n\ndef f(x, w):\n    eval(x)\n    return new\n",
    ),
    "a local read through a measurement": (
        "def f(x, w):\n    per = x.shape[0] // w\n    return REPLACE_ME(per)\n",
        "def f(x, w):\n    return new\n",
    ),
}


@pytest.mark.parametrize("name", sorted(REMOVED))
def test_removes_what_the_fix_alone_left_unused(name: str) -> None:
    code, expected = REMOVED[name]
    assert _fix_marked(code) == expected


KEPT = {
    "still read elsewhere": (
        "import math\n\ndef f(x, w):\n    return REPLACE_ME(math.ceil(x)), math.floor(w)\n"
    ),
    "unused before the fix already": (
        "import os\n\ndef f(x):\n    return REPLACE_ME(x)\n"
    ),
    "a value with a call": (
        "def f(x, w):\n    n = compute(x) // w\n    return REPLACE_ME(n)\n"
    ),
    "a value with a subscript": (
        "def f(x, table):\n    n = table['rows']\n    return REPLACE_ME(n)\n"
    ),
    "a module-level name": (
        "PER = 4 // 2\n\ndef f(x):\n    return REPLACE_ME(PER)\n"
    ),
    "a name bound twice": (
        "def f(x, w, flag):\n    n = len(x) // w\n    if flag:\n        n = 1\n"
        "    return REPLACE_ME(n)\n"
    ),
    "the only statement of a block": (
        "def f(x, w, flag):\n    if flag:\n        n = len(x) // w\n"
        "    return REPLACE_ME(n)\n"
    ),
    "read by a closure": (
        "def f(x, w):\n    n = len(x) // w\n    g = lambda: n\n    return REPLACE_ME(n), g\n"
    ),
    "a function reading its locals by name": (
        "def f(x, w):\n    n = len(x) // w\n    print(locals())\n    return REPLACE_ME(n)\n"
    ),
    "an explicit re-export": (
        "from math import ceil as ceil\n\ndef f(x):\n    return REPLACE_ME(ceil(x))\n"
    ),
    "a module with __all__": (
        "from math import ceil\n__all__ = ['f']\n\ndef f(x):\n    return REPLACE_ME(ceil(x))\n"
    ),
    "an import under try": (
        "try:\n    from math import ceil\nexcept ImportError:\n    ceil = None\n\n"
        "def f(x):\n    return REPLACE_ME(ceil(x))\n"
    ),
    "a global declared": (
        "def f(x, w):\n    global n\n    n = len(x) // w\n    return REPLACE_ME(n)\n"
    ),
    "two statements on one line": (
        "def f(x, w):\n    n = len(x) // w; m = 1\n    return REPLACE_ME(n), m\n"
    ),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_keeps_everything_else(name: str) -> None:
    code = KEPT[name]
    fixed = _fix_marked(code)
    # Only the marked expression changed.
    assert fixed == cst.parse_module(code).code.replace(_marked_text(code), "new")


def test_package_init_keeps_its_imports() -> None:
    code = "from math import ceil\n\ndef f(x):\n    return REPLACE_ME(ceil(x))\n"
    assert _fix_marked(code, package_init=True) == code.replace("REPLACE_ME(ceil(x))", "new")


def test_a_fix_can_opt_out() -> None:
    module = cst.parse_module("import math\n\ndef f(x):\n    return math.ceil(x)\n")
    call = module.body[1].body.body[0].body[0].value  # type: ignore[attr-defined]
    fix = Fix([(call, cst.Name("new"))], Applicability.SAFE, "replace", tidy=False)
    fixed = apply_fixes(module, [fix])
    assert fixed is not None and fixed.code.startswith("import math\n")


def _marked_text(code: str) -> str:
    start = code.index("REPLACE_ME(")
    depth = 0
    for end in range(start + len("REPLACE_ME"), len(code)):
        depth += {"(": 1, ")": -1}.get(code[end], 0)
        if depth == 0:
            return code[start:end + 1]
    raise AssertionError("unbalanced")
