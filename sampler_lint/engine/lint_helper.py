"""The lint helper: for a run that lints a few files, a process forked as soon as the run knows
that it will lint one (a file some rule keeps whatever the index says), which imports libcst
while this one goes on walking, surveying and questioning the project, then lints the files the
run keeps, asking this process's index each question a rule asks.

Why: in such a run (pre-commit on a file or two, a warm run after an edit) libcst's import came
after every other stage, alone on one core: about 0.15 s of CPU, nearly all of it libcst making
the dataclasses of its nodes, a quarter of the run. On a second core it now happens meanwhile.
It pays only where that core is free: forked later (once the index stage has kept a file) it
would have nothing left to overlap, so a file only the index stage keeps is linted here. A check
of a few named files forks it earlier still, as the process starts (:func:`start_early`), so
that the import overlaps the run's own imports and set-up too.

Only questions and answers cross the pipe, never the index: the index answers here, so the
digests of what a lint read are recorded here, as when the file is linted here. Whatever goes
wrong on the way (the helper is gone, an answer cannot be pickled, the index raises), the file
is linted here instead, from the start: the helper can make a run faster, never change what it
reports. The messages are pickled between this process and its own fork; nothing read from the
linted repository is ever unpickled from disk.
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from sampler_lint.engine import replay, writer

if TYPE_CHECKING:
    # Only for the types: this module is imported as the process starts (:func:`start_early`),
    # before anything a fork would then have to wait for.
    from sampler_lint.analysis.index import ProjectIndex
    from sampler_lint.engine.findings import FileResult
    from sampler_lint.engine.linter import LintOptions

#: How a file is linted (``runner.check_file``: path, options, write, index, rules to run).
Lint = Callable[
    [Path, "LintOptions", bool, "ProjectIndex", "tuple[str, ...] | None"], "FileResult"
]

# The index methods a lint may call; a question names one of these and its arguments.
_QUESTIONS = frozenset({"get", "get_for", "files_on_disk"})


def worth_starting(jobs: int) -> bool:
    """Whether a helper can take libcst's import off the run's path: a second core to run it
    on (``--jobs 1`` asks for one process), a fork to start it cheaply with what this process
    has imported, libcst not imported yet (a process that has it lints as fast itself), and no
    other thread (a fork copies only the calling one, and a lock another held stays held)."""
    return (
        jobs != 1 and hasattr(os, "fork") and sys.platform != "darwin"
        and "libcst" not in sys.modules and threading.active_count() == 1 and _cores() >= 2
    )


# Python's collector of reference cycles runs after every 700 net allocations by default: a run
# parses hundreds of files into millions of syntax-tree nodes, which it scanned again and again
# for cycles that are few (diffusers in one process: 1.7 s of 6.2 s). Every 100,000 it costs a
# fifth of that, for a few MiB more at the peak. (Here because a helper forked as the process
# starts sets them too, before the command line has been imported.)
GC_THRESHOLDS = (100_000, 10, 10)

#: The most files named one by one that a run lints with a helper (more go to a pool).
FEW_FILES = 500

# The helper :func:`start_early` forked, until a run takes it (:func:`take_early`).
_EARLY: LintHelper | None = None


def start_early(argv: list[str], engine: Callable[[], Lint]) -> None:
    """Fork a helper now, as the process starts, when ``sampler-lint ARGV`` looks like a check
    of a few files (pre-commit, an editor): its import of libcst then overlaps the run's own
    imports and set-up too, not only the survey (a one-file check of a 1,000-line training
    script: about 0.1 s of its 0.45 s). Read before the command line is parsed, the arguments
    are only a guess: the run takes the helper only if it would have started one itself
    (``runner._may_lint_few``) and otherwise stops it, so a wrong guess costs the other core
    some work, never the run a result. It forks only when the pre-filters keep a named file
    for some rule (``survey.may_be_linted``: the default vocabulary, no settings, no index): a
    check of files no rule looks at, most of a pre-commit run's, forks nothing, as the run
    itself would not, and a file only a configured name brings in gets the helper the run
    forks later. The ``ast`` parse that takes is the one the run's survey and the helper's
    positions use (``syntax_summary.parsed`` remembers it)."""
    global _EARLY
    if _EARLY is None and worth_starting(_jobs(argv)) and _may_be_linted(_named_files(argv)):
        helper = LintHelper(engine=engine)
        helper.want()
        if helper._pid:
            _EARLY = helper


def take_early() -> LintHelper | None:
    """The helper :func:`start_early` forked, if any, now the caller's to use and close."""
    global _EARLY
    helper, _EARLY = _EARLY, None
    return helper


def close_early() -> None:
    """Stop a helper :func:`start_early` forked that no run took."""
    global _EARLY
    helper, _EARLY = _EARLY, None
    if helper is not None:
        helper.close()


