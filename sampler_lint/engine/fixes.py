"""Applying rule fixes to a syntax tree.

Fixes replace nodes by identity, so one transformer pass applies any number of non-overlapping
fixes; the imports they need are added with libcst's own import helpers. Then the imports and
locals that the fixes alone left unused are removed (``engine.orphans``), for every rule, so
a fix never leaves an F401/F841 behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from sampler_lint.engine.orphans import remove_orphans
from sampler_lint.rule import Fix


class _Replacer(cst.CSTTransformer):
    def __init__(self, replacements: dict[int, Any]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        replacement = self.replacements.get(id(original_node))
        if replacement is None:
            return updated_node
        return replacement


def apply_fixes(
    module: cst.Module, fixes: Sequence[Fix], *, package_init: bool = False
) -> cst.Module | None:
    """The module with every fix applied, or ``None`` if a fix targets a node not in it.
    ``package_init``: the module is a package's ``__init__.py``, whose imports are its API."""
    replacements: dict[int, Any] = {}
    keep_alive = []
    for fix in fixes:
        for old, new in fix.replacements:
            replacements[id(old)] = new
            keep_alive.append(old)
    replacer = _Replacer(replacements)
    new_module = module.visit(replacer)
    if not isinstance(new_module, cst.Module):
        return None
    # Before the imports are added: the replacement nodes are still the objects the rules built,
    # and an import a fix needs is read by its own new code, so it is never taken for unused.
    tidy = [old for fix in fixes if fix.tidy for old, _ in fix.replacements]
    if tidy:
        new_module = remove_orphans(module, new_module, tidy, keep_module_imports=package_init)
    imports = [item for fix in fixes for item in fix.imports]
    if imports:
        # libcst.codemod pulls in libcst.matchers, which alone takes most of a second to import:
        # only fixes that add imports pay for it.
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import AddImportsVisitor

        context = CodemodContext()
        for module_name, obj in imports:
            AddImportsVisitor.add_needed_import(context, module_name, obj)
        new_module = AddImportsVisitor(context).transform_module(new_module)
    del keep_alive
    return new_module
