"""Replaying an unchanged run: ``sampler-lint check`` run again, in the same place, with the same
arguments and environment, over files none of which changed, prints what it printed last time
and exits as it did, without importing the linter.

A warm run over a cache still imports the engine and walks the tree (about a quarter of a second
on a 600-file project, half of it imports); a replay stats what the last run read and is done in
a few hundredths. Only what can be proven unchanged is replayed:

- The recording names every input of the run, each kept with its ``stat`` (modification and
  change times in nanoseconds, size, inode, device): each file and folder this process read or
  listed (an audit hook sees ``open``, ``os.scandir``, ``os.listdir``), every file of those
  folders (worker processes read most of them, unseen by the hook), the working folder and the
  paths named, the tool's own code and every module imported, the folder it is installed in,
  and the paths :func:`note_input` adds (what a subprocess reads: git's configuration; an ignore
  file looked for and missing). In the folders above, where the run only looked for
  configuration, ``.git`` or a package's ``__init__.py``, the recording keeps whether each of
  those names is there. Any difference, or a path that appeared or went, and the run is made
  again.
- A run is recorded only when the cli says it may be (:func:`allow`: ``check`` with the cache on;
  no ``--add-noqa``, ``--write-baseline``, ``--output-file``, ``--since``, ``-v``, standard input
  or plugins; a ``--fix`` that rewrote a file is turned away after the run), when it exited 0
  or 1, started no subprocess but git's configuration query, drew no progress bar, and wrote
  its whole output through ``sys.stdout``/``sys.stderr`` (text, not cut short by a closed
  pipe). An input changed during the run (its change time is not clearly before the run
  started) is never recorded: "racily clean", as git calls it.
- The key names the working folder, the arguments, the environment (every variable but
  ``OLDPWD``), the interpreter and its flags, and whether each standard stream is a terminal
  and its size.
- Recordings live beside the cache key, outside any checkout, and carry the same keyed MAC as
  the cache (:mod:`sampler_lint.engine.cache`): a file this user's sampler-lint did not write is
  ignored. They are ``marshal`` data of plain values, never code.

Deciding a replay imports nothing of the package: the console script
(:mod:`sampler_lint.console`) asks this module first. Only a recording, made after a full run,
borrows the index's ``RealPaths``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import marshal
import os
import sys
import time
from typing import Any

KEY_ENVIRONMENT = "SAMPLER_LINT_CACHE_KEY"  # a path: where the secret lives (tests, shared CI)
_FORMAT = "sampler-lint replay 1"
MAC_SIZE = 32
# What is written holds plain values only; marshal.loads would accept code objects all the same,
# so only bytes that passed the MAC ever reach it.
_MARSHAL_VERSION = 4
_KEEP = 64  # recordings kept per user (the oldest go first) ...
_KEEP_BYTES = 64 * 1024 * 1024  # ... and at most this much of them
# Change times this close to the run's start may be those of a change made during it: Linux
# stamps files from a clock that may lag by a few milliseconds; a file system that keeps whole
# seconds (FAT: two) truncates further.
_FINE_SLACK_NS = 50_000_000
_COARSE_SLACK_NS = 2_000_000_000
# Options that write something besides the output, read standard input or git, or print timings:
# such a run is never recorded (the cli decides for good; this only spares the audit hook). A
# `--fix` run is recorded when it fixed nothing (what it rewrites changed during the run anyway).
_NEVER = (
    "--add-noqa", "--write-baseline", "--output-file", "-o", "--since", "--verbose", "-v",
    "--no-cache", "--stdin-filename", "--show-files", "--show-settings", "-", "--help", "-h",
)


def key_path() -> str:
    """Where this user's cache key lives (``$XDG_CACHE_HOME/sampler-lint/cache-key``)."""
    configured = os.environ.get(KEY_ENVIRONMENT)
    if configured and os.path.isabs(configured):  # relative, it could name a file in the checkout
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sampler-lint", "cache-key")


def mac(key: bytes, payload: bytes) -> bytes:
    """The keyed MAC of cache files and recordings."""
    return hashlib.blake2b(payload, key=key[:64], digest_size=MAC_SIZE).digest()


_KEYS: dict[str, bytes | None] = {}


def secret_key() -> bytes | None:
    """This user's key for the cache and the recordings, created on first use; ``None`` when it
    can be neither read nor made (a home directory nobody may write): the run is then uncached
    and unrecorded."""
    path = key_path()
    if path in _KEYS:
        return _KEYS[path]
    key = _read_key()
    if key is None and not os.path.exists(path):
        import secrets  # only the first run of a user makes the key

        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fresh = secrets.token_bytes(32)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(fresh)
            key = fresh
        except FileExistsError:  # another run made it meanwhile
            key = _read_key()
        except OSError:
            key = None
    _KEYS[path] = key
    return key


