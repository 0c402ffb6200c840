"""The project index built on demand: a collector's facts are gathered the first time a rule asks
for one of them, from the files whose text passes that collector's pre-filter, and no sooner.

Most runs ask few questions of the project (on large trees most files keep no rule that reads the
index, and most rules that read it return before they ask), so gathering every fact up front
parsed thousands of files whose facts nobody read. The survey now only notes which collectors'
text pre-filters each file passes (``Survey.deferred``); this index parses those files when a
rule first calls ``get`` for a fact that collector makes.

The answers are the same as those of the index gathered up front: a collector is gathered over
every file its pre-filter admits, in the project's order (a yes-or-no question, ``settled``, stops
at the first file that settles it, as before). Each file's facts are kept in the cache keyed by
the collector, the file and its content, and each gathered collector has a digest of its facts:
a lint result is cached with the collectors gathered when it was made and their digests, and is
reused only while they are the same (:func:`reads_key`).
"""

from __future__ import annotations

import ast
import contextlib
import marshal
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sampler_lint.analysis.index import (
    CLASS_DEFINED,
    DERIVES_FROM,
    WORD_BYTES,
    FactCollector,
    ProjectIndex,
    RealPaths,
    class_base_names_in,
    class_statements_in,
)
from sampler_lint.engine.cache import Cache, Unencodable, decode, digest, encode
from sampler_lint.engine.carried import CarriedDigests
from sampler_lint.engine.sources import in_overlay, read_source

_PARSE_FAILURES = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)

#: Facts of one file for one collector, as the cache holds them: fact name -> values.
Facts = dict[str, list[Any]]
#: One file's facts per collector, and the cache entries made for them (``DemandIndex.fresh``).
Read = tuple[dict[str, Facts], list[tuple[str, Facts]]]
#: Reads one collector's facts from many files in other processes, in order (``None``: it
#: cannot here, in a worker process of its own).
Mapper = Callable[["DemandIndex", FactCollector, list["Source"], bool], "list[Read] | None"]

# From this many files to parse for one collector, gathering them in parallel pays off: two
# forked readers cost 20-30 ms, a parse 5-20 ms (Lightning's question about
# `RandomIterableDataset` parses 8 test files: 0.16-0.20 s here, 0.10 s in two processes;
# detectron2's 12: 0.08 s, 0.05 s).
PARALLEL_GATHER = 6
# Questions about names a run may ask of one collector before it reads the whole collector
# instead: each looks for its name in every file that may hold the collector's facts (bytes
# kept in memory: about 7 microseconds a file), where reading the whole collector parses each of
# them (about 7 milliseconds, on two cores). Each file is parsed at most once either way, so the
# questions cost less until they number several hundred: ten large repositories under one root
# ask at most 150 of one collector, and reading whole collectors after 24 took 34 s against 26 s.
KEYED_QUESTIONS = 400


@dataclass(frozen=True)
class Source:
    """A project file, and the collectors whose text pre-filter it passes."""

    path: Path
    fact_path: str  # the file as the index spells it
    #: Names of the collectors whose pre-filter it passes, or ``None`` when not known yet (a
    #: file of the project that is not linted: read only if a question needs it).
    collectors: tuple[str, ...] | None = None
    content: str | None = None  # digest of its bytes when already known (the cache is on)


# How many bytes of project files an index keeps in memory for the questions of one run. Each
# question about a name looks for it in every file that may answer it: the monorepo of thirteen
# repositories asked 33 such questions of 2,500 files for one collector, and with 16 MiB kept it
# read 3.3 GB from disk for 95 MB of files (with 64 MiB: 0.4 GB; peak memory 178 -> 229 MiB).
TEXTS_KEPT = 64 * 1024 * 1024


class Shared:
    """What worker processes read for each collector, shared among them: one lock per collector
    (the first worker to ask reads the files; the others wait for it, then reuse what it read)
    and a folder of this run's own, where each reading is kept as ``marshal`` of plain values,
    as the cache keeps them."""

    def __init__(self, context: Any, names: Sequence[str], folder: Path) -> None:
        self._locks = {name: context.Lock() for name in names}
        self._folder = folder
        self._stored: dict[str, int] = {}  # per collector: readings stored by this process

    def turn(self, name: str) -> Any:
        return self._locks[name]

    def load(self, name: str) -> list[tuple[tuple[str, str], Facts]]:
        loaded: list[tuple[tuple[str, str], Facts]] = []
        for path in sorted(self._folder.glob(f"{_slug(name)}.*.marshal")):
            try:
                entries = decode(marshal.loads(path.read_bytes()))
            except (OSError, EOFError, ValueError, TypeError):
                continue
            loaded += [((collector, where), facts) for (collector, where), facts in entries]
        return loaded

    def store(self, name: str, made: list[tuple[tuple[str, str], Facts]]) -> None:
        number = self._stored[name] = self._stored.get(name, 0) + 1
        path = self._folder / f"{_slug(name)}.{os.getpid()}-{number}.marshal"
        with contextlib.suppress(OSError, Unencodable, ValueError):
            partial = path.with_suffix(".partial")
            partial.write_bytes(marshal.dumps(encode(made), 4))
            partial.replace(path)  # whole or absent for a reader


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def is_facts(value: object) -> bool:
    """The shape of cached facts (anything else is a miss)."""
    return isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(values, list) for key, values in value.items()
    )


