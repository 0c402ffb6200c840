"""Which files to lint: walk the named paths, honour default excludes, configured excludes and
``.gitignore`` files (with ``pathspec``), and keep ``.py`` / ``.pyi`` files.

A file named on the command line is linted even when excluded, unless ``--force-exclude`` is given
(what pre-commit needs: it names files itself).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec

from sampler_lint.analysis.index import RealPaths
from sampler_lint.engine import replay
from sampler_lint.engine.config import ConfigError, ConfigResolver
from sampler_lint.engine.plain_patterns import PlainPatterns

SOURCE_SUFFIXES = (".py", ".pyi")
# What a run looks for in the folders above those it lists, besides configuration files: the git
# root and its ignore files, and the ``__init__.py`` of a package the project sits in
# (:mod:`sampler_lint.engine.replay` keeps whether each is there).
LOOKED_FOR_ABOVE = (".git", ".gitignore", "__init__.py")


def project_root(paths: list[Path]) -> Path:
    """The nearest directory above the named paths holding ``pyproject.toml`` or ``.git``."""
    resolved = [p.resolve() for p in paths] or [Path.cwd().resolve()]
    start = resolved[0] if os.path.isdir(resolved[0]) else resolved[0].parent
    common = Path(os.path.commonpath([str(p) for p in resolved])) if len(resolved) > 1 else start
    if os.path.isfile(common):
        common = common.parent
    for folder in [common, *common.parents]:
        # os.path's tests, not Path's: they answer False where a folder may not be searched
        # (Path's raise PermissionError before Python 3.12).
        if os.path.isfile(folder / "pyproject.toml") or os.path.exists(folder / ".git"):
            return folder
    return common


def project_roots(paths: list[Path]) -> list[Path]:
    """The projects the named paths belong to: each path's own :func:`project_root`, a project
    inside another left to the outer one, in the order first named. Paths from two repositories
    are two projects: their common folder may hold many more that nothing named."""
    if len(paths) <= 1:
        return [project_root(paths)]
    return outermost(own_roots(paths))


def own_roots(paths: list[Path]) -> list[Path]:
    """Each path's own :func:`project_root`, in the order of ``paths``."""
    by_folder: dict[str, Path] = {}  # pre-commit names many files of few folders
    found: list[Path] = []
    for path in paths:
        where = os.path.abspath(path)
        folder = where if os.path.isdir(where) else os.path.dirname(where)
        root = None if os.path.islink(path) else by_folder.get(folder)  # a link: its target's
        if root is None:
            root = project_root([path])
            if not os.path.islink(path):
                by_folder[folder] = root
        found.append(root)
    return found


def outermost(roots: list[Path]) -> list[Path]:
    """``roots`` without repeats and without those inside another, in the order first given."""
    found = dict.fromkeys(roots)
    return [
        root for root in found
        if not any(other != root and root.is_relative_to(other) for other in found)
    ]


def _matcher(lines: list[str]) -> Callable[[str], bool]:
    """Whether a ``.gitignore`` of these ``lines`` ignores a path: ``GitIgnoreSpec.match_file``,
    with the patterns that ignore a path tried as one regular expression: pathspec's
    pattern-by-pattern loop was most of a warm run's time (a 200-line ``.gitignore`` tried on
    every file).

    The last pattern that matches decides. So a path no ignoring pattern matches is kept, and
    one that some ignoring pattern matches and no negation (``!pattern``) matches is ignored;
    only a path both kinds match (rare) needs pathspec's ordered loop, and only then is the
    spec built: it compiles each line's expression on its own (5 ms for 140 lines). The plain
    ignoring lines (a name, a name's ending: most of them) are matched without an expression
    (:class:`PlainPatterns`)."""
    readable, pairs, plain = _expressions(lines)

    @functools.cache
    def spec() -> pathspec.GitIgnoreSpec:
        return pathspec.GitIgnoreSpec.from_lines(readable)

    if not all(regex.startswith("^") for regex, _ in pairs):
        # pathspec searches an unanchored expression (``*/`` is ``(?P<ps_d>/)``, found
        # anywhere in the path): only its own loop answers those.
        return lambda path: bool(spec().match_file(path))
    expression = _combined([regex for regex, include in pairs if include])
    negating = _combined([regex for regex, include in pairs if not include])
    if expression is None and not plain:
        return lambda path: False  # a negation alone un-ignores nothing that was ignored

    def ignoring(path: str) -> bool:
        return plain.matches(path) or (
            expression is not None and expression.match(path) is not None
        )

    if negating is None:
        return ignoring

    def matches(path: str) -> bool:
        if not ignoring(path):
            return False
        if negating.match(path) is None:
            return True
        return bool(spec().match_file(path))

    return matches


