"""Qualified names through import aliases, without libcst's scope analysis.

``import torch.distributed as dist`` makes ``dist.get_rank`` resolve to
``torch.distributed.get_rank``. Imports are collected from the whole file, whatever their scope: a
name imported inside a function is rarely rebound to something else, and the full scope analysis
costs more than all rules together.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sampler_lint.analysis.lazy_libcst as cst


def dotted_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else ``None``."""
    parts: list[str] = []
    current: cst.CSTNode = node
    while isinstance(current, cst.Attribute):
        parts.append(current.attr.value)
        current = current.value
    if not isinstance(current, cst.Name):
        return None
    parts.append(current.value)
    return ".".join(reversed(parts))


def _module_name(node: cst.BaseExpression | None, dots: int = 0) -> str:
    base = dotted_name(node) if node is not None else ""
    return "." * dots + (base or "")


class _ImportCollector:
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.modules: set[str] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            self.modules.add(full)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = full
            else:
                top = full.split(".")[0]
                self.aliases.setdefault(top, top)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        module = _module_name(node.module, len(node.relative))
        self.modules.add(module)
        if isinstance(node.names, cst.ImportStar):
            return False
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            if not module:
                self.aliases[local] = name
            elif module.endswith("."):  # from . import x -> .x
                self.aliases[local] = module + name
            else:
                self.aliases[local] = f"{module}.{name}"
        return False



def _statements(module: cst.Module) -> list[cst.BaseSmallStatement]:
    """Every small statement of the file, in every block, without visiting expressions: imports
    are statements, and a libcst visitor over the whole tree costs as much as all rules together."""
    found: list[cst.BaseSmallStatement] = []
    blocks: list[cst.CSTNode] = [module]
    while blocks:
        node = blocks.pop()
        if isinstance(node, cst.SimpleStatementLine):
            found.extend(node.body)
            continue
        if isinstance(node, cst.SimpleStatementSuite):
            found.extend(node.body)
            continue
        for attr in ("body", "orelse", "finalbody", "handlers", "cases"):
            child = getattr(node, attr, None)
            if isinstance(child, (list, tuple)):
                blocks.extend(item for item in child if isinstance(item, cst.CSTNode))
            elif isinstance(child, cst.CSTNode):
                blocks.append(child)
    return found


@dataclass
class ImportTable:
    aliases: dict[str, str] = field(default_factory=dict)
    modules: set[str] = field(default_factory=set)

    @classmethod
    def from_module(cls, module: cst.Module) -> ImportTable:
        collector = _ImportCollector()
        for statement in _statements(module):
            if isinstance(statement, cst.Import):
                collector.visit_Import(statement)
            elif isinstance(statement, cst.ImportFrom):
                collector.visit_ImportFrom(statement)
        return cls(collector.aliases, collector.modules)

    def qualify(self, node: cst.CSTNode) -> str | None:
        name = dotted_name(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return name
        return f"{target}.{rest}" if rest else target

    def imports_any(self, prefixes: tuple[str, ...]) -> bool:
        return any(m == p or m.startswith(p + ".") for m in self.modules for p in prefixes)