# Options of ``check`` after which nothing is linted, or linted from standard input.
_NOT_LINTING = frozenset({
    "-", "--stdin-filename", "--show-files", "--show-settings", "--help", "-h", "--version",
})


def _named_files(argv: list[str]) -> list[str]:
    """The files ``argv`` names if it is a ``check`` of at most :data:`FEW_FILES` files named
    one by one, else none: an argument that is not a file must be an option's value (it
    follows an option without ``=``), else it is a folder, or missing, and the run is not a
    few files'."""
    if argv[:1] != ["check"]:
        return []
    files: list[str] = []
    after = ""  # the argument before this one
    for arg in argv[1:]:
        if arg.split("=", 1)[0] in _NOT_LINTING:
            return []
        if not arg.startswith("-"):
            if os.path.isfile(arg):
                files.append(arg)
            elif not (after.startswith("-") and "=" not in after):
                return []
        after = arg
    return files if len(files) <= FEW_FILES else []


def _may_be_linted(files: list[str]) -> bool:
    """Whether the pre-filters keep one of ``files`` for some rule (``survey.may_be_linted``;
    a notebook always: its text is its cells'). Imports the rules, which the run imports next
    anyway."""
    if not files:
        return False
    from sampler_lint.engine.sources import read_source
    from sampler_lint.engine.survey import may_be_linted

    for name in files:
        if name.endswith(".ipynb"):
            return True
        try:
            if may_be_linted(read_source(Path(name))):
                return True
        except OSError:
            return True  # the run says why it cannot read it, perhaps after linting others
    return False


def _jobs(argv: list[str]) -> int:
    """The ``--jobs`` (``-j``) asked for, 0 when not (or not a number)."""
    value = ""
    for before, arg in zip(["", *argv], argv, strict=False):
        if before in ("--jobs", "-j"):
            value = arg
        elif arg.startswith("--jobs="):
            value = arg.split("=", 1)[1]
        elif arg.startswith("-j") and arg[2:].isdigit():
            value = arg[2:]
    return int(value) if value.isdigit() else 0


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use (a CI container)
    except AttributeError:
        return os.cpu_count() or 1


class LintHelper:
    """The run's end of the helper. Made as the run starts, it forks when the run first learns
    that a file will be linted (:meth:`want`): a run that lints nothing (a warm run after a
    change no rule looks at) forks nothing. :meth:`lint` lints a file there, or says ``None``,
    and the caller lints it itself."""

    def __init__(self, lint: Lint | None = None, engine: Callable[[], Lint] | None = None) -> None:
        # ``engine``, for a helper forked before the run imported its engine: called there,
        # once libcst is imported, it imports the engine and gives the lint.
        self._lint, self._engine = lint, engine
        self._written = _WriteCount()
        self._pid = 0  # 0: not forked, or stopped
        self._tasks: IO[bytes] | None = None
        self._replies: IO[bytes] | None = None
        self._closed = False
        self._busy = False  # a task handed over and not answered (an interruption came)
        self._writing = False  # and it may write a fix
        self.linted = 0  # files it linted, for ``-v``

    def want(self) -> None:
        """A file will be linted: fork the helper now, if it is not running yet, so that its
        import of libcst overlaps whatever the run does before linting. Not once another
        thread runs (a progress bar's, a pool's feeder): a lock it held would stay held in the
        helper."""
        if self._pid or self._closed or threading.active_count() != 1:
            return
        self._closed = True  # one attempt: a system that refuses a fork refuses it again
        task_read, task_write = os.pipe()
        reply_read, reply_write = os.pipe()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()  # what is buffered now must not be written by both processes
        try:
            pid = os.fork()
        except OSError:
            for end in (task_read, task_write, reply_read, reply_write):
                os.close(end)
            return
        if pid == 0:  # the helper: it never returns into the run's code
            code = 0
            try:
                os.close(task_write)
                os.close(reply_read)
                _serve(
                    os.fdopen(task_read, "rb"), os.fdopen(reply_write, "wb"), self._lint,
                    self._engine, self._written,
                )
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(task_read)
        os.close(reply_write)
        self._pid, self._closed, self._writing = pid, False, False
        self._tasks, self._replies = os.fdopen(task_write, "wb"), os.fdopen(reply_read, "rb")

    def lint(
        self, path: Path, options: LintOptions, write: bool, index: ProjectIndex,
        only: tuple[str, ...] | None,
    ) -> FileResult | None:
        """The result of linting ``path`` in the helper, ``index`` answering its questions, or
        ``None`` when it could not: then the caller lints the file itself."""
        if not self._pid or self._tasks is None or self._replies is None:
            return None
        try:
            self._busy, self._writing = True, write
            _send(self._tasks, (path, options, write, only))
            while True:
                kind, value = pickle.load(self._replies)
                if kind == "done":
                    self._busy = False
                    self.linted += 1
                    result, imported = value
                    replay.note_code(imported)  # a recorded run depends on libcst's code too
                    return result  # type: ignore[no-any-return]
                if kind != "ask" or value[0] not in _QUESTIONS:
                    break  # given up there: linted here
                try:
                    reply = pickle.dumps(
                        ("answer", getattr(index, value[0])(*value[1:])), pickle.HIGHEST_PROTOCOL
                    )
                except Exception:
                    # The index raised (it raises the same here, where the lint reports it) or
                    # its answer does not pickle: the helper gives the file up.
                    reply = pickle.dumps(("unanswered", None))
                self._tasks.write(reply)
                self._tasks.flush()
        except (OSError, EOFError, pickle.PickleError, AttributeError, TypeError, ValueError):
            pass  # the helper is gone, or said something this end cannot read
        self._busy = False
        self.close()
        return None

    def close(self) -> None:
        """Stop the helper. An idle one (or one still importing) is killed; one with a file in
        hand (the run was interrupted) is interrupted too, and a fix it is writing is written
        whole first (``writer.write_atomic`` defers the interruption)."""
        self._closed = True  # and never forked again
        if not self._pid:
            return  # not running (a stopped one's process id may be another process's by now)
        for stream in (self._tasks, self._replies):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._pid, signal.SIGINT if self._busy and self._writing else signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)
        self._pid = 0
        # Counted there, whole (an interrupted write is finished first): the run's count now.
        writer.add_written(self._written.value)
        self._written.value = 0


