"""Ignore and exclude patterns that are a plain name or a name's ending, matched by comparing
names instead of by regular expressions.

Most lines of a ``.gitignore`` (four in five across 146 public repositories) and every default
exclude are a name (``build``, ``build/``, ``.env``) or a name's ending (``*.pyc``,
``*.egg-info/``). pathspec turns each pattern into a regular expression and Python compiles those
in Python code: 6 ms for a 190-line ``.gitignore`` and 5 ms for the default excludes, in every
run, a tenth of what a one-file run may cost beyond the tool's start-up. Such patterns answer
here as pathspec's expressions do (``tests/test_discovery.py`` compares them), the others are
left to those expressions.
"""

from __future__ import annotations

import re

# An optional ``*``, a name of letters, digits, ``_``, ``.`` and ``-``, an optional ``/``: no
# other wildcard, no anchoring slash, no escape, no negation, no trailing blank.
_PLAIN = re.compile(r"(\*?)([A-Za-z0-9_.\-]+)(/?)")


class PlainPatterns:
    """Plain patterns, each kept as what a path's part is compared with.

    pathspec's expression of ``name`` is ``^(?:.+/)?name(?:/|$)``: some part of the path is the
    name (a file or a folder; what is under a folder is under the name too). ``name/`` needs the
    part to be followed by ``/`` (a folder), and ``*`` before the name lets the part start with
    anything (``[^/]*``)."""

    __slots__ = ("_endings", "_folder_endings", "_folder_names", "_names")

    def __init__(self) -> None:
        self._names: set[str] = set()
        self._folder_names: set[str] = set()
        self._endings: tuple[str, ...] = ()
        self._folder_endings: tuple[str, ...] = ()

    def add(self, pattern: str) -> bool:
        """Take ``pattern`` when it is plain (``True``); any other is left to the caller."""
        found = _PLAIN.fullmatch(pattern)
        if found is None or not found[2].strip("."):
            return False  # `.` and `..` are left to pathspec, whatever it makes of them
        star, name, slash = found.groups()
        if star and slash:
            self._folder_endings += (name,)
        elif star:
            self._endings += (name,)
        elif slash:
            self._folder_names.add(name)
        else:
            self._names.add(name)
        return True

    def __bool__(self) -> bool:
        return bool(self._names or self._folder_names or self._endings or self._folder_endings)

    def matches(self, path: str) -> bool:
        """Whether the expression of any pattern matches (``re.match``) ``path``: a relative,
        ``/``-separated path, a folder's ending in ``/``."""
        parts = path.split("/")
        last = len(parts) - 1
        names, folder_names = self._names, self._folder_names
        endings, folder_endings = self._endings, self._folder_endings
        for index, part in enumerate(parts):
            # ``(?:.+/)?``: a part after the first needs something before its ``/`` (only a
            # path that starts with ``/`` has nothing there).
            if index == 1 and not parts[0]:
                continue
            if part in names or (endings and part.endswith(endings)):
                return True
            if index < last and (
                part in folder_names or (folder_endings and part.endswith(folder_endings))
            ):
                return True
        return False