def _read_key() -> bytes | None:
    """The key as it is on disk; ``None`` when it cannot be read, or is too short to trust
    (truncated or tampered with)."""
    try:
        with open(key_path(), "rb") as handle:
            key = handle.read()
    except OSError:
        return None
    return key if len(key) >= 16 else None


# ------------------------------------------------------------------------------------------------
# The key of a run and the state of its inputs


def _stream_state(stream: Any) -> tuple[bool, tuple[int, int] | None]:
    try:
        if not stream.isatty():
            return False, None
        return True, tuple(os.get_terminal_size(stream.fileno()))  # type: ignore[return-value]
    except (AttributeError, OSError, ValueError):
        return False, None


def run_key(argv: list[str]) -> str:
    """What a recording is filed under: everything about the invocation that may change what it
    prints."""
    environment = sorted((k, v) for k, v in os.environ.items() if k != "OLDPWD")
    parts = (
        _FORMAT, os.getcwd(), argv, environment, sys.executable, sys.version, sys.flags,
        sys.argv[0],
        [_stream_state(stream) for stream in (sys.stdin, sys.stdout, sys.stderr)],
    )
    return hashlib.blake2b(repr(parts).encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()


def _state(path: str) -> tuple[int, ...] | None:
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return (found.st_mtime_ns, found.st_ctime_ns, found.st_size, found.st_ino, found.st_dev)


def _recording_path(key: str) -> str:
    return os.path.join(os.path.dirname(key_path()), "replays", key + ".marshal")


# ------------------------------------------------------------------------------------------------
# Replaying


def replayed(argv: list[str]) -> int | None:
    """Print what the recorded run of this invocation printed and return its exit code; ``None``
    when there is no recording, or any input changed (the run must be made)."""
    key = _read_key()
    if key is None:
        return None
    try:  # (the working folder may be gone: run_key asks for it)
        with open(_recording_path(run_key(argv)), "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    payload, tag = data[:-MAC_SIZE], data[-MAC_SIZE:]
    if len(data) <= MAC_SIZE or not hmac.compare_digest(mac(key, payload), tag):
        return None
    try:  # only bytes this user's sampler-lint wrote reach marshal (the MAC above)
        form, states, present, chunks, code = marshal.loads(payload)
        if form != _FORMAT:
            return None
        if any(_state(path) != state for path, state in states):
            return None
        if any(_presence(path) != kind for path, kind in present):
            return None
    except (EOFError, ValueError, TypeError):
        return None
    try:
        for where, text in chunks:
            stream = sys.stderr if where == "e" else sys.stdout
            stream.write(text)
            stream.flush()  # as click does after each message: the two streams stay in order
    except BrokenPipeError:  # `| head`: as the run itself ends then (click), quietly with 1
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return int(code)


# ------------------------------------------------------------------------------------------------
# Recording


class _Tee:
    """A standard stream that keeps what is written to it, in order with the other one's."""

    def __init__(self, stream: Any, where: str, recording: Recording) -> None:
        self._stream = stream
        self._where = where
        self._recording = recording

    def write(self, text: str) -> int:
        if isinstance(text, str):
            self._recording.chunks.append((self._where, text))
        elif text:
            self._recording.spoiled = True  # click probes a stream with b"": that writes nothing
        try:
            written: int = self._stream.write(text)
        except BaseException:
            if text:  # `| head` closed the pipe: the output is cut short
                self._recording.spoiled = True
            raise
        return written

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BaseException:
            self._recording.spoiled = True  # what was written may not all have gone out
            raise

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    @property
    def buffer(self) -> Any:
        # Bytes written past the text layer would not be kept.
        self._recording.spoiled = True
        return self._stream.buffer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class Recording:
    def __init__(self) -> None:
        self.started_ns = time.time_ns()
        self.read: set[str] = set()
        self.listed: set[str] = set()
        self.noted: set[str] = set()
        self.code: set[str] = set()  # modules another process imported for the run
        self.chunks: list[tuple[str, str]] = []
        self.allowed = False
        self.spoiled = False
        self.skip: tuple[str, ...] = ()
        self.looked_for: tuple[str, ...] = ()
        self.skip_names: tuple[str, ...] = ()
        self.paths: tuple[str, ...] = ()

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            if isinstance(path, (str, bytes)) and _reads_only(mode, flags):
                self.read.add(os.path.abspath(os.fsdecode(path)))
        elif event in ("os.scandir", "os.listdir"):
            path = args[0] if args else "."
            if isinstance(path, (str, bytes)):
                self.listed.add(os.path.abspath(os.fsdecode(path)))
        elif event == "subprocess.Popen":
            arguments = [os.fsdecode(a) for a in (args[1] or ()) if isinstance(a, (str, bytes))]
            if arguments[:2] != ["git", "config"]:
                self.spoiled = True  # what another program reads is not seen here
        elif event in ("os.system", "os.exec", "os.posix_spawn", "os.spawn"):
            self.spoiled = True


def _reads_only(mode: Any, flags: Any) -> bool:
    if isinstance(mode, str):
        return not any(letter in mode for letter in "wax+")
    if isinstance(flags, int):
        return flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND) == 0
    return False


_RECORDING: Recording | None = None
_HOOKED = False


def allow(
    paths: tuple[str, ...], looked_for: tuple[str, ...], skip: tuple[str, ...] = (),
    skip_names: tuple[str, ...] = (),
) -> None:
    """The cli's word that this run may be replayed. ``paths``: those it was given;
    ``looked_for``: the names the run looks for in the folders above what it reads
    (configuration files, ``.git``); ``skip``, and folders named ``skip_names``: what is not an
    input (the cache, which every run rewrites). No-op when nothing records."""
    if _RECORDING is not None:
        _RECORDING.allowed = True
        _RECORDING.paths = tuple(os.path.abspath(path) for path in paths)
        _RECORDING.looked_for = looked_for
        _RECORDING.skip = tuple(os.path.abspath(folder) for folder in skip)
        _RECORDING.skip_names = skip_names


def is_recording() -> bool:
    """Whether this run is being recorded (what only a recording needs may be skipped else)."""
    return _RECORDING is not None


def spoil() -> None:
    """What this run printed must not be replayed (a progress bar drawn, a timing printed)."""
    if _RECORDING is not None:
        _RECORDING.spoiled = True


def note_input(path: str) -> None:
    """A path the run's outcome depends on that this process may not open itself (a file a
    subprocess reads; a file looked for that may not exist)."""
    if _RECORDING is not None:
        _RECORDING.noted.add(os.path.abspath(path))


def note_code(paths: list[str]) -> None:
    """Modules a process the run forked imported for it (the lint helper's libcst): watched as
    the modules this process imported are."""
    if _RECORDING is not None:
        _RECORDING.code.update(os.path.abspath(path) for path in paths)


def may_replay(argv: list[str]) -> bool:
    """Whether ``sampler-lint ARGV`` may have a recording (the cli decides for good whether a
    run is recorded; this only spares other commands the lookup and the audit hook)."""
    return argv[:1] == ["check"] and not any(arg in _NEVER for arg in argv)


def start() -> Recording:
    """Record this run: its reads (an audit hook) and what it prints."""
    global _RECORDING, _HOOKED
    recording = _RECORDING = Recording()
    if not _HOOKED:  # one hook per process: it cannot be removed, so it serves every recording
        sys.addaudithook(_audit)
        _HOOKED = True
    sys.stdout = _Tee(sys.stdout, "o", recording)
    sys.stderr = _Tee(sys.stderr, "e", recording)
    return recording


def _audit(event: str, args: tuple[Any, ...]) -> None:
    recording = _RECORDING
    if recording is not None:
        recording.audit(event, args)


def finish(recording: Recording, argv: list[str], code: object) -> None:
    """The run ended with exit ``code``: keep the recording if the run allowed it, nothing
    spoiled it and it ended by an exit code."""
    _stop(recording)
    if code is None:
        code = 0
    # Findings or none: an error (exit 2) or an interruption (130) is worth making again.
    if recording.allowed and not recording.spoiled and isinstance(code, int) and code in (0, 1):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            return
        with contextlib.suppress(OSError):  # a recording is an optimisation, never an error
            _save(recording, argv, code)


def _stop(recording: Recording) -> None:
    global _RECORDING
    _RECORDING = None  # the hook stays (it cannot be removed) but does nothing now
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, _Tee):
            setattr(sys, name, stream._stream)


