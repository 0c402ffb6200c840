"""The engine's read-only traversal calls the rules' methods exactly as libcst's own traversal
does: the same nodes, in the same order, with the same parents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from sampler_lint.analysis.tree import parents_of
from sampler_lint.engine.walk import supported, walk

from .conftest import FIXTURES, ROOT

KINDS = (
    "Module", "FunctionDef", "ClassDef", "Decorator", "Param", "For", "While", "If", "With",
    "Try", "ExceptHandler", "Return", "Assign", "AnnAssign", "AugAssign", "Expr", "Call", "Arg",
    "Attribute", "Name", "Subscript", "SubscriptElement", "Slice", "Index", "BinaryOperation",
    "UnaryOperation", "Comparison", "BooleanOperation", "Lambda", "ListComp", "GeneratorExp",
    "DictComp", "CompFor", "Yield", "Await", "IfExp", "Integer", "SimpleString", "FormattedString",
    "List", "Tuple", "Dict", "Set", "Element", "StarredElement", "Import", "ImportFrom",
    "Global", "Nonlocal", "Raise", "Assert", "Del", "Pass", "Break", "Continue", "Match",
    "MatchCase", "NamedExpr", "Else", "IndentedBlock", "SimpleStatementLine",
)


class Recorder(cst.BatchableCSTVisitor):
    """Records every visit and leave of the node kinds rules look at."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, int]] = []


def _make(kind: str, event: str) -> Any:
    def method(self: Recorder, node: cst.CSTNode) -> None:
        self.events.append((f"{event} {kind}", id(node)))
    method.__name__ = f"{event}_{kind}"
    return method


for _kind in KINDS:
    setattr(Recorder, f"visit_{_kind}", _make(_kind, "visit"))
    setattr(Recorder, f"leave_{_kind}", _make(_kind, "leave"))

class _ParentCollector(cst.CSTVisitor):
    """libcst's own view of the parents."""

    def __init__(self) -> None:
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[node] = self._stack[-1]
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


SOURCES = sorted(FIXTURES.rglob("*.py")) + sorted((ROOT / "sampler_lint").glob("*.py"))

EXTRA = '''
@decorator(arg)
@other
async def f(a, /, b: int = 1, *args, c, **kw) -> "T":
    global g
    x = [i async for i in y if i] + {k: v for k, v in z}
    async with a as b, c:
        await q
    match x:
        case [1, *rest] if rest:
            pass
        case {"k": v, **kw}:
            pass
        case Point(x=0) | None:
            pass
    try:
        pass
    except* ValueError as e:
        raise X from e
    else:
        del x[1:2, ::3]
    finally:
        return (yield from g)

class K(Base, metaclass=M):
    a: int = (n := 3)
    lam = lambda x, *y: x if y else -x
    s = f"{a!r:>{w}} and {b}" "tail"
'''


@pytest.mark.parametrize("source", [*SOURCES, "extra"], ids=lambda p: getattr(p, "name", p))
def test_walk_matches_libcst(source: Path | str) -> None:
    code = EXTRA if source == "extra" else Path(source).read_text(encoding="utf-8")
    module = cst.parse_module(code)
    ours, theirs = Recorder(), Recorder()
    assert supported([ours])
    parents = walk(module, [ours])
    cst.visit_batched(module, [theirs])
    assert ours.events == theirs.events
    collector = _ParentCollector()
    module.visit(collector)
    assert parents == parents_of(module)
    for node, parent in parents.items():
        assert collector.parents[node] is parent


def test_attribute_visitors_fall_back_to_libcst() -> None:
    class AttributeVisitor(cst.BatchableCSTVisitor):
        def visit_Call_func(self, node: cst.Call) -> None:
            pass

    assert not supported([AttributeVisitor()])


def test_field_order_is_the_order_libcst_visits_them_for_every_node_type() -> None:
    """The walk reads a node type's fields in the order its ``_visit_and_replace_children``
    names them, from the method's constants: the same order as its source names them, for
    every node type libcst has (the fixtures hold only some of them)."""
    import dataclasses
    import inspect
    import re

    from sampler_lint.analysis.tree import _FIELDS

    visited = re.compile(r'visit_\w+\(\s*self,\s*"(\w+)"')
    kinds = [
        kind for kind in vars(cst).values()
        if isinstance(kind, type) and issubclass(kind, cst.CSTNode)
        and dataclasses.is_dataclass(kind) and not inspect.isabstract(kind)
    ]
    assert len(kinds) > 150
    for kind in kinds:
        declared = [f.name for f in dataclasses.fields(kind)]
        source = inspect.getsource(kind._visit_and_replace_children)
        named = [n for n in dict.fromkeys(visited.findall(source)) if n in declared]
        expected = [n for n in named + [n for n in declared if n not in named]
                    if not n.startswith(("whitespace", "leading_lines", "lines_after"))]
        assert list(_FIELDS[kind]) == expected, kind.__name__


def test_a_visitor_asking_below_its_node_does_not_map_the_whole_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Mid-traversal, the parents below the node being visited are not recorded yet: a question
    about one (a call's argument) records that subtree's, not every node's of the file (which
    cost a 2,000-line test file 20 ms per sampler built in it)."""
    from sampler_lint import rule as rule_module
    from sampler_lint.analysis.index import ProjectIndex
    from sampler_lint.analysis.vocabulary import Vocabulary
    from sampler_lint.rule import FileContext

    module = cst.parse_module("def make(ds):\n    s = Sampler(ds[0])\n" + "x = 1\n" * 50)
    context = FileContext(path=Path("make.py"), module=module, options={},
                          vocabulary=Vocabulary(), index=ProjectIndex())
    whole_maps: list[cst.Module] = []
    monkeypatch.setattr(rule_module, "parents_of", lambda m: whole_maps.append(m) or {})
    seen: list[list[str]] = []

    class AsksAboutItsArgument(cst.BatchableCSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            name = node.args[0].value.value  # type: ignore[attr-defined]  # `ds` in `ds[0]`
            seen.append([type(a).__name__ for a in context.ancestors(name)])

    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    context.set_parents(parents, complete=False)
    walk(module, [AsksAboutItsArgument()], parents, context.visiting)
    assert seen == [[
        "Subscript", "Arg", "Call", "Assign", "SimpleStatementLine", "IndentedBlock",
        "FunctionDef", "Module",
    ]]
    assert whole_maps == []
