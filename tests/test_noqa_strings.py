"""``# noqa`` spelled inside a string literal is code, not a directive: the unused-noqa report
points at the real comment, its fix edits only that comment (every string stays byte-identical),
and the result is a fixed point. ``--add-noqa`` likewise never edits a string."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.api import lint_code
from sampler_lint.cli import main

SOURCES = [
    'y = "keep  # noqa: SL101"  # noqa: SL101\n',
    "y = 'keep # noqa: SL101, SL201'  # noqa: SL101, E501\n",
    'y = f"{1} # noqa: SL101"  # note  # noqa: SL101\n',
    'y = b"# noqa: SL101"  # noqa:SL101\r\n',
    'y = """\n# noqa: SL101\n"""  # noqa: SL101\n',
    'y = ("# noqa: SL101",  # noqa: SL101\n     "# noqa: SL201")\n',
    '# -*- coding: latin-1 -*-\ny = "\xe9 # noqa: SL101"  # \xe9 # noqa: SL101\n',
]


# Python 3.12 splits f-strings into parts; earlier versions have one STRING token.
_STRING_TYPES = {
    getattr(tokenize, name) for name in ("STRING", "FSTRING_START", "FSTRING_MIDDLE")
    if hasattr(tokenize, name)
}


def _strings(data: bytes) -> list[str]:
    return [
        tok.string for tok in tokenize.tokenize(io.BytesIO(data).readline)
        if tok.type in _STRING_TYPES
    ]


def _comments(data: bytes) -> list[str]:
    return [
        tok.string for tok in tokenize.tokenize(io.BytesIO(data).readline)
        if tok.type == tokenize.COMMENT
    ]


def _encode(source: str) -> bytes:
    return source.encode("latin-1" if "latin-1" in source else "utf-8")


@pytest.mark.parametrize("source", SOURCES, ids=range(len(SOURCES)))
def test_report_points_at_the_comment(source: str) -> None:
    data = _encode(source)
    result = lint_code(data, select=["ALL"])
    unused = [f for f in result.findings if f.code == "SL002"]
    assert unused, "the real directive's code is unused and must be reported"
    text = data.decode("latin-1" if "latin-1" in source else "utf-8")
    for finding in unused:
        line = text.splitlines()[finding.location.line - 1]
        assert line[finding.location.column - 1:].lstrip().startswith("#"), line
        assert not any(
            line.find(s) <= finding.location.column - 1 < line.find(s) + len(s)
            for s in _strings(data) if s in line
        ), "the report points inside a string"


@pytest.mark.parametrize("source", SOURCES, ids=range(len(SOURCES)))
def test_fix_leaves_strings_alone_and_settles(source: str) -> None:
    data = _encode(source)
    result = lint_code(data, select=["ALL"], fix=True)
    assert result.fixed is not None
    fixed = result.fixed.encode("latin-1")  # lint_code decodes bytes input as latin-1
    assert _strings(fixed) == _strings(data)
    assert not any("SL101" in c for c in _comments(fixed))
    compile(fixed, "<fixed>", "exec")
    again = lint_code(fixed, select=["ALL"], fix=True)
    assert again.fixed is None, "a second fix run changed the code"
    assert not [f for f in again.findings if f.code == "SL002"]


def test_a_string_alone_is_no_directive() -> None:
    source = 'x = "# noqa: SL101"\n'
    assert lint_code(source, select=["ALL"]).findings == []
    assert lint_code(source, select=["ALL"], fix=True).fixed is None


def test_add_noqa_never_edits_a_string(tmp_path: Path) -> None:
    path = tmp_path / "shard.py"
    original = (
        "def f(x, world_size, rank):\n"
        '    return x.split(len(x) // world_size)[rank], "# noqa: E1"\n'
    )
    path.write_text(original)
    result = CliRunner().invoke(
        main, ["check", "--isolated", "--no-cache", "--select", "SL101", "--add-noqa", str(path)]
    )
    assert result.exit_code == 0, result.output
    data = path.read_bytes()
    assert _strings(data) == _strings(original.encode())
    assert _comments(data) == ["# noqa: SL101"]
