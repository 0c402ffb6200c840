"""The project index: facts from every file of the project that a rule may need while linting
one file (a base class defined elsewhere, whether the project uses Lightning, who calls
``set_epoch``).

The engine builds it in a first pass over the whole project (the nearest ``pyproject.toml`` or git
root above the linted paths), so a run over a few changed files (pre-commit) sees the same facts as
a run over everything. It uses Python's ``ast`` (far cheaper than libcst) and only for files that
pass a text pre-filter.

Two kinds of facts:
- common facts, collected by the engine for every rule that sets ``Rule.uses_index``: the classes
  of the project with their bases (qualified through each file's imports) and the modules each
  file imports;
- rule facts: ``Rule.collect_facts(tree, path)`` guarded by ``Rule.index_requires`` (a text
  pre-filter in the shape of ``Rule.requires``), merged under the fact names the rule chooses.

Facts are plain picklable values so that the index can be handed to worker processes.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ClassFact:
    """A class defined in the project."""

    name: str
    path: str
    bases: tuple[str, ...]  # qualified through the file's imports (``torch.utils.data.Sampler``)
    line: int


@dataclass
class ProjectIndex:
    facts: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))

    def add(self, kind: str, values: list[Any]) -> None:
        self.facts[kind].extend(values)

    def get(self, kind: str) -> list[Any]:
        return self.facts.get(kind, [])

    def merge(self, other: ProjectIndex) -> None:
        for kind, values in other.facts.items():
            self.facts[kind].extend(values)
        self.__dict__.pop("_classes", None)

    # -- common facts ---------------------------------------------------------------------------
    @property
    def classes(self) -> dict[str, list[ClassFact]]:
        """Project classes by simple name (several files may define the same name)."""
        cached = self.__dict__.get("_classes")
        if cached is None:
            cached = defaultdict(list)
            for fact in self.get("classes"):
                cached[fact.name].append(fact)
            self.__dict__["_classes"] = cached
        return cached

    def base_chain(self, qualified: str, seen: frozenset[str] = frozenset()) -> Iterator[str]:
        """Every qualified base reachable from ``qualified`` through project classes, itself
        included. A name that is not a project class ends its branch (a third-party or torch
        base, or one the index cannot resolve)."""
        yield qualified
        if qualified in seen:
            return
        simple = qualified.rsplit(".", 1)[-1]
        for fact in self.classes.get(simple, []):
            for base in fact.bases:
                yield from self.base_chain(base, seen | {qualified})

    def imported_modules(self) -> set[str]:
        return {module for modules in self.get("imports") for module in modules}

    def uses_module(self, *prefixes: str) -> bool:
        return any(
            module == prefix or module.startswith(prefix + ".")
            for module in self.imported_modules()
            for prefix in prefixes
        )


EMPTY_INDEX = ProjectIndex()


# ------------------------------------------------------------------------------------------------
# Common facts


def statements(tree: ast.AST) -> Iterator[ast.stmt]:
    """Every statement of the tree, in every block (functions and classes included), without
    visiting expressions: imports and class definitions are statements, and a full ``ast.walk``
    costs several times more."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            yield node
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, block, None)
            if isinstance(children, list):
                stack.extend(reversed(children))


def import_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> what it was imported as (``dist`` -> ``torch.distributed``)."""
    aliases: dict[str, str] = {}
    for node in statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    aliases.setdefault(top, top)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                full = f"{module}.{alias.name}" if module else alias.name
                aliases[alias.asname or alias.name] = full
    return aliases


def dotted_expression(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted_expression(node.value)
        return f"{inner}.{node.attr}" if inner else None
    if isinstance(node, ast.Subscript):  # Generic[T], Sampler[int]
        return dotted_expression(node.value)
    if isinstance(node, ast.Call):  # six.with_metaclass(...) and similar: unknown
        return None
    return None


def qualify(aliases: dict[str, str], dotted: str) -> str:
    head, _, rest = dotted.partition(".")
    target = aliases.get(head)
    if target is None:
        return dotted
    return f"{target}.{rest}" if rest else target


COMMON_REQUIRES = ("class ", "import ")


def collect_common_facts(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    aliases = import_aliases(tree)
    classes = []
    for node in statements(tree):
        if isinstance(node, ast.ClassDef):
            bases = []
            for base in node.bases:
                dotted = dotted_expression(base)
                bases.append(qualify(aliases, dotted) if dotted else "<unknown>")
            classes.append(ClassFact(node.name, path, tuple(bases), node.lineno))
    modules = sorted({m.lstrip(".") for m in aliases.values()} | {
        (node.module or "") for node in statements(tree) if isinstance(node, ast.ImportFrom)
    })
    return {"classes": classes, "imports": [tuple(modules)]}