def _expressions(
    lines: list[str],
) -> tuple[list[str], list[tuple[str, bool]], PlainPatterns]:
    """The lines pathspec can read (a lone ``!`` is left out, as git leaves it out, instead of
    stopping the run), the plain patterns among them (:class:`PlainPatterns`: they all ignore),
    and the expression of each other pattern with whether it ignores (``False``: a negation);
    blank lines and comments have none. The expressions are those ``GitIgnoreSpec`` compiles,
    as text."""
    pattern = _pattern_class()
    readable: list[str] = []
    pairs: list[tuple[str, bool]] = []
    plain = PlainPatterns()
    for line in lines:
        if plain.add(line):
            readable.append(line)
            continue
        try:
            regex, include = pattern.pattern_to_regex(line)
        except ValueError:
            continue
        readable.append(line)
        if include is not None:
            pairs.append((regex if isinstance(regex, str) else "", include))
    return readable, pairs, plain


@functools.cache
def _pattern_class() -> Any:
    """The class of ``GitIgnoreSpec``'s patterns in the installed pathspec (it changed name
    between 0.12 and 1.0)."""
    return type(pathspec.GitIgnoreSpec.from_lines(["x"]).patterns[0])


# How pathspec begins the expression of a pattern that may match at any depth (``*.pyc``,
# ``build/``): most lines of a ``.gitignore``.
_ANY_DEPTH = "^(?:.+/)?"


def _combined(regexes: list[str]) -> re.Pattern[str] | None:
    """One expression matching what any of ``regexes`` matches (``None`` for none). The
    patterns that may match at any depth share one leading ``(?:.+/)?``: a path is then split at
    its slashes once, not once per pattern (a path matches ``^(?:.+/)?(?:A|B)`` exactly when it
    matches ``^(?:.+/)?A`` or ``^(?:.+/)?B``)."""
    bodies = [regex.replace("(?P<ps_d>", "(?:") for regex in regexes]
    if not bodies:
        return None
    anywhere = [body[len(_ANY_DEPTH):] for body in bodies if body.startswith(_ANY_DEPTH)]
    anchored = [f"(?:{body})" for body in bodies if not body.startswith(_ANY_DEPTH)]
    if anywhere:
        anchored.append(_ANY_DEPTH + "(?:" + "|".join(f"(?:{body})" for body in anywhere) + ")")
    return re.compile("|".join(anchored))


@dataclass
class Problems:
    """What a walk could not look at: warnings (an unreadable folder, a broken link; each said
    once however many walks meet it) and the named paths that do not exist (errors)."""

    warnings: list[str] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    #: Broken configurations that govern a linted file: errors (the run exits 2).
    config_errors: list[str] = field(default_factory=list)
    #: Set while walking the project for the index only: a broken configuration met then governs
    #: no linted file, and is a warning.
    indexing: bool = False

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def broken_config(self, folder: Path, error: ConfigError) -> None:
        """A configuration that cannot be read governs ``folder``: nothing under it is walked."""
        message = str(error)
        if not self.indexing:
            if message not in self.config_errors:
                self.config_errors.append(message)
        elif message not in self.config_errors:
            self.warn(f"{message} (it governs no linted file: {folder} is left out of the "
                      "project index)")


def _reason(error: OSError) -> str:
    return error.strerror or type(error).__name__


@dataclass
class _GitIgnores:
    """The ``.gitignore`` files that apply to a directory, nearest last."""

    specs: list[tuple[Path, Callable[[str], bool]]] = field(default_factory=list)

    def child(self, directory: Path) -> _GitIgnores:
        return self.with_file(directory, directory / ".gitignore")

    def with_file(self, base: Path, ignore_file: Path) -> _GitIgnores:
        """These ignores and the patterns of ``ignore_file``, relative to ``base``."""
        if not os.path.isfile(ignore_file):
            replay.note_input(str(ignore_file))  # made later, it changes what is linted
            return self
        try:
            lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return self
        return _GitIgnores([*self.specs, (base, _matcher(lines))])

    def ignores(self, path: Path, is_dir: bool) -> bool:
        return self.in_directory(str(path.parent)).ignores(path.name, is_dir)

    def in_directory(self, directory: str) -> _DirectoryIgnores:
        """The patterns that apply to the entries of ``directory`` (an absolute path), each with
        the directory's path relative to the pattern file's folder, so that an entry's path is
        one concatenation away (the walk asks this for every entry)."""
        applying: list[tuple[str, Callable[[str], bool]]] = []
        for base, matches in self.specs:
            folder = str(base)
            if directory == folder:
                applying.append(("", matches))
            elif directory.startswith(folder.rstrip("/") + "/"):
                applying.append((directory[len(folder.rstrip("/")) + 1:] + "/", matches))
        return _DirectoryIgnores(applying)


