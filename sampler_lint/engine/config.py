"""Configuration: ``[tool.sampler-lint]`` in ``pyproject.toml``, or ``sampler-lint.toml`` /
``.sampler-lint.toml`` (top-level keys). The closest configuration file to a linted path wins;
command-line options go on top. Unknown keys and bad values are errors naming the key and file.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pathspec

from sampler_lint.analysis.vocabulary import ENGINE_OPTION_KEYS, Vocabulary
from sampler_lint.engine import registry
from sampler_lint.engine.plain_patterns import PlainPatterns

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

CONFIG_FILES = (".sampler-lint.toml", "sampler-lint.toml", "pyproject.toml")

# Ruff's default excludes, plus ``build``, ``__pycache__`` and our own cache.
DEFAULT_EXCLUDES = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".sampler_lint_cache",
    ".svn",
    ".tox",
    ".venv",
    ".vscode",
    "__pycache__",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)


class ConfigError(Exception):
    """A configuration problem the user must fix; the CLI exits 2 with this message."""


_LIST_KEYS = (
    "select", "ignore", "extend-select", "exclude", "extend-exclude", "fixable", "unfixable",
    "extend-fixable",
)
_SELECTOR_KEYS = ("select", "ignore", "extend-select", "fixable", "unfixable", "extend-fixable")
_BOOL_KEYS = ("respect-gitignore", "unsafe-fixes", "force-exclude")
#: Keys that say how to run rather than what to find (read by the command line).
_STRING_KEYS = ("output-format", "required-version", "extend")


@dataclass(frozen=True)
class RawSettings:
    """Settings as written in one place (a file or the command line); ``None`` means unset."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    respect_gitignore: bool | None = None
    unsafe_fixes: bool | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    fixable: tuple[str, ...] | None = None
    extend_fixable: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()
    force_exclude: bool | None = None
    output_format: str | None = None

    def layered(self, top: RawSettings) -> RawSettings:
        """These settings with ``top`` (the command line) applied over them."""
        return RawSettings(
            select=top.select if top.select is not None else self.select,
            extend_select=self.extend_select + top.extend_select,
            ignore=self.ignore + top.ignore,
            exclude=top.exclude if top.exclude is not None else self.exclude,
            extend_exclude=self.extend_exclude + top.extend_exclude,
            per_file_ignores=self.per_file_ignores + top.per_file_ignores,
            respect_gitignore=(
                top.respect_gitignore
                if top.respect_gitignore is not None
                else self.respect_gitignore
            ),
            unsafe_fixes=top.unsafe_fixes if top.unsafe_fixes is not None else self.unsafe_fixes,
            options={**self.options, **top.options},
            fixable=top.fixable if top.fixable is not None else self.fixable,
            extend_fixable=self.extend_fixable + top.extend_fixable,
            unfixable=self.unfixable + top.unfixable,
            force_exclude=(
                top.force_exclude if top.force_exclude is not None else self.force_exclude
            ),
            output_format=top.output_format or self.output_format,
        )


