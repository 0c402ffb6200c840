"""Output formats. Each reporter turns the findings of a run into text; the CLI decides where the
text goes. ``full`` uses rich styling only when writing to a terminal."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape

from sampler_lint.engine.findings import Finding, Location


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
    #: ``-q``: the findings and nothing else (no totals, no notes about fixes).
    quiet: bool = False


def _fix_marker(finding: Finding, context: ReportContext) -> str:
    if finding.fix is None:
        return ""
    if finding.fix.applicability == "safe" or context.unsafe_fixes:
        return "[*] "
    return ""


def _summary(findings: Sequence[Finding], context: ReportContext) -> list[str]:
    if context.quiet:
        return []
    lines = []
    remaining = len(findings)
    if context.fixing and context.fixed:
        total = remaining + context.fixed
        lines.append(
            f"Found {total} error{'s' if total != 1 else ''}"
            f" ({context.fixed} fixed, {remaining} remaining)."
        )
    elif remaining:
        lines.append(f"Found {remaining} error{'s' if remaining != 1 else ''}.")
    elif (not context.fixing or not context.fixed) and context.complete:
        lines.append("All checks passed!")
    if context.show_fixes and context.fixed_by_code:
        lines.append("Fixed:")
        for code, count in sorted(context.fixed_by_code.items()):
            lines.append(f"  {count:>4}  {code}")
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
    elif unsafe and not context.unsafe_fixes:
        lines.append(
            f"{unsafe} hidden fix{'es' if unsafe != 1 else ''} can be enabled with the "
            "`--unsafe-fixes` option."
        )
    return lines


def _statistics(findings: Sequence[Finding]) -> list[str]:
    counts = Counter((f.code, f.name) for f in findings)
    fixable = Counter(f.code for f in findings if f.fix)
    rows = []
    for (code, name), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0])):
        marker = "[*]" if fixable[code] else "   "
        rows.append(f"{count:>5}\t{code}\t{marker} {name}")
    return rows


def concise(findings: Sequence[Finding], context: ReportContext, color: bool) -> str:
    if context.statistics:
        return "\n".join([*_statistics(findings), ""]) if findings else ""
    out = [
        f"{f.filename}:{f.location.line}:{f.location.column}: {f.code} "
        f"{_fix_marker(f, context)}{f.message}"
        for f in findings
    ]
    if not context.quiet:
        out += _risks(findings)
    out += _summary(findings, context)
    return "\n".join(out) + "\n"


def _risks(findings: Sequence[Finding]) -> list[str]:
    """Concise output: each distinct risk of the unsafe fixes on show, once, after the findings
    (one line per finding would break the one-finding-per-line format editors parse)."""
    seen = dict.fromkeys(
        (f.code, f.fix.risk) for f in findings
        if f.fix is not None and f.fix.applicability == "unsafe" and f.fix.risk
    )
    return [f"{code} unsafe fix risk: {risk}" for code, risk in seen]


def full(findings: Sequence[Finding], context: ReportContext, color: bool) -> str:
    if context.statistics:
        return concise(findings, context, color)
    console = Console(
        record=True, force_terminal=color, no_color=not color, width=200, highlight=False,
        color_system="standard" if color else None, soft_wrap=True,
    )
    with console.capture() as capture:
        for f in findings:
            marker = _fix_marker(f, context)
            console.print(
                f"[bold]{escape(f.filename)}[/]:{f.location.line}:{f.location.column}: "
                f"[bold red]{f.code}[/] {escape(marker)}{escape(f.message)}"
            )
            if f.source_line:
                gutter = str(f.location.line)
                pad = " " * len(gutter)
                line = f.source_line.rstrip("\r\n").expandtabs(4)
                start = f.location.column - 1
                prefix = f.source_line[:start].expandtabs(4)
                if f.end_location.line == f.location.line:
                    width = max(1, len(f.source_line[start : f.end_location.column - 1]
                                       .expandtabs(4)))
                else:
                    width = max(1, len(line) - len(prefix))
                console.print(f"[blue]{pad} |[/]")
                console.print(f"[blue]{gutter} |[/] {escape(line)}")
                console.print(
                    f"[blue]{pad} |[/] {' ' * len(prefix)}[bold red]{'^' * width}[/] "
                    f"[bold red]{f.code}[/]"
                )
                console.print(f"[blue]{pad} |[/]")
                if f.fix is not None:
                    label = "help" if f.fix.applicability == "safe" else "help (unsafe fix)"
                    message = escape(f.fix.message)
                    console.print(f"[blue]{pad} =[/] [bold cyan]{label}[/]: {message}")
                    if f.fix.applicability == "unsafe" and f.fix.risk:
                        risk = escape(f.fix.risk)
                        console.print(f"[blue]{pad} =[/] [bold yellow]risk[/]: {risk}")
            console.print()
        for line in _summary(findings, context):
            console.print(escape(line))
    return capture.get()


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
    return json.dumps([finding_to_json(f) for f in findings], indent=2) + "\n"


Reporter = Callable[[Sequence[Finding], ReportContext, bool], str]

from sampler_lint.output import formats  # noqa: E402  (the CI formats build on the helpers above)

REPORTERS: dict[str, Reporter] = {
    "full": full,
    "concise": concise,
    "json": json_format,
    "github": formats.github,
    "sarif": formats.sarif,
    "junit": formats.junit,
    "gitlab": formats.gitlab,
}

# Formats whose output includes each fix's edits, so the engine must compute them.
NEEDS_EDITS = {"json", "sarif"}
