"""The persistent cache: lint results per file, and the project index per file.

It lives in ``.sampler_lint_cache/`` at the project root (``--cache-dir`` elsewhere, ``--no-cache``
off), holding a ``.gitignore`` so that git never sees it. An entry is keyed by the file's content
hash, the tool version, the effective configuration of that file and, for files linted by rules
that read the project index, a digest of the index: a second run over an unchanged repository reads
and hashes every file but parses none.

The cache directory sits inside the checkout, where anyone who can open a pull request can put a
file, so nothing read from it is trusted (SECURITY.md):

- It is data, never code: ``marshal`` of plain built-in values (no pickle, no ``eval``, no code
  objects). The engine's own dataclasses are written as tagged tuples and rebuilt only from an
  allow-list of ``sampler_lint`` dataclasses already imported, field by field.
- It is authenticated: the file carries a keyed BLAKE2 MAC, keyed by a random secret kept outside
  the checkout (``$XDG_CACHE_HOME/sampler-lint/cache-key``, created on first use, mode 0600). A
  cache file this user's sampler-lint did not write (committed to the repository, copied from
  another machine) fails the check and is ignored: it can neither run code nor hide a finding.
  ``marshal`` is only ever given bytes that passed the check.
- Every entry is validated on the way out (:class:`Cache` ``validate``); anything unexpected is a
  miss.

Writes are atomic renames, so concurrent runs can only lose entries, not corrupt them.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import gc
import hashlib
import hmac
import inspect
import marshal
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sampler_lint import __version__
from sampler_lint.engine.findings import FileResult, Finding
from sampler_lint.engine.registry import code_stamp
from sampler_lint.engine.replay import MAC_SIZE, mac, secret_key

DIRECTORY = ".sampler_lint_cache"
_MAGIC = b"sampler-lint-cache 3\n"
_SUFFIX = ".marshal"
# The format version of ``marshal`` (4: no code objects are ever written).
_MARSHAL_VERSION = 4
# A cache that grows without bound slows every run: keep this many entries per kind.
MAX_ENTRIES = 200_000


def _header() -> bytes:
    """What every cache file starts with: the format, the version and the build that wrote it
    (:func:`~sampler_lint.engine.registry.code_stamp`)."""
    return _MAGIC + f"{__version__} {code_stamp()}".encode() + b"\n"


def digest(*parts: bytes | str) -> str:
    hasher = hashlib.blake2b(digest_size=20)
    for part in parts:
        hasher.update(part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part)
        hasher.update(b"\0")
    return hasher.hexdigest()


# The secret that authenticates cache files (``secret_key``) and its MAC (``mac``) live in
# :mod:`sampler_lint.engine.replay`, which signs recorded runs with them and is read before any
# other module of the package.


# ------------------------------------------------------------------------------------------------
# Plain values: the engine's dataclasses as tagged tuples

# A tuple starting with this marks a tagged value; a real tuple starting with it is escaped.
_MARK = Ellipsis
_PLAIN_SCALARS = (str, int, float, bool, type(None), bytes)
_ALLOWED_MODULES = ("sampler_lint.",)


class Unencodable(Exception):
    """A value the cache cannot write as plain data: the entry is simply not cached."""


def _is_plain(value: Any) -> bool:
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return True
    if kind is tuple:
        return not (value and value[0] is _MARK) and all(_is_plain(v) for v in value)
    if kind is list or kind is frozenset:
        return all(_is_plain(v) for v in value)
    if kind is dict:
        return all(_is_plain(k) and _is_plain(v) for k, v in value.items())
    return False


def encode(value: Any) -> Any:
    """``value`` as plain built-in values ``marshal`` writes; plain subtrees are marked so that
    :func:`decode` need not walk them."""
    if _is_plain(value):
        return value if type(value) in _PLAIN_SCALARS else (_MARK, "=", value)
    return _encode(value)


def _encode(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return value
    if value is _MARK:
        return (_MARK, "...", ())
    if kind in (tuple, list, frozenset):
        if _is_plain(value):
            return (_MARK, "=", value)
        return (_MARK, kind.__name__, tuple(_encode(v) for v in value))
    if kind is dict or kind is collections.defaultdict:
        if kind is collections.defaultdict and value.default_factory is not list:
            raise Unencodable(kind)
        name = "dict" if kind is dict else "defaultdict"
        # Keys and values side by side: no tuple per item waiting in memory until the save.
        return (_MARK, name, tuple(part for item in value.items() for part in map(_encode, item)))
    if dataclasses.is_dataclass(value) and kind.__module__.startswith(_ALLOWED_MODULES):
        tag, names = _tagged(kind)
        return (_MARK, tag, tuple(_encode(getattr(value, name)) for name in names))
    raise Unencodable(kind)


# Per dataclass, its tag and the names of its ``__init__`` fields in order. A value is written
# as its fields' values alone, in that order: every cache file names the build that wrote it
# (_header), so the order it was written in is the order it is read in. One tag string for all
# values of a class: a monorepo's first run holds hundreds of thousands of them until the save.
_TAGS: dict[type, tuple[str, tuple[str, ...]]] = {}


def _tagged(kind: type) -> tuple[str, tuple[str, ...]]:
    known = _TAGS.get(kind)
    if known is None:
        names = tuple(field.name for field in dataclasses.fields(kind) if field.init)
        known = _TAGS[kind] = (f"{kind.__module__}:{kind.__qualname__}", names)
    return known


class _Invalid(Exception):
    pass


def decode(value: Any) -> Any:
    """The value :func:`encode` was given; :class:`_Invalid` for anything it did not make."""
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return value
    if kind is not tuple or len(value) != 3 or value[0] is not _MARK:
        raise _Invalid(kind)
    _, tag, payload = value
    if tag == "=":
        return payload
    if tag == "...":
        return _MARK
    if type(payload) is not tuple:
        raise _Invalid(tag)
    if tag == "tuple":
        return tuple(decode(v) for v in payload)
    if tag == "list":
        return [decode(v) for v in payload]
    if tag == "frozenset":
        return frozenset(decode(v) for v in payload)
    if tag == "dict" or tag == "defaultdict":
        if len(payload) % 2:
            raise _Invalid(tag)
        pairs = zip(map(decode, payload[0::2]), map(decode, payload[1::2]), strict=True)
        return dict(pairs) if tag == "dict" else collections.defaultdict(list, pairs)
    return _dataclass(tag, payload)


_CLASSES: dict[str, tuple[type, tuple[str, ...], bool]] = {}


def _dataclass_named(tag: Any) -> tuple[type, tuple[str, ...], bool]:
    """One of our dataclasses, its ``__init__`` field names in order, and whether they can be
    given by position (a warm run builds thousands of surveys and results, a quarter faster
    without a dict of keywords each), only from a module already imported (nothing is
    imported here), remembered per tag."""
    known = _CLASSES.get(tag) if type(tag) is str else None
    if known is not None:
        return known
    if type(tag) is not str or ":" not in tag:
        raise _Invalid(tag)
    module_name, _, qualname = tag.partition(":")
    module = sys.modules.get(module_name) if module_name.startswith(_ALLOWED_MODULES) else None
    kind = getattr(module, qualname, None) if module is not None and qualname.isidentifier() \
        else None
    if not isinstance(kind, type) or not dataclasses.is_dataclass(kind) \
            or kind.__module__ != module_name:
        raise _Invalid(tag)
    names = _tagged(kind)[1]
    known = _CLASSES[tag] = (kind, names, _positional(kind, names))
    return known


def _positional(kind: type, names: tuple[str, ...]) -> bool:
    """Whether ``kind(*values)`` is ``kind(**dict(zip(names, values)))``: its ``__init__``
    takes exactly ``names``, in that order, each by position (not so with a keyword-only
    field, or an ``InitVar``, which ``dataclasses.fields`` leaves out)."""
    try:
        parameters = list(inspect.signature(kind).parameters.values())
    except (TypeError, ValueError):
        return False
    by_position = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return all(p.kind in by_position for p in parameters) \
        and tuple(p.name for p in parameters) == names


def _dataclass(tag: Any, payload: tuple[Any, ...]) -> Any:
    kind, names, positional = _dataclass_named(tag)
    if len(payload) != len(names):
        raise _Invalid(tag)
    try:
        if positional:
            return kind(*[decode(field) for field in payload])
        return kind(**{name: decode(field) for name, field in zip(names, payload, strict=True)})
    except (TypeError, ValueError) as error:
        raise _Invalid(tag) from error


# ------------------------------------------------------------------------------------------------
# The cache files


class Cache:
    """A mapping from keys to values, loaded once and saved once per run. Values are kept encoded
    and decoded on :meth:`get`, where ``validate`` rejects any of the wrong shape (a miss)."""

    def __init__(
        self, directory: Path, kind: str, validate: Callable[[Any], bool] | None = None
    ) -> None:
        self.path = directory / f"{kind}{_SUFFIX}"
        self.directory = directory
        self.validate = validate
        self.key = secret_key()
        self._old: dict[str, Any] | None = None
        self.new: dict[str, Any] = {}
        self.hits = 0

    @property
    def old(self) -> dict[str, Any]:
        """The entries on disk, read on first use: a run that asks this cache nothing (a warm
        run reads no facts) does not load it."""
        if self._old is None:
            self._old = self._load()
        return self._old

    def _load(self) -> dict[str, Any]:
        if self.key is None:
            return {}
        try:
            data = self.path.read_bytes()
        except OSError:
            return {}
        header = _header()
        start = len(header) + MAC_SIZE
        if not data.startswith(header) or len(data) < start:
            return {}
        payload = data[start:]
        if not hmac.compare_digest(data[len(header):start], mac(self.key, payload)):
            return {}  # not written by this user's sampler-lint: never unmarshalled
        # Hundreds of thousands of tuples at once would trigger the garbage collector over and
        # over (four fifths of the load time), and none of them can be garbage.
        collecting = gc.isenabled()
        gc.disable()
        try:
            value = marshal.loads(payload)
        except (EOFError, ValueError, TypeError):
            return {}
        finally:
            if collecting:
                gc.enable()
        return value if type(value) is dict else {}

    def has(self, key: str) -> bool:
        """Whether an entry is stored under ``key`` (it may still be a miss: :meth:`get`)."""
        return key in self.old

    def get(self, key: str) -> Any:
        stored = self.old.get(key)
        if stored is None:
            return None
        try:
            value = decode(stored)
        except (_Invalid, RecursionError, TypeError, ValueError):
            return None  # not what encode() makes (an unhashable key, a foreign tag): a miss
        if value is None or (self.validate is not None and not self.validate(value)):
            return None
        self.hits += 1
        self.new[key] = stored
        return value

    def put(self, key: str, value: Any) -> None:
        with contextlib.suppress(Unencodable, RecursionError):  # not plain data: uncached
            self.new[key] = encode(value)

    def save(self) -> None:
        """Write the entries used or made by this run (plus older ones, up to the cap)."""
        if self.key is None or not self.new:
            return  # nothing used or made: the file stays as it is
        merged = dict(self.old)
        merged.update(self.new)
        if len(merged) > MAX_ENTRIES:
            merged = dict(self.new)
        if merged == self.old:
            return
        try:
            payload = marshal.dumps(merged, _MARSHAL_VERSION)
        except ValueError:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Created by sampler-lint.\n*\n")
            descriptor, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(_header())
                handle.write(mac(self.key, payload))
                handle.write(payload)
            os.replace(temporary, self.path)
        except OSError as error:
            # A read-only checkout simply runs uncached; the user hears of it once per folder.
            _unusable(self.directory, error)


#: Cache folders this process could not write, with the reason: the command line says each once.
UNUSABLE: dict[Path, str] = {}


def _unusable(directory: Path, error: OSError) -> None:
    UNUSABLE.setdefault(directory, f"cannot write the cache in {directory}: "
                                   f"{error.strerror or error}; running uncached")


def result_is_cacheable(result: FileResult) -> bool:
    """Results that depend on the moment (I/O errors, internal errors) are never stored."""
    return not result.errors and not result.internal_error and not result.wrote


def cached_result(value: Any) -> FileResult | None:
    return value if is_file_result(value) else None


def is_file_result(value: Any) -> bool:
    """The shape of a cached lint result."""
    return (
        isinstance(value, FileResult)
        and isinstance(value.filename, str)
        and isinstance(value.findings, list)
        and all(isinstance(f, Finding) for f in value.findings)
        and isinstance(value.fixed_codes, dict)
        and isinstance(value.errors, list)
    )
