"""The CI output formats: GitHub workflow commands, SARIF 2.1.0, JUnit XML, GitLab code quality.

Each is a reporter in the sense of :mod:`.reporters` (findings in, text out) and is
registered there. Fingerprints (GitLab, SARIF) come from :func:`fingerprint`, which the baseline
uses too, so a finding keeps its identity across line moves."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sampler_lint import __version__
from sampler_lint.engine.findings import DOCS_URL, Finding
from sampler_lint.output.paths import ci_path, repository_path

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def code_fingerprint(finding: Finding) -> str:
    """The rule and the flagged code (whitespace-normalised), hashed: what a finding is, wherever
    it sits and however its file is named on the command line."""
    code = " ".join(finding.source_line.split())
    return hashlib.sha256(f"{finding.code}\0{code}".encode()).hexdigest()[:32]


def fingerprints(findings: Iterable[Finding]) -> list[str]:
    """A stable, unique identity per finding for code-quality reports: file, rule and the
    flagged code, numbered when the same code is flagged twice in a file; never the line number,
    so unrelated edits above a finding keep it."""
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for finding in findings:
        key = (Path(finding.path).as_posix(), code_fingerprint(finding))
        seen[key] += 1
        text = "\0".join([*key, str(seen[key])])
        out.append(hashlib.sha256(text.encode("utf-8")).hexdigest()[:32])
    return out


# -- GitHub ----------------------------------------------------------------------------------------

def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _message(f: Finding) -> str:
    """The message, led by the cell and line for a finding in a notebook (whose location in the
    file is a place in its JSON)."""
    if f.notebook is None:
        return f.message
    return f"cell {f.notebook.cell}, line {f.location.line}: {f.message}"


def github(findings: Sequence[Finding], context: Any, color: bool) -> str:
    lines = []
    for f in findings:
        level = "error" if f.severity == "error" else "warning"
        start, end = f.file_location, f.file_end_location
        properties = ",".join([
            f"file={_escape_property(ci_path(f.path))}",
            f"line={start.line}",
            f"col={start.column}",
            f"endLine={end.line}",
            f"endColumn={end.column}",
            f"title={_escape_property(f'sampler-lint ({f.code})')}",
        ])
        lines.append(f"::{level} {properties}::{_escape_data(f'{f.code} {_message(f)}')}")
    return "".join(line + "\n" for line in lines)


# -- SARIF -----------------------------------------------------------------------------------------

def _rules_metadata() -> tuple[list[dict[str, Any]], dict[str, int]]:
    from sampler_lint.engine.registry import all_rules

    rules, index = [], {}
    for number, rule in enumerate(all_rules()):
        index[rule.code] = number
        rules.append({
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary()},
            "fullDescription": {"text": rule.summary()},
            "helpUri": DOCS_URL.format(code=rule.code.lower()),
            "help": {"text": _plain(rule.documentation), "markdown": _plain(rule.documentation)},
            "defaultConfiguration": {
                "level": "error" if rule.severity.value == "error" else "warning"
            },
        })
    return rules, index


def _plain(documentation: str) -> str:
    import textwrap

    return textwrap.dedent(documentation).strip()


SOURCE_ROOT = "%SRCROOT%"


class _Uris:
    """SARIF locations: a file in a git repository is relative to the repository's root, named
    by ``uriBaseId`` (``%SRCROOT%``; ``%SRCROOT2%``... when one run spans several repositories)
    and defined in ``originalUriBaseIds``; any other file is an absolute ``file://`` URI.
    Reserved characters are percent-encoded (a ``:`` in a first segment would read as a
    scheme)."""

    def __init__(self) -> None:
        self.bases: dict[Path, str] = {}

    def location(self, filename: str) -> dict[str, str]:
        root, path = repository_path(filename)
        if root is None:
            return {"uri": Path(path).as_uri() if Path(path).is_absolute() else quote(path)}
        if root not in self.bases:
            self.bases[root] = SOURCE_ROOT if not self.bases else f"%SRCROOT{len(self.bases) + 1}%"
        return {"uri": quote(path, safe="/"), "uriBaseId": self.bases[root]}

    def original_bases(self) -> dict[str, dict[str, str]]:
        return {base: {"uri": root.as_uri() + "/"} for root, base in self.bases.items()}


def sarif(findings: Sequence[Finding], context: Any, color: bool) -> str:
    rules, index = _rules_metadata()
    uris = _Uris()
    results = []
    for f, print_ in zip(findings, fingerprints(findings), strict=True):
        start, end = f.file_location, f.file_end_location
        location = {
            "physicalLocation": {
                "artifactLocation": uris.location(f.path),
                "region": {
                    "startLine": start.line,
                    "startColumn": start.column,
                    "endLine": end.line,
                    "endColumn": end.column,
                },
            }
        }
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": "error" if f.severity == "error" else "warning",
            "message": {"text": _message(f)},
            "locations": [location],
            "partialFingerprints": {"samplerLint/v1": print_},
        }
        if f.notebook is not None:
            result["properties"] = {"cell": f.notebook.cell, "cellLine": f.location.line,
                                    "cellColumn": f.location.column}
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        # A notebook's edits are in the cell's coordinates, not the JSON file's: not offered.
        if f.fix is not None and f.fix.edits and f.notebook is None:
            result["fixes"] = [{
                "description": {"text": f"{f.fix.message} ({f.fix.applicability})"},
                "artifactChanges": [{
                    "artifactLocation": uris.location(f.path),
                    "replacements": [{
                        "deletedRegion": {
                            "startLine": e.location.line,
                            "startColumn": e.location.column,
                            "endLine": e.end_location.line,
                            "endColumn": e.end_location.column,
                        },
                        "insertedContent": {"text": e.content},
                    } for e in f.fix.edits],
                }],
            }]
        results.append(result)
    document: dict[str, Any] = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "sampler-lint",
                "version": __version__,
                "informationUri": "https://github.com/sampler-lint/sampler-lint",
                "rules": rules,
            }},
            "results": results,
        }],
    }
    if uris.bases:
        document["runs"][0]["originalUriBaseIds"] = uris.original_bases()
    return json.dumps(document, indent=2) + "\n"


# -- JUnit -----------------------------------------------------------------------------------------

# Compiled on first use: its ranges over the whole of Unicode take 5 ms, a thirtieth of start-up.
_NOT_XML = "[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


def _xml_text(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot carry (a stray control character in a file
    name or a flagged line would make the whole report unreadable)."""
    return re.sub(_NOT_XML, "\ufffd", text)


