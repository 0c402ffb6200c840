"""The project index: facts from every file of the project that a rule may need while linting
one file (a base class defined elsewhere, whether the project uses Lightning, who calls
``set_epoch``).

The project is the nearest ``pyproject.toml`` or git root above the linted paths, so a run over a
few changed files (pre-commit) sees the same facts as a run over everything. A run builds the
index on demand (:mod:`sampler_lint.engine.demand`): a collector's facts are gathered the first
time a rule asks for one of them, with Python's ``ast`` (far cheaper than libcst), from the files
that pass the collector's text pre-filter. :meth:`ProjectIndex.get` is the question;
:meth:`ProjectIndex.get_for` the same question when only files that spell a name can matter.

Facts come from rules: each lists the :class:`FactCollector` objects it needs in
``Rule.collectors`` (a text pre-filter and a function of one file's ``ast``), merged under the fact
names the collector chooses; a rule that reads facts collected for others sets
``Rule.uses_index``. The engine collects nothing
of its own: a fact every file would have to be parsed for costs more than most rules' whole run.

Facts are plain picklable values so that the index can be handed to worker processes.
"""

from __future__ import annotations

import ast
import keyword
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sampler_lint.analysis.per_type import PerType

# dotted_expression lives with the syntax summary (which reads assignments by it); the fact
# collectors and rules import it from here too.
from sampler_lint.analysis.syntax_summary import dotted_expression as dotted_expression
from sampler_lint.analysis.syntax_summary import per_tree
from sampler_lint.analysis.syntax_summary import qualify as qualify
from sampler_lint.analysis.text_shapes import TokenSearch


@dataclass(frozen=True)
class FactCollector:
    """One kind of facts for the project index: a text pre-filter in the shape of
    ``Rule.requires`` (a file that fails it contributes none of these facts) and the function
    that reads them from one file's ``ast``. Rules list the collectors they need; one collector
    listed by several rules runs once per file."""

    name: str
    requires: tuple[tuple[str, ...], ...]
    collect: Callable[[ast.Module, str], dict[str, list[Any]]]
    #: For facts that answer one yes-or-no question about the whole project ("does any file
    #: import lightning?"): whether an index already answers it. Such a collector reads the files
    #: that are parsed anyway; the other files passing ``requires`` are parsed only while the
    #: answer is still open, so a question settled by the first files costs no extra parse.
    settled: Callable[[ProjectIndex], bool] | None = None
    #: The fact names ``collect`` may return. A run gathers a collector's facts only when a rule
    #: asks for one of them (:mod:`sampler_lint.engine.demand`); a collector that names none is
    #: gathered when a rule asks for any fact no other collector names.
    kinds: tuple[str, ...] = ()
    #: Reading these facts costs about as much as parsing the file, and questions ask about few
    #: files: the survey reads them from its own parse only for a file that some rule left for
    #: it reads them (it asks about its own file first); any other file is parsed again if a
    #: question reaches it.
    costly: bool = False
    #: After ``requires``, for a file whose tokens pass: the shape its text must have to hold
    #: these facts (``sampler_lint.analysis.text_shapes``; ``None``: any). Like ``requires`` it
    #: must never drop a file whose facts are not empty.
    shape: Callable[[str], bool] | None = None

    def admits(self, text: str, search: TokenSearch | None = None) -> bool:
        """Whether a file whose text is ``text`` may hold these facts (its pre-filter;
        ``search``: the text's token search, shared with the rules' pre-filters)."""
        tokens = search or TokenSearch(text)
        return all(tokens.any(group) for group in self.requires) and (
            self.shape is None or self.shape(text)
        )

    def facts_in(self, tree: ast.Module, path: str) -> dict[str, list[Any]]:
        """This collector's facts of one file, without the kinds it found nothing for."""
        return {kind: list(values) for kind, values in self.collect(tree, path).items() if values}


