"""libcst is imported only by a run that parses a file with it (``analysis.lazy_libcst``).

Importing libcst is most of the tool's start-up; a warm run, or a run whose pre-filters keep no
file, must not pay for it. Each check runs in a fresh interpreter (this one imported libcst long
ago) and asks ``sys.modules`` at the end. A rule is still a libcst batchable visitor by duck
typing: libcst's own traversal runs it, metadata included.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import ClassVar

import libcst as cst
import pytest
from libcst.metadata import PositionProvider

import sampler_lint
from sampler_lint.analysis.index import EMPTY_INDEX
from sampler_lint.analysis.vocabulary import Vocabulary
from sampler_lint.engine import registry
from sampler_lint.engine.linter import LintOptions, lint_source, run_rules
from sampler_lint.rule import Rule, Severity

from .conftest import ROOT

# The modules that build or change libcst trees and may import it when imported: each is
# imported by the engine only where a fix is applied.
EAGER = {
    "sampler_lint.engine.fixes",
    "sampler_lint.engine.orphans",
    "sampler_lint.analysis.realign",
}

# Run the CLI in a fresh interpreter; print whether libcst was imported, after its output.
# The console script's run (console.main; the script then ends the process at once, which
# would leave this probe no time to look).
PROBE = """
import sys
sys.argv = ["sampler-lint", *sys.argv[1:]]
from sampler_lint import console
try:
    console.main()
except SystemExit:
    pass
print("LIBCST-IMPORTED" if "libcst" in sys.modules else "LIBCST-NOT-IMPORTED")
"""

FLAGGED = textwrap.dedent("""\
    from torch.utils.data import DataLoader, DistributedSampler

    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(10):
        for batch in loader:
            pass
""")
UNRELATED = "def add(a, b):\n    return a + b\n"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["NO_COLOR"] = "1"
    return env


def _run(cwd: Path, *args: str) -> tuple[bool, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, env=_env(), capture_output=True,
        text=True, timeout=300,
    )
    output = done.stdout
    assert "LIBCST-" in output, done.stderr
    return "LIBCST-IMPORTED" in output, output


def _modules() -> list[str]:
    names = [info.name for info in pkgutil.walk_packages(sampler_lint.__path__, "sampler_lint.")]
    rules = registry._rules_package()
    names += [info.name for info in pkgutil.iter_modules(rules.__path__, "sampler_lint.rules.")]
    return sorted(set(names) - EAGER)


def test_importing_the_tool_and_listing_its_rules_does_not_import_libcst() -> None:
    modules = _modules()
    assert "sampler_lint.cli" in modules and "sampler_lint.engine.linter" in modules
    assert len([m for m in modules if m.startswith("sampler_lint.rules.")]) >= 20
    code = textwrap.dedent(f"""
        import importlib, sys
        from sampler_lint.engine import registry
        registry.all_rules()
        for name in {modules!r}:
            importlib.import_module(name)
            if "libcst" in sys.modules:
                raise SystemExit("importing " + name + " imported libcst")
    """)
    done = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_eager_modules_are_the_ones_that_import_libcst() -> None:
    """The list above is not stale: each module in it exists and does import libcst."""
    for name in EAGER:
        module = importlib.import_module(name)
        assert "import libcst as cst" in Path(module.__file__ or "").read_text(encoding="utf-8")


def test_version_and_rule_documentation_do_not_import_libcst(tmp_path: Path) -> None:
    assert _run(tmp_path, "--version")[0] is False
    imported, output = _run(tmp_path, "rule", "SL301")
    assert "hardcoded-sampler-seed" in output
    assert imported is False


def test_a_warm_run_does_not_import_libcst_and_reports_what_the_cold_one_did(
    tmp_path: Path,
) -> None:
    (tmp_path / "train.py").write_text(FLAGGED)
    (tmp_path / "util.py").write_text(UNRELATED)
    args = ("check", "--select", "ALL", "--output-format", "json", "--exit-zero", ".")
    imported, cold = _run(tmp_path, *args)
    assert imported is True  # the cold run parsed train.py with libcst: the probe can tell
    imported_warm, warm = _run(tmp_path, *args)
    assert imported_warm is False
    findings = json.loads(cold[: cold.rindex("LIBCST-")])
    assert [f["code"] for f in findings] == ["SL202"]
    assert json.loads(warm[: warm.rindex("LIBCST-")]) == findings


def test_a_file_no_prefilter_keeps_is_checked_without_libcst(tmp_path: Path) -> None:
    """The one-file pre-commit run on an unrelated file: cold, no cache, no libcst."""
    (tmp_path / "util.py").write_text(UNRELATED)
    imported, output = _run(tmp_path, "check", "--no-cache", "--select", "ALL", "util.py")
    assert "All checks passed" in output
    assert imported is False


class _ReportsLines(Rule):
    """Reports each call with the line libcst's PositionProvider gives it."""

    code: ClassVar[str] = "SLX700"
    name: ClassVar[str] = "reports-lines"
    severity: ClassVar[Severity] = Severity.WARNING
    METADATA_DEPENDENCIES = (PositionProvider,)

    def visit_Call(self, node: cst.Call) -> None:
        line = self.get_metadata(PositionProvider, node).start.line
        self.report(node, f"a call on line {line}")


