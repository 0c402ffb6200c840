"""The fixture harness: every file in ``tests/fixtures/<CODE>/`` states the findings it expects
with ``# expect: CODE`` on the flagged line; a ``<name>.fixed.py`` beside it holds the exact output
of ``--fix --unsafe-fixes``. Files without markers are negative fixtures (look-alikes that must not
be flagged). Optional header lines configure a fixture:

    # fixture-select: SL401,SL402
    # fixture-options: {"split-fix": "ceil"}
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sampler_lint.api import lint_code
from sampler_lint.engine.registry import all_rules

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def _fixture_files() -> list[Path]:
    return sorted(
        p for p in FIXTURES.glob("SL*/*.py") if not p.name.endswith(".fixed.py")
    )


def _settings(text: str, code: str) -> tuple[list[str], dict[str, object]]:
    select = [code]
    options: dict[str, object] = {}
    for line in text.splitlines()[:5]:
        if line.startswith("# fixture-select:"):
            select = [c.strip() for c in line.split(":", 1)[1].split(",")]
        if line.startswith("# fixture-options:"):
            options = json.loads(line.split(":", 1)[1])
    return select, options


def _expected(text: str) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code in match.group("codes").split(","):
                found.append((number, code.strip()))
    return sorted(found)


def test_every_rule_has_fixtures() -> None:
    codes = {p.parent.name for p in _fixture_files()}
    for rule in all_rules():
        if rule.engine_rule:
            continue
        assert rule.code in codes, f"{rule.code} has no fixtures in tests/fixtures/{rule.code}/"
        files = list((FIXTURES / rule.code).glob("*.py"))
        negatives = [
            f for f in files
            if not f.name.endswith(".fixed.py") and not _expected(f.read_text())
        ]
        assert negatives, f"{rule.code} has no negative fixture (a file without # expect)"


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    select, options = _settings(text, path.parent.name)
    result = lint_code(text, select=select, options=options, path=str(path))
    got = sorted((f.location.line, f.code) for f in result.findings)
    assert got == _expected(text), "\n".join(
        f"{f.location.line}:{f.location.column} {f.code} {f.message}" for f in result.findings
    )

    fixed_path = path.with_name(path.stem + ".fixed.py")
    fixed = lint_code(
        text, select=select, options=options, fix=True, unsafe_fixes=True, path=str(path)
    )
    if fixed_path.exists():
        expected_fixed = fixed_path.read_text(encoding="utf-8")
        assert fixed.fixed == expected_fixed
        # A fixed point: fixing the fixed output changes nothing and leaves no fixable finding.
        again = lint_code(
            expected_fixed, select=select, options=options, fix=True, unsafe_fixes=True
        )
        assert again.fixed is None
        assert not [f for f in again.findings if f.fix is not None]
        compile(expected_fixed, str(fixed_path), "exec")
    else:
        assert fixed.fixed is None, (
            f"fixing {path.name} changes it: add {fixed_path.name} with the expected output"
        )


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_prefilter_never_hides_a_finding(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    _select, options = _settings(text, path.parent.name)
    with_filter = lint_code(text, select=["ALL"], options=options)
    without = lint_code(text, select=["ALL"], options=options, use_prefilter=False)
    key = lambda r: sorted((f.location.line, f.location.column, f.code) for f in r.findings)  # noqa: E731
    assert key(with_filter) == key(without)
