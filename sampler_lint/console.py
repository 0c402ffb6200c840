"""The ``sampler-lint`` console script (and ``python -m sampler_lint``). An unchanged ``check``
is replayed (:mod:`sampler_lint.engine.replay`) before the command line and the engine are
imported, which is most of a warm run; any other run is made, and recorded when it may be."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

from sampler_lint.engine import lint_helper, replay


def main() -> None:
    argv = sys.argv[1:]
    recording = None
    replaying = replay.may_replay(argv)
    if replaying:
        code = replay.replayed(argv)
        if code is not None:
            sys.exit(code)
    # Before the command line and the engine are imported, and before a recording starts (the
    # helper is no part of it: what it reads, the run reads too; what it imports, it names).
    lint_helper.start_early(argv, _engine)
    if replaying:
        recording = replay.start()
    from sampler_lint.cli import console_main

    try:
        console_main()
    except SystemExit as exit:
        if recording is not None:
            replay.finish(recording, argv, exit.code)
        raise
    finally:
        lint_helper.close_early()  # a run that ended before it took the helper
    if recording is not None:
        replay.finish(recording, argv, 0)


def _engine() -> lint_helper.Lint:
    """The lint a helper forked as the process starts runs (imported there, once it has
    libcst: the engine's import is about a third of what it has to do before the first file)."""
    from sampler_lint.engine.runner import check_file

    return check_file


def script() -> NoReturn:
    """The console script and ``python -m sampler_lint``: :func:`main`, ended by :func:`leave`
    (:func:`main` ends with ``SystemExit``, for the tests and programs that call it in their own
    process)."""
    try:
        main()
    except SystemExit as exit:
        leave(exit.code)
    leave(0)


def leave(code: object) -> NoReturn:
    """End the process with ``code`` (a ``SystemExit`` code) once its output is out, without
    Python's own exit: that frees every object one by one (each module, the syntax trees of the
    files linted) for memory the system takes back at once, about 5% of a one-file run. By now
    nothing is left to it: the worker pools are shut down, files closed, the cache written, the
    run recorded. (mypy ends the same way.)"""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # as Python prints a SystemExit that carries a message
        sys.stderr.write(f"{code}\n")
        status = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # `| head` closed it: click chose the status
            stream.flush()
    os._exit(status)