@dataclass(frozen=True)
class Settings:
    """The effective settings for the files under one configuration root."""

    root: Path
    source: Path | None
    enabled: frozenset[str]
    exclude: tuple[str, ...]
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...]
    respect_gitignore: bool
    unsafe_fixes: bool
    options: Mapping[str, Any]
    #: The codes whose fixes may be offered and applied (``fixable`` minus ``unfixable``).
    fixable: frozenset[str] = frozenset()
    force_exclude: bool = False
    output_format: str | None = None

    @functools.cached_property
    def exclude_spec(self) -> pathspec.GitIgnoreSpec:
        return pathspec.GitIgnoreSpec.from_lines(self.exclude)

    @functools.cached_property
    def vocabulary(self) -> Vocabulary:
        return Vocabulary.from_options(dict(self.options))

    def is_excluded(self, path: Path) -> bool:
        """Whether ``path`` matches an exclude pattern (by name or by path below the root)."""
        spec = self.exclude_spec
        if spec.match_file(path.name):
            return True
        try:
            relative = path.resolve().relative_to(self.root.resolve())
        except ValueError:
            return False
        return any(
            spec.match_file(str(part))
            for part in [relative, *relative.parents]
            if str(part) not in ("", ".")
        )

    @functools.cached_property
    def resolved_root(self) -> Path:
        return self.root.resolve()

    @functools.cached_property
    def _exclude_matcher(self) -> Callable[[str], bool]:
        """One regular expression for all exclude patterns when none is negated (``!pattern``):
        the same answers as the spec, in one search instead of one per pattern. Plain patterns
        (a name, a name's ending: every default one) are matched without one
        (:class:`PlainPatterns`), and when all are plain no expression is made at all."""
        plain = PlainPatterns()
        others = [pattern for pattern in self.exclude if not plain.add(pattern)]
        if not others:
            return plain.matches
        spec = pathspec.GitIgnoreSpec.from_lines(others)
        patterns = [p for p in spec.patterns if p.include is not None]
        regexes = [getattr(p, "regex", None) for p in patterns]
        if all(p.include for p in patterns) and all(r is not None for r in regexes):
            if not regexes:
                return plain.matches
            # Each pattern names its groups alike; one expression may name a group only once.
            parts = [re.sub(r"\(\?P<\w+>", "(?:", r.pattern) for r in regexes if r is not None]
            combined = re.compile("|".join(f"(?:{part})" for part in parts))
            return lambda path: plain.matches(path) or combined.match(path) is not None
        return self.exclude_spec.match_file  # a negation: every pattern in order

    def is_excluded_entry(self, name: str, relative: str) -> bool:
        """:meth:`is_excluded` for a directory entry met while walking, given its name and its
        path below the root (``""`` outside the root): every directory above it was checked on
        the way down, so only the entry itself is matched."""
        matches = self._exclude_matcher
        return matches(name) or (relative not in ("", ".") and matches(relative))

    def enabled_for(self, path: Path) -> frozenset[str]:
        if not self.per_file_ignores:
            return self.enabled
        try:
            relative = str(path.resolve().relative_to(self.root.resolve()))
        except ValueError:
            relative = str(path)
        ignored: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            spec = pathspec.GitIgnoreSpec.from_lines([pattern])
            if spec.match_file(relative) or spec.match_file(path.name):
                ignored |= codes
        return self.enabled - ignored

    def cache_key(self) -> str:
        """A stable description of everything that changes findings (for the cache)."""
        return repr(
            (
                sorted(self.enabled),
                sorted(self.per_file_ignores),
                sorted((k, repr(v)) for k, v in self.options.items()),
                sorted(self.fixable),
            )
        )


# ------------------------------------------------------------------------------------------------
# Reading files


def _option_specs() -> dict[str, tuple[type, tuple[str, ...], Any]]:
    specs: dict[str, tuple[type, tuple[str, ...], Any]] = {
        key: (list, (), []) for key in ENGINE_OPTION_KEYS
    }
    specs["notebooks"] = (bool, (), True)  # lint `.ipynb` files cell by cell
    for rule in registry.all_rules():
        for option in rule.options:
            specs[option.key] = (option.kind, option.choices, option.default)
    return specs


