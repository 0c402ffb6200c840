"""Digests of questions about a name, carried from one run to the next across the changes that
cannot touch them.

A question about a name (``collector[token]``, :meth:`DemandIndex.get_for`) has the digest of the
facts of the files that spell the token, in the project's order. Remembered under the contents of
all the collector's files (``DemandIndex._state_key``), it was lost whenever any of them changed:
the next run looked for every token in every file of the collector again (Lightning, one file
changed: 128 questions, 8,900 searches of file bytes, 0.13 s of a 0.36 s run), though the few
files that spell a token rarely change.

So each such digest is also kept with its *parts* (each file its facts came from, with the
digest of that file's facts, in the project's order) and the *state* of the project when a run
last made or checked it (a digest over every file's path, content and pre-filters passed); and
the files of the last run that kept any are kept too (the *snapshot*). A later run whose files
differ from the snapshot's in a few places (content, pre-filters, added or removed) makes again
only the parts of the files changed since, from those files alone, for an entry stamped with the
snapshot's state: whether a file answers a question, and the facts it holds, are functions of
its path, content and pre-filters (the facts cache relies on the same), so each unchanged file
answers as it did, with the same facts, and the parts in the project's order make the digest a
whole gathering would. It is then stamped with this run's state, as is every digest this run
makes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from sampler_lint.engine.cache import Cache, digest


class File(Protocol):
    """What this module reads of a file of the index (``demand.Source``, which imports it)."""

    @property
    def fact_path(self) -> str: ...
    @property
    def content(self) -> str | None: ...
    @property
    def collectors(self) -> tuple[str, ...] | None: ...


Source = TypeVar("Source", bound=File)
Entry = dict[str, list[Any]]  # a cache entry, as demand.Facts

#: The cache key of the snapshot (one per cache: the last run's files).
SNAPSHOT_KEY = digest("carried digests", "snapshot")
# Past this many files changed since the snapshot, the digests are made again: each question
# would look at every changed file, and a checkout of another branch changes most of them.
MOST_CHANGED = 64


def entry_key(name: str) -> str:
    """The cache key of the carried digest of the question ``name``."""
    return digest("carried digests", name)


class CarriedDigests(Generic[Source]):
    """The carried digests of one run, over the index's ``sources`` (in the project's order),
    kept in ``cache``. Off (every lookup a miss, nothing stamped) when a file's content is not
    known (a one-file run does not read the project's other files) or a path appears twice."""

    def __init__(self, sources: Sequence[Source], cache: Cache) -> None:
        self._sources = sources
        self._cache = cache
        self._state: str | None = None  # this run's state; "" when off
        self._position: dict[str, int] = {}  # each file's place in the project's order
        # Files changed since the snapshot (None: too many, or no snapshot to compare with).
        self._changed: list[Source] | None = None
        self._changed_paths: frozenset[str] = frozenset()
        self._snapshot_state = ""
        # The digests (and their parts) stamped with this run's state, per question.
        self._stamped: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._file_states: list[str] = []  # each file's part of the state (_file_state)
        self._kept = False  # a digest was stamped, here or in another process

    def state(self) -> str:
        """This run's state ("" when off)."""
        if self._state is None:
            self._state = ""
            parts: list[str] = []
            for number, source in enumerate(self._sources):
                if source.content is None or source.fact_path in self._position:
                    return ""
                self._position[source.fact_path] = number
                self._file_states.append(_file_state(source))
                parts += [source.fact_path, self._file_states[-1]]
            self._state = digest("carried state", *parts)
            self._compare()
        return self._state

    def _compare(self) -> None:
        """Learn which files changed since the snapshot."""
        hit = self._cache.get(SNAPSHOT_KEY)
        stored = hit.get("snapshot") if hit is not None else None
        if not stored or len(stored) % 2 != 1 or not all(isinstance(v, str) for v in stored):
            return
        self._snapshot_state = stored[0]
        before = dict(zip(stored[1::2], stored[2::2], strict=True))
        changed = [
            source for source, state in zip(self._sources, self._file_states, strict=True)
            if before.pop(source.fact_path, None) != state
        ]
        removed = list(before)  # what is left: files gone since
        if len(changed) + len(removed) <= MOST_CHANGED:
            self._changed = changed
            self._changed_paths = frozenset([source.fact_path for source in changed] + removed)

    def lookup(
        self, name: str, part_of: Callable[[Source], str | None],
        digest_of: Callable[[Sequence[str]], str],
    ) -> tuple[str, tuple[str, ...]] | None:
        """The digest of ``name`` and its parts (``path, digest of its facts`` per file that
        answers it, in the project's order), carried from an earlier run if it still holds.
        Across changes, the parts of the files changed since are made again (``part_of`` a
        file: ``None`` when it does not answer the question), and their digest (``digest_of``
        the parts)."""
        if not self.state():
            return None
        known = self._stamped.get(name)
        if known is not None:
            return known
        hit = self._cache.get(entry_key(name))
        stored = hit.get("carried") if hit is not None else None
        if not stored or len(stored) % 2 or not all(isinstance(v, str) for v in stored):
            return None
        state, made, parts = stored[0], stored[1], tuple(stored[2:])
        if state != self._state:
            if self._changed is None or state != self._snapshot_state:
                return None
            now = self._parts_now(parts, part_of)
            if now is None:
                return None
            parts, made = now, digest_of(now)
        return made, parts

    def _parts_now(
        self, parts: tuple[str, ...], part_of: Callable[[Source], str | None]
    ) -> tuple[str, ...] | None:
        """The parts of a question over this run's files, from those of the snapshot's: the
        unchanged files that answered it still do, with the same facts; of the changed files,
        those ``part_of`` finds answer it now; in the project's order (``None``: a file of
        the parts was not in the snapshot, an entry not made over it)."""
        placed: list[tuple[int, str, str]] = []
        for path, made in zip(parts[0::2], parts[1::2], strict=True):
            if path not in self._changed_paths:  # unchanged, so still in the project
                place = self._position.get(path)
                if place is None:
                    return None
                placed.append((place, path, made))
        for source in self._changed or ():
            answer = part_of(source)
            if answer is not None:
                placed.append((self._position[source.fact_path], source.fact_path, answer))
        placed.sort()
        return tuple(value for _, path, made in placed for value in (path, made))

    def stamp(
        self, name: str, made: str, parts: tuple[str, ...]
    ) -> tuple[str, Entry] | None:
        """Keep ``made``, the digest of ``name`` made of ``parts``, with this run's state;
        returns the cache entry, once per name."""
        if not self.state() or name in self._stamped:
            return None
        self._stamped[name] = (made, parts)
        value: Entry = {"carried": [self._state, made, *parts]}
        key = entry_key(name)
        self._cache.put(key, value)
        self._kept = True
        return key, value

    def received(self) -> None:
        """Another process stamped a digest of this run (see :meth:`keep_snapshot`)."""
        self._kept = True

    def keep_snapshot(self) -> None:
        """Keep this run's files as the snapshot, when it stamped any digest (in the main
        process, once its workers are done: the digests they stamped hold for these files)."""
        if self._kept and self.state() and self._state != self._snapshot_state:
            parts: list[str] = [self._state or ""]
            for source, state in zip(self._sources, self._file_states, strict=True):
                parts += [source.fact_path, state]
            self._cache.put(SNAPSHOT_KEY, {"snapshot": parts})


def _file_state(source: Source) -> str:
    """What a file's part in the state is made of: its content, and the collectors whose
    pre-filter it passes (which files a question reads)."""
    return f"{source.content} {source.collectors!r}"
