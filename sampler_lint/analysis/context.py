"""What a rule can ask about the file it is looking at.

Everything here is computed lazily: a file whose rules never ask for parents or imports never pays
for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import libcst as cst

from sampler_lint import walk
from sampler_lint.imports import ImportTable
from sampler_lint.vocabulary import Vocabulary

if TYPE_CHECKING:
    from sampler_lint.index import ProjectIndex
    from sampler_lint.rule import Report


@dataclass
class FileContext:
    """Per-file state shared by all rules during one traversal."""

    path: Path
    module: cst.Module
    options: dict[str, Any]
    vocabulary: Vocabulary
    index: ProjectIndex
    reports: list[Report] = field(default_factory=list)
    _parents: dict[cst.CSTNode, cst.CSTNode] | None = None
    _parents_complete: bool = False
    _imports: ImportTable | None = None
    _assignments: dict[int, dict[str, list[cst.BaseExpression]]] = field(default_factory=dict)

    # -- tree navigation ------------------------------------------------------------------------
    @property
    def parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        """The parent of every node (whitespace and comments aside)."""
        if self._parents is None or not self._parents_complete:
            self.set_parents(walk.parents_of(self.module), complete=True)
        assert self._parents is not None
        return self._parents

    def set_parents(self, parents: dict[cst.CSTNode, cst.CSTNode], complete: bool) -> None:
        """Parents recorded by the traversal that runs the rules (``sampler_lint.walk``). While
        it runs the map is partial, but always holds every ancestor of the node being visited;
        a question about any other node builds the whole map first."""
        self._parents = parents
        self._parents_complete = complete

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        if node is self.module:
            return None
        if self._parents is not None:
            found = self._parents.get(node)
            if found is not None or self._parents_complete:
                return found
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def enclosing_scope(self, node: cst.CSTNode) -> cst.FunctionDef | cst.ClassDef | cst.Module:
        """The innermost function, class or module holding ``node``."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Module)):
                return ancestor
        return self.module

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                return ancestor
        return None

    def enclosing_class(self, node: cst.CSTNode) -> cst.ClassDef | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.ClassDef):
                return ancestor
        return None

    def enclosing_statement(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        for ancestor in [node, *self.ancestors(node)]:
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return ancestor
        return None

    def assignments(self, scope: cst.CSTNode) -> dict[str, list[cst.BaseExpression]]:
        """Every simple assignment in ``scope`` by target name, computed once per scope."""
        table = self._assignments.get(id(scope))
        if table is None:
            from sampler_lint.matching import assignment_table

            table = assignment_table(scope)
            self._assignments[id(scope)] = table
        return table

    # -- names ----------------------------------------------------------------------------------
    @property
    def imports(self) -> ImportTable:
        if self._imports is None:
            self._imports = ImportTable.from_module(self.module)
        return self._imports

    def qualified_name(self, node: cst.BaseExpression) -> str | None:
        """``dist.get_rank`` -> ``torch.distributed.get_rank`` through the file's imports."""
        return self.imports.qualify(node)

    @property
    def source(self) -> str:
        """The whole file's code (the text it was parsed from when known, else regenerated from
        the tree once, on first use)."""
        cached = self.__dict__.get("_source")
        if cached is None:
            cached = self.__dict__["_source"] = self.module.code
        return cached

    def known_source(self, text: str) -> None:
        """Tell the context the module's code without regenerating it (``text`` must equal
        ``module.code``)."""
        self.__dict__["_source"] = text

    def code_for(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)