class _Inputs:
    """What a recording watches: ``stats``, the paths whose ``stat`` it keeps; ``presence``,
    those of which it keeps only whether they are there; ``above``, the folders those are in
    (none of which may change while the run reads)."""

    def __init__(self, recording: Recording) -> None:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # sampler_lint/
        modules = {
            os.path.abspath(location) for module in list(sys.modules.values())
            if isinstance(location := getattr(module, "__file__", None), str)
        } | recording.code
        # What the run read, apart from the code it imported (kept below, with no folder above).
        seen = {
            path for path in recording.read if path not in modules and not path.endswith(".pyc")
        }
        seen.discard(os.path.abspath(key_path()))  # another key fails the MAC: no need to watch
        seen = {path for path in seen if not _skipped(path, recording)}
        seen |= recording.noted | {os.getcwd()} | set(recording.paths)
        stats = seen | recording.listed | modules
        for folder in recording.listed:
            # Each file of a folder the run listed: workers read most of them, unseen by the hook.
            try:
                stats.update(entry.path for entry in os.scandir(folder) if not entry.is_dir())
            except OSError:
                continue
        stats.add(os.path.dirname(package))  # an install or uninstall beside the tool changes it
        for folder, folders, files in os.walk(package):
            folders[:] = [name for name in folders if name != "__pycache__"]
            stats.add(folder)
            stats.update(os.path.join(folder, name) for name in files if name.endswith(".py"))
        # Above what the run read (as named and as resolved: configuration is looked for above
        # the real path of a linked folder), it only looked for configuration, a git root or a
        # package: there the presence of those names matters, not every change of the folder
        # (git's own files change the time of `.git` at each command; what the run read inside
        # is kept above).
        # Imported here, after the run: deciding a replay imports nothing of the package.
        from sampler_lint.analysis.index import RealPaths

        above: set[str] = set()
        reals = RealPaths()  # one lstat per folder, however many paths share it
        for path in seen | recording.listed:
            folder = os.path.dirname(path)
            for parent in {folder, reals.of(folder)}:
                while parent not in above:
                    above.add(parent)
                    parent, last = os.path.dirname(parent), parent
                    if parent == last:
                        break
        self.above = above - recording.listed
        self.presence = {
            os.path.join(folder, name) for folder in self.above for name in recording.looked_for
        } - stats
        self.stats = stats
        # The project: where it runs, what it was given and the folders it walked.
        self.project = recording.listed | {os.getcwd()} | set(recording.paths)


