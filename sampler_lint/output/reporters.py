"""Output formats. Each reporter turns the findings of a run into text; the CLI decides where the
text goes. ``full`` uses rich styling only when writing to a terminal (or to expand a tab)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sampler_lint.engine.findings import Finding, Location, plural
from sampler_lint.output.frame import FrameLine, frame_lines


@dataclass(frozen=True)
class ReportContext:
    """What reporters need besides the findings."""

    unsafe_fixes: bool
    fixing: bool
    show_fixes: bool
    statistics: bool
    fixed: int
    fixed_by_code: dict[str, int]
    files_checked: int
    #: False when the run linted nothing or met an error: no "All checks passed!" then.
    complete: bool = True
    #: ``--show-fixes``: the fixes applied, per file and rule (``fixing``), in file order.
    fixed_by_file: dict[str, dict[str, int]] = field(default_factory=dict)
    #: ``-q``: the findings and nothing else (no totals, no notes about fixes).
    quiet: bool = False


def _applies(finding: Finding, context: ReportContext) -> bool:
    """Would ``--fix`` apply this finding's fix as the run is configured?"""
    if finding.fix is None:
        return False
    return finding.fix.applicability == "safe" or context.unsafe_fixes


def _fix_marker(finding: Finding, context: ReportContext) -> str:
    return "[*] " if _applies(finding, context) else ""


def count_phrase(errors: int, warnings: int) -> str:
    """``2 errors and 4 warnings``, ``1 error``, ``3 warnings``."""
    if errors and warnings:
        return f"{plural(errors, 'error')} and {plural(warnings, 'warning')}"
    if warnings:
        return plural(warnings, "warning")
    return plural(errors, "error")


def _severity_of(code: str) -> str:
    from sampler_lint.engine.registry import find_rule

    rule = find_rule(code)
    return rule.severity.value if rule is not None else "error"


def _fixed_by_severity(context: ReportContext) -> tuple[int, int]:
    errors = warnings = 0
    for code, count in context.fixed_by_code.items():
        if _severity_of(code) == "error":
            errors += count
        else:
            warnings += count
    return errors, warnings


def _summary(findings: Sequence[Finding], context: ReportContext) -> list[str]:
    if context.quiet:
        return []
    lines = []
    remaining = len(findings)
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = remaining - errors
    if context.fixing and context.fixed:
        fixed_errors, fixed_warnings = _fixed_by_severity(context)
        lines.append(
            f"Found {count_phrase(errors + fixed_errors, warnings + fixed_warnings)}"
            f" ({context.fixed} fixed, {remaining} remaining)."
        )
    elif remaining:
        lines.append(f"Found {count_phrase(errors, warnings)}.")
    elif (not context.fixing or not context.fixed) and context.complete:
        lines.append("All checks passed!")
    lines += _show_fixes(findings, context)
    safe = sum(1 for f in findings if f.fix and f.fix.applicability == "safe")
    unsafe = sum(1 for f in findings if f.fix and f.fix.applicability == "unsafe")
    if not context.fixing:
        fixable = safe + (unsafe if context.unsafe_fixes else 0)
        if fixable:
            lines.append(f"[*] {fixable} fixable with the `--fix` option.")
    if unsafe and not context.unsafe_fixes:
        lines.append(
            f"{unsafe} hidden fix{'es' if unsafe != 1 else ''} can be enabled with the "
            "`--unsafe-fixes` option."
        )
    return lines


def diff_summary(fixed_by_code: dict[str, int], remaining: Sequence[Finding],
                 unsafe_fixes: bool) -> str:
    """The line ``--diff`` ends with, as Ruff words it: what the diff fixes, and the fixes it
    leaves out because they are unsafe."""
    hidden = 0 if unsafe_fixes else sum(
        1 for f in remaining if f.fix is not None and f.fix.applicability == "unsafe"
    )
    errors = sum(n for code, n in fixed_by_code.items() if _severity_of(code) == "error")
    warnings = sum(fixed_by_code.values()) - errors
    if errors or warnings:
        line = f"Would fix {count_phrase(errors, warnings)}"
        if hidden:
            line += f" ({hidden} additional fix{'es' if hidden != 1 else ''} available with " \
                "`--unsafe-fixes`)"
        return line + "."
    if hidden:
        return (f"No errors would be fixed ({hidden} fix{'es' if hidden != 1 else ''} "
                "available with `--unsafe-fixes`).")
    return "No errors would be fixed."