@dataclass
class ProjectIndex:
    facts: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))

    def add(self, kind: str, values: list[Any]) -> None:
        self.facts[kind].extend(values)

    def get(self, kind: str) -> list[Any]:
        return self.facts.get(kind, [])

    def files_on_disk(self) -> bool:
        """Whether every fact comes from a file on disk, at the path the fact names: then a path
        that is not there names no file with facts. Not so for an index that stands an editor's
        buffer (standard input) or a git revision's contents (``--since``) in for files."""
        return False

    def get_for(self, kind: str, token: str) -> list[Any]:
        """Facts of ``kind`` enough to answer a question about ``token`` (an identifier): every
        fact of that kind, or, in an index built on demand, the facts of the files whose text
        spells ``token`` as a whole word. Use it where only a fact made from code that spells
        ``token`` can matter (``obj.offset = 3`` spells ``offset``), and filter the result: the
        answer must depend only on facts about ``token`` (a cached result that read the whole
        collector is not checked again for the token's files alone). ``a+b`` asks about the
        files that spell both; ``class name`` (:data:`CLASS_DEFINED`), about the files that may
        define that class (:func:`classes_named`); an absolute path, about the facts made in
        that one file (:func:`facts_in_file`)."""
        return self.get(kind)

    def merge(self, other: ProjectIndex) -> None:
        for kind, values in other.facts.items():
            self.facts[kind].extend(values)


EMPTY_INDEX = ProjectIndex()


def facts_named(index: ProjectIndex, kind: str, name: str) -> list[Any]:
    """The facts of ``kind`` whose ``name`` is ``name``, without repeats (several rules may
    collect the same facts), in the index's order. Use it for facts made from the code that
    spells their name (``class name``): an index built on demand reads only the files that hold
    ``name`` (:meth:`ProjectIndex.get_for`)."""
    return _asked(index, kind, name, "_facts_by_name", lambda fact: fact.name, unique=True)


#: Before a name, in a question (:meth:`ProjectIndex.get_for`): the files whose text may define
#: a class of that name (``class`` and the name, at the start of a line), not every file that
#: spells it (those that import or call it).
CLASS_DEFINED = "class "


#: Before a name, in a question (:meth:`ProjectIndex.get_for`): the files whose text may hold a
#: class deriving from that name (:func:`class_base_names_in`), not every file that spells it
#: (those that import, call or annotate with it).
DERIVES_FROM = "bases "


def classes_named(index: ProjectIndex, kind: str, name: str) -> list[Any]:
    """:func:`facts_named` for facts made from ``class name`` statements (``fact.name`` is the
    class's name): an index built on demand reads only the files that may define the class,
    not the many that import or call it (a one-file run over a torchtune recipe parsed the
    fourteen other recipes that subclass its base, none of which defines it)."""
    return _asked(
        index, kind, name, "_facts_by_name", lambda fact: fact.name, unique=True,
        asked=CLASS_DEFINED + name,
    )


def facts_in_file(index: ProjectIndex, kind: str, path: str, where: int | None) -> list[Any]:
    """The facts of ``kind`` made in the file at ``path`` (links resolved, as facts spell files;
    ``fact[where]`` is that path, or the fact itself when ``where`` is ``None``): an index built
    on demand reads only that file (:meth:`ProjectIndex.get_for` with a path)."""
    return _asked(
        index, kind, path, "_facts_by_file",
        (lambda fact: fact) if where is None else (lambda fact: fact[where]), unique=False,
    )


def _asked(
    index: ProjectIndex, kind: str, token: str, tables_name: str,
    key_of: Callable[[Any], str], unique: bool, asked: str | None = None,
) -> list[Any]:
    """The facts ``get_for(kind, asked)`` returns (``asked``: ``token`` unless given) whose key
    (``key_of``) is ``token``, memoised per index. Each list ``get_for`` returns is indexed by
    key once: once a whole collector is gathered, it returns that same list for every token."""
    memo: dict[tuple[str, str], list[Any]] = index.__dict__.setdefault(tables_name + "_memo", {})
    found = memo.get((kind, token))
    if found is None:
        facts = index.get_for(kind, token if asked is None else asked)
        tables: dict[str, tuple[list[Any], dict[str, list[Any]]]] = index.__dict__.setdefault(
            tables_name, {}
        )
        entry = tables.get(kind)
        if entry is None or entry[0] is not facts:
            table: dict[str, list[Any]] = {}
            for fact in dict.fromkeys(facts) if unique else facts:
                table.setdefault(key_of(fact), []).append(fact)
            entry = tables[kind] = (facts, table)
        found = memo[kind, token] = entry[1].get(token, [])
    return found