def _skipped(path: str, recording: Recording) -> bool:
    """The cache's own files: every run rewrites them, and what they hold changes no output."""
    return any(
        path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
        for folder in recording.skip
    ) or any(name in recording.skip_names for name in path.split(os.sep))


def _racy(state: tuple[int, ...] | None, recording: Recording) -> bool:
    """Changed too close to the run's start, or after it, to be sure the run saw this state."""
    if state is None:
        return False
    changed = state[1]
    slack = _COARSE_SLACK_NS if changed % 1_000_000_000 == 0 else _FINE_SLACK_NS
    return changed >= recording.started_ns - slack


def _presence(path: str) -> str | None:
    """``"d"``, ``"f"`` (anything but a folder) or ``None`` (nothing there)."""
    try:
        return "d" if os.path.isdir(path) else "f" if os.path.lexists(path) else None
    except (OSError, ValueError):
        return None


def _save(recording: Recording, argv: list[str], code: int) -> None:
    key = secret_key()
    if key is None:
        return
    inputs = _Inputs(recording)
    if any(_skipped(path, recording) for path in inputs.project):
        return  # the project is inside the cache's folder: its files cannot be told apart
    states = []
    for path in sorted(path for path in inputs.stats if not _skipped(path, recording)):
        state = _state(path)
        if _racy(state, recording):
            return  # it may have changed while the run read it
        states.append((path, state))
    if any(_racy(_state(folder), recording) for folder in inputs.above):
        return  # a name above came or went (made, removed, renamed) while the run read
    present = tuple((path, _presence(path)) for path in sorted(inputs.presence))
    payload = marshal.dumps(
        (_FORMAT, tuple(states), present, tuple(recording.chunks), code), _MARSHAL_VERSION
    )
    target = _recording_path(run_key(argv))
    folder = os.path.dirname(target)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        temporary = f"{target}.{os.getpid()}.tmp"
        with open(temporary, "wb") as handle:
            handle.write(payload + mac(key, payload))
        os.replace(temporary, target)
        _prune(folder)
    except OSError:
        pass  # a recording is an optimisation: the next run is simply made again


def _prune(folder: str) -> None:
    """Keep the latest recordings, at most :data:`_KEEP` of them and :data:`_KEEP_BYTES` in all
    (a monorepo's recording, naming every file, is a few MiB)."""
    entries = []
    for entry in os.scandir(folder):
        try:
            found = entry.stat()
        except OSError:
            continue
        entries.append((found.st_mtime_ns, found.st_size, entry.path))
    total = 0
    for kept, (_, size, path) in enumerate(sorted(entries, reverse=True), start=1):
        total += size
        if kept > _KEEP or (kept > 1 and total > _KEEP_BYTES):
            with contextlib.suppress(OSError):
                os.remove(path)


def forget() -> int:
    """Remove every recording (``sampler-lint clean``); how many there were."""
    folder = os.path.dirname(_recording_path("x"))
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        try:
            os.remove(entry.path)
            removed += 1
        except OSError:
            continue
    return removed