@dataclass(frozen=True)
class _DirectoryIgnores:
    """The ``.gitignore`` patterns that apply in one directory
    (:meth:`_GitIgnores.in_directory`)."""

    applying: list[tuple[str, Callable[[str], bool]]]

    def ignores(self, name: str, is_dir: bool) -> bool:
        entry = name + "/" if is_dir else name
        return any(matches(prefix + entry) for prefix, matches in self.applying)


def _git_root(directory: Path) -> Path | None:
    for folder in [directory, *directory.parents]:
        if os.path.exists(folder / ".git"):
            return folder
    return None


def _git_dir(root: Path) -> Path:
    """The repository's git directory (``.git``, or where a worktree's ``.git`` file points; a
    worktree shares ``info/exclude`` with the main repository through ``commondir``)."""
    dot_git = root / ".git"
    if not os.path.isfile(dot_git):
        return dot_git
    try:
        pointer = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return dot_git
    if not pointer.startswith("gitdir:"):
        return dot_git
    git_dir = (root / pointer[len("gitdir:"):].strip()).resolve()
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return git_dir
    return (git_dir / common).resolve()


@functools.lru_cache(maxsize=16)
def global_excludes_file(root: Path) -> Path | None:
    """git's global excludes file: ``core.excludesFile``, by default
    ``$XDG_CONFIG_HOME/git/ignore`` (``~/.config/git/ignore``)."""
    _note_git_configuration(root)
    try:
        process = subprocess.run(
            ["git", "config", "--path", "--get", "core.excludesFile"],
            cwd=root, capture_output=True, check=False, timeout=10,
        )
        configured = os.fsdecode(process.stdout.strip()) if process.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        configured = ""
    if configured:
        return Path(os.path.expanduser(configured))
    return Path(_config_home()) / "git" / "ignore"


def _config_home() -> str:
    """``$XDG_CONFIG_HOME``, by default ``~/.config``, where git keeps its user files."""
    return os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")