# The `class` keyword and what separates it from the name (a backslash may continue the line
# before the name). A match is a class statement only where the keyword starts its line
# (:func:`starts_line`): a class statement is compound, so it never follows `;` or a colon.
# Checked after the match, not in the pattern: a pattern that begins with a line start has no
# literal to look for, and scanned Lightning's files seven times more slowly.
CLASS_KEYWORD = r"class[\s\\]+"
# Each keyword and the word after it, that word in a look-ahead: a match consumes only the
# keyword, so a line holding `class` alone (the separator may be a newline) cannot hide the
# class statement on the line below it.
_FOLLOWED = "class(?=" + CLASS_KEYWORD[len("class"):] + "({word}+))"
_CLASS_NAMES = re.compile(_FOLLOWED.format(word=r"\w"))
_CLASS_NAMES_IN_BYTES = re.compile(_FOLLOWED.format(word=r"[\w\x80-\xff]").encode())


def starts_line(text: str | bytes, start: int) -> bool:
    """Whether only indentation comes before ``start`` on its line (a line ends in ``\n``, or
    in ``\r`` alone as Python also reads it)."""
    if isinstance(text, bytes):
        begin = max(text.rfind(b"\n", 0, start), text.rfind(b"\r", 0, start)) + 1
        return not text[begin:start].strip(b" \t\f")
    begin = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    return not text[begin:start].strip(" \t\f")


def class_names_in(text: str) -> set[str]:
    """Every name a ``class`` statement of this code may define (and a few more: a line of a
    docstring that starts with the word). An index-stage question about "the classes of this
    file" asks about each name (:meth:`ProjectIndex.get_for`) instead of reading every file;
    "class for ..." in a comment would ask about "for", which most files hold."""
    return {
        match[1] for match in _CLASS_NAMES.finditer(text)
        if starts_line(text, match.start()) and not keyword.iskeyword(match[1])
    }


def class_statements_in(data: bytes) -> frozenset[bytes]:
    """:func:`class_names_in` of a file's bytes (keywords left in: no question asks about one),
    each name as a whole word, bytes of 128 and up counting as letters: listed once per file,
    each question about ``class NAME`` is then a lookup (:mod:`sampler_lint.engine.demand`)."""
    return frozenset(
        match[1] for match in _CLASS_NAMES_IN_BYTES.finditer(data)
        if starts_line(data, match.start())
    )


def class_base_names_in(data: bytes) -> frozenset[bytes]:
    """The names a class of these bytes may derive from, imports resolved: the words of every
    class statement's header, after its name and up to the colon that ends it (its type
    parameters, bases and keywords: ``Name``, ``pkg.Name``, ``Name[T]`` spell ``Name``), and
    every name an import statement renames (``import ... Name as Other``, then ``class
    X(Other)``), bytes of 128 and up counting as letters. More names, never fewer: the words of
    a string or a comment in a header count, any word before ``as`` counts, and a header that
    does not end (a file Python cannot parse) runs to the end of its line."""
    words: set[bytes] = set()
    for match in _CLASS_NAMES_IN_BYTES.finditer(data):
        if starts_line(data, match.start()):
            start = match.end(1)
            words.update(_WORDS_IN_BYTES.findall(data, start, _header_end(data, start)))
    for match in _IMPORT_IN_BYTES.finditer(data):  # renames are made by import statements
        start = match.start()
        if start and data[start - 1] in WORD_BYTES:
            continue  # the end of a longer word (`reimport`)
        end = _header_end(data, match.end())
        if data.find(b"as", match.end(), end) != -1:
            words.update(_RENAMED_IN_BYTES.findall(data, match.end(), end))
    return frozenset(words)


_WORDS_IN_BYTES = re.compile(rb"[\w\x80-\xff]+")
# The keyword as a literal first (a look-behind would cost the search its literal scan, 20 times
# slower); the byte before it is checked after.
_IMPORT_IN_BYTES = re.compile(rb"import(?![\w\x80-\xff])")
#: The bytes an identifier is made of in a file's bytes: bytes of 128 and up count as letters
#: (outside strings and comments Python allows them only in identifiers).
WORD_BYTES = frozenset(
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_" + bytes(range(128, 256))
)
# A word before `as` (blanks, line breaks and comments may come between inside parentheses).
_RENAMED_IN_BYTES = re.compile(
    rb"(?<![\w\x80-\xff])([\w\x80-\xff]+)(?:[ \t\f\r\n\\]|#[^\r\n]*)*\bas(?![\w\x80-\xff])"
)
_OPENING, _CLOSING = frozenset(b"([{"), frozenset(b")]}")
_QUOTES = frozenset(b"'\"")
_LINE_ENDS = frozenset(b"\r\n")