class DemandIndex(ProjectIndex):
    """A :class:`ProjectIndex` whose facts are gathered when first asked for.

    ``sources`` are the project's files in its order; those the survey did not read
    (``Source.collectors`` is ``None``) are read only when a question needs them."""

    def __init__(
        self,
        sources: Sequence[Source],
        collectors: Sequence[FactCollector],
        cache: Cache | None = None,
        mapper: Mapper | None = None,
        digests: Cache | None = None,
    ) -> None:
        super().__init__()
        self._on_disk = not in_overlay()
        self._sources = sources
        self._cache = cache
        # Where collectors' digests are remembered: a cache of its own, so that a warm run,
        # which reads only digests, does not load every fact (``cache`` when not given).
        self._digest_cache = digests if digests is not None else cache
        self._mapper = mapper
        self._all: dict[str, FactCollector] = {c.name: c for c in collectors}
        self._pending = dict(self._all)
        # Each file's facts per collector once read, for questions about several tokens.
        self._read: dict[tuple[str, str], Facts] = {}
        # Per (kind of word, file): the names of :data:`_NAMES_OF` (_spells).
        self._names: dict[tuple[str, str], frozenset[bytes]] = {}
        # The files that hold a token, per (collector, token), when scanned for several tokens
        # at once (_scan_tokens).
        self._holders: dict[tuple[str, str], set[str]] = {}
        # A one-file run asks about names one at a time, each a scan of every file of the
        # project: what each scan learnt is kept, per (collector, file) that passes the
        # collector's pre-filter (those that fail are in _read, with no facts) and per word and
        # file (`dataset+train` and `rank+train` share `train`).
        self._passing: set[tuple[str, str]] = set()
        # Per word, per file: whether the file spells it. Keyed by word first: a monorepo asks
        # about twenty words of twelve thousand files, and a tuple per answer (and a set of
        # the files lacking each word beside it) was 33 MiB of a first run's peak.
        self._spelled: dict[str, dict[str, bool]] = {}
        # The names asked about, per collector (get_for).
        self._tokens_asked: dict[str, set[str]] = {}
        self._candidates_of: dict[str, list[Source]] = {}
        # Each collector's files by path, and by real path once a question needs it.
        self._by_path: dict[str, dict[str, list[Source]]] = {}
        self._by_real: dict[str, dict[str, list[Source]]] = {}
        # The real path of each file, learnt once for all collectors (most files are a
        # candidate of several: Lightning resolved 1,762 paths of 646 files, a look at each).
        self._reals = RealPaths()
        self._real_of: dict[str, str] = {}
        self._states: dict[str, str] = {}  # per collector: its files' paths and contents
        self._stored_digests: set[str] = set()  # digests this run found in or put in the cache
        # Digests of questions about names, kept across runs with the files they came from
        # (carried.py), and the parts of each question this process gathered (each file that
        # answered it, and the digest of its facts).
        self._carried = (
            CarriedDigests(sources, self._digest_cache)
            if cache is not None and self._digest_cache is not None else None
        )
        self._parts: dict[str, tuple[str, ...]] = {}
        # What each lookup of a carried digest found (a warm run checks each question's digest
        # for every file that asked it: Lightning, 2,100 lookups of 130 questions).
        self._carried_found: dict[str, tuple[str, tuple[str, ...]] | None] = {}
        self._digests: dict[tuple[str, str], tuple[Facts, str]] = {}
        # Those of them the survey's parse read, not yet in the cache (see known).
        self._seeded: set[tuple[str, str]] = set()
        # Facts of the files that hold a token, per ``collector[token]`` (see get_for).
        self._keyed: dict[str, ProjectIndex] = {}
        # Whole collectors gathered so far. The first reads only its own facts from each file
        # it parses; once a second is asked for, the run asks many questions, and each parse
        # serves every collector the file passes (as the survey once did for all of them).
        self._asked = 0
        self._owners: dict[str, list[str]] = {}
        for collector in collectors:
            for kind in collector.kinds:
                self._owners.setdefault(kind, []).append(collector.name)
        #: Digest of each gathered collector's facts, in the order they were gathered.
        self.gathered: dict[str, str] = {}
        #: Cache entries made in this process (a worker hands them to the main process).
        self.fresh: list[tuple[str, Facts]] = []
        #: The collectors some rule still in play reads (``None``: any): once a run asks many
        #: questions, a parse serves these too, and no collector no rule will ask about.
        self.in_play: frozenset[str] | None = None
        #: Set while worker processes lint: what one of them reads for a collector, the others
        #: reuse instead of parsing the same files again.
        self.shared: Shared | None = None
        # The bytes of files read for questions, up to a budget: each question about a token
        # looks for it in every file of its collector (_find_holders), tens of reads of each.
        self._texts: dict[Path, bytes] = {}
        self._text_room = TEXTS_KEPT

    # -- asking ------------------------------------------------------------------------------

    def files_on_disk(self) -> bool:
        # Its sources are the files the walk found, read from disk, unless a revision's
        # contents stand in for them (--since).
        return self._on_disk

    def get(self, kind: str) -> list[Any]:
        if self._pending:
            names = self._owners.get(kind)
            if names is None:  # no collector names it: those that name nothing may make it
                names = [n for n, c in self._pending.items() if not c.kinds]
            for name in names:
                self.gather(name)
        return self.facts.get(kind, [])

    def known(self, fact_path: str, read: Sequence[tuple[str, Facts]]) -> None:
        """Facts of one file read elsewhere (the survey's parse), per collector. They reach
        the cache when a question first uses them (the cached survey keeps none: most are never
        asked for, and a warm run would load them all)."""
        for name, facts in read:
            if (name, fact_path) not in self._read:
                self._read[name, fact_path] = facts
                self._seeded.add((name, fact_path))

    def get_for(self, kind: str, token: str) -> list[Any]:
        names = self._owners.get(kind, [])
        if len(names) != 1 or names[0] not in self._pending \
                or self._all[names[0]].settled is not None:
            return self.get(kind)  # gathered already, or not a question a token narrows
        if os.path.isabs(token):
            return self._file_facts(names[0], kind, token)
        keyed = f"{names[0]}[{token}]"
        if keyed not in self.gathered:
            asked = self._tokens_asked.setdefault(names[0], set())
            asked.add(token)
            if len(asked) > KEYED_QUESTIONS:
                return self.get(kind)  # many names: one read of the whole collector is cheaper
        self._gather_keyed(keyed)
        return list(self._keyed[keyed].get(kind))

    def _file_facts(self, name: str, kind: str, path: str) -> list[Any]:
        """The facts of ``kind`` made in the file at ``path`` (links resolved): read that file
        alone. A question about a file the project does not hold depends on the project's list
        of files (``collector[/]``): a file added there later changes its answer."""
        if not self._sources_at(name, path):
            self._gather_keyed(f"{name}[{FILES}]")
            return []
        keyed = f"{name}[{path}]"
        self._gather_keyed(keyed)
        return list(self._keyed[keyed].get(kind))

    def _sources_at(self, name: str, path: str) -> list[Source]:
        """The files of collector ``name`` at ``path`` (links resolved): the project spells a
        file as it walked it, facts spell it with its links resolved."""
        by_path = self._by_path.get(name)
        if by_path is None:
            by_path = self._by_path[name] = {}
            for source in self._candidates(name):
                by_path.setdefault(source.fact_path, []).append(source)
        found = by_path.get(path)
        if found is None:
            # Imports are resolved by probing the files a module may be: thousands of paths,
            # most of which do not exist. Once the real paths are known, a path not among them
            # is no file of the collector, without a stat to learn that it does not exist.
            real = self._by_real.get(name)
            if real is None and os.path.exists(path):
                # Reached through a link: every file's real path, once (their folders shared).
                real = self._by_real[name] = {}
                for source in self._candidates(name):
                    real.setdefault(self._real_path(source.fact_path), []).append(source)
            found = real.get(path) if real is not None else None
        return found or []

    def _real_path(self, fact_path: str) -> str:
        found = self._real_of.get(fact_path)
        if found is None:
            found = self._real_of[fact_path] = self._reals.of(fact_path)
        return found

    def gather(self, name: str) -> str:
        """Gather the collector ``name`` if not yet done; returns the digest of its facts."""
        collector = self._pending.pop(name, None)
        if collector is not None:
            try:
                self._gather_pending(name, collector)
            except BaseException:
                # Still pending: asked again, it raises again (a lint that reports the error
                # the first time must not find an empty collector the second: the lint helper
                # falls back to linting the file here after the index raised for it).
                self._pending[name] = collector
                raise
        return self.gathered.get(name, "")

    def _gather_pending(self, name: str, collector: FactCollector) -> None:
        if self.shared is None:
            self.gathered[name] = self._gather(collector, self)
        else:
            with self.shared.turn(name):
                # Another worker may have read these files already: reuse what it read.
                for key, facts in self.shared.load(name):
                    self._read.setdefault(key, facts)
                before = set(self._read)
                self.gathered[name] = self._gather(collector, self)
                made = [(key, self._read[key]) for key in self._read if key not in before]
                if made:
                    self.shared.store(name, made)

    def digests(self, names: Sequence[str]) -> tuple[str, ...]:
        """``name, digest`` pairs of the collectors ``names`` (``collector[token]`` for the
        files of a collector that hold a token, :meth:`get_for`), gathering them as needed; a
        name this run does not collect has the digest ``-``. A question about a token is
        covered by its whole collector when that is among ``names`` (a fact about the token
        comes from code that spells it, :meth:`ProjectIndex.get_for`: the whole collector's
        digest changes whenever such a fact does), and is not gathered again."""
        pairs: list[str] = []
        whole = set(names)
        known: dict[str, str] = {}
        for name in names:
            base, _, token = name.partition("[")
            if base in self._all and not (token and base in whole):
                remembered = self._remembered_digest(name)
                if remembered is not None:
                    known[name] = remembered
        self._scan_tokens(
            name for name in names if name not in known and name.partition("[")[0] not in whole
        )
        for name in names:
            base, _, token = name.partition("[")
            collector = self._all.get(base)
            if collector is None:
                pairs += [name, "-"]
            elif token and base in whole:
                pairs += [name, "covered"]
            elif name in known:
                pairs += [name, known[name]]
            else:
                made = self._gather_keyed(name) if token else self.gather(name)
                self._remember_digest(name, made)
                pairs += [name, made]
        return tuple(pairs)

    # -- digests remembered across runs --------------------------------------------------------
    # A collector's digest is a function of the files it may read and their contents: a warm run
    # over an unchanged tree checks a cached result against it without decoding any fact.

    def _state_key(self, name: str) -> str | None:
        """The cache key of ``name``'s digest: the collector (and token), and the path and
        content of every file that may hold its facts (``None`` when one was not read)."""
        if self._cache is None:
            return None
        base = name.partition("[")[0]
        state = self._states.get(base)
        if state is None:
            parts: list[str] = []
            for source in self._candidates(base):
                if source.content is None:
                    self._states[base] = ""
                    return None
                parts += [source.fact_path, source.content]
            state = self._states[base] = digest("collector state", base, *parts)
        return digest("digest of", name, state) if state else None

    def _remembered_digest(self, name: str) -> str | None:
        made = self.gathered.get(name)
        if made is not None:
            self._remember_digest(name, made)
            return made
        carried = self._carried_parts(name)
        if carried is not None:
            return carried[0]
        key = self._state_key(name)
        cache = self._digest_cache
        hit = cache.get(key) if key is not None and cache is not None else None
        values = hit.get("digest") if hit is not None else None
        if values and isinstance(values[0], str):
            self._stored_digests.add(name)
            return values[0]
        return None

    def _remember_digest(self, name: str, made: str) -> None:
        parts = self._parts.get(name)
        if parts is not None:
            self._stamp(name, made, parts)
        if name in self._stored_digests:
            return
        self._stored_digests.add(name)
        key = self._state_key(name)
        if key is not None and self._digest_cache is not None:
            self._digest_cache.put(key, {"digest": [made]})
            self.fresh.append((key, {"digest": [made]}))

    def _carried_parts(self, name: str) -> tuple[str, tuple[str, ...]] | None:
        """The digest and parts of a question about a name carried from an earlier run, if
        they hold (carried.py), stamped with this run's state."""
        if name in self._carried_found:
            return self._carried_found[name]
        found = self._carried_found[name] = self._look_up_carried(name)
        return found

    def _look_up_carried(self, name: str) -> tuple[str, tuple[str, ...]] | None:
        base, _, token = name.partition("[")
        token = token[:-1]
        if self._carried is None or not token or _is_file_token(token) \
                or self._all[base].settled is not None:
            return None
        collector = self._all[base]

        def part_of(source: Source) -> str | None:
            """The digest of a file's facts for the question, as _gather makes it (None: the
            file does not answer it)."""
            if source.collectors is not None and base not in source.collectors:
                return None  # not a file of the collector
            facts = self._facts_of(source, collector, token)
            return self._digest_of(base, source, facts) if facts else None

        found = self._carried.lookup(
            name, part_of, lambda parts: digest(base, token, *parts)
        )
        if found is not None:
            self._stamp(name, *found)
        return found

    def _stamp(self, name: str, made: str, parts: tuple[str, ...]) -> None:
        if self._carried is not None:
            entry = self._carried.stamp(name, made, parts)
            if entry is not None:
                self.fresh.append(entry)

    def keep(self, fresh: Iterable[tuple[str, Facts]]) -> None:
        """Put in the caches what another process made (:attr:`fresh`): facts, and digests in
        their own cache."""
        for key, value in fresh:
            cache = self._digest_cache if _is_digest(value) else self._cache
            if cache is not None:
                cache.put(key, value)
            if self._carried is not None and "carried" in value:
                self._carried.received()

    def keep_snapshot(self) -> None:
        """Keep this run's files for the next run's carried digests (the main process, before
        the caches are saved)."""
        if self._carried is not None:
            self._carried.keep_snapshot()

    # -- gathering ---------------------------------------------------------------------------

    def _scan_tokens(self, keyed: Iterable[str]) -> None:
        """Which files hold each token of the questions ``keyed`` not answered yet, for each
        collector asked about several: one read of each of its files for all of them (a warm
        run checks many at once), instead of one per token."""
        tokens: dict[str, set[str]] = {}
        for name in keyed:
            base, _, token = name.partition("[")
            if token and name not in self.gathered and base in self._pending \
                    and not _is_file_token(token[:-1]):
                tokens.setdefault(base, set()).add(token[:-1])
        for base, wanted in tokens.items():
            if len(wanted) >= 2:
                self._find_holders(self._all[base], wanted)

    def _find_holders(self, collector: FactCollector, tokens: Iterable[str]) -> None:
        """Note, for each of ``tokens``, the files of ``collector`` that may answer a question
        about it: those whose text holds it, among the files not known to hold none of its
        facts (a file read here that fails the collector's pre-filter is known to hold none).
        One read of each file, whatever the number of tokens."""
        holders: dict[str, set[str]] = {token: set() for token in tokens}
        answers = {token: self._answers(token) for token in holders}
        for source in self._candidates(collector.name):
            key = (collector.name, source.fact_path)
            if not self._read.get(key, True):
                continue  # no facts: it answers no question about a token
            path = source.fact_path
            open_tokens = [
                token for token, known in answers.items()
                if all(spelled.get(path, True) for spelled in known)
            ]
            if not open_tokens:
                continue  # not read again: ``a+b`` questions share a word most files lack
            try:
                data = self._bytes(source)
            except OSError:
                continue  # answers nothing, as _facts_of finds
            if source.path in self._texts:
                # Kept in memory, so a later question reads it again at no cost: one search of
                # the bytes for the tokens first turns away a file that spells none of them
                # (most files, for a question about a class), where the pre-filter below looks
                # for any of its collector's words, a search for each (20 ms of a one-file run).
                # A file read from disk each time keeps the pre-filter first: a file that fails
                # it is known to hold no facts and is not read again.
                open_tokens = [
                    token for token in open_tokens if self._may_spell(source, data, token)
                ]
                if not open_tokens:
                    continue
            if key not in self._read and source.collectors is None \
                    and not self._file_passes(collector, source, data):
                continue
            for token in open_tokens:
                if self._file_spells(source, data, token):
                    holders[token].add(source.fact_path)
        for token, paths in holders.items():
            self._holders[collector.name, token] = paths

    def _gather_keyed(self, keyed: str) -> str:
        """Gather ``collector[token]`` if not yet done; returns the digest of its facts."""
        if keyed not in self.gathered:
            name, _, bracketed = keyed.partition("[")
            token = bracketed[:-1]
            if (name, token) not in self._holders:
                # The files that answered it when it was carried, checked since: those hold
                # its facts, and no other file does (no search of every file for the name).
                carried = self._carried_parts(keyed)
                if carried is not None:
                    self._holders[name, token] = set(carried[1][0::2])
            found = self._keyed[keyed] = ProjectIndex()
            self.gathered[keyed] = self._gather(self._all[name], found, token)
        return self.gathered[keyed]

    def _gather(self, collector: FactCollector, into: ProjectIndex, token: str = "") -> str:
        """Add ``collector``'s facts to ``into``, in the project's order, from every file its
        pre-filter admits (``token``: those of them that spell it; an absolute path: that file;
        :data:`FILES`: none, only which files there are); returns their digest."""
        if token == FILES:  # which files the project holds, not what they say
            paths = [source.fact_path for source in self._candidates(collector.name)]
            return digest(collector.name, token, *paths)
        if not token:
            self._asked += 1
        sources = self._candidates(collector.name)
        spelled = token  # the files asked about spell it
        if _is_file_token(token):
            sources, spelled = self._sources_at(collector.name, token), ""
        elif collector.settled is None:
            self._read_ahead(collector, token)
        found = ProjectIndex()
        parts: list[str] = []
        for source in sources:
            facts = self._facts_of(source, collector, spelled)
            if facts:
                for kind, values in facts.items():
                    found.add(kind, values)
                parts += [source.fact_path, self._digest_of(collector.name, source, facts)]
                if collector.settled is not None and collector.settled(found):
                    break
        into.merge(found)
        if token and not _is_file_token(token) and collector.settled is None:
            self._parts[f"{collector.name}[{token}]"] = tuple(parts)
        return digest(collector.name, token, *parts)

    def _candidates(self, name: str) -> list[Source]:
        """The files that may hold the collector's facts, in the project's order: those whose
        text the survey found passes its pre-filter, and those it did not read."""
        found = self._candidates_of.get(name)
        if found is None:
            found = self._candidates_of[name] = [
                source for source in self._sources
                if source.collectors is None or name in source.collectors
            ]
        return found

    def _digest_of(self, name: str, source: Source, facts: Facts) -> str:
        """The digest of one file's facts for a collector (many questions about tokens read the
        same files)."""
        key = (name, source.fact_path)
        made = self._digests.get(key)
        if made is None or made[0] is not facts:
            made = self._digests[key] = (facts, digest(repr(facts)))
        return made[1]

    def _read_ahead(self, collector: FactCollector, token: str = "") -> None:
        """Read, in other processes, the files ``collector`` still needs (``token``: those of
        them that hold it), when there are many (a question settled by its first files is not
        worth it: it stops early)."""
        if self._mapper is None:
            return  # read one by one, in this process, by _gather
        if token:
            holders = self._holders_of(collector, token)
            todo = [
                source for source in self._candidates(collector.name)
                if source.fact_path in holders
                and (collector.name, source.fact_path) not in self._read
            ]
        else:
            todo = [
                source for source in self._candidates(collector.name)
                if (collector.name, source.fact_path) not in self._read
                and (collector.name in source.collectors if source.collectors is not None
                     else self._admits(collector, source))
            ]
        if len(todo) < PARALLEL_GATHER:
            return
        todo = [source for source in todo if not self._cached(source, collector)]
        if len(todo) < PARALLEL_GATHER:
            return
        read = self._mapper(self, collector, todo, self._alone(token))
        if read is None:
            return
        for source, (facts, fresh) in zip(todo, read, strict=True):
            for name, values in facts.items():
                self._read[name, source.fact_path] = values
            for key, value in fresh:
                if self._cache is not None:
                    self._cache.put(key, value)
                self.fresh.append((key, value))

    def _holders_of(self, collector: FactCollector, token: str) -> set[str]:
        """The files of ``collector`` that may answer a question about ``token``."""
        if (collector.name, token) not in self._holders:
            self._find_holders(collector, (token,))
        return self._holders[collector.name, token]

    def _bytes(self, source: Source) -> bytes:
        """The bytes of a project file (``OSError`` when it cannot be read)."""
        data = self._texts.get(source.path)
        if data is None:
            data = read_source(source.path)
            if len(data) <= self._text_room:
                self._texts[source.path] = data
                self._text_room -= len(data)
        return data

    def _admits(self, collector: FactCollector, source: Source) -> bool:
        """Whether the bytes of a file the survey did not read pass ``collector``'s pre-filter
        (most do not: those are known to hold none of its facts, and are not handed to a worker
        process only to be turned away there)."""
        try:
            data = self._bytes(source)
        except OSError:
            return True  # the reader says so in its own way
        return self._file_passes(collector, source, data)

    def _file_passes(self, collector: FactCollector, source: Source, data: bytes) -> bool:
        """:func:`_passes`, remembered: a file that fails holds no facts (noted in ``_read``)."""
        key = (collector.name, source.fact_path)
        if key in self._passing:
            return True
        if _passes(collector, data):
            self._passing.add(key)
            return True
        self._read[key] = {}
        return False

    def _file_spells(self, source: Source, data: bytes, token: str) -> bool:
        """Whether a file's bytes spell ``token`` (``a+b``: both words, each by
        :func:`_spells_word`), each word's answer remembered per file. Every word is looked
        for, not only those up to the first one missing: questions that share a word
        (``<namespace>+<module>``, one per name a function holds) then pass over, unread, the
        files known to lack it (:meth:`_answers`)."""

        def spells_word(word: str) -> bool:
            spelled = self._spelled.setdefault(word, {})
            found = spelled.get(source.fact_path)
            if found is None:
                found = spelled[source.fact_path] = self._spells(source, data, word)
            return found

        return all([spells_word(word) for word in token.split("+")])

    def _may_spell(self, source: Source, data: bytes, token: str) -> bool:
        """Whether a file's bytes may spell ``token`` (:meth:`_file_spells`): each of its
        words, as bytes, somewhere in them (a whole word and a class statement both spell the
        word's bytes). A word found missing is remembered as not spelled, as
        :meth:`_file_spells` would; a word that is not ASCII is left to it."""
        for word in token.split("+"):
            name = word[len(_kind(word)):]
            if name.isascii() and name.encode() not in data:
                self._spelled.setdefault(word, {})[source.fact_path] = False
                return False
        return True

    def _spells(self, source: Source, data: bytes, word: str) -> bool:
        """:func:`_spells_word`, with the names of a word's kind (:data:`_NAMES_OF`) listed once
        per file: a rule may ask about each class of a file in turn, and each question looks at
        every file of its collector (Lightning: 82 questions, 47 files, a pattern search of the
        whole text for each pair)."""
        kind = _kind(word)
        if not kind:
            return _spells_word(data, word)
        names = self._names.get((kind, source.fact_path))
        if names is None:
            names = self._names[kind, source.fact_path] = _NAMES_OF[kind](data)
        return _among(data, word[len(kind):], names)

    def _answers(self, token: str) -> list[dict[str, bool]]:
        """Per word of ``token``, what :meth:`_file_spells` learnt of each file: a file known
        not to spell one of them (``False``) does not spell ``token``, and need not be read."""
        return [self._spelled.setdefault(word, {}) for word in token.split("+")]

    def _cached(self, source: Source, collector: FactCollector) -> bool:
        """Whether the cache holds this file's facts for ``collector`` (now in ``_read``)."""
        if self._cache is None:
            return False
        content = source.content
        if content is None:
            try:
                content = digest(self._bytes(source))
            except OSError:
                return False
        hit = self._cache.get(facts_key(collector.name, source.fact_path, content))
        if hit is None:
            return False
        self._read[collector.name, source.fact_path] = dict(hit)
        return True

    def _alone(self, token: str) -> bool:
        """Whether a parse for a question reads only its own collector's facts."""
        return bool(token) or self._asked < 2

    def _serves(self, name: str) -> bool:
        """Whether a parse made for another collector also reads this one's facts."""
        return self.in_play is None or name in self.in_play

    def read_one(self, collector: FactCollector, source: Source, alone: bool) -> Read:
        """What reading one file for ``collector`` puts in ``_read`` (per collector), and the
        cache entries made for it (in a worker process of :data:`Mapper`)."""
        self.fresh = []
        try:
            data = read_source(source.path)
        except OSError:
            return {}, []
        self._read_file(source, data, collector, alone)
        fresh, self.fresh = self.fresh, []
        facts = {
            name: self._read[name, source.fact_path] for name in self._all
            if (name, source.fact_path) in self._read
        }
        return facts, fresh

    def _facts_of(self, source: Source, collector: FactCollector, token: str = "") -> Facts:
        key = (collector.name, source.fact_path)
        known = self._read.get(key)
        if key in self._seeded and known is not None:
            self._seeded.discard(key)
            self._cache_seeded(collector.name, source, known)
        if known is not None and (not token or not known):
            return known  # a file without facts answers no question about a token either
        holders = self._holders.get((collector.name, token)) if token else None
        if holders is not None:
            if source.fact_path not in holders:
                return {}
            if known is not None:
                return known
        if known is None and not token and source.content is not None \
                and source.collectors is not None and collector.name in source.collectors \
                and self._cached(source, collector):
            return self._read[key]  # as _read_file would find it, without reading the file
        try:
            data = self._bytes(source)
        except OSError:
            return {}
        if token and holders is None and not self._file_spells(source, data, token):
            return {}
        if known is None:
            self._read_file(source, data, collector, self._alone(token))
        return self._read.get(key, {})

    def _cache_seeded(self, name: str, source: Source, facts: Facts) -> None:
        """Keep in the cache facts of a file read by the survey, now that a question uses
        them."""
        if self._cache is not None and source.content is not None:
            key = facts_key(name, source.fact_path, source.content)
            self._cache.put(key, facts)
            self.fresh.append((key, facts))

    def _read_file(
        self, source: Source, data: bytes, collector: FactCollector, alone: bool
    ) -> None:
        """Put in ``_read`` this file's facts for ``collector`` if it passes its pre-filter,
        and for every other collector whose pre-filter it passes (unless ``alone``), from the
        cache or else from one ``ast`` parse; ``{}`` for the collectors whose pre-filter it
        fails, when the survey did not say which."""
        path = source.fact_path
        if source.collectors is None:
            # Not surveyed: the question's own pre-filter first (most files fail it), the
            # others only for a file about to be parsed.
            if not self._file_passes(collector, source, data):
                return
            passes = [
                other.name for other in self._all.values()
                if other is collector or (not alone and self._serves(other.name)
                                          and self._file_passes(other, source, data))
            ]
        else:
            passes = list(source.collectors)
        if collector.name not in passes:
            self._read[collector.name, path] = {}
            return
        content = (source.content or digest(data)) if self._cache is not None else ""
        keys: dict[str, str] = {}
        if self._cache is not None:
            key = keys[collector.name] = facts_key(collector.name, path, content)
            hit = self._cache.get(key)
            if hit is not None:
                self._read[collector.name, path] = dict(hit)
                return  # no parse: the others are read when asked, from the cache or a parse
        wanted = [
            self._all[name] for name in passes
            if name in self._all and (name, path) not in self._read
            and (name == collector.name or (not alone and self._serves(name)))
        ]
        for other in wanted:
            keys.setdefault(other.name, facts_key(other.name, path, content))
        for made, facts in zip(wanted, _collect(data, path, wanted), strict=True):
            self._read[made.name, path] = facts
            cache_key = keys.get(made.name)
            if cache_key is not None and self._cache is not None:
                self._cache.put(cache_key, facts)
                self.fresh.append((cache_key, facts))


