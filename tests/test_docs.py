"""Documentation stays true: docs/rules.md is what the rules say, and every rule's page has the
sections a user looks for."""

from __future__ import annotations

import pytest

from sampler_lint.docs import render_rule, rules_markdown
from sampler_lint.registry import all_rules

from .conftest import ROOT

SECTIONS = ("## What it does", "## Why is this bad", "## Example", "## Use instead",
            "## Fix safety", "## References")


def test_rules_markdown_is_up_to_date() -> None:
    written = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert written == rules_markdown(), (
        "docs/rules.md is stale: python -m sampler_lint.docs > docs/rules.md"
    )


@pytest.mark.parametrize("rule", [r for r in all_rules() if not r.engine_rule],
                         ids=lambda r: r.code)
def test_every_rule_documents_every_section(rule: type) -> None:
    page = render_rule(rule)
    for section in SECTIONS:
        assert section in page, f"{rule.code} lacks {section}"
    assert f'<a id="{rule.code.lower()}"></a>' in rules_markdown()


def test_readme_lists_every_rule() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for rule in all_rules():
        assert f"| {rule.code} | {rule.name} |" in readme, f"README lacks {rule.code}"
