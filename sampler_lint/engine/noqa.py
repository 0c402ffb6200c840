"""``# noqa`` comments: flake8-compatible line suppressions and file-level directives.

``# noqa`` suppresses every finding on a physical line of the flagged statement; ``# noqa: SL101,
SL201`` only those codes. ``# sampler-lint: noqa`` anywhere in a file suppresses the whole file,
``# sampler-lint: noqa: SL301`` only that code in the file (``# flake8: noqa`` too). Only real
comments count (a ``# noqa`` inside a string does not).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

ALL = "*"
_CODES = r"[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*"
_LINE = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODES}))?", re.IGNORECASE)
#: A line directive, ``# noqa`` or ``# noqa: CODES`` (group ``codes``).
LINE_DIRECTIVE = _LINE
#: The file-level directive: ours (sampler-lint, then colon, noqa, optional codes), and flake8's
#: spelling of it (flake8 instead of sampler-lint) read the way Ruff reads it: flake8 itself
#: treats the coded form as a whole-file exemption; Ruff and this tool, as those codes only.
_FILE = re.compile(
    rf"#\s*(?:sampler-lint|flake8)\s*:\s*noqa(?::\s*(?P<codes>{_CODES}))?", re.IGNORECASE
)


def _codes(text: str | None) -> frozenset[str]:
    if not text:
        return frozenset({ALL})
    return frozenset(code.upper() for code in re.split(r"[\s,]+", text.strip()) if code)


@dataclass
class Suppressions:
    lines: dict[int, frozenset[str]] = field(default_factory=dict)
    file_codes: frozenset[str] = frozenset()
    #: (line, code) pairs that suppressed a finding (``*`` for a bare ``# noqa``).
    used: set[tuple[int, str]] = field(default_factory=set)
    #: The comment carrying each line's directive, from the tokenizer: (its column, its text).
    #: Only this part of the line is ever edited (the same text inside a string is code).
    comments: dict[int, tuple[int, str]] = field(default_factory=dict)

    def file_suppresses(self, code: str) -> bool:
        return ALL in self.file_codes or code in self.file_codes

    def suppresses(self, code: str, first_line: int, last_line: int) -> bool:
        if self.file_suppresses(code):
            return True
        for line in range(first_line, last_line + 1):
            codes = self.lines.get(line)
            if codes is not None and (ALL in codes or code in codes):
                self.used.add((line, code if code in codes else ALL))
                return True
        return False

    def any_on(self, first_line: int, last_line: int) -> bool:
        """Whether any line in the range carries a ``# noqa`` (fixes never rewrite those)."""
        return any(line in self.lines for line in range(first_line, last_line + 1))


def _comments(text: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of every comment."""
    try:
        return [
            (tok.start[0], tok.start[1], tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Fall back to a textual scan: a rare false suppression beats a crash.
        found = []
        for number, line in enumerate(text.splitlines(), start=1):
            index = line.find("#")
            if index >= 0:
                found.append((number, index, line[index:]))
        return found


def parse(text: str) -> Suppressions:
    result = Suppressions()
    if "noqa" not in text.lower():
        return result
    file_codes: set[str] = set()
    for line, column, comment in _comments(text):
        directive = _FILE.search(comment)
        if directive:
            file_codes |= _codes(directive.group("codes"))
            continue
        match = _LINE.search(comment)
        if match:
            result.lines[line] = _codes(match.group("codes"))
            result.comments[line] = (column, comment)
    result.file_codes = frozenset(file_codes)
    return result


def file_level_codes(text: str) -> frozenset[str]:
    """The codes a file-level directive suppresses, from a cheap scan (before parsing)."""
    lowered = text.lower()
    if "sampler-lint" not in lowered and "flake8" not in lowered:
        return frozenset()
    return parse(text).file_codes


_DIRECTIVE_BYTES = re.compile(
    rb"\s*#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?",
    re.IGNORECASE,
)


def remove_codes(data: bytes, unused: dict[int, set[str]],
                 comments: dict[int, tuple[int, str]]) -> bytes:
    """``data`` with the given codes taken out of the ``# noqa`` on each line, and the directive
    removed when no code is left. Works on the bytes, so encoding, BOM and line endings stay.
    ``comments``: each line's comment (``Suppressions.comments``); only the comment is edited,
    never a ``# noqa`` spelled inside a string before it."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    lines = data.split(b"\n")
    for number, codes in unused.items():
        if not 0 < number <= len(lines) or number not in comments:
            continue
        line = lines[number - 1]
        # A comment runs to the end of its line: its bytes are the line's last ones.
        comment = comments[number][1].encode("utf-8" if encoding == "utf-8-sig" else encoding)
        body_end = len(line) - (1 if line.endswith(b"\r") else 0)
        comment_start = body_end - len(comment)
        if comment_start < 0 or line[comment_start:body_end] != comment:
            continue  # the text is not what the tokenizer saw: leave the line alone
        # The directive's leading blanks may reach back before the comment.
        blanks = len(line[:comment_start]) - len(line[:comment_start].rstrip(b" \t"))
        match = _DIRECTIVE_BYTES.search(line, comment_start - blanks)
        if match is None or match.group("codes") is None:
            continue
        listed = [c for c in re.split(rb"[\s,]+", match.group("codes")) if c]
        kept = [c for c in listed if c.decode("ascii", "replace").upper() not in codes]
        ending = b"\r" if line.endswith(b"\r") else b""
        if kept:
            start, end = match.span("codes")
            line = line[:start] + b", ".join(kept) + line[end:]
        else:
            line = line[: match.start()] + line[match.end():].rstrip(b"\r") + ending
            if line.rstrip(b"\r").endswith(b" ") and not line.strip():
                line = ending
        lines[number - 1] = line
    return b"\n".join(lines)
