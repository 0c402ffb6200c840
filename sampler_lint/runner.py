"""Running a whole check: find the files, build the project index, lint every file (in worker
processes when there are many), write fixes, and collect the results in a stable order."""

from __future__ import annotations

import ast
import os
import pickle
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from sampler_lint import __version__, registry
from sampler_lint.cache import DIRECTORY, Cache, cached_result, digest, result_is_cacheable
from sampler_lint.config import ConfigResolver, Settings
from sampler_lint.discovery import iter_source_files, project_root
from sampler_lint.findings import FileResult
from sampler_lint.index import COMMON_REQUIRES, EMPTY_INDEX, ProjectIndex, collect_common_facts
from sampler_lint.linter import LintOptions, decode, lint_source, needs_parsing
from sampler_lint.rule import Rule
from sampler_lint.writer import WriteError, write_atomic

# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 48


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


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)
    files_checked: int = 0


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
    )


# ------------------------------------------------------------------------------------------------
# The project index


def _index_file(path: Path, collectors: tuple[type[Rule], ...], common: bool) -> ProjectIndex:
    try:
        data = path.read_bytes()
    except OSError:
        return ProjectIndex()
    return index_source(source_text(data), str(path), collectors, common)


def source_text(data: bytes) -> str:
    """The text of a source for the index: its BOM and coding cookie honoured (Python's parser
    rejects a stray BOM), undecodable bytes replaced rather than the file dropped."""
    try:
        return decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return data.decode("utf-8", "replace")


def index_source(
    text: str, path: str, collectors: tuple[type[Rule], ...], common: bool
) -> ProjectIndex:
    """The facts one source contributes to the project index."""
    index = ProjectIndex()
    wanted = [rule for rule in collectors if _matches(rule.index_requires, text)]
    want_common = common and any(token in text for token in COMMON_REQUIRES)
    if not wanted and not want_common:
        return index
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return index
    if want_common:
        for kind, values in collect_common_facts(tree, path).items():
            index.add(kind, values)
    added: set[int] = set()
    for rule in wanted:
        facts = rule.collect_facts(tree, path)
        if id(facts) in added:
            continue  # the same facts, shared by several rules: added once
        added.add(id(facts))
        for kind, values in facts.items():
            index.add(kind, values)
    return index


def _matches(groups: tuple[tuple[str, ...], ...], text: str) -> bool:
    return all(any(token in text for token in group) for group in groups)


def needs_index(rules: Iterable[type[Rule]]) -> bool:
    return any(rule.index_requires or rule.uses_index for rule in rules)


