"""Text edits an editor offers beside the rules' own fixes: add a ``# noqa``, remove an unused one,
and the smallest edit between two texts. Plain text in, plain text out (no editor types), so the
language server stays a thin layer."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sampler_lint.engine import noqa
from sampler_lint.engine.findings import Edit, Finding
from sampler_lint.engine.linter import PARSE_ERROR, UNUSED_NOQA, _text_edit
from sampler_lint.output.add_noqa import annotated

# SL002 names the unused code in its message, in backquotes after "noqa: ".
_UNUSED_CODE = re.compile(r"`# noqa: (?P<code>[A-Za-z]+[0-9]+)`")


@dataclass(frozen=True)
class TextFix:
    title: str
    edit: Edit
    safe: bool


def smallest_edit(before: str, after: str) -> Edit:
    """The one edit turning ``before`` into ``after`` (1-based lines and columns in code points
    of ``before``)."""
    return _text_edit(before, after)


def add_noqa(text: str, finding: Finding) -> TextFix | None:
    """``# noqa: CODE`` on the finding's line (as ``--add-noqa`` writes it), or ``None`` when the
    file could not carry it (a parse error, a line inside a string)."""
    if finding.code == PARSE_ERROR:
        return None
    new_text = annotated(text, {finding.location.line: {finding.code}})
    if new_text is None:
        return None
    return TextFix(f"Add `# noqa: {finding.code}`", smallest_edit(text, new_text), True)


def remove_unused_noqa(text: str, finding: Finding) -> TextFix | None:
    """SL002's fix for one finding: the unused code taken out of the directive (the directive
    removed when no code is left)."""
    if finding.code != UNUSED_NOQA:
        return None
    match = _UNUSED_CODE.search(finding.message)
    if match is None:
        return None
    code = match.group("code").upper()
    data = text.encode("utf-8", "surrogatepass")
    # The directive's comment comes from the tokenizer: the same text inside a string is code.
    comments = noqa.parse(text).comments
    new_text = noqa.remove_codes(data, {finding.location.line: {code}}, comments).decode(
        "utf-8", "surrogatepass"
    )
    if new_text == text:
        return None
    return TextFix(f"Remove unused `# noqa: {code}`", smallest_edit(text, new_text), True)


def rule_fix(finding: Finding) -> TextFix | None:
    """The rule's own fix for one finding, when the engine computed its edit."""
    fix = finding.fix
    if fix is None or not fix.edits or len(fix.edits) != 1:
        return None
    return TextFix(fix.message, fix.edits[0], fix.applicability == "safe")