def _show_fixes(findings: Sequence[Finding], context: ReportContext) -> list[str]:
    """``--show-fixes``: with ``--fix``, what was fixed per file and rule (as Ruff lists it);
    without, the fixes ``--fix`` would apply. An unsafe fix brings its risk, once per rule."""
    if not context.show_fixes:
        return []
    if context.fixing:
        per_file = context.fixed_by_file
        if not per_file:
            return []
        total = sum(sum(codes.values()) for codes in per_file.values())
        lines = [f"Fixed {plural(total, 'finding')}:"]
    else:
        per_file = {}
        for f in findings:
            if _applies(f, context):
                codes = per_file.setdefault(f.filename, {})
                codes[f.code] = codes.get(f.code, 0) + 1
        if not per_file:
            return []
        total = sum(sum(codes.values()) for codes in per_file.values())
        lines = [f"Would fix {plural(total, 'finding')} with `--fix`:"]
    names = {f.code: f.name for f in findings}
    for filename, codes in per_file.items():
        lines.append(f"- {filename}:")
        for code, count in sorted(codes.items()):
            name = names.get(code) or _rule_name(code)
            lines.append(f"    {count} \u00d7 {code} ({name})")
    lines += _fix_risks(findings, context, {code for codes in per_file.values() for code in codes})
    return lines


def _rule_name(code: str) -> str:
    from sampler_lint.engine.registry import find_rule

    rule = find_rule(code)
    return rule.name if rule is not None else code


def _fix_risks(findings: Sequence[Finding], context: ReportContext, codes: set[str]) -> list[str]:
    """The risk of each rule whose unsafe fixes were (or would be) applied."""
    if not context.unsafe_fixes:
        return []
    risks = {
        f.code: f.fix.risk for f in findings
        if f.code in codes and f.fix is not None and f.fix.applicability == "unsafe" and f.fix.risk
    }
    if context.fixing:
        from sampler_lint.engine.registry import find_rule

        for code in codes - set(risks):
            rule = find_rule(code)
            if rule is not None and rule.fix_applicability is not None \
                    and rule.fix_applicability.value == "unsafe" and rule.fix_risk:
                risks[code] = rule.fix_risk
    return [f"  {code} unsafe fix risk: {risk}" for code, risk in sorted(risks.items())]


@dataclass(frozen=True)
class Statistic:
    code: str
    name: str
    severity: str
    count: int
    fixable: int  # how many --fix would apply, as the run is configured


def statistics(findings: Sequence[Finding], context: ReportContext) -> list[Statistic]:
    counts: Counter[tuple[str, str, str]] = Counter((f.code, f.name, f.severity) for f in findings)
    fixable = Counter(f.code for f in findings if _applies(f, context))
    rows = [
        Statistic(code, name, severity, count, fixable[code])
        for (code, name, severity), count in counts.items()
    ]
    return sorted(rows, key=lambda row: (-row.count, row.code))


def _statistics_lines(findings: Sequence[Finding], context: ReportContext) -> list[str]:
    rows = statistics(findings, context)
    width = max((len(str(row.count)) for row in rows), default=1)
    code_width = max((len(row.code) for row in rows), default=1)
    return [
        f"{row.count:>{width}}\t{row.code:<{code_width}}\t"
        f"{'[*]' if row.fixable else '[ ]'} {row.name}"
        for row in rows
    ]


def statistics_json(findings: Sequence[Finding], context: ReportContext) -> list[dict[str, object]]:
    return [
        {"code": row.code, "name": row.name, "severity": row.severity, "count": row.count,
         "fixable": row.fixable > 0, "fixable_count": row.fixable}
        for row in statistics(findings, context)
    ]


def concise(findings: Sequence[Finding], context: ReportContext, color: bool) -> str:
    if context.statistics:
        out = _statistics_lines(findings, context)
    else:
        out = [
            f"{f.filename}:{f.location.line}:{f.location.column}: {f.code} "
            f"{_fix_marker(f, context)}{f.message}"
            for f in findings
        ]
        if not context.quiet:
            out += _risks(findings)
    out += _summary(findings, context)
    return "\n".join(out) + "\n" if out else ""


def _risks(findings: Sequence[Finding]) -> list[str]:
    """Concise output: each distinct risk of the unsafe fixes on show, once, after the findings
    (one line per finding would break the one-finding-per-line format editors parse)."""
    seen = dict.fromkeys(
        (f.code, f.fix.risk) for f in findings
        if f.fix is not None and f.fix.applicability == "unsafe" and f.fix.risk
    )
    return [f"{code} unsafe fix risk: {risk}" for code, risk in seen]


# A line of the full report: its pieces, each some text and the rich style it is shown in
# (None: unstyled). Plain output joins the texts; a terminal gets them styled through rich,
# imported only then (rich is a sixth of the tool's start-up, and pre-commit and CI never need it).
_Piece = tuple[str, "str | None"]
_Line = list[_Piece]

# What rich removes from text it prints (bell, backspace, vertical tab, form feed, carriage
# return): a form feed in a source line must not clear the reader's terminal in plain output either.
_CONTROL_CODES = dict.fromkeys((7, 8, 11, 12, 13))


def full(findings: Sequence[Finding], context: ReportContext, color: bool) -> str:
    if context.statistics:
        return concise(findings, context, color)
    lines = _full_lines(findings, context)
    if color or any("\t" in text for line in lines for text, _ in line):
        return _styled(lines, color)  # rich expands tabs by display width, as it always has
    return "".join(
        "".join(text for text, _ in line).translate(_CONTROL_CODES) + "\n" for line in lines
    )