def build_index(
    files: Iterable[Path], rules: Iterable[type[Rule]], cache: Cache | None = None,
    jobs: int = 1,
) -> ProjectIndex:
    """The project index over ``files``: each file's facts from the cache or from parsing it (in
    ``jobs`` worker processes when many files need parsing), merged in file order, so the index is
    the same whatever the number of processes."""
    rules = tuple(rules)
    if not needs_index(rules):
        return EMPTY_INDEX
    collectors = tuple(rule for rule in rules if rule.index_requires)
    common = any(rule.uses_index for rule in rules)
    salt = repr((sorted(r.code for r in collectors), common))
    paths = list(files)
    facts: list[ProjectIndex | None] = [None] * len(paths)
    keys: list[str | None] = [None] * len(paths)
    missing: list[int] = []
    for number, path in enumerate(paths):
        if cache is not None:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            keys[number] = key = digest(salt, str(path), data)
            hit = cache.get(key)
            if isinstance(hit, ProjectIndex):
                facts[number] = hit
                continue
        missing.append(number)
    tasks = [(paths[number], collectors, common) for number in missing]
    if jobs > 1 and len(tasks) >= PARALLEL_THRESHOLD:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            chunk = max(1, len(tasks) // (jobs * 8))
            computed = list(pool.map(_index_task, tasks, chunksize=chunk))
    else:
        computed = [_index_task(task) for task in tasks]
    for number, computed_facts in zip(missing, computed, strict=True):
        facts[number] = computed_facts
        computed_key = keys[number]
        if cache is not None and computed_key is not None:
            cache.put(computed_key, computed_facts)
    index = ProjectIndex()
    for file_facts in facts:
        if file_facts is not None:
            index.merge(file_facts)
    return index


def _index_task(task: tuple[Path, tuple[type[Rule], ...], bool]) -> ProjectIndex:
    path, collectors, common = task
    return _index_file(path, collectors, common)


# ------------------------------------------------------------------------------------------------
# Linting files

_WORKER_INDEX: ProjectIndex = EMPTY_INDEX
_WORKER_LINTS: list[LintOptions] = []


def _init_worker(index: ProjectIndex, lints: list[LintOptions]) -> None:
    # Sent once per worker rather than with every file: tasks carry an index into ``lints``.
    global _WORKER_INDEX, _WORKER_LINTS
    _WORKER_INDEX = index
    _WORKER_LINTS = lints


def check_file(
    path: Path, lint: LintOptions, write: bool, index: ProjectIndex | None = None
) -> FileResult:
    name = str(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        from sampler_lint.linter import _parse_error

        result = FileResult(filename=name)
        reason = error.strerror or type(error).__name__
        result.findings.append(_parse_error(name, f"cannot read file: {reason}"))
        return result
    if path.suffix == ".ipynb":
        from sampler_lint.notebook import check_notebook

        try:
            return check_notebook(path, data, lint, index or _WORKER_INDEX, write)
        except Exception as error:  # a bug must not take the whole run down
            result = FileResult(filename=name, internal_error=True)
            result.errors.append(
                f"{name}: internal error, please report it: {type(error).__name__}: {error}"
            )
            return result
    try:
        result, fixed = lint_source(path, data, lint, index or _WORKER_INDEX)
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
            result, _ = lint_source(path, data, replace(lint, fix=False), index or _WORKER_INDEX)
            result.errors.append(str(error))
    return result


def _check_task(task: tuple[Path, int, bool]) -> FileResult:
    path, lint_id, write = task
    return check_file(path, _WORKER_LINTS[lint_id], write)


def project_index(
    paths: list[Path],
    resolver: ConfigResolver,
    rules: Iterable[type[Rule]],
    cache: Cache | None,
    jobs: int,
) -> ProjectIndex:
    """The facts of the whole project around ``paths`` (its root: the nearest ``pyproject.toml``
    or git root), when any of ``rules`` reads them."""
    rules = list(rules)
    if not needs_index(rules):
        return EMPTY_INDEX
    project_files = list(iter_source_files([project_root(paths)], resolver))
    return build_index(project_files, rules, cache, jobs)


def stdin_index(
    name: Path, data: bytes, resolver: ConfigResolver, lint: LintOptions, options: RunOptions
) -> ProjectIndex:
    """The project index for ``data`` read from standard input as ``name``: the project on disk
    around it, with ``data`` standing in for the file of that name (an editor's unsaved buffer),
    so stdin sees the same cross-file facts as a run over the saved file."""
    rules = tuple(lint.rules)
    if not needs_index(rules):
        return EMPTY_INDEX
    cache_dir = options.cache_dir or project_root([name]) / DIRECTORY
    cache = Cache(cache_dir, "index") if options.use_cache else None
    itself = name.resolve()
    files = [
        path for path in iter_source_files([project_root([name])], resolver)
        if path.resolve() != itself
    ]
    index = build_index(files, rules, cache, options.jobs or os.cpu_count() or 1)
    if cache is not None:
        cache.save()
    merged = ProjectIndex()
    merged.merge(index)
    collectors = tuple(rule for rule in rules if rule.index_requires)
    common = any(rule.uses_index for rule in rules)
    merged.merge(index_source(source_text(data), str(name), collectors, common))
    return merged


def run(
    paths: list[Path],
    resolver: ConfigResolver,
    options: RunOptions,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    files = list(iter_source_files(paths, resolver, force_exclude=options.force_exclude))
    write = options.fix and not options.diff
    # One LintOptions per distinct (settings, enabled rules): most runs have a single one.
    lints: list[LintOptions] = []
    lint_ids: dict[tuple[int, frozenset[str]], int] = {}
    kept_alive: list[Settings] = []  # ids stay unique while their objects live
    tasks: list[tuple[Path, int, bool]] = []
    for path in files:
        settings = resolver.for_path(path)
        lint_key = (id(settings), settings.enabled_for(path))
        lint_id = lint_ids.get(lint_key)
        if lint_id is None:
            lint_id = lint_ids[lint_key] = len(lints)
            lints.append(lint_options_for(settings, path, options))
            kept_alive.append(settings)
        tasks.append((path, lint_id, write))
    all_enabled = {rule for lint in lints for rule in lint.rules}

    # Fixing and diffing always work from the file as it is; linting may use the cache.
    caching = options.use_cache and not options.fix and not options.diff
    cache_dir = options.cache_dir or project_root(paths) / DIRECTORY
    index_cache = Cache(cache_dir, "index") if caching else None
    result_cache = Cache(cache_dir, "results") if caching else None

    jobs = options.jobs or os.cpu_count() or 1
    index = project_index(paths, resolver, all_enabled, index_cache, jobs)
    index_digest = digest(pickle.dumps(dict(index.facts))) if index.facts else ""
    lint_keys = [
        digest(_lint_key(lint), index_digest if needs_index(lint.rules) else "") for lint in lints
    ]

    results: list[FileResult | None] = [None] * len(tasks)
    keys: list[str | None] = [None] * len(tasks)
    pending: list[int] = []
    for number, (path, lint_id, _) in enumerate(tasks):
        try:
            data = path.read_bytes()
        except OSError:
            pending.append(number)  # check_file reports why it cannot be read
            continue
        if result_cache is not None:
            key = keys[number] = digest(lint_keys[lint_id], str(path), data)
            hit = cached_result(result_cache.get(key))
            if hit is not None:
                results[number] = hit
                continue
        if path.suffix != ".ipynb" and not needs_parsing(data, lints[lint_id]):
            # What lint_source would say, without a worker process or a second read.
            results[number] = FileResult(filename=str(path), skipped=True)
            continue
        pending.append(number)

    done = len(tasks) - len(pending)
    if progress and done:
        progress(done, len(tasks))
    if jobs > 1 and len(pending) >= PARALLEL_THRESHOLD:
        with ProcessPoolExecutor(
            max_workers=jobs, initializer=_init_worker, initargs=(index, lints)
        ) as pool:
            chunk = max(1, len(pending) // (jobs * 8))
            work = [tasks[number] for number in pending]
            for number, result in zip(
                pending, pool.map(_check_task, work, chunksize=chunk), strict=True
            ):
                results[number] = result
                done += 1
                if progress:
                    progress(done, len(tasks))
    else:
        for number in pending:
            path, lint_id, write_file = tasks[number]
            results[number] = check_file(path, lints[lint_id], write_file, index)
            done += 1
            if progress:
                progress(done, len(tasks))

    if result_cache is not None and index_cache is not None:
        for number in pending:
            done_key, done_result = keys[number], results[number]
            if done_key is None or done_result is None:
                continue
            if result_is_cacheable(done_result):
                result_cache.put(done_key, done_result)
        result_cache.save()
        index_cache.save()
    final = [result for result in results if result is not None]
    return RunResult(results=final, files_checked=len(files))


def _lint_key(lint: LintOptions) -> str:
    """Everything in a file's lint options that changes its result."""
    return repr((
        __version__,
        sorted(rule.code for rule in lint.rules),
        sorted((key, repr(value)) for key, value in lint.options.items()),
        lint.want_edits,
        lint.use_prefilter,
    ))
