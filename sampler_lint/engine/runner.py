"""Running a whole check: find the files, build the project index, lint every file (in worker
processes when there are many), write fixes, and collect the results in a stable order."""

from __future__ import annotations

import ast
import contextlib
import importlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, overload

from sampler_lint import __version__
from sampler_lint.analysis.index import EMPTY_INDEX, FactCollector, ProjectIndex
from sampler_lint.analysis.loader_facts import forget_file_keys
from sampler_lint.engine import registry, writer
from sampler_lint.engine.cache import (
    DIRECTORY,
    Cache,
    cached_result,
    digest,
    is_file_result,
    result_is_cacheable,
)
from sampler_lint.engine.config import ConfigResolver, Settings
from sampler_lint.engine.demand import DemandIndex, Read, Shared, Source, is_facts, reads_key
from sampler_lint.engine.discovery import (
    Problems,
    Walked,
    iter_source_files,
    outermost,
    own_roots,
    project_root,
    project_roots,
)
from sampler_lint.engine.findings import FileResult, plural
from sampler_lint.engine.lint_helper import FEW_FILES, LintHelper, take_early, worth_starting
from sampler_lint.engine.linter import PARSE_ERROR, LintOptions, decode, lint_source
from sampler_lint.engine.sources import in_overlay, read_source, source_size
from sampler_lint.engine.survey import (
    EMPTY_SURVEY,
    NOTHING,
    Collectors,
    Survey,
    answer_questions,
    is_survey,
    source_text,
    survey_source,
    wants_lint,
)
from sampler_lint.engine.writer import WriteError, write_atomic
from sampler_lint.rule import Rule

# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 48
# ... unless they are files to lint, each parsed with libcst (a tenth of a second for a few
# hundred lines): from this many bytes of them, a pool pays off even for two files.
PARALLEL_LINT_BYTES = 64 * 1024


@dataclass(frozen=True)
class RunOptions:
    fix: bool = False
    unsafe_fixes: bool | None = None  # None: from configuration
    diff: bool = False
    want_edits: bool = False
    jobs: int = 0  # 0: all cores
    force_exclude: bool = False
    use_prefilter: bool = True
    use_cache: bool = True
    cache_dir: Path | None = None
    ignore_noqa: bool = False


@dataclass
class Stages:
    """Where a run's time went, for ``-v``: the walk, the survey of every file (text pre-filters
    and, where a rule wants one, an ``ast`` parse), the index stage over the files some rule
    still wants (its questions; the lint workers start meanwhile), the lint pass that is left,
    and the caches' saving."""

    walk: float = 0.0
    survey: float = 0.0
    index: float = 0.0
    lint: float = 0.0
    caches: float = 0.0
    surveyed: int = 0
    asked: int = 0  # files the index stage asked about
    linted: int = 0  # files linted after every pre-filter (by the survey or the lint pass)
    helped: int = 0  # of those, files the lint helper linted (:mod:`lint_helper`)

    def add(self, other: Stages) -> None:
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)
    files_checked: int = 0
    #: What the walk could not read (warnings) and the named paths that do not exist (errors).
    problems: Problems = field(default_factory=Problems)
    #: The files linted, and the project's files in its order (empty when no rule reads the
    #: index), as this run spelled them: ``--since`` lints the same files at a revision.
    linted: list[Path] = field(default_factory=list)
    project: Sequence[Path] = field(default_factory=list)
    #: Wall time of each stage (``-v``), in run order, and the files each stage took.
    stages: Stages = field(default_factory=Stages)


@dataclass(frozen=True)
class Given:
    """A run over files given rather than walked (``--since``: their contents at a revision, from
    :func:`sampler_lint.engine.sources.overlay`)."""

    files: list[Path]  # to survey as linted files (the same cache keys as today's run)
    project: list[Path]  # the whole project, in its order
    wanted: frozenset[str]  # absolute paths of the files whose lint results are needed


def lint_options_for(settings: Settings, path: Path, run: RunOptions) -> LintOptions:
    enabled = settings.enabled_for(path)
    rules = tuple(rule for rule in registry.all_rules() if rule.code in enabled)
    unsafe = settings.unsafe_fixes if run.unsafe_fixes is None else run.unsafe_fixes
    return LintOptions(
        rules=rules,
        options=dict(settings.options),
        vocabulary=settings.vocabulary,
        fix=run.fix or run.diff,
        unsafe_fixes=unsafe,
        want_edits=run.want_edits,
        want_diff=run.diff,
        use_prefilter=run.use_prefilter,
        fixable=settings.fixable,
        ignore_noqa=run.ignore_noqa,
    )


# ------------------------------------------------------------------------------------------------
# Pools


# multiprocessing and concurrent.futures are imported where a pool starts: a run small enough for
# one process (a pre-commit hook on a few files) never pays for them (20 ms, an eighth of start-up).
def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _context() -> Any:
    import multiprocessing

    return multiprocessing.get_context("fork" if _can_fork() else None)


def _pool(
    jobs: int, work: int, initializer: Callable[..., None], *initargs: Any, heavy: bool = False
) -> Any:
    """A process pool for ``work`` items, or ``None`` when one process is cheaper. Workers are
    forked where the platform allows it, so they start with what this process has imported and
    built (the index, the options) instead of receiving it pickled."""
    if jobs <= 1 or work < (2 if heavy else PARALLEL_THRESHOLD):
        return None
    if in_overlay() and not _can_fork():
        return None  # contents held in memory reach only forked workers
    from concurrent.futures import ProcessPoolExecutor

    global _STOP
    _STOP = _context().Value("b", 0)
    return ProcessPoolExecutor(
        max_workers=min(jobs, work), mp_context=_context(), initializer=_init_worker,
        initargs=(initializer, initargs, writer.shared_counter(), _STOP),
    )


# Set when the run is interrupted: workers then skip the files they have not started.
_STOP: Any = None
# True in a process that reads files for the index: it never starts workers of its own.
_IN_GATHER_WORKER = False


def _stopping() -> bool:
    return _STOP is not None and bool(_STOP.value)


def _init_worker(
    initializer: Callable[..., None], initargs: tuple[Any, ...], counter: Any, stop: Any
) -> None:
    # Ctrl-C is the main process's to handle: it tells the workers to stop, and they finish only
    # the file in hand, so that every file is whole and the count of rewritten files is right.
    global _STOP
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    writer.count_writes_in(counter)
    _STOP = stop
    initializer(*initargs)


