"""Paths for CI reports that mean the same file whatever folder the linter ran from: relative to
the root of the git repository holding the file (what GitHub, GitLab and reviewdog resolve
against), else absolute."""

from __future__ import annotations

import functools
import os
from pathlib import Path


@functools.lru_cache(maxsize=1024)
def git_root(directory: Path) -> Path | None:
    """The closest folder at or above ``directory`` holding ``.git`` (a folder, or a file for a
    worktree or submodule)."""
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def repository_path(path: str) -> tuple[Path | None, str]:
    """``(root, path relative to it)`` with ``/`` separators for a file in a git repository,
    else ``(None, absolute path)``. ``..`` are folded lexically (symbolic links are kept, as the
    user named them)."""
    if path == "-":
        return None, path  # standard input without --stdin-filename: no file to point at
    absolute = Path(os.path.abspath(path))
    root = git_root(absolute.parent)
    if root is not None:
        return root, absolute.relative_to(root).as_posix()
    return None, absolute.as_posix()


def ci_path(path: str) -> str:
    return repository_path(path)[1]
