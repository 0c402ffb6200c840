"""Jupyter notebooks: each code cell is linted as a source of its own.

IPython syntax is not Python. Line magics (``%time``), shell escapes (``!pip``), help (``x?``,
``?x``) and assignments from them (``files = !ls``) are masked with a ``pass`` statement that keeps
the line and its indentation, but only where a statement starts: a ``%`` that continues an
expression, or text inside a string, is Python and stays. Cells run by a cell magic (``%%bash``)
are skipped. Before any of that IPython removes a cell's leading indent (code pasted with its
indentation runs): so does the linter, and it places the findings back on the indented lines;
such a cell is reported, not fixed. Findings are named ``notebook.ipynb:cell N`` with the line
inside the cell, and carry their place in the ``.ipynb`` JSON for the formats that address
files.

Fixes replace the text of the changed cells' ``source`` and nothing else: the JSON around them
(indentation, key order, escapes, outputs) stays byte for byte as its writer left it.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.engine.findings import FileResult, Finding, Location, NotebookPlace
from sampler_lint.engine.json_spans import Span, SpanError, parse_spans, raw_offset
from sampler_lint.engine.linter import LintOptions, _parse_error, lint_source
from sampler_lint.engine.writer import WriteError, write_atomic

SUFFIX = ".ipynb"
_BOM = "\ufeff"
# What IPython's input transformers rewrite at the start of a statement.
_IPYTHON_LINE = re.compile(
    r"^\s*(?:[%!?]"  # %magic, !shell, ?help
    r"|[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*[%!]"  # files = !ls, t = %timeit f()
    r"|[\w.]+\?\??\s*$)"  # obj?, obj.attr??
)
_MARKER = re.compile(r"^(?P<indent>[ \t]*)pass  # sampler-lint-magic-(?P<n>\d+)$")


def _at_statement_start(prefix: list[str]) -> bool:
    """Whether the line after ``prefix`` begins a statement (not inside brackets, a string or
    after a backslash)."""
    text = "\n".join(prefix)
    if not text.strip():
        return True
    try:
        for _ in tokenize.generate_tokens(io.StringIO(text + "\n").readline):
            pass
    except tokenize.TokenError:
        return False  # EOF in a multi-line statement or string: the next line continues it
    except (SyntaxError, ValueError):
        return True  # not Python up to here; the parser will say so
    return True


def leading_indent(text: str) -> str:
    """The indent IPython removes from a cell before it reads it (its ``leading_empty_lines``
    and ``leading_indent`` transforms): the whitespace that starts the first line that is not
    blank, removed from every line that starts with it ("" for most cells)."""
    for line in text.split("\n"):
        if line.strip():
            return line[: len(line) - len(line.lstrip(" \t"))]
    return ""


def dedented(text: str, indent: str) -> str:
    """``text`` as IPython runs it: ``indent`` (:func:`leading_indent`) removed where a line
    starts with it. Lines keep their numbers."""
    if not indent:
        return text
    return "\n".join(
        line[len(indent):] if line.startswith(indent) else line for line in text.split("\n")
    )


def indented_again(text: str, indent: str, original: str) -> str | None:
    """``text``, a :func:`dedented` cell with only line ends changed (``# noqa`` added), with
    ``indent`` put back on the lines of ``original`` that had it; ``None`` when the lines no
    longer match one for one."""
    if not indent:
        return text
    lines, before = text.split("\n"), original.split("\n")
    if len(lines) != len(before):
        return None
    return "\n".join(
        indent + line if old.startswith(indent) else line
        for line, old in zip(lines, before, strict=True)
    )


def in_indented_cell(finding: Finding, indent: str, original: str) -> Finding:
    """``finding`` of a :func:`dedented` cell placed in the cell as written: its columns moved
    right by the indent on the lines that had it, its source lines the cell's own, no fix."""
    if not indent:
        return finding
    lines = original.split("\n")

    def place(location: Location) -> Location:
        line = lines[location.line - 1] if 0 < location.line <= len(lines) else ""
        if not line.startswith(indent):
            return location
        return Location(location.line, location.column + len(indent))

    def line_at(number: int, fallback: str) -> str:
        return lines[number - 1] if 0 < number <= len(lines) else fallback

    return replace(
        finding,
        location=place(finding.location),
        end_location=place(finding.end_location),
        fix=None,
        source_line=line_at(finding.location.line, finding.source_line),
        frame=tuple(
            line_at(finding.frame_start + i, shown) for i, shown in enumerate(finding.frame)
        ),
    )


def mask(text: str) -> tuple[str, list[str]] | None:
    """The cell with IPython lines masked, and the masked lines; ``None`` for a cell magic."""
    if text.lstrip().startswith("%%"):
        return None
    lines = text.split("\n")
    magics: list[str] = []
    i = 0
    while i < len(lines):
        if _IPYTHON_LINE.match(lines[i]) and _at_statement_start(lines[:i]):
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            # IPython joins backslash-continued lines before it reads a magic or shell escape
            # (`!pip install \` over several lines): the continuation lines are masked too.
            while True:
                magics.append(lines[i])
                lines[i] = f"{indent}pass  # sampler-lint-magic-{len(magics) - 1}"
                if not magics[-1].endswith("\\") or i + 1 >= len(lines):
                    break
                i += 1
        i += 1
    return "\n".join(lines), magics


def unmask(text: str, magics: list[str]) -> str | None:
    lines = text.split("\n")
    restored = 0
    for i, line in enumerate(lines):
        match = _MARKER.match(line)
        if match and int(match.group("n")) < len(magics):
            lines[i] = magics[int(match.group("n"))]
            restored += 1
    return "\n".join(lines) if restored == len(magics) else None


@dataclass
class _Cell:
    number: int  # 1-based among all cells, as notebook front ends count them
    value: Any  # the cell's JSON object
    text: str
    source: Span | None  # where its "source" is in the JSON text
    offsets: list[int] | None = None  # where each piece of a list source starts in the text


class _Notebook:
    """A notebook's JSON, its value and the span of each code cell's source."""

    def __init__(self, data: bytes) -> None:
        text = data.decode("utf-8")
        self.bom = text.startswith(_BOM)
        self.text = text[1:] if self.bom else text
        self.value = json.loads(self.text)
        cells = self.value["cells"]
        if not isinstance(cells, list):
            raise TypeError("cells is not a list")
        try:
            root: Span | None = parse_spans(self.text)
        except SpanError:
            root = None
        cell_spans = root.members["cells"].items if root is not None else []
        self.cells: list[_Cell] = []
        for number, cell in enumerate(cells, start=1):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            text_ = "".join(source) if isinstance(source, list) else str(source)
            span = cell_spans[number - 1].members.get("source") if cell_spans else None
            self.cells.append(_Cell(number, cell, text_, span))
        # Whether the writer escaped non-ASCII characters (``\u00e9``) or wrote them as they are.
        self.ensure_ascii = self.text.isascii() and "\\u" in self.text

    # -- positions -------------------------------------------------------------------------------

    @cached_property
    def _line_starts(self) -> list[int]:
        """Where each line of the JSON text starts, found when a finding is first placed (a
        character-by-character scan of a notebook with embedded images took 30 ms a notebook,
        most of a clean notebook's lint)."""
        starts = [0]
        find = self.text.find
        end = find("\n")
        while end != -1:
            starts.append(end + 1)
            end = find("\n", end + 1)
        return starts

    def place(self, cell: _Cell, location: Location) -> Location:
        """Where ``location`` (in the cell) is in the JSON text."""
        span = cell.source
        if span is None:
            return Location(1, 1)
        pieces = span.items if span.items else [span]
        if cell.offsets is None:
            cell.offsets, total = [], 0
            for piece in pieces:
                cell.offsets.append(total)
                total += len(json.loads(self.text[piece.start: piece.end]))
        offsets = cell.offsets
        lines = cell.text.split("\n")
        offset = sum(len(line) + 1 for line in lines[: location.line - 1]) + location.column - 1
        number = max(0, bisect_right(offsets, offset) - 1)
        piece = pieces[number]
        token = self.text[piece.start: piece.end]
        absolute = piece.start + raw_offset(token, offset - offsets[number])
        line = bisect_right(self._line_starts, absolute)
        return Location(line, absolute - self._line_starts[line - 1] + 1)

    def located(self, finding: Finding, cell: _Cell, path: str) -> Finding:
        where = NotebookPlace(
            path=path,
            cell=cell.number,
            location=self.place(cell, finding.location),
            end_location=self.place(cell, finding.end_location),
        )
        return replace(finding, notebook=where)

    # -- rewriting -------------------------------------------------------------------------------

    def rewritten(self, new_texts: dict[int, str]) -> str:
        """The JSON text with the given cells' sources replaced, everything else as it was."""
        text = self.text
        edits = []
        for cell in self.cells:
            if cell.number not in new_texts:
                continue
            if cell.source is None:
                raise SpanError("the notebook's JSON could not be mapped")
            edits.append((cell.source, self._render(cell, new_texts[cell.number])))
            source = cell.value.get("source", "")
            new = new_texts[cell.number]
            cell.value["source"] = new if isinstance(source, str) else _lines(new)
        for span, rendered in sorted(edits, key=lambda edit: -edit[0].start):
            text = text[: span.start] + rendered + text[span.end:]
        # The splice must say exactly what was meant (the rest is untouched text by construction;
        # comparing only the cells also tolerates a NaN in an output, which equals nothing).
        cells = json.loads(text)["cells"]
        if len(cells) != len(self.value["cells"]) or any(
            cells[number - 1].get("source") != self.value["cells"][number - 1].get("source")
            for number in new_texts
        ):
            raise SpanError("the rewritten notebook would not hold the fixed cells")
        return (_BOM if self.bom else "") + text

    def _dumps(self, value: str) -> str:
        return json.dumps(value, ensure_ascii=self.ensure_ascii)

    def _render(self, cell: _Cell, new_text: str) -> str:
        span = cell.source
        assert span is not None
        if not span.items and self.text[span.start] == '"':
            return self._dumps(new_text)
        # Lines that did not change keep their exact escaping; the list keeps its layout.
        raws = [self.text[item.start: item.end] for item in span.items]
        known = {json.loads(raw): raw for raw in raws}
        encoded = [known.get(line) or self._dumps(line) for line in _lines(new_text)]
        if not encoded:
            return "[]"
        if not raws:
            return "[" + ", ".join(encoded) + "]"
        lead = self.text[span.start + 1: span.items[0].start]
        trail = self.text[span.items[-1].end: span.end - 1]
        between = (
            self.text[span.items[0].end: span.items[1].start] if len(raws) > 1 else "," + lead
        )
        return "[" + lead + between.join(encoded) + trail + "]"


def _lines(text: str) -> list[str]:
    """A cell source as nbformat stores it: lines, each but the last ending in a newline."""
    return [line for line in re.split(r"(?<=\n)", text) if line]


def check_notebook(
    path: Path, data: bytes, lint: LintOptions, index: ProjectIndex, write: bool
) -> FileResult:
    """Lint (and fix) the notebook at ``path`` whose bytes are ``data``; write it when told."""
    result, new_data = lint_notebook(path, data, lint, index)
    if new_data is not None and write:
        try:
            write_atomic(path, data, new_data)
            result.wrote = True
        except WriteError as error:
            result.errors.append(str(error))
            result.fixed, result.fixed_codes = 0, {}
    return result


def lint_notebook(
    path: Path, data: bytes, lint: LintOptions, index: ProjectIndex, display_name: str = ""
) -> tuple[FileResult, bytes | None]:
    """The findings of each code cell, and with ``lint.fix`` the fixed notebook's bytes (``None``
    when nothing changed)."""
    name = display_name or str(path)
    result = FileResult(filename=name)
    try:
        notebook = _Notebook(data)
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, RecursionError) as error:
        result.findings.append(_parse_error(name, f"cannot read notebook: {error}"))
        return result, None
    new_texts: dict[int, str] = {}
    found: list[tuple[int, list[Finding]]] = []
    for cell in notebook.cells:
        indent = leading_indent(cell.text)
        masked = mask(dedented(cell.text, indent))
        if masked is None:
            continue
        code, magics = masked
        # An indented cell is reported, not fixed: a fix's new lines would need an indent of
        # their own, and an inserted line may sit where no line of the cell was.
        cell_lint = replace(lint, fix=False, fixable=frozenset()) if indent else lint
        cell_result, fixed = lint_source(
            path, code.encode("utf-8"), cell_lint, index,
            display_name=f"{name}:cell {cell.number}",
        )
        found.append((
            cell.number, [in_indented_cell(f, indent, cell.text) for f in cell_result.findings],
        ))
        result.errors.extend(cell_result.errors)
        result.internal_error = result.internal_error or cell_result.internal_error
        if cell_result.diff:
            result.diff = (result.diff or "") + cell_result.diff
        if fixed is None or indent:
            continue
        restored = unmask(fixed.decode("utf-8"), magics)
        if restored is None:
            result.errors.append(
                f"{name}:cell {cell.number}: fix moved an IPython line; not applied"
            )
            continue
        new_texts[cell.number] = restored
        result.fixed += cell_result.fixed
        for code_, count in cell_result.fixed_codes.items():
            result.fixed_codes[code_] = result.fixed_codes.get(code_, 0) + count
    new_data = None
    if new_texts:
        try:
            new_data = notebook.rewritten(new_texts).encode("utf-8")
            notebook = _Notebook(new_data)  # what remains is located in the fixed notebook
        except SpanError as error:
            result.errors.append(f"{name}: fixes not applied: {error}")
            result.fixed, result.fixed_codes = 0, {}
    cells = {cell.number: cell for cell in notebook.cells}
    for number, findings in found:
        result.findings.extend(notebook.located(f, cells[number], name) for f in findings)
    return result, new_data


def rewrite_cells(data: bytes, change: Callable[[int, str], str | None]) -> bytes | None:
    """``data`` with ``change(cell number, masked cell text)`` applied to the code cells that are
    linted (``None``: unchanged), or ``None`` when nothing changed; for ``--add-noqa``. Raises
    ``ValueError`` (or ``SpanError``) on a notebook it cannot read or rewrite."""
    notebook = _Notebook(data)
    new_texts = {}
    for cell in notebook.cells:
        indent = leading_indent(cell.text)
        masked = mask(dedented(cell.text, indent))
        if masked is None:
            continue
        new = change(cell.number, masked[0])
        restored = unmask(new, masked[1]) if new is not None else None
        if restored is not None:
            restored = indented_again(restored, indent, cell.text)
        if restored is not None and restored != cell.text:
            new_texts[cell.number] = restored
    if not new_texts:
        return None
    return notebook.rewritten(new_texts).encode("utf-8")