def _styled(lines: list[_Line], color: bool) -> str:
    from rich.console import Console
    from rich.markup import escape

    console = Console(
        record=True, force_terminal=color, no_color=not color, width=200, highlight=False,
        color_system="standard" if color else None, soft_wrap=True,
        # Never emoji: a finding on line 100 read `path.py💯5:` (`:100:` is an emoji code).
        emoji=False,
    )
    with console.capture() as capture:
        for line in lines:
            console.print("".join(
                f"[{style}]{escape(text)}[/]" if style else escape(text) for text, style in line
            ))
    return capture.get()


def _full_lines(findings: Sequence[Finding], context: ReportContext) -> list[_Line]:
    lines: list[_Line] = []
    for f in findings:
        lines.append([
            (f.filename, "bold"),
            (f":{f.location.line}:{f.location.column}: ", None),
            (f.code, "bold red"),
            (f" {_fix_marker(f, context)}{f.message}", None),
        ])
        frame = frame_lines(f)
        if frame:
            lines += _frame(f, frame)
        lines.append([])
    lines += [[(line, None)] for line in _summary(findings, context)]
    return lines


ELIDED = "\u22ee"  # vertical ellipsis: flagged lines left out of the frame


def _frame(f: Finding, frame: list[FrameLine]) -> list[_Line]:
    gutter_width = max(len(str(line.number)) for line in frame if line.number is not None)
    pad = " " * gutter_width
    gutter: _Line = [(f"{pad} |", "blue")]
    lines = [gutter]
    last_flagged = max(i for i, line in enumerate(frame) if line.carets is not None)
    for i, line in enumerate(frame):
        if line.number is None:
            lines.append([(f"{ELIDED:>{gutter_width}} |", "blue")])
            continue
        lines.append([(f"{line.number:>{gutter_width}} |", "blue"), (f" {line.text}", None)])
        if line.carets is not None:
            start, end = line.carets
            carets: _Line = [*gutter, (" " * (start + 1), None), ("^" * (end - start), "bold red")]
            if i == last_flagged:
                carets += [(" ", None), (f.code, "bold red")]
            lines.append(carets)
    lines.append(gutter)
    if f.fix is not None:
        label = "help" if f.fix.applicability == "safe" else "help (unsafe fix)"
        lines.append([(f"{pad} =", "blue"), (" ", None), (label, "bold cyan"),
                      (f": {f.fix.message}", None)])
        if f.fix.applicability == "unsafe" and f.fix.risk:
            lines.append([(f"{pad} =", "blue"), (" ", None), ("risk", "bold yellow"),
                          (f": {f.fix.risk}", None)])
    return lines


def _location(location: Location) -> dict[str, int]:
    return {"row": location.line, "column": location.column}


def finding_to_json(f: Finding) -> dict[str, object]:
    fix = None
    if f.fix is not None:
        fix = {
            "applicability": f.fix.applicability,
            "message": f.fix.message,
            "edits": [
                {
                    "content": e.content,
                    "location": _location(e.location),
                    "end_location": _location(e.end_location),
                }
                for e in (f.fix.edits or ())
            ],
        }
    return {
        "code": f.code,
        "name": f.name,
        "severity": f.severity,
        "message": f.message,
        # Like Ruff's: a notebook finding names the notebook and its cell; rows are in the cell.
        "filename": f.path,
        "cell": f.notebook.cell if f.notebook is not None else None,
        "location": _location(f.location),
        "end_location": _location(f.end_location),
        "fix": fix,
        "url": f.url,
    }


def json_format(findings: Sequence[Finding], context: ReportContext, color: bool) -> str:
    """A list of findings; with ``--statistics``, a list of counts per rule instead."""
    if context.statistics:
        return json.dumps(statistics_json(findings, context), indent=2) + "\n"
    return json.dumps([finding_to_json(f) for f in findings], indent=2) + "\n"


def json_lines(findings: Sequence[Finding], context: ReportContext, color: bool) -> str:
    """One JSON object per line (a finding, or with ``--statistics`` a rule's counts), for
    streaming tools and ``grep``."""
    rows = statistics_json(findings, context) if context.statistics else [
        finding_to_json(f) for f in findings
    ]
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


Reporter = Callable[[Sequence[Finding], ReportContext, bool], str]

from sampler_lint.output import formats  # noqa: E402  (the CI formats build on the helpers above)

REPORTERS: dict[str, Reporter] = {
    "full": full,
    "concise": concise,
    "json": json_format,
    "json-lines": json_lines,
    "rdjson": formats.rdjson,
    "github": formats.github,
    "sarif": formats.sarif,
    "junit": formats.junit,
    "gitlab": formats.gitlab,
}

# Formats whose output includes each fix's edits, so the engine must compute them.
NEEDS_EDITS = {"json", "json-lines", "sarif", "rdjson"}