class _WriteCount:
    """How many files the helper wrote: eight bytes of memory shared with the fork (an
    anonymous ``mmap``), written there, read here once it has stopped. Not the run's own count
    (a ``multiprocessing`` value): a helper forked as the process starts predates it."""

    def __init__(self) -> None:
        self._memory = mmap.mmap(-1, 8)  # anonymous, and shared with a fork (MAP_SHARED)

    @property
    def value(self) -> int:
        return int.from_bytes(self._memory[:8], "little")

    @value.setter
    def value(self, count: int) -> None:
        self._memory[:8] = count.to_bytes(8, "little")

    def get_lock(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()  # one process writes it


class _GiveUp(BaseException):
    """The run's process did not answer a question: the file is linted there instead. Not an
    ``Exception``, which the lint would report as an internal error."""


def _serve(
    tasks: IO[bytes], replies: IO[bytes], lint: Lint | None, engine: Callable[[], Lint] | None,
    written: _WriteCount,
) -> None:
    """The helper's life: import libcst (and, forked as the process started, the engine:
    ``engine`` gives the lint then), then lint each file handed over until the run ends."""
    # Ctrl-C (or the run's SIGINT, :meth:`LintHelper.close`) stops a lint at once, a write only
    # once it is whole; nothing it prints reaches the run's output, which closes with the run.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    parent = os.getppid()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    # Everything this process inherited stays out of its cycle collector, which would otherwise
    # write to each object's header, and so copy every page of the run's memory that holds one.
    gc.freeze()
    reported = set(sys.modules)  # the run's process has these: told of the others, by file
    import libcst  # noqa: F401  (the reason this process exists)

    if lint is None:  # forked as the process started: the engine is imported here meanwhile
        assert engine is not None
        gc.set_threshold(*GC_THRESHOLDS)
        lint = engine()
    from sampler_lint.engine.remote_index import RemoteIndex

    writer.count_writes_in(written)  # the run adds it to its own count (LintHelper.close)
    _interrupted_with(parent)

    def ask(question: tuple[Any, ...]) -> Any:
        try:
            _send(replies, ("ask", question))
            kind, answer = pickle.load(tasks)
        except (OSError, EOFError, pickle.PickleError) as error:
            raise _GiveUp from error
        if kind != "answer":
            raise _GiveUp
        return answer

    while True:
        try:
            path, options, write, only = pickle.load(tasks)
        except EOFError:
            return  # the run is over
        try:
            result = lint(path, options, write, RemoteIndex(ask), only)
            imported = [
                location for name, module in list(sys.modules.items())
                if name not in reported
                and isinstance(location := getattr(module, "__file__", None), str)
            ]
            payload = pickle.dumps(("done", (result, imported)), pickle.HIGHEST_PROTOCOL)
            reported.update(sys.modules)
        except (_GiveUp, Exception):
            payload = pickle.dumps(("given up", None))
        replies.write(payload)
        replies.flush()


def _interrupted_with(parent: int) -> None:
    """Have this process interrupted (SIGINT) when ``parent`` ends without closing it (killed):
    a helper must not go on linting, and writing fixes, for a run that is gone (Linux only;
    elsewhere it notices at its next message, once the file in hand is done)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        raise KeyboardInterrupt  # ended before the line above


def _send(stream: IO[bytes], message: object) -> None:
    stream.write(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))
    stream.flush()
