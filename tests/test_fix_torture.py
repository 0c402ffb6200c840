"""Fix torture tests: every fixable fixture, fixed through the real CLI under CRLF line endings, a
UTF-8 BOM, tab indentation and a latin-1 coding cookie, keeps all of them; the file's mode and the
bytes outside the fixed region are unchanged."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main
from tests.test_fixtures import FIXTURES, _settings


def _fixable() -> list[Path]:
    return sorted(
        p for p in FIXTURES.glob("SL*/*.py")
        if not p.name.endswith(".fixed.py") and p.with_name(p.stem + ".fixed.py").exists()
    )


def _tabs(text: str) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        out.append("\t" * (indent // 4) + " " * (indent % 4) + stripped)
    return "".join(out)


LATIN1_HEADER = "# -*- coding: latin-1 -*-\n# caf\xe9 cr\xe8me\n"

VARIANTS: dict[str, Callable[[str], bytes]] = {
    "crlf": lambda text: text.replace("\n", "\r\n").encode("utf-8"),
    "bom": lambda text: b"\xef\xbb\xbf" + text.encode("utf-8"),
    "tabs": lambda text: _tabs(text).encode("utf-8"),
    "latin1": lambda text: _with_header(text).encode("latin-1"),
}


def _with_header(text: str) -> str:
    # A coding cookie counts only on line 1 or 2; fixture header lines may follow it.
    return LATIN1_HEADER + text


def _config(options: dict[str, object]) -> str:
    lines = ["[tool.sampler-lint]"]
    for key, value in options.items():
        rendered = f'"{value}"' if isinstance(value, str) else str(value).lower()
        lines.append(f"{key} = {rendered}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("fixture", _fixable(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fix_keeps_encoding_bom_newlines_tabs_and_mode(
    tmp_path: Path, fixture: Path, variant: str
) -> None:
    text = fixture.read_text(encoding="utf-8")
    expected_text = fixture.with_name(fixture.stem + ".fixed.py").read_text(encoding="utf-8")
    if variant == "latin1" and not all(ord(c) < 256 for c in text + expected_text):
        pytest.skip("fixture is not representable in latin-1")
    if variant == "tabs" and "# fixture-no-tabs" in text:
        # Visual indents aligned to a bracket have no faithful tab form (a tab's width is the
        # reader's); fixes leave tab-indented continuations as written.
        pytest.skip("fixture aligns continuation lines by column")
    select, options = _settings(text, fixture.parent.name)
    (tmp_path / "pyproject.toml").write_text(_config(options))
    target = tmp_path / fixture.name
    original = VARIANTS[variant](text)
    target.write_bytes(original)
    os.chmod(target, 0o640)

    runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = runner.invoke(
            main,
            ["check", "--fix", "--unsafe-fixes", "--select", ",".join(select), "--jobs", "1",
             "--output-format", "concise", target.name],
            catch_exceptions=False,
        )
    finally:
        os.chdir(cwd)
    assert "warning" not in result.stderr, result.stderr
    assert target.read_bytes() == VARIANTS[variant](expected_text)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".sampler-lint.tmp")]
