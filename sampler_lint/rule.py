"""The contract between the engine and a rule: the one module of the engine a rule imports.

A rule is a :class:`Rule` subclass in one module of ``rules/``. It works as a libcst batchable
visitor: the engine runs every enabled rule over a file in a single traversal, so a rule only
writes the ``visit_*`` / ``leave_*`` methods it needs and calls :meth:`Rule.report`. Everything
about the rule (detection, fix, documentation, examples, options, text pre-filter) lives on the
class, so the engine never needs to know any rule by name. What a rule may ask about the file it
looks at is :class:`FileContext`; what it may ask about the code it reads lives in
``sampler_lint.analysis``.

Public: :class:`Rule`, :class:`FileContext`, :class:`Fix`, :class:`Report`, :class:`Option`,
:class:`Example`, :class:`Severity`, :class:`Applicability`. This module imports only the
foundation of ``sampler_lint.analysis`` (tree, imports, vocabulary, index, syntax_summary), never
the engine, so a rule written against it runs under any engine version that keeps it.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import ImportTable
from sampler_lint.analysis.tree import assignment_table, parents_below, parents_of
from sampler_lint.analysis.vocabulary import Vocabulary

if TYPE_CHECKING:
    from sampler_lint.analysis.index import FactCollector, ProjectIndex
    from sampler_lint.analysis.syntax_summary import SyntaxSummary


_NO_DEFAULT: Any = object()
_VISITOR_PREFIXES = ("visit_", "leave_")


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"


class Applicability(str, enum.Enum):
    """Ruff's fix-safety model."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Option:
    """A configuration key a rule reads (``split-fix = "ceil"``).

    ``kind`` is the Python type the value must have (``str``, ``bool``, ``list``); ``choices``
    limits string values. The engine validates configuration against the options of all installed
    rules.
    """

    key: str
    kind: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Example:
    """A documentation example that also runs as a test.

    ``code`` must produce exactly ``lines`` findings of the rule (empty for a valid example). When
    ``fixed`` is given, fixing ``code`` (unsafe fixes and ``options`` included) must produce it.
    """

    code: str
    lines: tuple[int, ...] = ()
    fixed: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


# A replacement is ``(original node, new node)``. The new node may be a ``cst.FlattenSentinel`` to
# insert statements around a statement, or ``cst.RemovalSentinel.REMOVE`` to delete it.
Replacement = tuple["cst.CSTNode", "cst.CSTNode | cst.FlattenSentinel[Any] | cst.RemovalSentinel"]


@dataclass
class Fix:
    """A change to the syntax tree that removes one finding.

    ``imports`` lists ``(module, name)`` pairs the fixed code needs (``("math", None)`` for
    ``import math``); the engine adds them with libcst's import helpers.

    ``risk``: for an unsafe fix, one line saying what could go wrong when it is applied (the
    reporters print it, so ``--unsafe-fixes`` users know what they accept). Rules usually leave it
    empty and set :attr:`Rule.fix_risk`, which the engine uses instead.

    ``tidy``: after the fix, the engine removes the imports and function locals that the replaced
    code read and that nothing reads any more (``engine.orphans``). A rule whose fix must
    leave such bindings alone sets it to ``False``.
    """

    replacements: list[Replacement]
    applicability: Applicability
    message: str
    imports: list[tuple[str, str | None]] = field(default_factory=list)
    risk: str = ""
    tidy: bool = True


@dataclass
class Report:
    """What a rule reports during traversal; the engine turns it into a located finding."""

    rule: type[Rule]
    node: cst.CSTNode
    message: str
    fix: Fix | None


#: A syntax-stage hint (:meth:`Rule.syntax_hints`): plain data, as the survey cache holds it.
Hint = Hashable


