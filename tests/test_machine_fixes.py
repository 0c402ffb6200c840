"""The fixes the machine formats print are the fixes ``--fix`` applies: applying the JSON
``edits`` (or the SARIF ``replacements``) of each fixable fixture, round after round as an editor
or a review bot would, gives exactly its ``.fixed.py``. Data-driven: every fixture with a
``.fixed.py`` takes part."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

from .test_fixtures import _fixture_files, _settings

FIXABLE = [p for p in _fixture_files() if p.with_name(p.stem + ".fixed.py").exists()]
MAX_ROUNDS = 10

# An edit: (start line, start column, end line, end column, new text), 1-based columns.
Edit = tuple[int, int, int, int, str]


def _json_fixes(output: str) -> list[list[Edit]]:
    fixes = []
    for finding in json.loads(output):
        fix = finding.get("fix") or {}
        if fix.get("edits"):
            fixes.append([
                (e["location"]["row"], e["location"]["column"],
                 e["end_location"]["row"], e["end_location"]["column"], e["content"])
                for e in fix["edits"]
            ])
    return fixes


def _sarif_fixes(output: str) -> list[list[Edit]]:
    fixes = []
    for result in json.loads(output)["runs"][0]["results"]:
        for fix in result.get("fixes", []):
            edits = []
            for change in fix["artifactChanges"]:
                for replacement in change["replacements"]:
                    region = replacement["deletedRegion"]
                    edits.append((
                        region["startLine"], region["startColumn"], region["endLine"],
                        region["endColumn"], replacement.get("insertedContent", {}).get("text", ""),
                    ))
            fixes.append(edits)
    return fixes


def _offset(text: str, line: int, column: int) -> int:
    lines = text.splitlines(keepends=True)
    assert 1 <= line <= len(lines) + 1, (line, column)
    start = sum(len(x) for x in lines[: line - 1])
    assert 1 <= column <= (len(lines[line - 1]) if line <= len(lines) else 0) + 1, (line, column)
    return start + column - 1


def _apply(text: str, fixes: list[list[Edit]]) -> str:
    """Every fix whose edits overlap no fix already taken (in order of position), all at once."""
    spans: list[tuple[int, int, str]] = []
    for fix in sorted(fixes, key=lambda f: min((e[0], e[1]) for e in f)):
        edits = [(_offset(text, a, b), _offset(text, c, d), new) for a, b, c, d, new in fix]
        if any(not (end <= s or start >= e) or (start == end == s == e)
               for start, end, _ in edits for s, e, _ in spans):
            continue  # overlapping: the next round
        spans.extend(edits)
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _report(path: Path, output_format: str, select: list[str]) -> str:
    result = CliRunner().invoke(main, [
        "check", "--no-cache", "--jobs", "1", "--unsafe-fixes", "--exit-zero", "--select",
        ",".join(select), "--output-format", output_format, str(path),
    ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("output_format", ["json", "sarif"])
@pytest.mark.parametrize("path", FIXABLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_printed_edits_reproduce_the_fixed_file(
    tmp_path: Path, path: Path, output_format: str
) -> None:
    text = path.read_text(encoding="utf-8")
    select, options = _settings(text, path.parent.name)
    config: dict[str, Any] = {"select": select, **options}
    (tmp_path / "pyproject.toml").write_text(
        "[tool.sampler-lint]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in config.items())
    )
    target = tmp_path / path.name
    target.write_text(text, encoding="utf-8")
    parse = _json_fixes if output_format == "json" else _sarif_fixes
    applied = 0
    for _ in range(MAX_ROUNDS):
        fixes = parse(_report(target, output_format, select))
        if not fixes:
            break
        current = target.read_text(encoding="utf-8")
        new = _apply(current, fixes)
        assert new != current, "edits that change nothing"
        target.write_text(new, encoding="utf-8")
        applied += 1
    assert applied, f"{path.name} has a .fixed.py but its report prints no edits"
    expected = path.with_name(path.stem + ".fixed.py").read_text(encoding="utf-8")
    assert target.read_text(encoding="utf-8") == expected