def _string_list(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: '{key}' must be a list of strings, got {value!r}")
    return tuple(value)


def _check_selectors(values: Iterable[str], key: str, where: str) -> None:
    for value in values:
        try:
            registry.expand_selector(value)
        except registry.SelectorError as error:
            raise ConfigError(f"{where}: '{key}': {error}") from None


def parse_table(table: Mapping[str, Any], where: str) -> RawSettings:
    """Validate one ``[tool.sampler-lint]`` table (or a command-line equivalent)."""
    specs = _option_specs()
    known = (
        set(_LIST_KEYS) | set(_BOOL_KEYS) | set(_STRING_KEYS)
        | {"per-file-ignores", "extend-per-file-ignores"} | set(specs)
    )
    values: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            suggestion = _closest(key, known)
            hint = f" (did you mean '{suggestion}'?)" if suggestion else ""
            raise ConfigError(f"{where}: unknown key '{key}'{hint}")
        if key in _LIST_KEYS:
            values[key] = _string_list(value, key, where)
            if key in _SELECTOR_KEYS:
                _check_selectors(values[key], key, where)
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: '{key}' must be true or false, got {value!r}")
            values[key] = value
        elif key in _STRING_KEYS:
            if not isinstance(value, str):
                raise ConfigError(f"{where}: '{key}' must be a string, got {value!r}")
            values[key] = value
        elif key in ("per-file-ignores", "extend-per-file-ignores"):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}: '{key}' must be a table of pattern = [codes]")
            entries = []
            for pattern, codes in value.items():
                listed = _string_list(codes, f"{key}.{pattern}", where)
                _check_selectors(listed, f"{key}.{pattern}", where)
                entries.append((str(pattern), listed))
            values[key] = tuple(entries)
        else:
            kind, choices, _ = specs[key]
            if kind is list:
                options[key] = list(_string_list(value, key, where))
            elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ConfigError(
                    f"{where}: '{key}' must be a {kind.__name__}, got {value!r}"
                )
            elif choices and value not in choices:
                allowed = ", ".join(repr(c) for c in choices)
                raise ConfigError(f"{where}: '{key}' must be one of {allowed}, got {value!r}")
            else:
                options[key] = value
    output_format = values.get("output-format")
    if output_format is not None and output_format not in OUTPUT_FORMATS:
        allowed = ", ".join(repr(f) for f in OUTPUT_FORMATS)
        raise ConfigError(f"{where}: 'output-format' must be one of {allowed}, got "
                          f"{output_format!r}")
    if "required-version" in values:
        check_required_version(values["required-version"], where)
    return RawSettings(
        select=values.get("select"),
        extend_select=values.get("extend-select", ()),
        ignore=values.get("ignore", ()),
        exclude=values.get("exclude"),
        extend_exclude=values.get("extend-exclude", ()),
        per_file_ignores=values.get("per-file-ignores", ())
        + values.get("extend-per-file-ignores", ()),
        respect_gitignore=values.get("respect-gitignore"),
        unsafe_fixes=values.get("unsafe-fixes"),
        options=options,
        fixable=values.get("fixable"),
        extend_fixable=values.get("extend-fixable", ()),
        unfixable=values.get("unfixable", ()),
        force_exclude=values.get("force-exclude"),
        output_format=output_format,
    )


#: The names of the output formats (the reporters live in ``sampler_lint.output``, which the
#: engine does not import; ``tests/test_cli_flags.py`` checks the two lists agree).
OUTPUT_FORMATS = (
    "concise", "full", "github", "gitlab", "json", "json-lines", "junit", "rdjson", "sarif",
)

