"""The package's layers, read from the source: no import cycle anywhere, and no import against the
layering (CONTRIBUTING.md, "The tree").

Every import counts: at module level, inside functions and under ``if TYPE_CHECKING:``, because a
cycle that only type checkers follow still ties two modules together for a reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ROOT

PACKAGE = ROOT / "sampler_lint"
RULES = ROOT / "rules"

# The foundation of ``analysis``: what the rule contract itself stands on.
FOUNDATION = {
    "sampler_lint.analysis.tree",
    "sampler_lint.analysis.imports",
    "sampler_lint.analysis.vocabulary",
    "sampler_lint.analysis.index",
    "sampler_lint.analysis.syntax_summary",
    "sampler_lint.analysis.text_shapes",  # the pre-filters' token search and text shapes
    "sampler_lint.analysis.lazy_libcst",
    "sampler_lint.analysis.per_type",  # the per-type tables of the tree walks
}
CONTRACT = "sampler_lint.rule"


def layer(module: str) -> str:
    if module in FOUNDATION:
        return "foundation"
    if module == CONTRACT:
        return "contract"
    if module == "sampler_lint":
        return "version"
    parts = module.split(".")
    if parts[1] in {"analysis", "engine", "output", "server", "rules"}:
        return parts[1]
    return "app"  # cli, api, __main__


# What each layer may import (besides itself). Analysis never sees the engine or the output;
# the output never imports a rule module (rule classes reach it through the registry); nothing
# but the command line imports the command line; rules import the contract and analysis only.
ALLOWED: dict[str, set[str]] = {
    "version": set(),
    "foundation": set(),
    "contract": {"foundation"},
    "analysis": {"foundation", "contract"},
    "rules": {"foundation", "contract", "analysis"},
    "engine": {"version", "foundation", "contract", "analysis"},
    "output": {"version", "foundation", "contract", "analysis", "engine"},
    "server": {"version", "foundation", "contract", "analysis", "engine", "output"},
    "app": {"version", "foundation", "contract", "analysis", "engine", "output", "server"},
}


def module_files() -> dict[str, Path]:
    files = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    for path in sorted(RULES.glob("*.py")):
        name = "sampler_lint.rules" + ("" if path.stem == "__init__" else f".{path.stem}")
        files[name] = path
    return files


MODULES = module_files()


def imported_modules(name: str, path: Path) -> Iterator[str]:
    """The package modules ``name`` imports, ``from pkg import module`` resolved to the module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target.startswith("sampler_lint") and target != name:
                yield target


GRAPH = {name: sorted(set(imported_modules(name, path))) for name, path in MODULES.items()}


def test_the_graph_sees_the_package() -> None:
    assert "sampler_lint.engine.linter" in GRAPH["sampler_lint.engine.runner"]
    assert CONTRACT in GRAPH["sampler_lint.rules.sl101_floor_division_split"]
    assert len([m for m in MODULES if m.startswith("sampler_lint.rules.")]) >= 15


def test_no_import_cycles() -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in GRAPH.get(module, []):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target):], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in GRAPH:
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_follow_the_layers(module: str) -> None:
    own = layer(module)
    wrong = [
        target for target in GRAPH[module]
        if layer(target) != own and layer(target) not in ALLOWED[own]
        and not (module == "sampler_lint.rules" and target == CONTRACT)
    ]
    # A rule module never imports another rule: what a family shares lives in analysis.
    if own == "rules" and module != "sampler_lint.rules":
        wrong += [t for t in GRAPH[module] if layer(t) == "rules"]
    assert not wrong, f"{module} ({own}) imports {wrong}"


def test_the_contract_is_small() -> None:
    """Everything a rule needs from the engine's side is in ``sampler_lint.rule``."""
    from sampler_lint import rule

    for name in ("Rule", "FileContext", "Fix", "Report", "Severity", "Applicability", "Option",
                 "Example"):
        assert hasattr(rule, name), name
    assert set(GRAPH[CONTRACT]) <= FOUNDATION


def test_a_checkout_finds_its_rules_from_the_engine() -> None:
    """Run from a source checkout with a non-editable install, ``sampler_lint.rules`` comes from
    the checkout's ``rules/`` (CI does exactly this): the engine must point there wherever it
    sits in the package."""
    from sampler_lint.engine.registry import checkout_rules_init

    assert checkout_rules_init() == (RULES / "__init__.py").resolve()
