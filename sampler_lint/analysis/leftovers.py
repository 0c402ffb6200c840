"""Whether a fix that removes code leaves an unused local or import behind (SL404, SL504)."""

from __future__ import annotations

from collections.abc import Sequence

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.tree import descendants
from sampler_lint.rule import FileContext


def name_reads(node: cst.CSTNode) -> dict[str, int]:
    """How often each plain name is read below ``node`` (attribute names, keywords, assignment
    targets, parameters, definitions and imports are not reads)."""
    not_reads: set[int] = set()
    counts: dict[str, int] = {}
    for child in descendants(node):
        if isinstance(child, cst.Attribute):
            not_reads.add(id(child.attr))
        elif isinstance(child, cst.Arg) and child.keyword is not None:
            not_reads.add(id(child.keyword))
        elif isinstance(child, cst.AssignTarget):
            not_reads.add(id(child.target))
        elif isinstance(child, (cst.Param, cst.FunctionDef, cst.ClassDef)):
            not_reads.add(id(child.name))
        elif isinstance(child, (cst.Import, cst.ImportFrom)):
            not_reads.update(id(n) for n in descendants(child) if isinstance(n, cst.Name))
        elif isinstance(child, cst.Name) and id(child) not in not_reads:
            counts[child.value] = counts.get(child.value, 0) + 1
    return counts


def leaves_unused_names(
    context: FileContext,
    removed: Sequence[cst.CSTNode],
    added: Sequence[cst.CSTNode] = (),
    *,
    at: cst.CSTNode,
) -> bool:
    """Whether removing the nodes ``removed`` (and adding ``added``) at ``at`` leaves a name
    read nowhere in its scope: a local of the function around ``at`` (scope: that function) or
    an imported name (scope: the file). Parameters and module globals (other modules may read
    them) are never leftovers."""
    function = context.enclosing_function(at)
    parameters: set[str] = set()
    if function is not None:
        params = function.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        parameters = {param.name.value for param in every}
    gone: dict[str, int] = {}
    for node in removed:
        for name, count in name_reads(node).items():
            gone[name] = gone.get(name, 0) + count
    for node in added:
        for name, count in name_reads(node).items():
            gone[name] = gone.get(name, 0) - count
    for name, count in gone.items():
        if count <= 0:
            continue
        local = function is not None and name in context.assignments(function)
        if name in parameters and not local:
            continue  # an unused parameter is no leftover
        if not local and name not in context.imports.aliases:
            continue  # a module global (not an import) may be read by other modules
        scope: cst.CSTNode = function if local and function is not None else context.module
        if name_reads(scope).get(name, 0) <= count:
            return True
    return False
