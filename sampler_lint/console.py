"""The ``sampler-lint`` console script (and ``python -m sampler_lint``). An unchanged ``check``
is replayed (:mod:`sampler_lint.engine.replay`) before the command line and the engine are
imported, which is most of a warm run; any other run is made, and recorded when it may be."""

from __future__ import annotations

import sys

from sampler_lint.engine import replay


def main() -> None:
    argv = sys.argv[1:]
    recording = None
    if replay.may_replay(argv):
        code = replay.replayed(argv)
        if code is not None:
            sys.exit(code)
        recording = replay.start()
    from sampler_lint.cli import console_main

    try:
        console_main()
    except SystemExit as exit:
        if recording is not None:
            replay.finish(recording, argv, exit.code)
        raise
    if recording is not None:
        replay.finish(recording, argv, 0)