def _header_end(data: bytes, at: int) -> int:
    """Where the head of a statement that goes on at ``at`` (a class header, an import's names)
    ends: a colon outside brackets, or the end of a line outside brackets that no backslash
    continues. Strings are skipped whole (a
    backslash escapes the byte after it, as in every string but a raw one, whose quotes it
    cannot end either) and comments to the end of their line."""
    depth = 0
    size = len(data)
    while at < size:
        byte = data[at]
        if byte in _OPENING:
            depth += 1
        elif byte in _CLOSING:
            depth = max(depth - 1, 0)
        elif byte == ord(":") and depth == 0:
            return at
        elif byte == ord("#"):  # a comment, to the end of its line
            ends = [found for found in (data.find(b"\n", at), data.find(b"\r", at)) if found >= 0]
            at = min(ends, default=size)
            continue
        elif byte in _QUOTES:
            at = _string_end(data, at)
            continue
        elif byte == ord("\\"):  # a backslash continues the line
            at += 2
            continue
        elif byte in _LINE_ENDS and depth == 0:
            return at
        at += 1
    return size


def _string_end(data: bytes, at: int) -> int:
    """Just after the string whose opening quote is at ``at`` (the end of its line for a
    one-line string that does not end there, the end of the data for a long one)."""
    triple = data[at:at + 3]
    quote = triple if triple in (b"'''", b'"""') else data[at:at + 1]
    at += len(quote)
    size = len(data)
    while at < size:
        if data[at] == ord("\\"):
            at += 2
            continue
        if data.startswith(quote, at):
            return at + len(quote)
        if len(quote) == 1 and data[at] in _LINE_ENDS:
            return at
        at += 1
    return size


# ------------------------------------------------------------------------------------------------
# Helpers for fact collectors


def statements(tree: ast.AST) -> Iterator[ast.stmt]:
    """Every statement of the tree, in every block (functions and classes included), without
    visiting expressions: imports and class definitions are statements, and a full ``ast.walk``
    costs several times more. A module's are listed once, however many fact collectors ask."""
    if not isinstance(tree, ast.Module):
        return _statements(tree)
    return iter(per_tree(tree, "statements", lambda: list(_statements(tree))))


def _statements(tree: ast.AST) -> Iterator[ast.stmt]:
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            yield node
        # Most statements (an assignment, a call, a return) hold no block: not asked five times.
        for block in _BLOCKS[type(node)]:
            children = getattr(node, block, None)
            if isinstance(children, list):
                stack.extend(reversed(children))


def _blocks(kind: type[ast.AST]) -> tuple[str, ...]:
    """The fields of a node type that may hold a block of statements."""
    return tuple(
        name for name in ("body", "orelse", "finalbody", "handlers", "cases")
        if name in kind._fields
    )


_BLOCKS: PerType[type[ast.AST], tuple[str, ...]] = PerType(_blocks)