def junit(findings: Sequence[Finding], context: Any, color: bool) -> str:
    # Imported here: xml.sax.saxutils brings urllib.request, http.client and ssl (10 ms on
    # every run's start-up, for one output format).
    from xml.sax.saxutils import escape as xml_escape
    from xml.sax.saxutils import quoteattr

    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        # A notebook's cell stays in the name people read; the path is the file's.
        name = ci_path(f.path) + f.filename[len(f.path):]
        by_file.setdefault(name, []).append(f)
    out = ['<?xml version="1.0" encoding="UTF-8"?>']
    out.append(
        f'<testsuites name="sampler-lint" tests="{len(findings)}" failures="{len(findings)}">'
    )
    for filename, items in sorted(by_file.items()):
        out.append(
            f"  <testsuite name={quoteattr(filename)} tests=\"{len(items)}\" "
            f"failures=\"{len(items)}\">"
        )
        for f in items:
            name = f"{f.code} at {f.location.line}:{f.location.column}"
            out.append(
                f"    <testcase name={quoteattr(name)} classname={quoteattr(filename)} "
                f"file={quoteattr(filename)} line=\"{f.location.line}\">"
            )
            where = f"{filename}:{f.location.line}:{f.location.column}"
            out.append(
                f"      <failure message={quoteattr(f.message)} type={quoteattr(f.code)}>"
                f"{xml_escape(f'{where}: {f.code} {f.message}')}</failure>"
            )
            out.append("    </testcase>")
        out.append("  </testsuite>")
    if not findings:
        out.append('  <testsuite name="sampler-lint" tests="1" failures="0">')
        out.append('    <testcase name="no findings" classname="sampler-lint"/>')
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return _xml_text("\n".join(out) + "\n")


# -- GitLab ----------------------------------------------------------------------------------------

def gitlab(findings: Sequence[Finding], context: Any, color: bool) -> str:
    report = [
        {
            "description": f"{f.code} {_message(f)}",
            "check_name": f.code,
            "fingerprint": print_,
            "severity": "major" if f.severity == "error" else "minor",
            "location": {
                "path": ci_path(f.path),
                "lines": {"begin": f.file_location.line, "end": f.file_end_location.line},
            },
        }
        for f, print_ in zip(findings, fingerprints(findings), strict=True)
    ]
    return json.dumps(report, indent=2) + "\n"


# -- reviewdog -------------------------------------------------------------------------------------

def _rd_position(line: int, column: int) -> dict[str, int]:
    return {"line": line, "column": column}


def rdjson(findings: Sequence[Finding], context: Any, color: bool) -> str:
    """reviewdog's Diagnostic Format (``reviewdog -f=rdjson``). Columns count characters, as in
    the other formats. A fix becomes a suggestion only when ``--fix`` would apply it (safe, or
    unsafe with ``--unsafe-fixes``), and never for a notebook, whose edits are in a cell."""
    diagnostics = []
    for f in findings:
        start, end = f.file_location, f.file_end_location
        diagnostic: dict[str, Any] = {
            "message": _message(f),
            "location": {
                "path": ci_path(f.path),
                "range": {
                    "start": _rd_position(start.line, start.column),
                    "end": _rd_position(end.line, end.column),
                },
            },
            "severity": "ERROR" if f.severity == "error" else "WARNING",
            "code": {"value": f.code, "url": f.url},
        }
        applies = f.fix is not None and (
            f.fix.applicability == "safe" or bool(getattr(context, "unsafe_fixes", False))
        )
        if f.fix is not None and applies and f.fix.edits and f.notebook is None:
            diagnostic["suggestions"] = [
                {
                    "range": {
                        "start": _rd_position(e.location.line, e.location.column),
                        "end": _rd_position(e.end_location.line, e.end_location.column),
                    },
                    "text": e.content,
                }
                for e in f.fix.edits
            ]
        diagnostics.append(diagnostic)
    document = {
        "source": {"name": "sampler-lint", "url": "https://github.com/sampler-lint/sampler-lint"},
        "diagnostics": diagnostics,
    }
    return json.dumps(document, indent=2) + "\n"
