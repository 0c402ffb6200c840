"""The fix loop's guards, each tripped by a stand-in rule registered for the test: a fix that
parses but does not compile, one that does not parse, one that does not reduce the findings, one
that never settles, and one whose tree libcst refuses. Each leaves the file byte-identical (on disk,
through the command line) and says why, in its own words."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import libcst as cst
import pytest
from click.testing import CliRunner

from sampler_lint.cli import main
from sampler_lint.engine import registry
from sampler_lint.engine.runner import PARALLEL_THRESHOLD
from sampler_lint.rule import Applicability, Fix, Rule, Severity

SOURCE = "def keep():\n    return 0\n\n\nvalue = 1  # a comment\n"


class _StandIn(Rule):
    """Flags every integer literal ``1``-ish; subclasses decide what the fix does."""

    code: ClassVar[str] = "SLX000"
    name: ClassVar[str] = "stand-in"
    severity: ClassVar[Severity] = Severity.WARNING
    fix_applicability: ClassVar[Applicability | None] = Applicability.SAFE

    def visit_Integer(self, node: cst.Integer) -> None:
        replacement = self.replacement(node)
        if replacement is None:
            self.report(node, "a stand-in finding")
        else:
            self.report(node, "a stand-in finding",
                        Fix([(node, replacement)], Applicability.SAFE, "stand-in fix"))

    def replacement(self, node: cst.Integer) -> cst.CSTNode | None:
        raise NotImplementedError


class _DoesNotCompile(_StandIn):
    code = "SLX901"
    name = "does-not-compile"

    def visit_Assign(self, node: cst.Assign) -> None:
        # `value = 1` becomes `return 1` at module level: it parses, but does not compile.
        self.report(node, "a stand-in finding", Fix(
            [(node, cst.Return(node.value))], Applicability.SAFE, "stand-in fix"
        ))

    def visit_Integer(self, node: cst.Integer) -> None:
        return None


class _DoesNotParse(_StandIn):
    code = "SLX902"
    name = "does-not-parse"

    def replacement(self, node: cst.Integer) -> cst.CSTNode | None:
        # A statement where an expression stands: `value = pass` does not parse.
        return cst.Pass() if node.value == "1" else None


class _DoesNotReduce(_StandIn):
    code = "SLX903"
    name = "does-not-reduce"

    def replacement(self, node: cst.Integer) -> cst.CSTNode | None:
        # 1 -> 2 -> 3, and 3 is still reported (without a fix): as many findings as before.
        value = int(node.value)
        return cst.Integer(str(value + 1)) if 0 < value < 3 else None


class _NeverSettles(_StandIn):
    code = "SLX904"
    name = "never-settles"

    def replacement(self, node: cst.Integer) -> cst.CSTNode | None:
        return cst.Integer(str(int(node.value) + 1)) if node.value != "0" else None


class _Raises(_StandIn):
    code = "SLX905"
    name = "raises"

    def replacement(self, node: cst.Integer) -> cst.CSTNode | None:
        # A sequence where one expression must stand: libcst raises while applying it.
        if node.value != "1":
            return None
        return cst.FlattenSentinel([cst.Integer("1"), cst.Integer("2")])  # type: ignore[return-value]


STAND_INS: list[tuple[type[Rule], str]] = [
    (_DoesNotCompile, "fixed code would not compile; file left unchanged"),
    (_DoesNotParse, "fixed code would not parse"),
    (_DoesNotReduce, "fixing did not reduce the findings; file left unchanged"),
    (_NeverSettles, "fixes did not settle after"),
    (_Raises, "fix failed and was not applied"),
]
MESSAGES = [message for _, message in STAND_INS]


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    rules = registry.all_rules() + tuple(rule for rule, _ in STAND_INS)
    monkeypatch.setattr(registry, "all_rules", lambda: rules)
    yield


@pytest.mark.parametrize(("rule", "message"), STAND_INS, ids=[r.code for r, _ in STAND_INS])
def test_a_refused_fix_leaves_the_file_byte_identical(
    tmp_path: Path, rule: type[Rule], message: str
) -> None:
    path = tmp_path / "module.py"
    path.write_bytes(SOURCE.encode())
    result = CliRunner().invoke(main, [
        "check", "--isolated", "--no-cache", "--select", rule.code, "--fix", "--jobs", "1",
        str(path),
    ])
    assert path.read_bytes() == SOURCE.encode()
    assert message in result.output, result.output
    # Its own message, and no other guard's.
    assert [m for m in MESSAGES if m in result.output] == [message], result.output
    assert not re.search(r"\([1-9][0-9]* fixed", result.output), result.output
    assert result.exit_code == 1, result.output


def test_refused_fixes_in_worker_processes(tmp_path: Path) -> None:
    """The same guard in the process pool: nothing written, one message per file."""
    for number in range(PARALLEL_THRESHOLD + 2):
        (tmp_path / f"module_{number}.py").write_bytes(SOURCE.encode())
    result = CliRunner().invoke(main, [
        "check", "--isolated", "--no-cache", "--select", _DoesNotCompile.code, "--fix",
        "--jobs", "2", str(tmp_path),
    ])
    assert all(p.read_bytes() == SOURCE.encode() for p in tmp_path.glob("*.py"))
    assert result.output.count(STAND_INS[0][1]) == PARALLEL_THRESHOLD + 2, result.output
    assert not re.search(r"\([1-9][0-9]* fixed", result.output), result.output


def test_the_stand_ins_do_report(tmp_path: Path) -> None:
    """Without --fix each stand-in reports, so the guards above are what stopped the fix."""
    path = tmp_path / "module.py"
    path.write_bytes(SOURCE.encode())
    for rule, _ in STAND_INS:
        result = CliRunner().invoke(main, [
            "check", "--isolated", "--no-cache", "--select", rule.code, "--output-format",
            "concise", str(path),
        ])
        assert rule.code in result.output, result.output


@pytest.mark.parametrize(
    "directive", ["# noqa: E501", "# noqa:E501,W291", "# type: ignore # noqa: F1"]
)
def test_a_line_under_another_tools_noqa_is_reported_but_never_rewritten(
    tmp_path: Path, directive: str
) -> None:
    """A `# noqa` for other codes does not suppress the finding, but the line is the user's
    deliberate exception: fixes never rewrite it (the rest of the file is still fixed)."""
    source = (
        "def f(x, world_size, rank):\n"
        f"    return x.split(len(x) // world_size)[rank]  {directive}\n"
        "\n\n"
        "def g(y, world_size, rank):\n"
        "    return y.split(len(y) // world_size)[rank]\n"
    )
    path = tmp_path / "module.py"
    path.write_text(source)
    result = CliRunner().invoke(main, [
        "check", "--isolated", "--no-cache", "--select", "SL101", "--fix", "--unsafe-fixes",
        "--output-format", "concise", str(path),
    ])
    lines = path.read_text().splitlines()
    assert lines[1] == source.splitlines()[1], "the noqa line was rewritten"
    assert lines[-1] != source.splitlines()[-1], "the other shard is fixed"
    assert "module.py:2:" in result.output and "SL101" in result.output