def _note_git_configuration(root: Path) -> None:
    """For a run being recorded (:mod:`sampler_lint.engine.replay`), the files ``git config``
    reads, which this process does not open itself: the usual places (a file made there later
    changes the answer) and every file git names as an origin, the ones ``[include]`` and
    ``[includeIf]`` pull in among them (``HEAD`` too: ``onbranch:`` conditions follow it)."""
    if not replay.is_recording():
        return
    git_dir = _git_dir(root)
    for path in (
        "/etc/gitconfig", os.path.join(os.path.expanduser("~"), ".gitconfig"),
        os.path.join(_config_home(), "git", "config"),
        git_dir / "config", git_dir / "config.worktree", git_dir / "HEAD",
    ):
        replay.note_input(str(path))
    try:
        listing = subprocess.run(
            ["git", "config", "--list", "--show-origin", "--includes"],
            cwd=root, capture_output=True, check=False, timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        replay.spoil()  # what git read is unknown
        return
    for line in listing.splitlines():
        origin, _, setting = line.partition(b"\t")
        if origin.startswith(b"file:") and not origin.startswith(b'file:"'):
            where = os.path.join(root, os.fsdecode(origin[len(b"file:"):]))
            replay.note_input(where)
            name, _, value = os.fsdecode(setting).partition("=")
            if name.lower().startswith(("include.", "includeif.")) and name.endswith(".path"):
                # Named here, but listed only if it sets something: watched either way.
                included = os.path.expanduser(value)
                replay.note_input(os.path.join(os.path.dirname(where), included))
        elif not origin.startswith(b"command line:"):  # the environment is part of the key
            replay.spoil()  # a quoted path, a blob, standard input: not followed


def _ignores_above(directory: Path) -> _GitIgnores:
    """What git ignores above ``directory``: the global excludes file and
    ``.git/info/exclude`` (both relative to the git root), then the ``.gitignore`` files from the
    git root down to ``directory`` (exclusive)."""
    root = _git_root(directory)
    ignores = _GitIgnores()
    if root is None:
        return ignores
    excludes = global_excludes_file(root)
    if excludes is not None:
        ignores = ignores.with_file(root, excludes)
    ignores = ignores.with_file(root, _git_dir(root) / "info" / "exclude")
    chain = [directory, *directory.parents]
    for folder in reversed(chain[1 : chain.index(root) + 1] if root in chain else []):
        ignores = ignores.child(folder)
    return ignores


# A walk's record of the directories it was named: real path -> (the .gitignore folders that
# applied above it, the files found under it). A later walk reaching the same directory under
# the same .gitignore files reuses them (the project index walks the project around the paths
# linted, and would otherwise walk those paths twice).
Walked = dict[str, tuple[tuple[Path, ...], list[Path]]]


def iter_source_files(
    paths: list[Path], resolver: ConfigResolver, *, force_exclude: bool = False,
    record: Walked | None = None, known: Walked | None = None, problems: Problems | None = None,
) -> Iterator[Path]:
    """Yield each file to lint once, in a stable order (sorted within each directory). With
    ``record``, note what each named directory held; with ``known``, reuse such notes. With
    ``problems``, a named path that does not exist is noted there (a broken link: a warning) and
    the others are still walked (without, it raises :class:`FileNotFoundError`), and what the
    walk could not read is noted as a warning."""
    seen: set[str] = set()  # real paths as text: a Path per file costs more than the walk
    reals = RealPaths()  # where linked files lead, their folders resolved once
    for path in paths:
        if not os.path.exists(path):
            if problems is None:
                raise FileNotFoundError(str(path))
            if os.path.islink(path):
                problems.warn(f"{path}: broken symbolic link; skipped")
            else:
                problems.missing.append(path)
            continue
        try:
            settings = resolver.for_path(path)
        except ConfigError as error:
            if problems is None:
                raise
            problems.broken_config(path, error)
            continue
        if os.path.isdir(path):
            if force_exclude and settings.is_excluded(path.resolve()):
                continue
            ignores = _ignores_above(path.resolve())
            if settings.respect_gitignore and ignores.ignores(path.resolve(), True):
                if force_exclude:
                    continue
                # Named by the user: linted though git ignores it (as Ruff does). The patterns
                # that match the folder would match everything in it, so none from above apply.
                ignores = _GitIgnores()
            if record is None:
                yield from _walk(path, resolver, ignores, seen, reals, known, problems)
                continue
            found = list(_walk(path, resolver, ignores, seen, reals, known, problems))
            record[str(path.resolve())] = (tuple(base for base, _ in ignores.specs), found)
            yield from found
        else:
            if force_exclude and (
                settings.is_excluded(path)
                or (settings.respect_gitignore and _ignores_above(path.resolve().parent)
                    .child(path.resolve().parent).ignores(path.resolve(), False))
            ):
                continue
            key = str(path.resolve())
            if key not in seen:
                seen.add(key)
                yield path


def _walk(
    directory: Path, resolver: ConfigResolver, ignores: _GitIgnores, seen: set[str],
    reals: RealPaths, known: Walked | None = None, problems: Problems | None = None,
    absolute: Path | None = None,
) -> Iterator[Path]:
    """The files under ``directory``; ``absolute``: its real path, when the caller knows it (a
    folder met by the walk, which never follows a link, is its parent's real path and name)."""
    if absolute is None:
        absolute = directory.resolve()
    try:
        settings = resolver.for_directory(absolute, resolved=True)
    except ConfigError as error:
        # A broken configuration governs only the files under it (a sibling sub-project's must
        # not stop a run over files it does not govern).
        if problems is None:
            raise
        problems.broken_config(directory, error)
        return
    if known:
        bases, found = known.get(str(absolute), ((), []))
        if found and bases == tuple(base for base, _ in ignores.specs):
            for path in found:
                key = os.path.abspath(path)
                if key not in seen:
                    seen.add(key)
                    yield path
            return
    try:
        below_root = absolute.relative_to(settings.resolved_root).as_posix()
        prefix = "" if below_root == "." else below_root + "/"
    except ValueError:
        prefix = None  # outside the configuration's root: only names can match
    if settings.respect_gitignore:
        ignores = ignores.child(absolute)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as error:
        # A root-owned Docker volume, lost+found: say so once and lint the rest.
        if problems is not None:
            problems.warn(f"{directory}: cannot read directory ({_reason(error)}); skipped")
        return
    notebooks = settings.options.get("notebooks", True)
    check_ignores = settings.respect_gitignore and bool(ignores.specs)
    here = ignores.in_directory(str(absolute)) if check_ignores else None
    for entry in entries:
        try:
            is_dir = entry.is_dir()
            is_file = entry.is_file()
        except OSError:
            continue
        if not is_dir and not entry.name.endswith(SOURCE_SUFFIXES):
            if not (notebooks and entry.name.endswith(".ipynb")):
                continue
        name = entry.name + "/" if is_dir else entry.name  # so `build/` patterns match here
        relative = "" if prefix is None else prefix + name
        if settings.is_excluded_entry(name, relative):
            continue
        # ``absolute`` is resolved and directory links are never followed, so this is the
        # entry's real path unless the entry itself is a link.
        if here is not None and here.ignores(entry.name, is_dir):
            continue
        path = Path(entry.path)
        if is_dir:
            if entry.is_symlink():
                continue  # never follow directory links: they loop and leave the project
            yield from _walk(
                path, resolver, ignores, seen, reals, known, problems, absolute / entry.name
            )
        elif is_file:
            key = os.path.join(absolute, entry.name)
            if entry.is_symlink():
                key = reals.of(key)
            if key not in seen:
                seen.add(key)
                yield path
        elif problems is not None and entry.is_symlink():
            problems.warn(f"{path}: broken symbolic link; skipped")
