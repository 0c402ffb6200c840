"""The code frame under a finding in ``full`` output: a line of context, every line of the
flagged code (the middle of a long one elided), carets under what is flagged, aligned in display
columns (tabs expanded, East Asian wide characters counted twice) and long lines cut with ``…``
around the carets."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from sampler_lint.engine.findings import Finding

TAB = 4
MAX_WIDTH = 120  # display columns of code shown per line
ELLIPSIS = "…"
HEAD_LINES, TAIL_LINES = 4, 2  # of a flagged range longer than their sum plus one


@dataclass(frozen=True)
class FrameLine:
    number: int | None  # None: the `⋮` standing for elided lines
    text: str
    carets: tuple[int, int] | None = None  # display columns [start, end) under the text


def char_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _display(text: str) -> tuple[str, list[int]]:
    """``text`` with tabs expanded, and the display column where each of its characters starts
    (one more entry: the column after the last)."""
    out, starts, column = [], [], 0
    for char in text:
        starts.append(column)
        if char == "\t":
            width = TAB - column % TAB
            out.append(" " * width)
        else:
            width = char_width(char)
            out.append(char)
        column += width
    starts.append(column)
    return "".join(out), starts


def _cut(text: str, carets: tuple[int, int] | None) -> tuple[str, tuple[int, int] | None]:
    """At most ``MAX_WIDTH`` display columns of ``text`` (already expanded), kept around the
    carets, with ``…`` where something was cut; the carets shifted to match."""
    total = sum(char_width(c) for c in text)
    if total <= MAX_WIDTH:
        return text, carets
    lo = 0
    if carets is not None:
        # Show the carets' start with some code before it, as much of the span as fits.
        lo = max(0, min(carets[0] - 20, total - MAX_WIDTH))
    hi = lo + MAX_WIDTH
    out, column = [], 0
    for char in text:
        width = char_width(char)
        if column >= lo and column + width <= hi:
            out.append(char)
        column += width
    shown = "".join(out)
    prefix = ELLIPSIS if lo > 0 else ""
    suffix = ELLIPSIS if hi < total else ""
    if carets is not None:
        shift = len(prefix) - lo
        start = max(carets[0] + shift, len(prefix))
        end = min(carets[1] + shift, len(prefix) + MAX_WIDTH)
        carets = (start, max(end, start + 1))
    return prefix + shown + suffix, carets


def frame_lines(finding: Finding) -> list[FrameLine]:
    """The lines of the frame, context first; empty when the finding carries no source."""
    if finding.frame:
        first = finding.frame_start
        lines = list(finding.frame)
    elif finding.source_line:
        first = finding.location.line
        lines = [finding.source_line]
    else:
        return []
    start, end = finding.location, finding.end_location
    if end.line < start.line or (end.line == start.line and end.column < start.column):
        end = start
    out: list[FrameLine] = []
    for offset, raw in enumerate(lines):
        number = first + offset
        raw = raw.rstrip("\r\n")
        text, columns = _display(raw)
        carets: tuple[int, int] | None = None
        if start.line <= number <= end.line:
            a = start.column - 1 if number == start.line else len(raw) - len(raw.lstrip())
            b = end.column - 1 if number == end.line else len(raw)
            a, b = min(max(a, 0), len(raw)), min(max(b, 0), len(raw))
            carets = (columns[a], max(columns[b], columns[a] + 1))
        if number < start.line and not raw.strip():
            continue  # a blank line says nothing
        text, carets = _cut(text, carets)
        out.append(FrameLine(number, text, carets))
    flagged = [line for line in out if line.carets is not None]
    if len(flagged) > HEAD_LINES + TAIL_LINES + 1:
        context = [line for line in out if line.carets is None]
        out = [*context, *flagged[:HEAD_LINES], FrameLine(None, ""), *flagged[-TAIL_LINES:]]
    return out