def import_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> what it was imported as (``dist`` -> ``torch.distributed``). Read once per
    tree, however many fact collectors ask (a copy each: callers may add to it)."""
    return dict(per_tree(tree, "aliases", lambda: _import_aliases(tree)))


def _import_aliases(tree: ast.Module) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for node in statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    aliases.setdefault(top, top)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                full = f"{module}.{alias.name}" if module else alias.name
                aliases[alias.asname or alias.name] = full
    return aliases



# ------------------------------------------------------------------------------------------------
# Imports resolved by module path


def imported_module(node: ast.ImportFrom) -> str:
    """The module of ``from <module> import ...`` as written, leading dots included
    (``from ..data import x`` -> ``..data``), for :meth:`ModuleResolver.resolve`."""
    return "." * node.level + (node.module or "")


class RealPaths:
    """What ``os.path.realpath`` gives for each path asked about, one part at a time: a path's
    folder is resolved as a path of its own and remembered (the files of a folder, and the
    candidates of an import, share their folders), then the last part, which may be a link.
    ``realpath`` itself would look at every part of every path again: a recipe tree that links
    1,400 shared modules into its folders spent most of its walk there."""

    def __init__(self) -> None:
        self._reals: dict[str, str] = {}

    def of(self, path: str) -> str:
        """``os.path.realpath(path)``."""
        if not os.path.isabs(path):
            # From the working folder, not normalised (a `..` after a link is the link's
            # parent): realpath would resolve a relative path whole, every part again.
            path = os.path.join(os.getcwd(), path)
        try:
            return self._of(path, ())
        except _LinkLoop:
            # What realpath makes of a loop depends on where it meets it: leave it to realpath,
            # and remember nothing learnt through the loop.
            return os.path.realpath(path)

    def _of(self, path: str, following: tuple[str, ...]) -> str:
        real = self._reals.get(path)
        if real is not None:
            return real
        # Up to the nearest part already resolved (a loop, not recursion: a path may have more
        # parts than Python allows frames), then down again one part at a time.
        pending: list[tuple[str, str]] = []
        while real is None:
            folder, name = os.path.split(path)
            if name in ("", ".", "..") or not os.path.isabs(path):
                real = self._reals[path] = os.path.realpath(path)  # the root, or relative
            else:
                pending.append((path, name))
                path = folder
                real = self._reals.get(path)
        for part, name in reversed(pending):
            joined = os.path.join(real, name)
            real = self._reals[part] = (
                self._link(joined, following) if os.path.islink(joined) else joined
            )
        return real

    def _link(self, link: str, following: tuple[str, ...]) -> str:
        """The real path of ``link`` (in a resolved folder): its target's, from the folder.
        An unreadable link is left to ``realpath``; a loop or a long chain stops the question
        (:class:`_LinkLoop`)."""
        if link in following or len(following) >= _LINK_HOPS:
            raise _LinkLoop(link)
        try:
            target = os.readlink(link)
        except OSError:
            return os.path.realpath(link)
        return self._of(os.path.join(os.path.dirname(link), target), (*following, link))


# Links followed in a chain before the path is left to ``os.path.realpath`` (the kernel's limit
# is 40).
_LINK_HOPS = 40


class _LinkLoop(Exception):
    """A chain of links that loops, or is longer than :data:`_LINK_HOPS`."""


class ModuleResolver:
    """Which project files an import names, by module path, never by file name alone.

    ``known`` is every file the caller may resolve to (absolute paths, symbolic links
    resolved; a candidate is compared after resolving its links). An absolute
    module ``a.b.c`` imported from ``<dir>/x.py`` is ``<root>/a/b/c.py`` or
    ``<root>/a/b/c/__init__.py`` (a regular or a namespace package) where ``<root>`` is what
    Python may have on ``sys.path`` for that file: its own folder (a script run directly), one of
    the folders above it (the project root, a package's parent), or a ``src/`` folder in one of
    them (the ``src`` layout). A relative module (``.data``, ``..``) starts from the importer's
    package. A module with no such file in ``known`` resolves to nothing: it is unknown, and
    matches no project file by its name.
    """

    def __init__(self, known: Iterable[str]) -> None:
        self.known = frozenset(known)
        self._memo: dict[tuple[str, str], tuple[str, ...]] = {}
        self._at: dict[tuple[str, str], tuple[str, ...]] = {}
        self._reals = RealPaths()

    def is_known(self, path: str) -> bool:
        """Whether ``path`` (links resolved) is a file the caller may resolve to."""
        return path in self.known

    def _real(self, path: str) -> str:
        """``path`` with symbolic links resolved, as the index keys files: recipes often link a
        shared module into their folder (``asr_datamodule.py -> ../tdnn/asr_datamodule.py``)."""
        if path in self.known:
            return path
        return self._reals.of(path)

    @staticmethod
    def roots(importer: str) -> list[str]:
        """Where an absolute import in ``importer`` may start, nearest first. Strings, not
        ``PurePath``: a large project resolves tens of thousands of candidates, and building
        path objects was most of the time it took."""
        folder = os.path.dirname(importer)
        found: list[str] = []
        while True:
            found.append(folder)
            found.append(os.path.join(folder, "src"))
            parent = os.path.dirname(folder)
            if parent == folder:
                return found
            folder = parent

    def resolve(self, importer: str, module: str) -> tuple[str, ...]:
        """The files of ``known`` the module ``module`` (leading dots for a relative import) may
        be when imported from the file ``importer``: a module file or a package's
        ``__init__.py``. Remembered per folder: where an import may lead depends on the
        importer's folder alone (icefall's recipes hold a dozen files each, importing the same
        modules, each import a probe of some thirty paths)."""
        key = (os.path.dirname(importer), module)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = tuple(self._resolve(importer, module))
        return found

    def starts(self, importer: str, module: str) -> tuple[list[str], list[str]]:
        """The folders the module ``module`` imported from ``importer`` may be looked for in
        (:meth:`roots`, or the importer's package for a relative import), and the module's
        dotted parts; no folders for a bare absolute import."""
        dotted = module.lstrip(".")
        level = len(module) - len(dotted)
        parts = [p for p in dotted.split(".") if p]
        if level:
            base = os.path.dirname(importer)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            return [base], parts
        return (self.roots(importer) if parts else []), parts

    def _resolve(self, importer: str, module: str) -> Iterator[str]:
        starts, parts = self.starts(importer, module)
        dotted = ".".join(parts)
        seen: set[str] = set()
        for start in starts:
            for candidate in self._known_at(start, dotted, parts):
                if candidate not in seen:
                    seen.add(candidate)
                    yield candidate

    def _known_at(self, start: str, dotted: str, parts: list[str]) -> tuple[str, ...]:
        """The known files the module ``dotted`` (``parts``) is when looked for in the folder
        ``start``: its module file, then its package's ``__init__.py``. Remembered per folder:
        the folders above one file are those above its neighbours (icefall: 183,000 probes of
        49,000 paths)."""
        key = (start, dotted)
        found = self._at.get(key)
        if found is None:
            folder = os.path.join(start, *parts)
            candidates = [os.path.join(folder, "__init__.py")]
            if parts:
                candidates.insert(0, folder + ".py")
            # A path that is not there is no file of the project, whatever its links: most
            # are not (a module is looked for in every folder above the importer), and a stat
            # is cheaper than resolving its parts and asking the index about it.
            found = self._at[key] = tuple(
                candidate for candidate in map(self._real, filter(self._may_be, candidates))
                if self.is_known(candidate)
            )
        return found

    def _may_be(self, path: str) -> bool:
        """Whether ``path`` may be a known file: one of ``known`` as spelled, or a path that
        exists (``known`` may name files that are not on disk; a subclass that asks an index
        about each file says when a missing path may still be one)."""
        return path in self.known or os.path.exists(path)


def import_may_name(index: ProjectIndex, importer: str, module: str, target: str) -> bool:
    """Whether ``from <module> import Name`` in the file ``importer`` may be the ``Name``
    defined in the file ``target``: the module is that file, or a package folder holding it (a
    re-export from ``__init__.py``). Relative modules (``.samplers``) start from the importer's
    package."""
    resolver = _one_file_resolver(index, target)
    if target in resolver.resolve(importer, module):
        return True
    starts, parts = resolver.starts(importer, module)
    return any(target.startswith(os.path.join(start, *parts, "")) for start in starts)


def may_be_project_module(index: ProjectIndex, importer: str, module: str) -> bool:
    """Whether the module ``module`` imported in the file ``importer`` may be a file of the
    project: a relative import, or an absolute one whose first part is a folder or a module in
    one of the places the import may start from (:meth:`ModuleResolver.roots`). A few ``stat``
    calls, where the questions that :func:`import_may_name` answers read the project's files:
    ``torchdata.stateful_dataloader`` beside a torchtune recipe is no project module."""
    if module.startswith(".") or not index.files_on_disk():
        return True  # (a revision's or standard input's files are not on disk to look at)
    key = (os.path.dirname(importer), module.split(".")[0])
    known: dict[tuple[str, str], bool] = index.__dict__.setdefault("_project_modules", {})
    found = known.get(key)
    if found is None:
        first = key[1]
        found = known[key] = any(
            os.path.isdir(os.path.join(start, first))
            or os.path.isfile(os.path.join(start, first + ".py"))
            for start in ModuleResolver.roots(importer)
        )
    return found


def _one_file_resolver(index: ProjectIndex, target: str) -> ModuleResolver:
    """A resolver that knows the one file ``target``: whether an import may name it depends on
    no other file (every path of the index is resolved already, ``file_key``, so no other known
    file can stand for it), and a question about it reads no other file's facts."""
    cached: dict[str, ModuleResolver] = index.__dict__.setdefault("_one_file_resolvers", {})
    resolver = cached.get(target)
    if resolver is None:
        resolver = cached[target] = ModuleResolver((target,))
    return resolver