_VERSION_CLAUSE = re.compile(r"^\s*(==|!=|>=|<=|~=|>|<)?\s*v?([0-9]+(?:\.[0-9]+)*)\s*$")


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in re.findall(r"[0-9]+", text)[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def check_required_version(spec: str, where: str) -> None:
    """``required-version = ">=0.4"`` (PEP 440 comparison clauses, comma-separated; a bare
    version means ``==``): a configuration error when this sampler-lint does not satisfy it."""
    from sampler_lint import __version__

    current = _version_tuple(__version__)
    for clause in spec.split(","):
        match = _VERSION_CLAUSE.match(clause)
        if match is None:
            raise ConfigError(f"{where}: 'required-version' cannot be read: {spec!r}")
        operator, version = match.group(1) or "==", match.group(2)
        wanted = _version_tuple(version)
        if operator == "~=":
            depth = max(1, len(version.split(".")) - 1)
            ok = current >= wanted and current[:depth] == wanted[:depth]
        else:
            ok = {
                "==": current == wanted, "!=": current != wanted, ">=": current >= wanted,
                "<=": current <= wanted, ">": current > wanted, "<": current < wanted,
            }[operator]
        if not ok:
            raise ConfigError(
                f"{where}: required-version {spec!r} is not met by sampler-lint {__version__}"
            )


def _closest(key: str, known: Iterable[str]) -> str | None:
    import difflib

    matches = difflib.get_close_matches(key, sorted(known), n=1)
    return matches[0] if matches else None


def load_file(path: Path, _seen: tuple[Path, ...] = ()) -> RawSettings | None:
    """Settings from one file; ``None`` for a ``pyproject.toml`` without our table. A table with
    ``extend = "../base.toml"`` (relative to this file) is layered over the settings of that
    file, which may extend another in turn."""
    table_where = _read_table(path)
    if table_where is None:
        return None
    table, where = table_where
    settings = parse_table(table, where)
    base_name = table.get("extend")
    if base_name is None:
        return settings
    base = (path.parent / os.path.expanduser(base_name)).resolve()
    if base in _seen or base == path.resolve():
        raise ConfigError(f"{where}: 'extend' makes a circle through {base}")
    if not base.is_file():
        raise ConfigError(f"{where}: 'extend' names {base}, which does not exist")
    loaded = load_file(base, (*_seen, path.resolve()))
    if loaded is None:
        raise ConfigError(f"{where}: 'extend' names {base}, which has no [tool.sampler-lint]")
    return loaded.layered(settings)


def _read_table(path: Path) -> tuple[dict[str, Any], str] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, dict) or "sampler-lint" not in tool:
            _misspelled_table(path, tool)
            return None
        table = tool["sampler-lint"]
        where = f"{path} [tool.sampler-lint]"
    else:
        table = data.get("tool", {}).get("sampler-lint", data) if "tool" in data else data
        where = str(path)
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    return table, where


def _normalised(name: str) -> str:
    return "".join(char for char in name.lower() if char.isalnum())


def _misspelled_table(path: Path, tool: object) -> None:
    """``[tool.sampler_lint]`` (or ``samplerlint``, ``Sampler-Lint``) is never read: say so, or
    the user believes a configuration applies that does not."""
    if not isinstance(tool, dict):
        return
    for key in tool:
        if isinstance(key, str) and _normalised(key) == "samplerlint":
            raise ConfigError(
                f"{path}: [tool.{key}] is not read: did you mean [tool.sampler-lint]?"
            )


def find_config(directory: Path) -> Path | None:
    """The closest configuration file at or above ``directory``."""
    for folder in [directory, *directory.parents]:
        found = _config_in(folder)
        if found is not None:
            return found
    return None


def _config_in(folder: Path) -> Path | None:
    """The configuration file of ``folder`` itself, if it has one."""
    for name in CONFIG_FILES:
        candidate = folder / name
        # os.path.isfile: False, not PermissionError, in a folder that may not be searched.
        if os.path.isfile(candidate) and (name != "pyproject.toml" or _has_our_table(candidate)):
            return candidate
    return None


@functools.lru_cache(maxsize=256)
def _has_our_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if "sampler-lint" not in text and "samplerlint" not in _normalised(text):
        return False
    try:
        return load_file(path) is not None
    except ConfigError:
        return True  # it names us but cannot be read: the resolver reports it where it governs


