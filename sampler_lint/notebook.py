"""Jupyter notebooks: each code cell is linted as a source of its own.

IPython syntax is not Python: line magics (``%time``), shell escapes (``!pip``), help (``x?``) and
assignments from them (``files = !ls``) are masked with a ``pass`` statement that keeps the line
and its indentation, and cells run by a cell magic (``%%bash``) are skipped. Findings are named
``notebook.ipynb:cell N`` with the line inside the cell.

Fixes are written back only when the notebook is in nbformat's own JSON layout (one-space indent,
sorted keys, what Jupyter writes): then re-serialising changes nothing but the fixed cells, byte
for byte. A notebook in any other layout is reported, never rewritten.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from sampler_lint.findings import FileResult
from sampler_lint.index import ProjectIndex
from sampler_lint.linter import LintOptions, _parse_error, lint_source
from sampler_lint.writer import WriteError, write_atomic

SUFFIX = ".ipynb"
_MAGIC = re.compile(r"^\s*(%|!|\?)|^\s*[\w.]+\s*=\s*[%!]|\?\s*$")
_MARKER = re.compile(r"^(?P<indent>[ \t]*)pass  # sampler-lint-magic-(?P<n>\d+)$")


def _mask(text: str) -> tuple[str, list[str]] | None:
    """The cell with IPython lines masked, and the masked lines; ``None`` for a cell magic."""
    stripped = text.lstrip()
    if stripped.startswith("%%"):
        return None
    lines = text.split("\n")
    magics: list[str] = []
    for i, line in enumerate(lines):
        if _MAGIC.search(line):
            indent = line[: len(line) - len(line.lstrip())]
            lines[i] = f"{indent}pass  # sampler-lint-magic-{len(magics)}"
            magics.append(line)
    return "\n".join(lines), magics


def _unmask(text: str, magics: list[str]) -> str | None:
    lines = text.split("\n")
    restored = 0
    for i, line in enumerate(lines):
        match = _MARKER.match(line)
        if match:
            lines[i] = magics[int(match.group("n"))]
            restored += 1
    return "\n".join(lines) if restored == len(magics) else None


def _as_source(text: str, original: Any) -> Any:
    """The cell source in the shape it had: a list of lines (each but the last ending in a
    newline), or one string."""
    if isinstance(original, str):
        return text
    return text.splitlines(keepends=True)


def _nbformat_layout(notebook: Any) -> str:
    return json.dumps(notebook, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def check_notebook(
    path: Path, data: bytes, lint: LintOptions, index: ProjectIndex, write: bool
) -> FileResult:
    name = str(path)
    result = FileResult(filename=name)
    try:
        notebook = json.loads(data.decode("utf-8"))
        cells = notebook["cells"]
        if not isinstance(cells, list):
            raise TypeError("cells is not a list")
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        result.findings.append(_parse_error(name, f"cannot read notebook: {error}"))
        return result
    writable = write and _nbformat_layout(notebook) == data.decode("utf-8")
    if (lint.fix or lint.want_diff) and not writable:
        if write:
            result.errors.append(
                f"{name}: not in nbformat's JSON layout, so it is not rewritten; fix it in "
                "Jupyter or re-save it there first"
            )
        lint = replace(lint, fix=False, want_diff=False)
    changed = False
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        masked = _mask(text)
        if masked is None:
            continue
        code, magics = masked
        cell_result, fixed = lint_source(
            path, code.encode("utf-8"), lint, index, display_name=f"{name}:cell {number}"
        )
        result.findings.extend(cell_result.findings)
        result.errors.extend(cell_result.errors)
        result.internal_error = result.internal_error or cell_result.internal_error
        if fixed is None:
            continue
        restored = _unmask(fixed.decode("utf-8"), magics)
        if restored is None:
            result.errors.append(f"{name}:cell {number}: fix moved an IPython line; not applied")
            continue
        cell["source"] = _as_source(restored, source)
        result.fixed += cell_result.fixed
        for code_, count in cell_result.fixed_codes.items():
            result.fixed_codes[code_] = result.fixed_codes.get(code_, 0) + count
        changed = True
    if changed and writable:
        try:
            write_atomic(path, data, _nbformat_layout(notebook).encode("utf-8"))
            result.wrote = True
        except WriteError as error:
            result.errors.append(str(error))
    return result
