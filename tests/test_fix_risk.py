"""Unsafe fixes say what could go wrong: every rule whose fix may be unsafe has a one-line
`fix_risk`, and the full and concise outputs print it (``--unsafe-fixes`` users must know what they
accept)."""

from __future__ import annotations

import inspect

from click.testing import CliRunner

from sampler_lint.cli import main
from sampler_lint.engine.registry import all_rules

SPLIT = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"


def _may_fix_unsafely(rule: type) -> bool:
    if rule.fix_applicability is not None and rule.fix_applicability.value == "unsafe":
        return True
    source = inspect.getsource(inspect.getmodule(rule))  # type: ignore[arg-type]
    return "Applicability.UNSAFE" in source


def test_every_rule_with_an_unsafe_fix_states_its_risk() -> None:
    for rule in all_rules():
        if _may_fix_unsafely(rule):
            assert rule.fix_risk.strip(), f"{rule.code} has an unsafe fix but no fix_risk"
            assert "\n" not in rule.fix_risk, f"{rule.code}: the risk is one line"


def test_full_and_concise_outputs_print_the_risk(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "train.py"
    target.write_text(SPLIT)
    runner = CliRunner()
    for form, marker in (("full", "= risk: "), ("concise", "SL101 unsafe fix risk: ")):
        result = runner.invoke(
            main, ["check", "--isolated", "--no-cache", "--output-format", form, str(target)]
        )
        lines = [line for line in result.output.splitlines() if marker in line]
        assert len(lines) == 1, result.output
        assert "drop_last=True does not prevent it" in lines[0]
        assert "join()" in lines[0]


def test_safe_fixes_print_no_risk(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "train.py"
    target.write_text("x = 1  # noqa: SL101\n")
    result = CliRunner().invoke(
        main, ["check", "--isolated", "--no-cache", "--extend-select", "SL002", str(target)]
    )
    assert "SL002" in result.output
    assert "= risk:" not in result.output and "fix risk:" not in result.output
