"""Rule documentation as the ``rule`` command prints it."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from sampler_lint.engine import registry
from sampler_lint.engine.findings import DOCS_URL
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
            choices = (
                f" (one of {', '.join(toml_value(c) for c in option.choices)})"
                if option.choices else ""
            )
            header.append(
                f"  {option.key} = {toml_value(option.default)}{choices}: {option.help}"
            )
    body = textwrap.dedent(rule.documentation).strip()
    return "\n".join(header) + "\n\n" + body + "\n"


def toml_value(value: Any) -> str:
    """``value`` as it is written in ``[tool.sampler-lint]``: ``false``, ``"tensor_split"``,
    ``["a", "b"]``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string for what JSON escapes
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return "[" + ", ".join(toml_value(item) for item in items) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))


def rules_matching(selector: str) -> list[type[Rule]]:
    """The rules a ``rule`` argument names: a code, a name, or a code prefix (``SL2``)."""
    found = registry.find_rule(selector)
    if found is not None:
        return [found]
    try:
        codes = registry.expand_selector(selector)
    except registry.SelectorError:
        return []
    if selector.strip().upper() == "ALL":
        return list(registry.all_rules())
    return [rule for rule in registry.all_rules() if rule.code in codes]


def rule_json(rule: type[Rule]) -> dict[str, Any]:
    """A rule as ``rule --output-format json`` prints it (Ruff's keys where it has them)."""
    return {
        "code": rule.code,
        "name": rule.name,
        "summary": rule.summary(),
        "severity": rule.severity.value,
        "fix": rule.fix_applicability.value if rule.fix_applicability else None,
        "fix_risk": rule.fix_risk or None,
        "default_enabled": rule.default_enabled,
        "options": [
            {"key": o.key, "default": o.default, "choices": list(o.choices) or None,
             "help": o.help}
            for o in rule.options
        ],
        "explanation": textwrap.dedent(rule.documentation).strip() + "\n",
        "url": DOCS_URL.format(code=rule.code.lower()),
    }


def rule_table(rules: list[type[Rule]] | None = None) -> str:
    rows = [("code", "name", "severity", "fix", "default")]
    for rule in registry.all_rules() if rules is None else rules:
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
