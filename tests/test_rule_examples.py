"""Every rule's documentation examples run as tests, and every rule is documented."""

from __future__ import annotations

import pytest

from sampler_lint.api import lint_code
from sampler_lint.engine.registry import all_rules
from sampler_lint.rule import Example, Rule

SECTIONS = ("## What it does", "## Why is this bad", "## Example", "## Use instead",
            "## Fix safety", "## References")


def _examples() -> list[tuple[type[Rule], Example]]:
    return [(rule, example) for rule in all_rules() for example in rule.examples]


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_is_documented(rule: type[Rule]) -> None:
    for section in SECTIONS:
        assert section in rule.documentation, f"{rule.code} lacks {section}"
    assert rule.name == rule.name.lower() and " " not in rule.name
    if not rule.engine_rule:
        assert any(e.lines for e in rule.examples), f"{rule.code} has no flagged example"
        assert any(not e.lines for e in rule.examples), f"{rule.code} has no valid example"


@pytest.mark.parametrize(
    ("rule", "example"), _examples(), ids=lambda v: v.code if isinstance(v, type) else ""
)
def test_rule_example(rule: type[Rule], example: Example) -> None:
    result = lint_code(example.code, select=[rule.code], options=example.options)
    assert tuple(f.location.line for f in result.findings) == example.lines, [
        f.message for f in result.findings
    ]
    if example.fixed is not None:
        fixed = lint_code(
            example.code, select=[rule.code], options=example.options, fix=True,
            unsafe_fixes=True,
        )
        assert fixed.fixed == example.fixed
