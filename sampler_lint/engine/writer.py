"""Writing fixed files without ever losing a byte.

The new content goes to a temporary file in the same directory, takes the original's mode, and
replaces the original with an atomic rename, only if the file on disk still holds exactly what was
read. Encoding, BOM and line endings are kept by construction: libcst gives back the bytes it read,
changed only where a fix changed them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class WriteError(Exception):
    pass


# How many files this run rewrote, across its worker processes (a shared ``multiprocessing``
# value the runner sets up when fixing): an interrupted ``--fix`` says how many are done.
_shared_count: Any = None
_local_count = 0


def count_writes_in(counter: Any) -> None:
    """Count the files written from now on in ``counter`` (a ``multiprocessing.Value``)."""
    global _shared_count
    _shared_count = counter


def shared_counter() -> Any:
    return _shared_count


def files_written() -> int:
    return int(_shared_count.value) if _shared_count is not None else _local_count


def add_written(count: int) -> None:
    """``count`` files written by a process that counted them apart (the lint helper)."""
    global _local_count
    if not count:
        return
    _local_count += count
    if _shared_count is not None:
        with _shared_count.get_lock():
            _shared_count.value += count


def _written() -> None:
    global _local_count
    _local_count += 1
    if _shared_count is not None:
        with _shared_count.get_lock():
            _shared_count.value += 1


def write_atomic(path: Path, expected: bytes, new: bytes) -> None:
    """Replace ``path``'s content ``expected`` by ``new``; raise :class:`WriteError` otherwise."""
    try:
        current = path.read_bytes()
    except OSError as error:
        raise WriteError(f"{path}: cannot re-read before writing: {error}") from None
    if current != expected:
        raise WriteError(f"{path}: changed on disk since it was read; not overwritten")
    target = path.resolve()  # write through a symlink to the file it names
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError as error:
        raise WriteError(f"{path}: cannot write: {error}") from None
    # A file this user may not write stays as it is: the atomic rename below needs only the
    # folder's permission, and would replace it anyway. (Root may write anything, as with any
    # other editor.)
    if not _may_write(target):
        raise WriteError(f"{path}: read-only; not rewritten (its findings are kept)")
    import tempfile  # here: a run that writes nothing never imports it

    try:
        descriptor, temporary = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".sampler-lint.tmp"
        )
    except PermissionError:
        # A writable file in a folder where no file may be created: no atomic rename, so the
        # file is rewritten in place.
        _write_in_place(path, target, expected, new)
        return
    except OSError as error:
        raise WriteError(f"{path}: cannot write: {error}") from None
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(new)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        with _no_interrupt():  # the file and the count of rewritten files move together
            os.replace(temporary, target)
            _written()
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise WriteError(f"{path}: cannot write: {error}") from None
        raise


def _may_write(path: Path) -> bool:
    return os.access(path, os.W_OK)


def _write_in_place(path: Path, target: Path, expected: bytes, new: bytes) -> None:
    """Rewrite ``target`` through its own file descriptor, after checking once more that it
    still holds ``expected``."""
    # Not atomic: Ctrl-C waits until the file is whole (POSIX; elsewhere the window is short).
    try:
        with _no_interrupt(), open(target, "r+b") as handle:
            if handle.read() != expected:
                raise WriteError(f"{path}: changed on disk since it was read; not overwritten")
            handle.seek(0)
            handle.write(new)
            handle.truncate()
            handle.flush()
            os.fsync(handle.fileno())
            _written()
    except OSError as error:
        raise WriteError(f"{path}: cannot write: {error}") from None


@contextlib.contextmanager
def _no_interrupt() -> Iterator[None]:
    """SIGINT held off meanwhile (POSIX; elsewhere nothing is held off)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
