"""Shapes a file's text must have for a pattern to be possible, where the text pre-filter's plain
tokens say too little (``Rule.may_match_text``).

Each answers ``True`` for every text whose ``ast`` the rule's syntax filter could keep, so it never
hides a finding; it runs only on files whose tokens already pass, and it spares their ``ast``
parse when it answers ``False``. Lightning: the survey parsed 199 files, 105 of them only for the
``//`` of a URL, a ``Random`` inside ``RandomSampler``, or a ``DataLoader`` whose arguments
could not conflict. Each shape is a plain scan (``str.find``): a regular expression with a
look-behind or ``\b`` costs more than the parse it spares on a large file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


class TokenSearch:
    """Which tokens one text holds, each searched for once: the rules' text pre-filters and the
    fact collectors' share many (``Sampler``, ``DataLoader``, ``set_epoch``), and a token a
    text lacks costs a scan of all of it. A text that lacks a token lacks every token that
    contains it (no ``sampler``, no ``batch_sampler``; no ``epoch``, no ``set_epoch``): known
    without a scan (diffusers: 45 tokens asked a file, 30% fewer bytes scanned)."""

    __slots__ = ("_found", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._found: dict[str, bool] = {}

    def holds(self, token: str) -> bool:
        return self.any((token,))

    def any(self, tokens: Iterable[str]) -> bool:
        # The pre-filters ask 70 times a file, most answers remembered.
        found, text = self._found, self.text
        for token in tokens:
            hit = found.get(token)
            if hit is None:
                hit = found[token] = _lacks_no_part(found, token) and token in text
            if hit:
                return True
        return False


# Every token asked so far (one fixed set in a run: the rules' and collectors' pre-filters), and
# for each the shorter ones inside it, worked out again when a new token is first asked.
_TOKENS: set[str] = set()
_PARTS: dict[str, tuple[str, ...]] = {}


def _lacks_no_part(found: dict[str, bool], token: str) -> bool:
    """Whether no token inside ``token`` is known to be missing from the text (a ``False`` in
    ``found``); when one is, so is ``token``."""
    parts = _PARTS.get(token)
    if parts is None:
        if token not in _TOKENS:
            _TOKENS.add(token)
            _PARTS.clear()  # a new token may lie inside those already listed
        parts = _PARTS[token] = tuple(
            other for other in _TOKENS if other != token and other in token
        )
    return False not in map(found.get, parts)  # answers are True, False or None (not asked)


def may_floor_divide(text: str) -> bool:
    """Whether ``text`` may hold a floor division (``a // b`` or ``a //= b``). A ``//`` right
    after a ``:`` or a ``/`` would start an expression, which ``//`` cannot: so ``://`` and
    ``:///`` (every URL in a comment or string) are never one; any other ``//`` may be."""
    at = text.find("//")
    while at >= 0:
        if at == 0 or text[at - 1] not in ":/":
            return True
        at = text.find("//", at + 1)
    return False


def names_a_word(text: str, words: Iterable[str]) -> bool:
    """Whether one of ``words`` stands in ``text`` as a whole word, as an identifier spelling it
    must (``Random`` in ``random.Random(0)``, not in ``RandomSampler``)."""
    for word in words:
        at = text.find(word)
        while at >= 0:
            end = at + len(word)
            if not _is_name_char(text, at - 1) and not _is_name_char(text, end):
                return True
            at = text.find(word, at + 1)
    return False


def _is_name_char(text: str, at: int) -> bool:
    return 0 <= at < len(text) and (text[at].isalnum() or text[at] == "_")


# What may stand between `import` or `from` and a module the statement names: spaces, line
# continuations, brackets, commas, dots and other names (`from . import (a as b,\n lightning)`),
# as a run read backwards over the reversed text: the regular expression crosses it at C speed
# (`\w` is exactly `str.isalnum()` or `_`) where a loop over its characters took twice as long
# (license headers are long runs of such characters; Lightning's files 0.064 s -> 0.029 s).
_IMPORT_RUN_BACKWARDS = re.compile(r"[ \t\r\n\f\\(),.\w]*")
_IMPORT_KEYWORD = re.compile(r"\b(?:import|from)\b")
# How far back from a word an import keyword is looked for before giving up (answering yes).
_IMPORT_SCAN_LIMIT = 4_000


def may_import(text: str, words: Iterable[str]) -> bool:
    """Whether one of ``words`` may stand in an import statement, as part of a module it names
    (``import pytorch_lightning as pl``, ``from torch import distributed``): some occurrence
    has ``import`` or ``from`` before it with only names, spaces, brackets, commas, dots and
    comments between. A word only in strings or code (``'lightning_rod'``, ``x.distributed =``)
    is not."""
    backwards: str | None = None
    for word in words:
        at = text.find(word)
        while at >= 0:
            if backwards is None:
                backwards = text[::-1]
            if _keyword_before(text, backwards, at):
                return True
            at = text.find(word, at + 1)
    return False


def _keyword_before(text: str, backwards: str, at: int) -> bool:
    """Whether ``import`` or ``from`` comes before ``at`` across what an import may hold
    (``backwards``: ``text`` reversed, where index ``len(text) - i`` holds ``text[i - 1]``)."""
    size = len(text)
    start, limit = at, max(0, at - _IMPORT_SCAN_LIMIT)
    while True:
        if start > limit:
            run = _IMPORT_RUN_BACKWARDS.match(backwards, size - start, size - limit)
            start = size - run.end() if run else start
        if start <= limit:
            if start > 0:
                return True  # too far to tell
            break
        # Another character: the statement ends here, unless it sits in a comment.
        comment = text.find("#", text.rfind("\n", 0, start) + 1, start)
        if comment < 0:
            break
        start = comment
    return _IMPORT_KEYWORD.search(text, start, at) is not None


# A comment, up to the end of its line (`\n`, `\r\n` or an old Mac `\r`) and never shorter:
# the lookahead leaves each `#` one way to be read. A comment that could end anywhere lets a
# pattern repeating "a blank or a comment" cut a line of `#`s in exponentially many ways
# before failing (dgl's banner `############# DistDataLoader #############` held the survey
# for good).
COMMENT = r"#[^\r\n]*(?![^\r\n])"
#: A call of a name ending `DataLoader` (``loader_facts.is_loader_constructor``), up to its `(`:
#: blanks, line continuations, comments or closing brackets (`(DataLoader)(...)`) between.
LOADER_CALL = re.compile(rf"DataLoader(?:[\s)\\]|{COMMENT})*\(")
# Between tokens of one expression: spaces, line continuations, comments, and opening brackets
# (a constant may be written `(True)`).
_GAP = rf"(?:[\s(\\]|{COMMENT})*"


def is_literal(argument: str, value: str) -> bool:
    """Whether the text of one argument is ``value`` alone, brackets, spaces and comments aside."""
    return re.fullmatch(rf"{_GAP}{re.escape(value)}(?:[\s)\\]|{COMMENT})*", argument) is not None


def keyword_is(arguments: str, name: str, value: str) -> bool:
    """Whether ``arguments`` (a call's, as text) may pass ``name=value``."""
    pattern = rf"\b{re.escape(name)}{_GAP}={_GAP}{re.escape(value)}\b"
    return re.search(pattern, arguments) is not None


@dataclass(frozen=True)
class CallText:
    """The arguments of one call, as text."""

    #: Each argument before the first keyword argument (none may follow it), as written.
    positional: tuple[str, ...]
    #: Everything between the call's brackets.
    arguments: str


# How far one call's arguments are read before giving up (and answering that it may match).
_CALL_SCAN_LIMIT = 20_000


def calls_in(text: str, callee: re.Pattern[str]) -> Iterator[CallText | None]:
    """Each call that ``callee`` finds up to its opening bracket (in code, strings or comments
    alike), with its arguments; ``None`` for a call it cannot read for sure: an f-string, which
    may nest its own quotes, a string or call that does not close in time."""
    for found in callee.finditer(text):
        yield _call_text(text, found.end())


_OPENING, _CLOSING, _QUOTES = "([{", ")]}", "'\""


def _call_text(text: str, start: int) -> CallText | None:
    """The arguments of the call whose ``(`` ends just before ``start``."""
    depth, at, end = 0, start, min(len(text), start + _CALL_SCAN_LIMIT)
    positional: list[str] = []
    argument: int | None = start  # where the current argument starts (None: keywords began)
    while at < end:
        char = text[at]
        if char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            if depth == 0:
                if argument is not None and text[argument:at].strip():
                    positional.append(text[argument:at])
                return CallText(tuple(positional), text[start:at])
            depth -= 1
        elif char == "," and depth == 0 and argument is not None:
            positional.append(text[argument:at])
            argument = at + 1
        elif char == "=" and depth == 0 and argument is not None and _is_keyword(
            text, argument, at
        ):
            argument = None
        elif char == "#":
            newline = text.find("\n", at)
            at = end if newline < 0 else newline
            continue
        elif char in _QUOTES:
            if _prefix(text, at) & {"f", "t"}:
                return None  # an f-string (or t-string) may nest its own quotes
            closing = _string_end(text, at)
            if closing < 0:
                return None
            at = closing
            continue
        at += 1
    return None  # the call runs past what is read


def _is_keyword(text: str, argument: int, equals: int) -> bool:
    """Whether the ``=`` at ``equals`` binds a keyword argument: a lone name before it since
    the argument's start (not ``==``, ``<=``, ``:=``, a lambda's default, a comment between)."""
    return text[equals + 1:equals + 2] != "=" and text[argument:equals].strip().isidentifier()


def _prefix(text: str, at: int) -> set[str]:
    """The letters just before the quote at ``at`` (a string's prefix: ``rb``, ``f``, ``Rt``)."""
    begin = at
    while begin > 0 and text[begin - 1].isalpha():
        begin -= 1
    return set(text[begin:at].lower())


def _string_end(text: str, at: int) -> int:
    """The index just past the string literal opening at ``at`` (``-1``: it does not close)."""
    quote = text[at] * 3 if text.startswith(text[at] * 3, at) else text[at]
    at += len(quote)
    while True:
        closing = text.find(quote, at)
        if closing < 0:
            return -1
        backslashes = 0
        while text[closing - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return closing + len(quote)
        at = closing + 1
