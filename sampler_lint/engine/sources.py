"""Where the engine reads a file's bytes: from disk, or, while :func:`overlay` is active, from
contents given in memory (the files of a git revision, for ``--since``: never a checkout)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

_OVERLAY: Mapping[str, bytes] | None = None


def read_source(path: Path) -> bytes:
    if _OVERLAY is None:
        return path.read_bytes()
    data = _OVERLAY.get(os.path.abspath(path))
    if data is None:
        raise FileNotFoundError(2, "No such file or directory", str(path))
    return data


def source_size(path: Path) -> int:
    try:
        return len(read_source(path)) if _OVERLAY is not None else path.stat().st_size
    except OSError:
        return 0


@contextlib.contextmanager
def overlay(contents: Mapping[str, bytes]) -> Iterator[None]:
    """Read every source from ``contents`` (absolute path -> bytes) meanwhile. Worker processes
    forked meanwhile inherit it."""
    global _OVERLAY
    previous, _OVERLAY = _OVERLAY, contents
    try:
        yield
    finally:
        _OVERLAY = previous


def in_overlay() -> bool:
    return _OVERLAY is not None
