"""Rule documentation as the ``rule`` command prints it."""

from __future__ import annotations

import textwrap

from sampler_lint.engine import registry
from sampler_lint.rule import Rule


def render_rule(rule: type[Rule]) -> str:
    fix = rule.fix_applicability.value if rule.fix_applicability else "none"
    header = [
        f"# {rule.code} {rule.name}",
        "",
        f"Severity: {rule.severity.value}. Fix: {fix}. "
        f"{'On' if rule.default_enabled else 'Off'} by default.",
    ]
    if rule.options:
        header.append("")
        header.append("Options:")
        for option in rule.options:
            choices = f" (one of {', '.join(option.choices)})" if option.choices else ""
            header.append(f"  {option.key} = {option.default!r}{choices}: {option.help}")
    body = textwrap.dedent(rule.documentation).strip()
    return "\n".join(header) + "\n\n" + body + "\n"


def rule_table() -> str:
    rows = [("code", "name", "severity", "fix", "default")]
    for rule in registry.all_rules():
        fix = rule.fix_applicability.value if rule.fix_applicability else "-"
        rows.append(
            (rule.code, rule.name, rule.severity.value, fix,
             "on" if rule.default_enabled else "off")
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def rules_markdown() -> str:
    """``docs/rules.md``: every rule's documentation, each under an ``#<code>`` anchor (the ``url``
    of a finding points there). Regenerate with
    ``python -m sampler_lint.output.docs > docs/rules.md``."""
    parts = [
        "# sampler-lint rules",
        "",
        "Generated from the rules themselves "
        "(`python -m sampler_lint.output.docs > docs/rules.md`);",
        "`sampler-lint rule CODE` prints the same text.",
        "",
        "```",
        rule_table(),
        "```",
    ]
    for rule in registry.all_rules():
        parts += ["", f'<a id="{rule.code.lower()}"></a>', "", _demote(render_rule(rule)).rstrip()]
    return "\n".join(parts) + "\n"


def _demote(text: str) -> str:
    """One heading level down, outside code blocks (where `#` starts a comment)."""
    lines, in_code = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            line = "#" + line
        lines.append(line)
    return "\n".join(lines)


if __name__ == "__main__":
    print(rules_markdown(), end="")