def _collect(data: bytes, fact_path: str, collectors: list[FactCollector]) -> list[Facts]:
    """Each collector's facts from one parse of the file."""
    # Imported here: survey imports the linter, which this module need not load for a cache hit.
    from sampler_lint.engine.survey import source_text

    try:
        tree = ast.parse(source_text(data))
    except _PARSE_FAILURES:
        return [{} for _ in collectors]  # libcst decides (and reports SL001): no facts
    return [collector.facts_in(tree, fact_path) for collector in collectors]


def _passes(collector: FactCollector, data: bytes) -> bool:
    """Whether a file's bytes pass ``collector``'s text pre-filter (its tokens, then its shape,
    on the decoded text)."""
    if not all(any(_holds(data, token) for token in group) for group in collector.requires):
        return False
    if collector.shape is None:
        return True
    from sampler_lint.engine.survey import source_text

    return collector.shape(source_text(data))


def _holds(data: bytes, token: str) -> bool:
    if token.isascii():
        # Python source is in an ASCII-compatible encoding (PEP 263; a UTF-8 BOM included), so
        # an ASCII identifier in the text is the same bytes in the file.
        return token.encode() in data
    from sampler_lint.engine.survey import source_text

    return token in source_text(data)


#: The token of the question "which files does the project hold?" (see DemandIndex._file_facts).
FILES = "/"


