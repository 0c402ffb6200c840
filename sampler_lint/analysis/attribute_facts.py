"""Attributes the project assigns on objects other than ``self`` (SL401).

``sampler.offset = 3`` in a training script gives a sampler an attribute its class never assigns;
a read of ``self.offset`` in that class is then no stale name.
"""

from __future__ import annotations

import ast
from typing import Any

from sampler_lint.analysis.index import FactCollector, ProjectIndex
from sampler_lint.analysis.syntax_summary import SyntaxSummary

FACT_OUTSIDE_WRITES = "sl4_outside_writes"


def collect_outside_writes(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    summary = SyntaxSummary.of(tree)
    names: set[str] = set()
    for attribute in summary.nodes(ast.Attribute):
        if isinstance(attribute.ctx, (ast.Store, ast.Del)) and not (
            isinstance(attribute.value, ast.Name) and attribute.value.id == "self"
        ):
            names.add(attribute.attr)
    for call in summary.nodes(ast.Call):
        if isinstance(call.func, ast.Name) and call.func.id == "setattr" and len(call.args) > 1:
            name = call.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                names.add(name.value)
    return {FACT_OUTSIDE_WRITES: sorted(names)}


# Code that gives a sampler an attribute from outside names it somehow.
OUTSIDE_WRITES = FactCollector(
    "attributes assigned from outside", (("sampler", "Sampler"),), collect_outside_writes,
    kinds=(FACT_OUTSIDE_WRITES,),
)


def assigned_from_outside(index: ProjectIndex, attr: str) -> bool:
    # Code that writes `x.offset` or setattr(x, "offset", ...) spells the name: only files that
    # hold it need be read (an index built on demand parses just those).
    cached: dict[str, bool] = index.__dict__.setdefault("_sl4_outside", {})
    known = cached.get(attr)
    if known is None:
        known = cached[attr] = attr in index.get_for(FACT_OUTSIDE_WRITES, attr)
    return known