def resolve(raw: RawSettings, root: Path, source: Path | None) -> Settings:
    enabled = set(registry.default_codes())
    if raw.select is not None:
        enabled = registry.expand_selectors(raw.select)
    enabled |= registry.expand_selectors(raw.extend_select)
    enabled -= registry.expand_selectors(raw.ignore)
    exclude = DEFAULT_EXCLUDES if raw.exclude is None else raw.exclude
    per_file = tuple(
        (pattern, frozenset(registry.expand_selectors(codes)))
        for pattern, codes in raw.per_file_ignores
    )
    options = {key: default for key, (_, _, default) in _option_specs().items()}
    options.update(raw.options)
    all_codes = {rule.code for rule in registry.all_rules()}
    fixable = all_codes if raw.fixable is None else registry.expand_selectors(raw.fixable)
    fixable |= registry.expand_selectors(raw.extend_fixable)
    fixable -= registry.expand_selectors(raw.unfixable)
    return Settings(
        root=root,
        source=source,
        enabled=frozenset(enabled),
        exclude=tuple(exclude) + tuple(raw.extend_exclude),
        per_file_ignores=per_file,
        respect_gitignore=True if raw.respect_gitignore is None else raw.respect_gitignore,
        unsafe_fixes=bool(raw.unsafe_fixes),
        options=options,
        fixable=frozenset(fixable),
        force_exclude=bool(raw.force_exclude),
        output_format=raw.output_format,
    )


class ConfigResolver:
    """Settings per directory: the closest configuration file wins, the command line goes on top.

    ``config_file`` (``--config``) applies to every path; ``isolated`` ignores all files.
    """

    def __init__(
        self,
        cli: RawSettings,
        *,
        config_file: Path | None = None,
        isolated: bool = False,
        cwd: Path | None = None,
    ) -> None:
        self.cli = cli
        self.isolated = isolated
        self.cwd = (cwd or Path.cwd()).resolve()
        self._by_file: dict[Path | None, Settings] = {}
        self._by_dir: dict[Path, Settings] = {}
        self._broken: dict[Path | None, ConfigError] = {}
        self._configs: dict[Path, Path | None] = {}
        self.fixed: Settings | None = None
        if isolated:
            self.fixed = resolve(RawSettings().layered(cli), self.cwd, None)
        elif config_file is not None:
            if not config_file.is_file():
                raise ConfigError(f"{config_file}: configuration file not found")
            loaded = load_file(config_file)
            if loaded is None:
                raise ConfigError(f"{config_file}: has no [tool.sampler-lint] table")
            self.fixed = resolve(loaded.layered(cli), config_file.resolve().parent, config_file)

    def for_directory(self, directory: Path, *, resolved: bool = False) -> Settings:
        """The settings of the files in ``directory`` (``resolved``: the caller knows it is a
        real path already, as a walk's folders are; resolving costs a system call per part)."""
        if self.fixed is not None:
            return self.fixed
        if not resolved:
            directory = directory.resolve()
        cached = self._by_dir.get(directory)
        if cached is not None:
            return cached
        source = self._find_config(directory)
        broken = self._broken.get(source)
        if broken is not None:
            raise broken
        settings = self._by_file.get(source)
        if settings is None:
            if source is None:
                settings = resolve(RawSettings().layered(self.cli), self.cwd, None)
            else:
                try:
                    loaded = load_file(source) or RawSettings()
                except ConfigError as error:
                    self._broken[source] = error  # said once, however many folders it governs
                    raise
                settings = resolve(loaded.layered(self.cli), source.parent, source)
            self._by_file[source] = settings
        self._by_dir[directory] = settings
        return settings

    def _find_config(self, directory: Path) -> Path | None:
        """:func:`find_config`, each folder searched once per resolver: a walk asks for every
        folder of a tree, and a folder without a file of its own has its parent's answer."""
        unanswered: list[Path] = []
        folder = directory
        while folder not in self._configs:
            unanswered.append(folder)
            found = _config_in(folder)
            if found is not None or folder.parent == folder:
                break
            folder = folder.parent
        else:
            found = self._configs[folder]
        for below in unanswered:  # the folders climbed through share the answer
            self._configs[below] = found
        return found

    def for_path(self, path: Path) -> Settings:
        return self.for_directory(path if os.path.isdir(path) else path.parent)

    def with_options(self, settings: Settings, **changes: Any) -> Settings:
        return replace(settings, **changes)