class _VisitsCallFunc(Rule):
    """An attribute visitor (``visit_<Node>_<field>``): only libcst's traversal calls it."""

    code: ClassVar[str] = "SLX701"
    name: ClassVar[str] = "visits-call-func"
    severity: ClassVar[Severity] = Severity.WARNING

    def visit_Call_func(self, node: cst.Call) -> None:
        self.report(node, "a callee")


@pytest.mark.parametrize("rule", [_ReportsLines, _VisitsCallFunc])
def test_libcst_traversal_runs_a_rule_that_needs_it(rule: type[Rule]) -> None:
    code = "a = 1\nf(\n    g(a),\n)\n"
    lint = LintOptions(rules=(rule,), options={}, vocabulary=Vocabulary())
    context = run_rules(Path("x.py"), cst.parse_module(code), (rule,), lint, EMPTY_INDEX)
    messages = sorted(report.message for report in context.reports)
    if rule is _ReportsLines:
        assert messages == ["a call on line 2", "a call on line 3"]
        result, _ = lint_source(Path("x.py"), code.encode(), lint)  # and through the engine
        assert sorted(f.message for f in result.findings) == messages
    else:
        assert messages == ["a callee", "a callee"]


def test_get_metadata_names_a_provider_the_rule_did_not_declare() -> None:
    class Undeclared(_ReportsLines):
        METADATA_DEPENDENCIES = ()

        def visit_Call(self, node: cst.Call) -> None:
            self.get_metadata(PositionProvider, node)

    lint = LintOptions(rules=(Undeclared,), options={}, vocabulary=Vocabulary())
    with pytest.raises(KeyError, match="PositionProvider"):
        run_rules(Path("x.py"), cst.parse_module("f()\n"), (Undeclared,), lint, EMPTY_INDEX)


def test_get_visitors_answers_as_libcsts_batchable_visitor_does() -> None:
    """Bound methods whose own name starts with visit_ / leave_: a static method or a wrapper
    that hides the name is left out (as libcst leaves them out), and a property is never read."""

    def hidden(method):  # type: ignore[no-untyped-def]
        def wrapper(self, node):  # type: ignore[no-untyped-def]
            return method(self, node)
        return wrapper

    class Probe(Rule):
        code: ClassVar[str] = "SLX702"
        name: ClassVar[str] = "probe"
        severity: ClassVar[Severity] = Severity.WARNING

        def visit_Call(self, node: cst.Call) -> None:
            pass

        def leave_Name_value(self, node: cst.Name) -> None:
            pass

        @staticmethod
        def visit_Name(node: cst.Name) -> None:
            pass

        @hidden
        def visit_Integer(self, node: cst.Integer) -> None:
            pass

        @property
        def visit_Float(self) -> None:
            raise AssertionError("a property was read")

    class Theirs(cst.BatchableCSTVisitor):
        visit_Call = Probe.visit_Call
        leave_Name_value = Probe.leave_Name_value
        visit_Name = Probe.__dict__["visit_Name"]
        visit_Integer = Probe.visit_Integer

    probe = Probe(None)  # type: ignore[arg-type]
    assert sorted(probe.get_visitors()) == ["leave_Name_value", "visit_Call"]
    assert sorted(probe.get_visitors()) == sorted(Theirs().get_visitors())
