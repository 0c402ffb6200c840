"""The persistent cache: lint results per file, and the project index per file.

It lives in ``.sampler_lint_cache/`` at the project root (``--cache-dir`` elsewhere, ``--no-cache``
off), holding a ``.gitignore`` so that git never sees it. An entry is keyed by the file's content
hash, the tool version, the effective configuration of that file and, for files linted by rules
that read the project index, a digest of the index: a second run over an unchanged repository reads
and hashes every file but parses none.

Entries are only ever read back from a file this version wrote: anything else (an older version's
file, a truncated write, someone else's data) fails the header check or the load and is ignored,
never trusted. Writes are atomic renames, so concurrent runs can only lose entries, not corrupt
them.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from sampler_lint import __version__
from sampler_lint.findings import FileResult

DIRECTORY = ".sampler_lint_cache"
_MAGIC = b"sampler-lint-cache\n"
_HEADER = _MAGIC + __version__.encode() + b"\n"
# A cache that grows without bound slows every run: keep this many entries per kind.
MAX_ENTRIES = 200_000


def digest(*parts: bytes | str) -> str:
    hasher = hashlib.blake2b(digest_size=20)
    for part in parts:
        hasher.update(part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part)
        hasher.update(b"\0")
    return hasher.hexdigest()


class Cache:
    """A mapping from keys to picklable values, loaded once and saved once per run."""

    def __init__(self, directory: Path, kind: str) -> None:
        self.path = directory / f"{kind}.pickle"
        self.directory = directory
        self.old: dict[str, Any] = self._load()
        self.new: dict[str, Any] = {}
        self.hits = 0

    def _load(self) -> dict[str, Any]:
        try:
            data = self.path.read_bytes()
        except OSError:
            return {}
        if not data.startswith(_HEADER):
            return {}
        try:
            value = pickle.loads(data[len(_HEADER):])
        except Exception:  # a truncated or foreign file: ignore it
            return {}
        return value if isinstance(value, dict) else {}

    def get(self, key: str) -> Any:
        value = self.old.get(key)
        if value is not None:
            self.hits += 1
            self.new[key] = value
        return value

    def put(self, key: str, value: Any) -> None:
        self.new[key] = value

    def save(self) -> None:
        """Write the entries used or made by this run (plus older ones, up to the cap)."""
        merged = dict(self.old)
        merged.update(self.new)
        if len(merged) > MAX_ENTRIES:
            merged = dict(self.new)
        if merged == self.old:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Created by sampler-lint.\n*\n")
            descriptor, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(_HEADER)
                pickle.dump(merged, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self.path)
        except OSError:
            pass  # a read-only checkout simply runs uncached


def result_is_cacheable(result: FileResult) -> bool:
    """Results that depend on the moment (I/O errors, internal errors) are never stored."""
    return not result.errors and not result.internal_error and not result.wrote


def cached_result(value: Any) -> FileResult | None:
    return value if isinstance(value, FileResult) else None
