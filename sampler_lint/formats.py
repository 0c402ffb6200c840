"""The CI output formats: GitHub workflow commands, SARIF 2.1.0, JUnit XML, GitLab code quality.

Each is a reporter in the sense of :mod:`sampler_lint.reporters` (findings in, text out) and is
registered there. Fingerprints (GitLab, SARIF) come from :func:`fingerprint`, which the baseline
uses too, so a finding keeps its identity across line moves."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from sampler_lint import __version__
from sampler_lint.findings import DOCS_URL, Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def fingerprints(findings: Iterable[Finding]) -> list[str]:
    """A stable identity per finding: file, rule and the flagged code (whitespace-normalised),
    numbered when the same code is flagged twice in a file; never the line number, so unrelated
    edits above a finding keep it."""
    seen: Counter[tuple[str, str, str]] = Counter()
    out = []
    for finding in findings:
        code = " ".join(finding.source_line.split())
        key = (Path(finding.filename).as_posix(), finding.code, code)
        seen[key] += 1
        text = "\0".join([*key, str(seen[key])])
        out.append(hashlib.sha256(text.encode("utf-8")).hexdigest()[:32])
    return out


# -- GitHub ----------------------------------------------------------------------------------------

def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(findings: Sequence[Finding], context: Any, color: bool) -> str:
    lines = []
    for f in findings:
        level = "error" if f.severity == "error" else "warning"
        properties = ",".join([
            f"file={_escape_property(f.filename)}",
            f"line={f.location.line}",
            f"col={f.location.column}",
            f"endLine={f.end_location.line}",
            f"endColumn={f.end_location.column}",
            f"title={_escape_property(f'sampler-lint ({f.code})')}",
        ])
        lines.append(f"::{level} {properties}::{_escape_data(f'{f.code} {f.message}')}")
    return "".join(line + "\n" for line in lines)


# -- SARIF -----------------------------------------------------------------------------------------

def _rules_metadata() -> tuple[list[dict[str, Any]], dict[str, int]]:
    from sampler_lint.registry import all_rules

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


def _uri(filename: str) -> str:
    return Path(filename).as_posix()


def sarif(findings: Sequence[Finding], context: Any, color: bool) -> str:
    rules, index = _rules_metadata()
    results = []
    for f, print_ in zip(findings, fingerprints(findings), strict=True):
        location = {
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(f.filename)},
                "region": {
                    "startLine": f.location.line,
                    "startColumn": f.location.column,
                    "endLine": f.end_location.line,
                    "endColumn": f.end_location.column,
                },
            }
        }
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": "error" if f.severity == "error" else "warning",
            "message": {"text": f.message},
            "locations": [location],
            "partialFingerprints": {"samplerLint/v1": print_},
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if f.fix is not None and f.fix.edits:
            result["fixes"] = [{
                "description": {"text": f"{f.fix.message} ({f.fix.applicability})"},
                "artifactChanges": [{
                    "artifactLocation": {"uri": _uri(f.filename)},
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
    document = {
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
    return json.dumps(document, indent=2) + "\n"


# -- JUnit -----------------------------------------------------------------------------------------

def junit(findings: Sequence[Finding], context: Any, color: bool) -> str:
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.filename, []).append(f)
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
    return "\n".join(out) + "\n"


# -- GitLab ----------------------------------------------------------------------------------------

def gitlab(findings: Sequence[Finding], context: Any, color: bool) -> str:
    report = [
        {
            "description": f"{f.code} {f.message}",
            "check_name": f.code,
            "fingerprint": print_,
            "severity": "major" if f.severity == "error" else "minor",
            "location": {
                "path": _uri(f.filename),
                "lines": {"begin": f.location.line, "end": f.end_location.line},
            },
        }
        for f, print_ in zip(findings, fingerprints(findings), strict=True)
    ]
    return json.dumps(report, indent=2) + "\n"