def _is_digest(value: Facts) -> bool:
    """Whether a cache entry is a remembered digest (``{"digest": [...]}``, or one carried
    across runs, ``{"carried": [...]}``), not facts."""
    return list(value) in (["digest"], ["carried"])


def _is_file_token(token: str) -> bool:
    """Whether a question's token names a file (an absolute path) rather than a name."""
    return token == FILES or os.path.isabs(token)


def _spells_word(data: bytes, name: str) -> bool:
    """Whether a file's bytes spell the identifier ``name`` as a whole word: a question about
    ``AsrDataModule`` need not read the many files that only spell ``LibriSpeechAsrDataModule``.
    Bytes of 128 and up count as letters: outside strings and comments Python allows them only
    in identifiers, so they never end one. A word of a kind (:data:`_NAMES_OF`: ``class name``,
    ``bases name``): whether the names of that kind the bytes hold include it."""
    kind = _kind(name)
    if kind:
        return _among(data, name[len(kind):], _NAMES_OF[kind](data))
    if not name.isascii():
        return _holds(data, name)
    word = name.encode()
    start = data.find(word)
    while start != -1:  # most often the first is a whole word; a find is cheaper than a regex
        end = start + len(word)
        if (start == 0 or data[start - 1] not in WORD_BYTES) and (
            end == len(data) or data[end] not in WORD_BYTES
        ):
            return True
        start = data.find(word, start + 1)
    return False


