"""Where each value sits in a JSON text: the standard parser gives values, not positions, and a
notebook is rewritten by replacing only the text of the cells a fix changed, so every other byte
(its indentation, key order, escapes) stays as its writer left it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]  # not in typeshed

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
# Python's json reads and writes the last three too (a notebook output may hold them).
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")


class SpanError(ValueError):
    pass


@dataclass
class Span:
    """A JSON value at ``text[start:end]``; an object's members by key, an array's items."""

    start: int
    end: int
    members: dict[str, Span] = field(default_factory=dict)
    items: list[Span] = field(default_factory=list)


def parse_spans(text: str) -> Span:
    """The span tree of ``text``; :class:`SpanError` when it is not JSON."""
    try:
        span, position = _value(text, _skip(text, 0))
    except (IndexError, ValueError, RecursionError) as error:
        raise SpanError(str(error)) from None
    if _skip(text, position) != len(text):
        raise SpanError("extra data after the JSON value")
    return span


def _skip(text: str, position: int) -> int:
    match = _WHITESPACE.match(text, position)
    return match.end() if match else position


def _value(text: str, position: int) -> tuple[Span, int]:
    char = text[position]
    if char == '"':
        _, end = scanstring(text, position + 1)
        return Span(position, end), end
    if char == "{":
        return _object(text, position)
    if char == "[":
        return _array(text, position)
    for literal in _LITERALS:
        if text.startswith(literal, position):
            return Span(position, position + len(literal)), position + len(literal)
    match = _NUMBER.match(text, position)
    if match is None:
        raise SpanError(f"unexpected {char!r} at offset {position}")
    return Span(position, match.end()), match.end()


def _object(text: str, start: int) -> tuple[Span, int]:
    span = Span(start, start)
    position = _skip(text, start + 1)
    if text[position] == "}":
        span.end = position + 1
        return span, span.end
    while True:
        if text[position] != '"':
            raise SpanError(f"expected a key at offset {position}")
        key, position = scanstring(text, position + 1)
        position = _skip(text, position)
        if text[position] != ":":
            raise SpanError(f"expected ':' at offset {position}")
        value, position = _value(text, _skip(text, position + 1))
        span.members[key] = value
        position = _skip(text, position)
        if text[position] == "}":
            span.end = position + 1
            return span, span.end
        if text[position] != ",":
            raise SpanError(f"expected ',' or '}}' at offset {position}")
        position = _skip(text, position + 1)


def _array(text: str, start: int) -> tuple[Span, int]:
    span = Span(start, start)
    position = _skip(text, start + 1)
    if text[position] == "]":
        span.end = position + 1
        return span, span.end
    while True:
        item, position = _value(text, position)
        span.items.append(item)
        position = _skip(text, position)
        if text[position] == "]":
            span.end = position + 1
            return span, span.end
        if text[position] != ",":
            raise SpanError(f"expected ',' or ']' at offset {position}")
        position = _skip(text, position + 1)


def raw_offset(token: str, index: int) -> int:
    """The offset in the JSON string literal ``token`` (quotes included) at which its decoded
    character number ``index`` begins (escapes take more than one raw character)."""
    position, decoded = 1, 0
    while decoded < index and position < len(token) - 1:
        if token[position] == "\\":
            if token[position + 1] == "u":
                position += 12 if _surrogate_pair(token, position) else 6
            else:
                position += 2
        else:
            position += 1
        decoded += 1
    return position


def _surrogate_pair(token: str, position: int) -> bool:
    """Whether ``\\uD83D\\uDE00``-style escapes at ``position`` decode to one character."""
    try:
        high = int(token[position + 2: position + 6], 16)
        low = int(token[position + 8: position + 12], 16) if token.startswith(
            "\\u", position + 6) else 0
    except ValueError:
        return False
    return 0xD800 <= high <= 0xDBFF and 0xDC00 <= low <= 0xDFFF
