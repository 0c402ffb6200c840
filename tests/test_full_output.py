"""The ``full`` format: plain text without rich (pre-commit, CI and pipes never import it), the
same text rich prints without colour, and nothing in the linted code or a line number read as
markup or as an emoji code (`:100:` is rich's emoji for 100, `:cat:` a cat)."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main
from sampler_lint.engine.findings import Finding, FixInfo, Location
from sampler_lint.output.reporters import ReportContext, _full_lines, _styled, full

# SL101 on the line named by the padding before it (errors come with a code frame).
SHARD = "def shard(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]{}\n"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _lint(tmp_path: Path, line: int, comment: str = "", *flags: str) -> str:
    # The `return` is the second line of SHARD: pad so that it lands on `line`.
    (tmp_path / "shard.py").write_text("\n" * (line - 2) + SHARD.format(comment))
    result = CliRunner().invoke(
        main, ["check", "--isolated", "--no-cache", "--jobs", "1", "--output-format", "full",
               *flags, str(tmp_path / "shard.py")],
        catch_exceptions=False,
    )
    return ANSI.sub("", result.stdout)


@pytest.mark.parametrize("line", [100, 1234])
@pytest.mark.parametrize("color", ["never", "always"])
def test_a_line_number_is_never_an_emoji(tmp_path: Path, line: int, color: str) -> None:
    out = _lint(tmp_path, line, "", "--color", color)
    assert f"shard.py:{line}:12: SL101" in out, out
    assert "\U0001f4af" not in out and "\U0001f522" not in out  # 💯 and 🔢


@pytest.mark.parametrize("color", ["never", "always"])
def test_the_code_in_the_frame_is_shown_as_written(tmp_path: Path, color: str) -> None:
    comment = "  # :cat: [bold]x[/] [red]\\[y]"
    out = _lint(tmp_path, 5, comment, "--color", color)
    assert f"[rank]{comment}" in out, out


def test_full_output_does_not_import_rich(tmp_path: Path) -> None:
    (tmp_path / "shard.py").write_text(SHARD.format(""))
    code = (
        "import sys\n"
        "from sampler_lint.cli import main\n"
        "try:\n"
        f"    main(['check', '--isolated', '--no-cache', '--color', 'never', {str(tmp_path)!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'rich' not in sys.modules, sorted(m for m in sys.modules if 'rich' in m)\n"
        "print('no rich')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0 and "SL101" in run.stdout and "no rich" in run.stdout, run.stderr


CONTEXT = ReportContext(unsafe_fixes=False, fixing=False, show_fixes=False, statistics=False,
                        fixed=0, fixed_by_code={}, files_checked=1)
# Brackets, colons, backslashes (neither before a bracket nor at the end of a text: rich's escaping
# drops one of the first and doubles the second, where plain output shows what is there),
# wide and combining characters, and the control codes both renderings remove.
ALPHABET = "ab [/]:=*^`'\"\\ \u00e9\u4e2d\u0301\u22ee\r\x0c\x07\x08\x0b"


def _text(rng: random.Random, size: int) -> str:
    text = "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(size)))
    text = text.replace("\\[", "\\ [")
    visible = text.translate(dict.fromkeys(b"\r\x0c\x07\x08\x0b"))
    return text + "." if visible.endswith("\\") else text


def _finding(rng: random.Random) -> Finding:
    line = rng.randrange(1, 2000)
    frame = tuple(_text(rng, 30) for _ in range(rng.randrange(0, 3)))
    fix = rng.choice([None, FixInfo("safe", _text(rng, 20)),
                      FixInfo("unsafe", _text(rng, 20), risk=_text(rng, 20))])
    return Finding(
        code="SL101", name="n", severity="error", message=_text(rng, 40),
        filename=_text(rng, 10) + ".py", location=Location(line, 1 + rng.randrange(5)),
        end_location=Location(line + len(frame) - 1 if frame else line, 9), fix=fix,
        source_line=frame[-1] if frame else _text(rng, 30), frame=frame,
        frame_start=line - 1 if len(frame) > 1 else line,
    )


def test_plain_output_is_what_rich_prints_without_colour() -> None:
    rng = random.Random(20261127)
    for _ in range(300):
        findings = [_finding(rng) for _ in range(rng.randrange(1, 4))]
        plain = full(findings, CONTEXT, color=False)
        assert plain == _styled(_full_lines(findings, CONTEXT), color=False), findings


def test_a_tab_in_a_message_is_expanded_as_rich_does() -> None:
    rng = random.Random(7)
    finding = _finding(rng)
    tabbed = Finding(**{**finding.__dict__, "message": "wide\u4e2d\tthen"})
    out = full([tabbed], CONTEXT, color=False)
    assert "\t" not in out and out == _styled(_full_lines([tabbed], CONTEXT), color=False)