#: The kinds of words a question may hold besides a name, each with the names of a file it asks
#: about: ``class name`` (:data:`CLASS_DEFINED`), the files that may define the class; ``bases
#: name`` (:data:`DERIVES_FROM`), the files that may hold a class deriving from it.
_NAMES_OF: dict[str, Callable[[bytes], frozenset[bytes]]] = {
    CLASS_DEFINED: class_statements_in,
    DERIVES_FROM: class_base_names_in,
}


def _kind(word: str) -> str:
    """The kind of a question's word (a key of :data:`_NAMES_OF`), ``""`` for a plain name."""
    return next((kind for kind in _NAMES_OF if word.startswith(kind)), "")


def _among(data: bytes, name: str, names: frozenset[bytes]) -> bool:
    """Whether ``name`` is among a file's ``names`` of a kind; a name that is not ASCII: whether
    the text spells it at all (the lists hold what the bytes spell)."""
    if not name.isascii():
        return _holds(data, name)
    return name.encode() in names




def facts_key(collector: str, fact_path: str, content: str) -> str:
    """The cache key of one file's facts for one collector."""
    return digest("facts", collector, fact_path, content)


def reads_key(base: str, pairs: Sequence[str]) -> str:
    """The cache key of a lint result made while the collectors of ``pairs`` (``name, digest``
    pairs from :meth:`DemandIndex.digests`) were gathered."""
    return digest(base, "reads", *pairs)