@dataclass
class FileContext:
    """Per-file state shared by all rules during one traversal."""

    path: Path
    module: cst.Module
    options: dict[str, Any]
    vocabulary: Vocabulary
    index: ProjectIndex
    reports: list[Report] = field(default_factory=list)
    _parents: dict[cst.CSTNode, cst.CSTNode] | None = None
    _parents_complete: bool = False
    #: The node whose visitors the traversal is running (``engine.walk`` sets it), and the
    #: last node whose subtree's parents were filled in ahead of the traversal.
    visiting: list[cst.CSTNode | None] = field(default_factory=lambda: [None])
    _filled: cst.CSTNode | None = None
    _imports: ImportTable | None = None
    _assignments: dict[int, dict[str, list[cst.BaseExpression]]] = field(default_factory=dict)

    # -- tree navigation ------------------------------------------------------------------------
    @property
    def parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        """The parent of every node (whitespace and comments aside)."""
        if self._parents is None or not self._parents_complete:
            self.set_parents(parents_of(self.module), complete=True)
        assert self._parents is not None
        return self._parents

    def set_parents(self, parents: dict[cst.CSTNode, cst.CSTNode], complete: bool) -> None:
        """Parents recorded by the traversal that runs the rules (``engine.walk``). While
        it runs the map is partial, but always holds every ancestor of the node being visited;
        a question about any other node builds the whole map first."""
        self._parents = parents
        self._parents_complete = complete

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        if node is self.module:
            return None
        if self._parents is not None:
            found = self._parents.get(node)
            if found is not None or self._parents_complete:
                return found
            # Mid-traversal, a visitor most often asks about a node below the one it was
            # given (a call's argument): its subtree's parents are recorded now, not the whole
            # file's (a 2,000-line test file: 20 ms).
            visiting = self.visiting[0]
            if visiting is not None and visiting is not self._filled:
                self._filled = visiting
                for child, parent in parents_below(visiting):
                    self._parents[child] = parent
                found = self._parents.get(node)
                if found is not None:
                    return found
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def enclosing_scope(self, node: cst.CSTNode) -> cst.FunctionDef | cst.ClassDef | cst.Module:
        """The innermost function, class or module holding ``node``."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Module)):
                return ancestor
        return self.module

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                return ancestor
        return None

    def enclosing_class(self, node: cst.CSTNode) -> cst.ClassDef | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.ClassDef):
                return ancestor
        return None

    def enclosing_statement(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        for ancestor in [node, *self.ancestors(node)]:
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return ancestor
        return None

    def assignments(self, scope: cst.CSTNode) -> dict[str, list[cst.BaseExpression]]:
        """Every simple assignment in ``scope`` by target name, computed once per scope."""
        table = self._assignments.get(id(scope))
        if table is None:
            table = assignment_table(scope)
            self._assignments[id(scope)] = table
        return table

    # -- names ----------------------------------------------------------------------------------
    @property
    def imports(self) -> ImportTable:
        if self._imports is None:
            self._imports = ImportTable.from_module(self.module)
        return self._imports

    def qualified_name(self, node: cst.BaseExpression) -> str | None:
        """``dist.get_rank`` -> ``torch.distributed.get_rank`` through the file's imports."""
        return self.imports.qualify(node)

    @property
    def source(self) -> str:
        """The whole file's code (the text it was parsed from when known, else regenerated from
        the tree once, on first use)."""
        cached = self.__dict__.get("_source")
        if cached is None:
            cached = self.__dict__["_source"] = self.module.code
        return cached

    def known_source(self, text: str) -> None:
        """Tell the context the module's code without regenerating it (``text`` must equal
        ``module.code``)."""
        self.__dict__["_source"] = text

    def code_for(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


class Rule:
    """Base class of all rules. Subclasses set the class attributes and write visitor methods.

    A rule is a libcst batchable visitor by duck typing (``get_visitors``,
    ``METADATA_DEPENDENCIES``, ``get_metadata``), not by inheritance: subclassing libcst's class
    would import libcst whenever the rules are listed, and most runs (a warm cache, a pre-commit
    file no pre-filter keeps) never parse a file with it (``sampler_lint.analysis.lazy_libcst``).
    So what libcst's class alone gave is not here: its no-op ``visit_<Node>`` stubs (a rule does
    not call ``super().visit_Call(node)``), ``MetadataDependent.resolve`` (the engine, not
    ``MetadataWrapper.visit_batched``, resolves a rule's providers), and
    ``isinstance(rule, libcst.BatchableCSTVisitor)``.
    """

    #: libcst metadata providers the rule reads with :meth:`get_metadata`; the engine then runs
    #: the rules with libcst's own traversal, which resolves them.
    METADATA_DEPENDENCIES: ClassVar[tuple[Any, ...]] = ()

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    #: ``None`` when the rule never offers a fix.
    fix_applicability: ClassVar[Applicability | None] = None
    #: For a rule with an unsafe fix: one line saying what could go wrong when the fix is applied
    #: (printed under each unsafe fix by the full and concise outputs). Required for every rule
    #: whose fixes may be unsafe (``tests/test_rule_examples.py`` checks it).
    fix_risk: ClassVar[str] = ""
    default_enabled: ClassVar[bool] = True
    #: Text pre-filter: every group must have at least one of its strings in the file for the rule
    #: to possibly fire. It must never hide a finding, so keep groups to what the pattern requires.
    #: ``{rank}``, ``{world_size}`` and ``{seed}`` stand for the (configurable) vocabulary.
    requires: ClassVar[tuple[tuple[str, ...], ...]] = ()
    options: ClassVar[tuple[Option, ...]] = ()
    #: Markdown-ish documentation with the sections What it does / Why is this bad / Example /
    #: Use instead / Fix safety / References.
    documentation: ClassVar[str] = ""
    examples: ClassVar[tuple[Example, ...]] = ()
    #: Reported by the engine itself (parse errors) rather than by a traversal.
    engine_rule: ClassVar[bool] = False
    #: What the rule needs in the project index (``analysis.index.FactCollector``); empty
    #: means the rule contributes no facts.
    collectors: ClassVar[tuple[FactCollector, ...]] = ()
    #: The rule's findings depend on the project index (set with ``collectors``, or alone for a
    #: rule that reads facts other rules collect): the cache then keys its results by the index.
    uses_index: ClassVar[bool] = False

    def __init__(self, context: FileContext) -> None:
        self.context = context
        #: Provider -> node -> value, for ``METADATA_DEPENDENCIES`` (set by the engine).
        self.metadata: Mapping[Any, Mapping[Any, Any]] = {}

    #: Whether the rule answers :meth:`may_match` (the engine parses with ``ast`` first only
    #: when every rule left after the text pre-filter does).
    has_syntax_filter: ClassVar[bool] = False
    #: Words without which the syntax stage is not worth an ``ast`` parse for this rule (empty:
    #: it always is). A project file that spells none of them is not parsed for the rule: its
    #: index stage judges it from the text (:meth:`may_match_index` without hints; a file with
    #: no index stage to come, such as a run over a few named files, is parsed). For a rule that,
    #: in such a file, can only match what the index shows (SL301: a project subclass of
    #: DistributedSampler, whatever its name), so that the parse would narrow little. A file
    #: parsed anyway, for another rule, still has this rule's syntax stage.
    parse_for: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        """Second pre-filter stage: could a file with these node kinds and names hold the
        pattern? Must never hide a finding; set ``has_syntax_filter = True`` when overriding."""
        return True

    @classmethod
    def may_match_text(cls, text: str) -> bool:
        """Between the text pre-filter's tokens and the ``ast`` parse: could a file with this
        text hold the pattern, by a shape plain tokens cannot state (a ``//`` that is no URL's,
        a constructor's name as a whole word; ``sampler_lint.analysis.text_shapes``)? Asked only
        when the tokens pass. Must never hide a finding."""
        return True

    @classmethod
    def may_match_index(cls, index: ProjectIndex, path: str, text: str) -> bool:
        """Third pre-filter stage, for rules that read the project index: with the index at
        hand, could the file at ``path``, whose code is ``text``, still hold a finding (a class
        the index shows is no sampler cannot hold a misspelled sampler attribute; a file that
        names no project subclass of DistributedSampler cannot build one)? Must never hide a
        finding."""
        return True

    @classmethod
    def syntax_hints(cls, summary: SyntaxSummary) -> frozenset[Hint] | None:
        """What the second stage saw that only the index can judge: the names (classes,
        callees), or plain tuples of them (where a loader comes from), the third stage should
        ask about, handed to :meth:`may_match_index` as ``hints=``, so a file kept for one class
        is not kept for another. They are cached with the survey: strings, numbers, booleans,
        ``None`` and tuples of those only. ``None`` (the default): no narrowing; a rule returns
        it too when the file holds a candidate the index need not judge. Asked only of rules
        whose :meth:`may_match` kept the file; a rule that overrides it takes ``hints`` in
        :meth:`may_match_index`."""
        return None

    @classmethod
    def gives_hints(cls) -> bool:
        """Whether the rule has :meth:`syntax_hints` of its own."""
        own = getattr(cls.syntax_hints, "__func__", None)
        return own is not getattr(Rule.syntax_hints, "__func__", None)

    @classmethod
    def has_index_stage(cls) -> bool:
        """Whether the rule has a third pre-filter stage of its own (``may_match_index``)."""
        own = getattr(cls.may_match_index, "__func__", None)
        return own is not getattr(Rule.may_match_index, "__func__", None)

    def get_visitors(self) -> dict[str, Callable[[Any], object]]:
        """The ``visit_<Node>`` / ``leave_<Node>`` methods (and libcst's attribute visitors,
        ``visit_<Node>_<field>``) this rule wrote, by name: what libcst's
        ``BatchableCSTVisitor.get_visitors`` answers (bound methods whose own name starts so: a
        static method, or a wrapper that hides the name, is not one), so libcst's
        ``visit_batched`` runs a rule as it runs its own visitors. A property is never
        evaluated here."""
        found: dict[str, Callable[[Any], object]] = {}
        for name in dir(type(self)):
            if name.startswith(_VISITOR_PREFIXES) and not isinstance(
                inspect.getattr_static(self, name), property
            ):
                method = getattr(self, name)
                if inspect.ismethod(method) and method.__name__.startswith(_VISITOR_PREFIXES):
                    found[name] = method
        return found

    def get_metadata(self, key: Any, node: cst.CSTNode, default: Any = _NO_DEFAULT) -> Any:
        """libcst's ``MetadataDependent.get_metadata``: the value of provider ``key`` for
        ``node``, resolved by the engine for the providers in ``METADATA_DEPENDENCIES``."""
        if key not in self.metadata:
            raise KeyError(f"{key.__name__} is not in {type(self).__name__}.METADATA_DEPENDENCIES")
        if default is _NO_DEFAULT:
            return self.metadata[key][node]
        return self.metadata[key].get(node, default)

    def report(self, node: cst.CSTNode, message: str, fix: Fix | None = None) -> None:
        self.context.reports.append(Report(type(self), node, message, fix))

    @classmethod
    def summary(cls) -> str:
        """The first sentence of the documentation, for listings."""
        text = cls.documentation.strip().splitlines()
        for line in text:
            if line.strip() and not line.startswith("#"):
                return line.strip()
        return cls.name

    @classmethod
    def prefilter_groups(cls, vocabulary: Vocabulary | None = None) -> tuple[TokenGroup, ...]:
        """``requires`` as one :class:`TokenGroup` per group. A token ``{rank}``,
        ``{world_size}`` or ``{seed}`` stands for every word of that vocabulary (configured names
        included). Equal groups of different rules are equal (and hash alike), so a file is
        searched once per distinct group."""
        key = (cls, vocabulary)
        cached = _PREFILTERS.get(key)
        if cached is None:
            vocab = vocabulary or Vocabulary()
            groups = []
            for group in cls.requires:
                tokens: list[str] = []
                for token in group:
                    tokens.extend(vocab.tokens(token) if token.startswith("{") else [token])
                unique = set(tokens)
                # A token that holds another of its group adds nothing (`get_rank` holds `rank`),
                # and a failed search scans the whole text once per token.
                groups.append(TokenGroup(tuple(sorted(
                    token for token in unique
                    if not any(other != token and other in token for other in unique)
                ))))
            cached = _PREFILTERS[key] = tuple(groups)
        return cached


@dataclass(frozen=True)
class TokenGroup:
    """One group of a text pre-filter: the text holds at least one of ``tokens``.

    Plain substring tests: each is a fast scan in C, where one regular expression of many
    alternatives walks the text far more slowly."""

    tokens: tuple[str, ...]

    def search(self, text: str) -> bool:
        return any(token in text for token in self.tokens)


_PREFILTERS: dict[tuple[type[Rule], Vocabulary | None], tuple[TokenGroup, ...]] = {}


def rule_selectors(rule: type[Rule]) -> Sequence[str]:
    return (rule.code, rule.name)