@contextlib.contextmanager
def _running(pool: Any) -> Iterator[None]:
    """``with pool:``, except that an interruption (Ctrl-C) cancels the tasks not started
    instead of waiting for all of them."""
    try:
        yield
    except BaseException:
        if _STOP is not None:
            _STOP.value = 1
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _chunksize(work: int, jobs: int) -> int:
    # Small enough that a few large files do not leave one process working alone at the end
    # (a chunk's cost varies tenfold: most files need only their text read, a few an ``ast``
    # parse; Lightning's two workers, in chunks of 40 of its 646 files, finished 0.07-0.16 s
    # apart, in chunks of 10 within 0.015 s); larger for tens of thousands of files, where the
    # round trips themselves add up.
    return max(1, min(48 if work < 10_000 else 256, work // (jobs * 32)))


# ------------------------------------------------------------------------------------------------
# The first pass: the survey (index facts and pre-filters)


@dataclass(frozen=True)
class _Job:
    path: Path
    fact_path: str | None  # None: not part of the project index
    lint_id: int | None  # None: not linted, only read for the index


_WORKER_LINTS: list[LintOptions] = []
_WORKER_COLLECTORS = Collectors()
_WORKER_WRITE: bool | None = None  # None: survey only
_WORKER_GATHER = True
_WORKER_INDEX: ProjectIndex = EMPTY_INDEX

_Surveyed = tuple[Survey, "FileResult | None"]


def _init_survey_worker(
    lints: list[LintOptions], collectors: Collectors, write: bool | None, gather: bool
) -> None:
    global _WORKER_LINTS, _WORKER_COLLECTORS, _WORKER_WRITE, _WORKER_GATHER
    _WORKER_LINTS, _WORKER_COLLECTORS, _WORKER_WRITE = lints, collectors, write
    _WORKER_GATHER = gather


def _survey_task(task: tuple[str, str | None, int | None]) -> _Surveyed | None:
    # Plain strings in, None out for a file with nothing in it for anyone: with tens of thousands
    # of small files, pickling Path objects and empty surveys cost more than surveying them.
    path, fact_path, lint_id = task
    if _stopping():
        return None
    job = _Job(Path(path), fact_path, lint_id)
    surveyed = _survey_and_lint(
        job, _WORKER_LINTS, _WORKER_COLLECTORS, _WORKER_WRITE, _WORKER_GATHER
    )
    return None if surveyed == (EMPTY_SURVEY, None) else surveyed


def _survey_and_lint(
    job: _Job, lints: list[LintOptions], collectors: Collectors, write: bool | None,
    gather: bool = True,
) -> _Surveyed:
    """The survey of a file and, when none of the rules left for it reads the project index,
    its lint result at once (``write``: with its fixes written; ``None``: survey only): such a
    file need not wait for the index, nor be read again."""
    survey = _survey(job, lints, collectors, gather=gather)
    if write is None or job.lint_id is None or survey.rules is None:
        return survey, None
    lint = lints[job.lint_id]
    if not wants_lint(survey, lint) or _reads_index(survey, lint):
        return survey, None
    return survey, check_file(job.path, lint, write, EMPTY_INDEX, survey.rules)


def _survey(job: _Job, lints: list[LintOptions], collectors: Collectors,
            data: bytes | None = None, gather: bool = True) -> Survey:
    if job.path.suffix == ".ipynb":
        return NOTHING  # notebooks are surveyed cell by cell when linted; no index facts
    if data is None:
        try:
            data = read_source(job.path)
        except OSError:
            return NOTHING  # the lint pass reports why it cannot be read
    lint = lints[job.lint_id] if job.lint_id is not None else None
    return survey_source(data, job.fact_path, lint, collectors, gather)


# How long after a file's last change its digest must have been made for the file's size,
# times and inode to vouch for it: a change within the same tick of a coarse clock (a second on
# some file systems) would leave them as they were. Git calls such an entry "racy".
_RACY_NS = 2_000_000_000


def content_key(path: Path, stats: Cache | None) -> str | None:
    """The digest of the file's bytes (``None``: unreadable). With ``stats``, a file whose
    size, modification and change times and inode are those recorded when it was last hashed,
    at least :data:`_RACY_NS` after its last change, is not read again (a warm run read and
    hashed every file: a tenth of its time)."""
    seen: tuple[int, int, int, int] | None = None
    key = ""
    if stats is not None and not in_overlay():
        key = os.path.abspath(path)
        try:
            status = os.stat(key)
        except OSError:
            return None
        seen = (status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino)
        entry = stats.get(key)
        if entry is not None and entry[:4] == seen:
            return str(entry[4])
    try:
        data = read_source(path)
    except OSError:
        return None
    content = digest(data)
    if stats is not None and seen is not None:
        hashed = time.time_ns()
        if hashed - _RACY_NS > max(seen[1], seen[2]):
            stats.put(key, (*seen, content))
    return content


def is_stat(value: object) -> bool:
    """The shape of a stats entry: size, times, inode, digest."""
    return (
        type(value) is tuple and len(value) == 5
        and all(type(v) is int for v in value[:4]) and type(value[4]) is str
    )


def _workers_have_libcst() -> bool:
    """Whether workers forked now start with libcst imported: only then do survey workers lint
    the files that need no index. Each one that linted a file would otherwise import libcst on
    its own (0.15 s of CPU), where the lint workers, forked once this process has imported it,
    lint those files without (Megatron-LM: three imports in a run, 2.0 s -> 1.8 s cold with
    one). A run over several projects has imported it for the first one."""
    return "libcst" in sys.modules


def survey_files(
    jobs: list[_Job], lints: list[LintOptions], collectors: Collectors, cache: Cache | None,
    processes: int, progress: Callable[[int], None] | None = None, write: bool | None = None,
    gather: bool = True, stats: Cache | None = None, linting: Callable[[], None] | None = None,
) -> tuple[list[Survey], list[str | None], dict[int, FileResult]]:
    """The survey of every job (from the cache where the file is unchanged), each file's
    content key (``None`` when unread: no cache, or unreadable) and, unless ``write`` is
    ``None`` or the survey runs in workers without libcst (:func:`_workers_have_libcst`), the
    lint results of the files that did not need the index (:func:`_survey_and_lint`).
    ``gather``: with each file's index facts (``False``: only which collectors want it, for
    :class:`DemandIndex`). ``stats``: file status recorded by earlier runs
    (:func:`content_key`). ``linting``: called when a surveyed file turns out to need the lint
    pass whatever the index says (:meth:`LintHelper.want`); the files not in the cache are then
    surveyed before the others' cached surveys are decoded, unless there are enough of them for
    a pool (then it is not called)."""
    early: dict[int, FileResult] = {}
    surveys: list[Survey | None] = [None] * len(jobs)
    contents: list[str | None] = [None] * len(jobs)
    keys: list[str | None] = [None] * len(jobs)
    lint_keys = [_lint_key(lint) for lint in lints]
    missing: list[int] = []
    stored: list[int] = []  # in the cache: decoded once the missing ones are surveyed
    for number, job in enumerate(jobs):
        if cache is not None:
            content = content_key(job.path, stats)
            if content is None:
                missing.append(number)
                continue
            contents[number] = content
            lint_key = lint_keys[job.lint_id] if job.lint_id is not None else ""
            keys[number] = key = digest(
                "survey", collectors.salt, "gather" if gather else "on demand", lint_key,
                job.fact_path or "", content,
            )
            if cache.has(key):
                stored.append(number)
                continue
        missing.append(number)
    if len(missing) >= PARALLEL_THRESHOLD:
        linting = None  # enough to survey for a pool, whose workers take the cores
    done = 0

    def record(number: int, surveyed: _Surveyed | None) -> None:
        nonlocal done
        survey, result = surveyed or (EMPTY_SURVEY, None)
        surveys[number] = survey
        lint_id = jobs[number].lint_id
        if result is not None:
            early[number] = result
        elif linting is not None and lint_id is not None \
                and _surely_linted(survey, lints[lint_id]):
            linting()
        done += 1
        if progress is not None:
            progress(done)

    # With ``linting``, the files not in the cache are surveyed before the others' surveys are
    # decoded: a helper forks for the first one that needs it as early as the run can know.
    surveyed_first = linting is not None
    if surveyed_first:
        for number in missing:
            record(number, _survey_and_lint(jobs[number], lints, collectors, write, gather))
    late: list[int] = []  # stored, but not what this version can decode: surveyed again
    for number in stored:
        assert cache is not None
        hit = cache.get(keys[number] or "")
        if hit is None:
            late.append(number)
        else:
            surveys[number] = hit
            done += 1
    if progress is not None:
        progress(done)
    if surveyed_first:
        for number in late:
            record(number, _survey_and_lint(jobs[number], lints, collectors, write, gather))
        missing += late
    else:
        missing = sorted(missing + late)
        pool = _pool(
            processes, len(missing), _init_survey_worker, lints, collectors,
            write if _workers_have_libcst() else None, gather,
        )
        if pool is not None:
            with _running(pool):
                work = [
                    (str(jobs[number].path), jobs[number].fact_path, jobs[number].lint_id)
                    for number in missing
                ]
                computed = pool.map(_survey_task, work, chunksize=_chunksize(len(work), processes))
                for number, surveyed in zip(missing, computed, strict=True):
                    record(number, surveyed)
                    if write is not None and surveyed is not None and surveyed[0].rules \
                            and surveyed[1] is None:
                        # A file is left for the lint pass, which parses it with libcst: import
                        # libcst now, while the workers survey the rest, rather than after them
                        # while they wait (the lint workers are forked from this process).
                        importlib.import_module("libcst")
        else:
            for number in missing:
                record(number, _survey_and_lint(jobs[number], lints, collectors, write, gather))
    if cache is not None:
        for number in missing:
            survey_key = keys[number]
            survey = surveys[number]
            if survey_key is not None and survey is not None:
                # Without the facts its parse read: the index caches those a question uses.
                cache.put(survey_key, replace(survey, read=()) if survey.read else survey)
    return [survey or NOTHING for survey in surveys], contents, early


def merge_index(
    jobs: list[_Job], surveys: list[Survey], order: list[int], collectors: Collectors
) -> tuple[ProjectIndex, str]:
    """The project index from the surveys, merged in ``order`` (the project's file order, the
    same whatever the number of processes), completed with the answers to project questions the
    surveys left open, and its digest."""
    index = ProjectIndex()
    parts: list[str] = []
    deferred: list[tuple[Path, str, tuple[str, ...]]] = []
    for number in order:
        survey, fact_path = surveys[number], jobs[number].fact_path or ""
        if survey.facts.facts:
            index.merge(survey.facts)
            parts += [fact_path, survey.facts_digest]
        if survey.deferred:
            deferred.append((jobs[number].path, fact_path, survey.deferred))
    answers, answer_digests = answer_questions(index, deferred, collectors)
    index.merge(answers)
    parts += answer_digests
    return index, digest(*parts) if parts else ""


# ------------------------------------------------------------------------------------------------
# The project index on its own (standard input, the API, tests)


def index_source(text: str, path: str, rules: Iterable[type[Rule]]) -> ProjectIndex:
    """The facts one source contributes to the project index."""
    collectors = Collectors.for_rules(tuple(rules))
    return survey_source(text.encode("utf-8", "surrogatepass"), path, None, collectors).facts


def needs_index(rules: Iterable[type[Rule]]) -> bool:
    return any(rule.collectors or rule.uses_index for rule in rules)


def build_index(
    files: Iterable[Path], rules: Iterable[type[Rule]], cache: Cache | None = None,
    jobs: int = 1,
) -> ProjectIndex:
    """The project index over ``files`` (in ``jobs`` processes when many): the same index
    whatever the number of processes."""
    rules = tuple(rules)
    if not needs_index(rules):
        return EMPTY_INDEX
    forget_file_keys()  # a link may have changed since the last index this process built
    work = [_Job(path, str(path), None) for path in files]
    collectors = Collectors.for_rules(rules)
    surveys, _, _ = survey_files(work, [], collectors, cache, jobs)
    index, _ = merge_index(work, surveys, list(range(len(work))), collectors)
    return index


def stdin_index(
    name: Path, data: bytes, resolver: ConfigResolver, lint: LintOptions, options: RunOptions
) -> tuple[ProjectIndex, Problems]:
    """The project index for ``data`` read from standard input as ``name``: the project on disk
    around it, with ``data`` standing in for the file of that name (an editor's unsaved buffer),
    so stdin sees the same cross-file facts as a run over the saved file."""
    rules = tuple(lint.rules)
    problems = Problems(indexing=True)  # only the file on stdin is linted
    if not needs_index(rules):
        return EMPTY_INDEX, problems
    cache_dir = options.cache_dir or project_root([name]) / DIRECTORY
    cache = Cache(cache_dir, "survey", is_survey) if options.use_cache else None
    itself = name.resolve()
    files = [
        path for path in iter_source_files([project_root([name])], resolver, problems=problems)
        if path.resolve() != itself
    ]
    index = build_index(files, rules, cache, options.jobs or os.cpu_count() or 1)
    if cache is not None:
        cache.save()
    merged = ProjectIndex()
    merged.merge(index)
    merged.merge(index_source(source_text(data), str(name), rules))
    return merged, problems


# ------------------------------------------------------------------------------------------------
# The second pass: linting the files some rule wants


def _init_lint_worker(index: ProjectIndex, lints: list[LintOptions]) -> None:
    global _WORKER_INDEX, _WORKER_LINTS
    _WORKER_INDEX, _WORKER_LINTS = index, lints


def check_file(
    path: Path, lint: LintOptions, write: bool, index: ProjectIndex | None = None,
    only: tuple[str, ...] | None = None,
) -> FileResult:
    name = str(path)
    try:
        data = read_source(path)
    except OSError as error:
        # Unreadable (permissions, removed since the walk): a warning, and the rest is linted.
        result = FileResult(filename=name, unreadable=True)
        reason = error.strerror or type(error).__name__
        result.errors.append(f"{name}: cannot read file ({reason}); skipped")
        return result
    if path.suffix == ".ipynb":
        from sampler_lint.engine.notebook import check_notebook

        try:
            return check_notebook(path, data, lint, index or _WORKER_INDEX, write)
        except Exception as error:  # a bug must not take the whole run down
            result = FileResult(filename=name, internal_error=True)
            result.errors.append(
                f"{name}: internal error, please report it: {type(error).__name__}: {error}"
            )
            return result
    try:
        result, fixed = lint_source(path, data, lint, index or _WORKER_INDEX, only=only)
    except Exception as error:  # a bug in a rule must not take the whole run down
        result = FileResult(filename=name, internal_error=True)
        result.errors.append(
            f"{name}: internal error, please report it: {type(error).__name__}: {error}"
        )
        return result
    if fixed is not None and write:
        try:
            write_atomic(path, data, fixed)
            result.wrote = True
        except WriteError as error:
            # Nothing was written: report the findings of the file as it still is.
            result, _ = lint_source(
                path, data, replace(lint, fix=False), index or _WORKER_INDEX, only=only
            )
            result.errors.append(str(error))
    return result


_Checked = tuple[FileResult, tuple[str, ...], list[tuple[str, Any]]]


def _check_task(task: tuple[Path, int, bool, tuple[str, ...] | None]) -> _Checked:
    path, lint_id, write, only = task
    if _stopping():
        return FileResult(filename=str(path), skipped=True), (), []  # interrupted: thrown away
    result = check_file(path, _WORKER_LINTS[lint_id], write, only=only)
    return (result, *_index_reads(_WORKER_INDEX))


_Task = tuple[Path, int, bool, tuple[str, ...] | None]


def _check_batch(tasks: list[_Task]) -> list[_Checked]:
    return [_check_task(task) for task in tasks]


# Files handed to a streaming pool at a time once this many have been: single files while there
# are few (they are the heavy part), batches when tens of thousands make round trips add up.
_STREAM_SINGLE = 1000
_STREAM_BATCH = 48


def _largest_wanted_first(
    jobs: list[_Job], surveys: list[Survey], lints: list[LintOptions], sizes: dict[int, int]
) -> list[int]:
    """The order in which the index stage judges the files: those some rule still wants,
    largest first (they are handed to the lint workers as they are kept, and the last to
    finish should be small), then the others as they come. Results keep the files' order.
    ``sizes`` receives the size of each wanted file, measured once."""
    wanted = [
        number for number, (job, survey) in enumerate(zip(jobs, surveys, strict=False))
        if job.lint_id is not None and wants_lint(survey, lints[job.lint_id])
    ]
    sizes.update((number, _size(jobs[number].path)) for number in wanted)
    wanted.sort(key=lambda number: -sizes[number])
    chosen = set(wanted)
    return wanted + [number for number in range(len(jobs)) if number not in chosen]


class _LintStream:
    """The lint pass, started while the index stage still runs. Once enough files wait to pay
    for a pool (:data:`PARALLEL_THRESHOLD` of them, or two of :data:`PARALLEL_LINT_BYTES`), the
    pool starts, and each file the index stage keeps from then on goes to it at once: the
    workers lint while this process asks the index about the rest (Lightning: 0.3 s of index
    stage on one core while the other waited). Fewer, smaller files are linted here at the end,
    as a pool would cost more than it saves. Workers are forked when the pool starts: they
    read for themselves what the index learns after that (``DemandIndex.shared`` lets them
    reuse each other's reads), and a file whose lint options were made after it
    (:func:`_run_project` makes some for files named but unparsable) is linted here."""

    def __init__(
        self, jobs: list[_Job], surveys: list[Survey], lints: list[LintOptions],
        write: bool, index: DemandIndex, collectors: Collectors, processes: int,
        sizes: dict[int, int], helper: LintHelper | None = None,
    ) -> None:
        self._jobs, self._surveys, self._lints = jobs, surveys, lints
        self._sizes = sizes  # measured by _largest_wanted_first
        self._write, self._index, self._collectors = write, index, collectors
        self._processes = processes
        self._waiting: list[int] = []
        self._bytes = 0
        self._pool: Any = None
        self._forked_lints = 0
        self._submitted: list[tuple[list[int], Any]] = []
        self._here: list[int] = []  # linted in this process (options made after the fork)
        self._stack = contextlib.ExitStack()
        self._helper = helper  # lints the files left for this process, if given
        self.helped = 0

    def __enter__(self) -> _LintStream:
        return self

    def __exit__(self, *exc: object) -> bool | None:
        return self._stack.__exit__(*exc)  # type: ignore[arg-type]

    def add(self, number: int) -> None:
        """A file the lint pass must lint (in the order the index stage keeps them)."""
        lint_id = self._jobs[number].lint_id
        assert lint_id is not None
        if self._pool is not None and lint_id >= self._forked_lints:
            self._here.append(number)
            return
        self._waiting.append(number)
        self._bytes += self._size(number)
        if self._pool is None and self._processes > 1 and (
            len(self._waiting) >= PARALLEL_THRESHOLD
            or (len(self._waiting) >= 2 and self._bytes >= PARALLEL_LINT_BYTES)
        ):
            self._start()
        if self._pool is not None:
            self._hand_over(final=False)

    def finish(self, linted: Callable[[int, FileResult, tuple[str, ...]], None]) -> None:
        """Lint what is left and hand each result to ``linted`` (number, result, the ``name,
        digest`` pairs it was made with)."""
        if self._pool is not None:
            self._hand_over(final=True)
            for numbers, future in self._submitted:
                for number, (result, pairs, fresh) in zip(numbers, future.result(), strict=True):
                    self._index.keep(fresh)
                    linted(number, result, pairs)
            self._submitted = []
        else:
            self._here = self._waiting + self._here
        for number in self._here:
            path, lint_id = self._jobs[number].path, self._jobs[number].lint_id
            assert lint_id is not None
            lint, only = self._lints[lint_id], self._surveys[number].rules
            result = None
            if self._helper is not None:
                result = self._helper.lint(path, lint, self._write, self._index, only)
                self.helped += result is not None
            if result is None:
                result = check_file(path, lint, self._write, self._index, only)
            pairs, _ = _index_reads(self._index)  # facts gathered here are cached already
            linted(number, result, pairs)

    def _start(self) -> None:
        if self._helper is not None:
            self._helper.close()  # the pool's workers take the cores
            self._helper = None
        # Every file to lint is parsed with libcst: import it here, once, so that the forked
        # workers start with it (sampler_lint.analysis.lazy_libcst).
        importlib.import_module("libcst")
        index = self._index
        index.fresh = []  # cached already: the workers hand back only what they gather
        import tempfile

        sharing = tempfile.TemporaryDirectory(prefix="sampler-lint-")
        # Set before the workers start: what one reads for the index, the others reuse.
        index.shared = Shared(
            _context(), [c.name for c in self._collectors.collectors], Path(sharing.name)
        )
        pool = _pool(
            self._processes, max(self._processes, 2), _init_lint_worker, index, self._lints,
            heavy=True,
        )
        if pool is None:
            index.shared = None
            sharing.cleanup()
            self._processes = 1  # not again: the rest are linted here
            return
        self._stack.enter_context(sharing)
        self._stack.enter_context(_running(pool))
        self._pool, self._forked_lints = pool, len(self._lints)
        pool.submit(int).result()  # the workers are forked now, with the index as it is
        # This process goes on with the index stage alone: what it reads stays here.
        index.shared = None

    def _size(self, number: int) -> int:
        size = self._sizes.get(number)
        if size is None:  # a file named but unparsable, which no rule wanted
            size = self._sizes[number] = _size(self._jobs[number].path)
        return size

    def _hand_over(self, final: bool) -> None:
        handed = sum(len(numbers) for numbers, _ in self._submitted)
        size = 1 if handed < _STREAM_SINGLE else _STREAM_BATCH
        if final:
            # Largest first: the last tasks to finish are then small ones.
            self._waiting.sort(key=lambda number: -self._size(number))
        while self._waiting and (final or len(self._waiting) >= size):
            numbers, self._waiting = self._waiting[:size], self._waiting[size:]
            tasks = [
                (self._jobs[n].path, self._jobs[n].lint_id, self._write, self._surveys[n].rules)
                for n in numbers
            ]
            self._submitted.append((numbers, self._pool.submit(_check_batch, tasks)))


def _gather_in_pool(
    processes: int,
) -> Callable[[DemandIndex, FactCollector, list[Source], bool], list[Read] | None]:
    """A :data:`sampler_lint.engine.demand.Mapper`: the files of one collector read in
    ``processes`` processes forked from this one. A lint worker may start them too: a question
    first asked while linting is often asked by one worker near the end, while the others wait
    (a reading worker never starts workers of its own)."""

    def mapper(
        index: DemandIndex, collector: FactCollector, sources: list[Source], alone: bool
    ) -> list[Read] | None:
        if _IN_GATHER_WORKER or processes <= 1 or (
            in_overlay() and not _can_fork()
        ):
            return None
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(
            max_workers=min(processes, len(sources)), mp_context=_context(),
            initializer=_init_gather_worker, initargs=(index, collector, sources, alone),
        ) as pool:
            return list(pool.map(_gather_task, range(len(sources)),
                                 chunksize=max(1, len(sources) // (processes * 4))))

    return mapper


_WORKER_GATHER_JOB: tuple[DemandIndex, FactCollector, list[Source], bool] | None = None


def _init_gather_worker(
    index: DemandIndex, collector: FactCollector, sources: list[Source], alone: bool
) -> None:
    global _WORKER_GATHER_JOB, _IN_GATHER_WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER_GATHER_JOB, _IN_GATHER_WORKER = (index, collector, sources, alone), True


def _gather_task(number: int) -> Read:
    assert _WORKER_GATHER_JOB is not None
    index, collector, sources, alone = _WORKER_GATHER_JOB
    return index.read_one(collector, sources[number], alone)


def _index_reads(index: ProjectIndex) -> tuple[tuple[str, ...], list[tuple[str, Any]]]:
    """What a lint result made with ``index`` depends on (``name, digest`` pairs of every
    collector gathered so far: a superset of those it read, as rules memoise what they derive
    from the index), and the facts gathered since the last call, for the main process's cache."""
    if not isinstance(index, DemandIndex):
        return (), []
    pairs = index.digests(list(index.gathered))  # which may remember digests: fresh entries
    fresh, index.fresh = index.fresh, []
    return pairs, fresh


def _collectors_in_play(
    jobs: Sequence[_Job], surveys: Sequence[Survey], lints: Sequence[LintOptions]
) -> frozenset[str]:
    """The collectors read by the rules the pre-filters left for some linted file: no other
    collector is ever asked (a run over one file asks only that file's rules' questions)."""
    names: set[str] = set()
    for job, survey in zip(jobs, surveys, strict=True):
        if job.lint_id is None:
            continue
        rules = lints[job.lint_id].rules
        codes = None if survey.rules is None else set(survey.rules)
        for rule in rules:
            if codes is None or rule.code in codes:
                names.update(collector.name for collector in rule.collectors)
    return frozenset(names)


def _index_stage(survey: Survey, job: _Job, lint: LintOptions, index: ProjectIndex) -> Survey:
    """The third pre-filter stage: rules that read the index drop files the index shows they
    cannot flag (``Rule.may_match_index``, given the file's code). Only for files of the project
    index: a file outside it (named on the command line though excluded) has its own facts
    nowhere."""
    if not survey.rules or not _asks_index(survey, job, lint):
        return survey  # no rule left asks: the file is not read again
    by_code = {rule.code: rule for rule in lint.rules}
    try:
        text = decode(read_source(job.path))
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
        return survey  # the lint pass reports what it cannot read
    path = str(job.path)
    hints = dict(survey.hints)

    def may_match(rule: type[Rule]) -> bool:
        if rule.code in hints:
            return rule.may_match_index(  # type: ignore[call-arg]
                index, path, text, hints=frozenset(hints[rule.code])
            )
        return rule.may_match_index(index, path, text)

    kept = tuple(code for code in survey.rules if code not in by_code or may_match(by_code[code]))
    return survey if kept == survey.rules else replace(survey, rules=kept)


def _asks_index(survey: Survey, job: _Job, lint: LintOptions) -> bool:
    """Whether :func:`_index_stage` asks the index about this file: a rule left for it has an
    index stage, and the file is part of the project index."""
    codes = survey.rules
    if not codes or job.fact_path is None or not lint.use_prefilter:
        return False
    return any(rule.code in codes and rule.has_index_stage() for rule in lint.rules)


def _cannot_parse(
    path: Path, lint: LintOptions, cache: Cache | None, content: str | None
) -> bool:
    """Whether SL001 is on for ``path`` and Python cannot decode or parse it (a content that
    parses is remembered in the cache: pre-commit names every file it runs on)."""
    if not any(rule.code == PARSE_ERROR for rule in lint.rules):
        return False
    key = digest("parses", content) if cache is not None and content is not None else None
    if key is not None and cache is not None and cache.get(key) is not None:
        return False
    try:
        text = decode(read_source(path))
        compile(text, str(path), "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except OSError:
        return False  # the lint pass says why it cannot be read
    except (SyntaxError, UnicodeDecodeError, LookupError, ValueError, RecursionError,
            MemoryError, OverflowError):
        return True
    if key is not None and cache is not None:
        cache.put(key, FileResult(filename="", skipped=True))
    return False


def _size(path: Path) -> int:
    return source_size(path)


def _surely_linted(survey: Survey, lint: LintOptions) -> bool:
    """Whether the lint pass will lint a surveyed file whatever the index stage finds: the
    survey could not decide, or a rule left (or the unused-noqa check) has no index stage that
    could drop the file. What a :class:`LintHelper` waits for before it forks: SL301's survey
    keeps any file with a call, which its index stage drops unless the call names a sampler."""
    if survey.rules is None or not lint.use_prefilter:
        return wants_lint(survey, lint)
    staged = {rule.code for rule in lint.rules if rule.has_index_stage()}
    unstaged = tuple(code for code in survey.rules if code not in staged)
    if unstaged != survey.rules:
        survey = replace(survey, rules=unstaged)
    return wants_lint(survey, lint)


def _has_fixes(result: FileResult, lint: LintOptions) -> bool:
    """Whether a fix run would apply a fix to a file with this (cached) result."""
    return any(
        finding.fix is not None and (finding.fix.applicability == "safe" or lint.unsafe_fixes)
        for finding in result.findings
    )


def _reads_index(survey: Survey, lint: LintOptions) -> bool:
    codes = survey.rules
    return any(
        (rule.collectors or rule.uses_index) and (codes is None or rule.code in codes)
        for rule in lint.rules
    )


# ------------------------------------------------------------------------------------------------
# A whole run


def run(
    paths: list[Path],
    resolver: ConfigResolver,
    options: RunOptions,
    progress: Callable[[int, int, str], None] | None = None,
    given: Given | None = None,
) -> RunResult:
    """Lint ``paths``, or with ``given``, the files it gives instead of walking the disk.

    Paths of several projects (two repositories named side by side) are linted one project at a
    time, each with its own index and cache: a file gets the findings it gets when its project
    is linted alone, and no question about one project reads the files of the others."""
    if options.fix and not options.diff:
        writer.count_writes_in(_context().Value("q", 0))
    helper = take_early()  # forked as the process started, if its arguments looked like this
    if _may_lint_few(paths, options):
        helper = helper or LintHelper(check_file)
    elif helper is not None:
        helper.close()
        helper = None
    try:
        groups = _by_project(paths) if given is None else [paths]
        if len(groups) == 1:
            return _run_project(paths, resolver, options, progress, given, helper)
        return _merged([
            _run_project(group, resolver, options, progress, helper=helper) for group in groups
        ])
    finally:
        if helper is not None:
            helper.close()


def _may_lint_few(paths: list[Path], options: RunOptions) -> bool:
    """Whether the run will likely lint only a file or a few, in this process, and a
    :class:`LintHelper` pays (:func:`lint_helper.worth_starting`): files named one by one
    (pre-commit, an editor), or a project linted before, whose cache leaves only the files
    changed since. Wrong either way costs little: the helper forks only once the survey meets
    a file it will lint (:func:`_surely_linted`), and a run with many files to lint starts its
    pool instead (and stops a helper already running). A helper forked as the process started
    (:func:`lint_helper.start_early`) is used where this says yes, and stopped elsewhere."""
    if not worth_starting(options.jobs):
        return False
    if len(paths) <= FEW_FILES and all(os.path.isfile(path) for path in paths):
        return True
    if not options.use_cache or options.diff:
        return False
    return Cache(options.cache_dir or project_root(paths) / DIRECTORY, "results").path.exists()


def _by_project(paths: list[Path]) -> list[list[Path]]:
    """``paths`` grouped by the project they belong to (:func:`project_roots`), in the order
    first named; paths that do not exist go with the first group, which reports them."""
    present: list[Path] = []
    missing: list[Path] = []
    for path in paths:
        (present if os.path.lexists(path) else missing).append(path)
    if len(present) <= 1:
        return [paths]
    owns = own_roots(present)
    roots = outermost(owns)
    if len(roots) == 1:
        return [paths]
    groups: dict[Path, list[Path]] = {root: [] for root in roots}
    for path, own in zip(present, owns, strict=True):
        groups[next(root for root in roots if own.is_relative_to(root))].append(path)
    found = [group for group in groups.values() if group]
    found[0] = missing + found[0]
    return found


def _merged(parts: list[RunResult]) -> RunResult:
    """One result for the projects of a run, as one run over them all would report it."""
    merged = RunResult()
    for part in parts:
        merged.stages.add(part.stages)
        merged.results += part.results
        merged.files_checked += part.files_checked
        merged.linted += part.linted
        merged.project = [*merged.project, *part.project]
        for message in part.problems.warnings:
            merged.problems.warn(message)
        merged.problems.missing += part.problems.missing
        merged.problems.config_errors += [
            message for message in part.problems.config_errors
            if message not in merged.problems.config_errors
        ]
    return merged


def _run_project(
    paths: list[Path],
    resolver: ConfigResolver,
    options: RunOptions,
    progress: Callable[[int, int, str], None] | None = None,
    given: Given | None = None,
    helper: LintHelper | None = None,
) -> RunResult:
    """:func:`run` over paths of one project; ``helper`` lints the files left for this process
    (the survey leaves it those that need no index)."""
    forget_file_keys()
    stages = Stages()
    began = time.perf_counter()
    walked: Walked = {}
    problems = Problems()
    if given is None:
        files = list(iter_source_files(
            paths, resolver, force_exclude=options.force_exclude, record=walked,
            problems=problems,
        ))
    else:
        files = given.files
    stages.walk = time.perf_counter() - began
    paths = [path for path in paths if path not in problems.missing] or [Path(".")]
    write = options.fix and not options.diff
    # One LintOptions per distinct (settings, enabled rules): most runs have a single one.
    lints: list[LintOptions] = []
    lint_ids: dict[tuple[int, frozenset[str]], int] = {}
    kept_alive: list[Settings] = []  # ids stay unique while their objects live
    jobs: list[_Job] = []
    by_folder: dict[str, Settings] = {}  # a folder's files share its settings: no stat per file
    for path in files:
        folder = os.path.dirname(path)
        settings = by_folder.get(folder) if folder else None
        if settings is None:
            settings = resolver.for_path(path)
            if folder and os.path.isfile(path):
                by_folder[folder] = settings
        lint_key = (id(settings), settings.enabled_for(path))
        lint_id = lint_ids.get(lint_key)
        if lint_id is None:
            lint_id = lint_ids[lint_key] = len(lints)
            lints.append(lint_options_for(settings, path, options))
            kept_alive.append(settings)
        jobs.append(_Job(path, None, lint_id))
    all_enabled = {rule for lint in lints for rule in lint.rules}
    problems.indexing = True  # a broken configuration met from here on governs no linted file
    index_wanted = needs_index(all_enabled)
    project_files: Sequence[Path] | None = None  # None: as the project jobs spell them
    if index_wanted and given is None and not _is_whole_project(paths) \
            and not _any_reads_index(jobs, lints):
        # A few files named (pre-commit, an editor): none of them keeps a rule that reads the
        # project index after the pre-filters, so the project is neither walked nor surveyed.
        # Their results are those of a run with the index, which those rules never read.
        index_wanted = False
        project_files = _LazyProject(jobs, paths, resolver, walked, problems)
    order = _add_project_files(
        jobs, paths, resolver, index_wanted, walked, problems,
        project=given.project if given is not None else None,
    )
    collectors = Collectors.for_rules(tuple(sorted(all_enabled, key=lambda rule: rule.code)))

    # Diffing always works from the file as it is. Fixing reads the cache for files whose
    # cached result has nothing to fix (the fix loop would leave them as they are, and report
    # what a check reports), and fills it with the results of files it did not change.
    caching = options.use_cache and not options.diff
    cache_dir = options.cache_dir or project_root(paths) / DIRECTORY
    survey_cache = Cache(cache_dir, "survey", is_survey) if caching else None
    result_cache = Cache(cache_dir, "results", is_file_result) if caching else None
    stats_cache = Cache(cache_dir, "stats", is_stat) if caching else None
    processes = options.jobs or os.cpu_count() or 1

    # The linted files come first in ``jobs``; the project's other files after them are read
    # only if a rule asks the index a question (DemandIndex tests them then).
    linted = len(files)
    total = linted * 2

    def surveyed(done: int) -> None:
        if progress is not None:
            progress(done, total, f"reading {plural(linted, 'file')}")

    began = time.perf_counter()
    surveys, contents, early = survey_files(
        jobs[:linted], lints, collectors, survey_cache, processes,
        surveyed if progress else None, write if helper is None else None, gather=False,
        stats=stats_cache, linting=helper.want if helper else None,
    )
    stages.survey, stages.surveyed = time.perf_counter() - began, linted
    began = time.perf_counter()  # the index stage: the index made, the files judged
    # The index gathers a collector's facts when a rule first asks for them; a lint result is
    # cached with the collectors gathered when it was made (``reads``) and their digests.
    facts_cache = Cache(cache_dir, "facts", is_facts) if caching else None
    digest_cache = Cache(cache_dir, "digests", is_facts) if caching else None
    reads_cache = Cache(cache_dir, "reads", _is_names) if caching else None
    index = DemandIndex(
        [
            Source(jobs[number].path, jobs[number].fact_path or "", surveys[number].deferred,
                   contents[number])
            if number < linted else Source(jobs[number].path, jobs[number].fact_path or "")
            for number in order if number >= linted or surveys[number].deferred
        ],
        collectors.collectors, facts_cache, _gather_in_pool(processes), digest_cache,
    )
    for number in range(linted):
        fact_path = jobs[number].fact_path
        if surveys[number].read and fact_path is not None:
            index.known(fact_path, surveys[number].read)
    index.in_play = _collectors_in_play(jobs[:linted], surveys, lints)
    lint_keys = [_lint_key(lint) for lint in lints]

    results: list[FileResult | None] = [None] * linted
    result_keys: list[str | None] = [None] * linted
    reads: dict[int, tuple[str, ...]] = {}  # ``name, digest`` pairs each new result was made with
    pending: list[int] = []
    linted_early: list[int] = []  # linted by the survey: no rule of theirs reads the index
    named = {os.path.abspath(path) for path in paths if os.path.isfile(path)}
    dropped: list[int] = []  # wanted by the syntax stage, dropped by the index stage: cached
    # Files the index stage keeps go to the lint workers as it keeps them (_LintStream).
    sizes: dict[int, int] = {}
    judging = _largest_wanted_first(jobs[:linted], surveys, lints, sizes)
    stream = _LintStream(
        jobs, surveys, lints, write, index, collectors, processes, sizes, helper
    )
    # The bar's second stage: the files some rule wants, judged one by one (the index stage,
    # where a large project's questions are asked), then those kept, linted.
    wanted = len(sizes)
    indexing = f"indexing {plural(wanted, 'file')}"
    with stream:
        for judged, number in enumerate(judging):
            if progress and judged < wanted:
                progress(linted + judged, linted + 2 * wanted, indexing)
            job, survey = jobs[number], surveys[number]
            assert job.lint_id is not None
            lint = lints[job.lint_id]
            if given is not None and os.path.abspath(job.path) not in given.wanted:
                results[number] = FileResult(filename=str(job.path), skipped=True)
                continue
            content = contents[number]
            if wants_lint(survey, lint) and result_cache is not None and reads_cache is not None \
                    and content is not None:
                # Before the index stage: a result is cached with the digests of the facts read
                # when it was made, that stage's questions included, so a hit needs no question.
                key = result_keys[number] = digest(lint_keys[job.lint_id], str(job.path), content)
                names = reads_cache.get(key)
                if names is not None:
                    hit = cached_result(result_cache.get(reads_key(key, index.digests(names))))
                    if hit is not None and not (lint.fix and _has_fixes(hit, lint)) and not (
                        hit.skipped and os.path.abspath(job.path) in named
                    ):
                        results[number] = hit
                        continue
            stages.asked += _asks_index(survey, job, lint)
            survey = surveys[number] = _index_stage(survey, job, lint, index)
            if not wants_lint(survey, lint):
                if os.path.abspath(job.path) in named and _cannot_parse(
                    job.path, lint, result_cache, contents[number]
                ):
                    # A file the user named is reported when it cannot be parsed, whatever the
                    # pre-filter says: linted without it, so that SL001 says why.
                    unfiltered = replace(lint, use_prefilter=False)
                    lints.append(unfiltered)
                    jobs[number] = replace(job, lint_id=len(lints) - 1)
                    surveys[number] = replace(survey, rules=None)
                    result_keys[number] = None
                    pending.append(number)
                    stream.add(number)
                    continue
                # What lint_source would say, without a worker process or a second read.
                results[number] = FileResult(filename=str(job.path), skipped=True)
                if result_keys[number] is not None:
                    reads[number], _ = _index_reads(index)
                    dropped.append(number)
                continue
            if number in early:
                results[number] = early[number]
                reads[number] = ()  # none of its rules reads the index
                linted_early.append(number)
                continue
            pending.append(number)
            stream.add(number)

        total = linted + wanted + len(pending)
        done = linted + wanted
        stages.index = time.perf_counter() - began
        began = time.perf_counter()
        linting = f"linting {len(pending)}"
        if progress:
            progress(done, total, linting)

        def linted_one(number: int, result: FileResult, pairs: tuple[str, ...]) -> None:
            nonlocal done
            lint_id = jobs[number].lint_id
            if lint_id is not None and not _reads_index(surveys[number], lints[lint_id]):
                pairs = ()  # as if linted by the survey: a warm run checks no facts for it
            results[number], reads[number] = result, pairs
            done += 1
            if progress:
                progress(done, total, linting)

        stream.finish(linted_one)
    stages.lint, stages.linted = time.perf_counter() - began, len(pending) + len(linted_early)
    stages.helped = stream.helped

    began = time.perf_counter()
    if result_cache is not None and survey_cache is not None and reads_cache is not None:
        for number in pending + linted_early + dropped:
            done_key, done_result = result_keys[number], results[number]
            pairs = reads.get(number)
            if done_key is None or done_result is None or pairs is None:
                continue
            if result_is_cacheable(done_result) and done_result.fixed == 0:
                # Not written, nothing fixed: the fix loop changed nothing, so this is also what
                # a check reports (a file fixed in memory only is left out).
                reads_cache.put(done_key, pairs[0::2])
                result_cache.put(reads_key(done_key, pairs), done_result)
        result_cache.save()
        survey_cache.save()
        reads_cache.save()
        index.keep_snapshot()  # its workers are done: what they stamped holds for these files
        for cache in (facts_cache, digest_cache, stats_cache):
            if cache is not None:
                cache.save()
    final = [result for result in results if result is not None]
    if project_files is None:
        project_files = [jobs[number].path for number in order]
    stages.caches = time.perf_counter() - began
    return RunResult(
        results=final, files_checked=len(files), problems=problems, linted=files,
        project=project_files, stages=stages,
    )


# A pre-survey of the named files costs their text pre-filter (and, for some, an ``ast`` parse)
# once more when one of them turns out to need the index: worth it for the few files of
# pre-commit or an editor, not for a folder of thousands.
PRESURVEY_LIMIT = 500


def _is_whole_project(paths: list[Path]) -> bool:
    """Whether the run lints the project's root folder itself: its walk is the project's."""
    return len(paths) == 1 and os.path.isdir(paths[0]) \
        and paths[0].resolve() == project_root(paths)


def _any_reads_index(jobs: list[_Job], lints: list[LintOptions]) -> bool:
    """Whether any of the linted ``jobs`` keeps, after the text and syntax pre-filters, a rule
    that reads the project index (or cannot be decided without linting it). Stops at the first
    such file; more than :data:`PRESURVEY_LIMIT` files count as yes."""
    if len(jobs) > PRESURVEY_LIMIT:
        return True
    no_facts = Collectors()
    for job in jobs:
        assert job.lint_id is not None
        lint = lints[job.lint_id]
        survey = _survey(replace(job, fact_path=None), lints, no_facts)
        if survey.rules is None or _reads_index(survey, lint):
            return True
        if not survey.rules and _cannot_parse(job.path, lint, None, None):
            return True  # linted without the pre-filter (SL001 says why): every rule may run
    return False


class _LazyProject(Sequence[Path]):
    """The project's files in its order, walked only when asked for (``--since`` asks, to
    survey the project as it was): a run that needed no index did not walk it."""

    def __init__(self, jobs: list[_Job], paths: list[Path], resolver: ConfigResolver,
                 walked: Walked, problems: Problems) -> None:
        self._linted = {os.path.abspath(job.path): job.path for job in jobs}
        # The root now: the paths may be relative to a folder the caller leaves.
        self._walk = (project_roots(paths), resolver, walked, problems)
        self._files: list[Path] | None = None

    def _load(self) -> list[Path]:
        if self._files is None:
            roots, resolver, walked, problems = self._walk
            self._files = [
                self._linted.get(os.path.abspath(path), path)
                for path in iter_source_files(roots, resolver, known=walked, problems=problems)
            ]
        return self._files

    def __len__(self) -> int:
        return len(self._load())

    @overload
    def __getitem__(self, index: int) -> Path: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Path]: ...
    def __getitem__(self, index: int | slice) -> Path | Sequence[Path]:
        return self._load()[index]


def _add_project_files(
    jobs: list[_Job], paths: list[Path], resolver: ConfigResolver, wanted: bool,
    walked: Walked | None = None, problems: Problems | None = None,
    project: list[Path] | None = None,
) -> list[int]:
    """Give the linted jobs their place in the project index and add the project's other files
    (the nearest ``pyproject.toml`` or git root around each of ``paths``, :func:`project_roots`)
    as index-only jobs. Returns the
    jobs in the project's file order, the order the index is merged in."""
    if not wanted:
        return []
    root = project_root(paths)
    if project is None and len(paths) == 1 and os.path.isdir(paths[0]) \
            and paths[0].resolve() == root:
        # Linting the whole project: the walk already made is the project's.
        for number, job in enumerate(jobs):
            jobs[number] = replace(job, fact_path=str(job.path))
        return list(range(len(jobs)))
    linted = {os.path.abspath(job.path): number for number, job in enumerate(jobs)}
    order: list[int] = []
    walk = project if project is not None else iter_source_files(
        project_roots(paths), resolver, known=walked, problems=problems
    )
    for path in walk:
        found = linted.get(os.path.abspath(path))
        if found is None:
            order.append(len(jobs))
            jobs.append(_Job(path, str(path), None))
        else:
            jobs[found] = replace(jobs[found], fact_path=str(path))
            order.append(found)
    return order


def _is_names(value: object) -> bool:
    return isinstance(value, tuple) and all(isinstance(name, str) for name in value)


def _lint_key(lint: LintOptions) -> str:
    """Everything in a file's lint options that changes its result."""
    return repr((
        __version__,
        sorted(rule.code for rule in lint.rules),
        sorted((key, repr(value)) for key, value in lint.options.items()),
        lint.want_edits,
        lint.use_prefilter,
        None if lint.fixable is None else sorted(lint.fixable),
        lint.ignore_noqa,
    ))
