"""``--add-noqa``: suppress every current finding in place, to adopt the tool on a legacy
repository (like Ruff's). Idempotent, and keeps the codes an existing ``# noqa`` already lists.

The directive goes at the end of the first line of the finding; a line that already carries a
``# noqa: CODES`` gets the code added to its list. The edited file must still tokenize, compile
and carry the directive where it was meant, or it is left untouched."""

from __future__ import annotations

import io
import re
import tokenize
import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from sampler_lint.engine import noqa
from sampler_lint.engine.findings import Finding
from sampler_lint.engine.linter import decode
from sampler_lint.engine.writer import WriteError, write_atomic

_NOQA = noqa.LINE_DIRECTIVE


def add_noqa(findings: Sequence[Finding], reason: str = "") -> tuple[int, list[str]]:
    """Add the directives (``reason``, when given, after the codes of each new one: ``# noqa:
    SL101 data is pre-sharded``); return how many lines changed and the problems met."""
    by_file: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    by_cell: dict[str, dict[int, dict[int, set[str]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(set))
    )
    for f in findings:
        if f.code == "SL001":
            continue  # a file that does not parse cannot be annotated safely
        if f.notebook is not None:
            by_cell[f.path][f.notebook.cell][f.location.line].add(f.code)
        else:
            by_file[f.filename][f.location.line].add(f.code)
    reason = " ".join(reason.split())  # one line, whatever was passed
    changed, problems = 0, []
    for filename, cells in sorted(by_cell.items()):
        count, problem = _add_noqa_notebook(Path(filename), cells, reason)
        changed += count
        problems.extend([problem] if problem else [])
    for filename, lines in sorted(by_file.items()):
        path = Path(filename)
        try:
            data = path.read_bytes()
            encoding_text = decode(data)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as error:
            problems.append(f"{filename}: cannot add noqa: {error}")
            continue
        new_text, count = _annotate(encoding_text, lines, reason)
        if count == 0:
            continue
        if not _still_valid(new_text, lines):
            problems.append(f"{filename}: adding noqa would break the file; left unchanged")
            continue
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        bom = data.startswith(b"\xef\xbb\xbf")
        body = new_text.encode("utf-8" if encoding == "utf-8-sig" else encoding)
        new_data = (b"\xef\xbb\xbf" if bom and not body.startswith(b"\xef\xbb\xbf") else b"") + body
        try:
            write_atomic(path, data, new_data)
        except WriteError as error:
            problems.append(str(error))
            continue
        changed += count
    return changed, problems


def annotated(text: str, wanted: dict[int, set[str]]) -> str | None:
    """``text`` with ``# noqa: CODES`` added for ``wanted`` (line -> codes), as ``--add-noqa``
    writes it; ``None`` when nothing changes or the result would not hold (editors' quick fix)."""
    new_text, count = _annotate(text, wanted)
    if count == 0 or not _still_valid(new_text, wanted):
        return None
    return new_text


def _add_noqa_notebook(
    path: Path, cells: dict[int, dict[int, set[str]]], reason: str = ""
) -> tuple[int, str]:
    """Annotate the cells of one notebook; lines changed, and a problem (or "")."""
    from sampler_lint.engine.json_spans import SpanError
    from sampler_lint.engine.notebook import rewrite_cells

    count = 0

    def change(number: int, text: str) -> str | None:
        nonlocal count
        wanted = cells.get(number)
        if not wanted:
            return None
        new_text, added = _annotate(text, wanted, reason)
        if added and not _still_valid(new_text, wanted):
            raise SpanError(f"adding noqa would break cell {number}")
        count += added
        return new_text

    try:
        data = path.read_bytes()
        new_data = rewrite_cells(data, change)
    except (OSError, ValueError) as error:  # SpanError and JSON errors are ValueErrors
        return 0, f"{path}: cannot add noqa: {error}; left unchanged"
    if new_data is None:
        return 0, ""
    try:
        write_atomic(path, data, new_data)
    except WriteError as error:
        return 0, str(error)
    return count, ""


def placements(text: str, wanted: dict[int, set[str]]) -> dict[int, set[str]]:
    """The line each directive goes on: the finding's first line, or, where that line ends in a
    backslash continuation (a comment cannot follow it), the next line of the statement that does
    not (any physical line of the statement suppresses the finding)."""
    lines = text.splitlines(keepends=True)
    placed: dict[int, set[str]] = defaultdict(set)
    for number, codes in wanted.items():
        while 0 < number < len(lines) and lines[number - 1].rstrip("\r\n").endswith("\\"):
            number += 1
        placed[number] |= codes
    return dict(placed)


def _annotate(text: str, wanted: dict[int, set[str]], reason: str = "") -> tuple[str, int]:
    lines = text.splitlines(keepends=True)
    comments = noqa.parse(text).comments  # real comments only: never a `# noqa` in a string
    count = 0
    for number, codes in sorted(placements(text, wanted).items()):
        if not 0 < number <= len(lines):
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        column = comments[number][0] if number in comments else len(body)
        match = _NOQA.search(body, column)
        if match and match.group("codes") is None:
            continue  # a bare directive (no codes) already suppresses everything
        if match:
            present = {c.upper() for c in re.split(r"[\s,]+", match.group("codes")) if c}
            missing = sorted(codes - present)
            if not missing:
                continue
            start, end = match.span("codes")
            body = body[:start] + ", ".join([match.group("codes"), *missing]) + body[end:]
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(sorted(codes))
            if reason:
                body += " " + reason
        lines[number - 1] = body + ending
        count += 1
    return "".join(lines), count


def _still_valid(text: str, wanted: dict[int, set[str]]) -> bool:
    wanted = placements(text, wanted)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<add-noqa>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    suppressions = noqa.parse(text)
    return all(
        line in suppressions.lines
        and (noqa.ALL in suppressions.lines[line] or codes <= suppressions.lines[line])
        for line, codes in wanted.items()
    )
