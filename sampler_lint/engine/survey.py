"""The first pass over every file: from one read and at most one ``ast`` parse, what the file
contributes to the project index and which rules still want it after both pre-filter stages.

A run then parses with libcst only the files some rule wants. Keeping the two questions in one
pass matters because most of a cold run is Python's parser: the index and the syntax pre-filter
used to parse the same files twice.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sampler_lint.analysis.index import FactCollector, ProjectIndex
from sampler_lint.analysis.syntax_summary import SyntaxSummary, parsed, per_tree
from sampler_lint.analysis.text_shapes import TokenSearch
from sampler_lint.analysis.vocabulary import Vocabulary
from sampler_lint.engine import noqa
from sampler_lint.engine.cache import digest
from sampler_lint.engine.linter import (
    UNUSED_NOQA,
    LintOptions,
    decode,
    may_have_unused_noqa,
    rules_to_run,
)
from sampler_lint.engine.sources import read_source
from sampler_lint.rule import Rule

_PARSE_FAILURES = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)


@dataclass(frozen=True)
class Collectors:
    """The index facts a run collects: the collectors of its rules, each once."""

    collectors: tuple[FactCollector, ...] = ()

    @classmethod
    def for_rules(cls, rules: tuple[type[Rule], ...]) -> Collectors:
        unique: dict[str, FactCollector] = {}
        for rule in sorted(rules, key=lambda rule: rule.code):
            for collector in rule.collectors:
                unique.setdefault(collector.name, collector)
        return cls(tuple(unique.values()))

    @property
    def salt(self) -> str:
        return repr([collector.name for collector in self.collectors])


@dataclass(frozen=True)
class Survey:
    """What the first pass learnt about one file."""

    #: This file's facts for the project index (empty when it contributes none).
    facts: ProjectIndex
    #: A digest of ``facts``: the index digest is made of these, so a change that leaves a file's
    #: facts as they were does not re-lint the files that read the index.
    facts_digest: str
    #: Codes of the rules left after both pre-filter stages; ``None`` when the lint pass must
    #: decide itself (not linted here, undecodable, a notebook).
    rules: tuple[str, ...] | None
    #: The file holds a ``noqa`` comment: the unused-noqa check must see it even when no rule runs.
    has_noqa: bool = False
    #: Collectors whose text pre-filter this file passes but whose facts the survey did not
    #: gather: project questions (``FactCollector.settled``) it did not parse the file for, or,
    #: in a survey that gathers no facts (``gather=False``), every collector it passes.
    deferred: tuple[str, ...] = ()
    #: In a survey that gathers no facts: the facts of each collector in ``deferred``, read from
    #: the parse the syntax pre-filter made anyway (``(name, facts)``; empty when not parsed), so
    #: an index built on demand need not parse the file again.
    read: tuple[tuple[str, dict[str, list[Any]]], ...] = ()
    #: ``(code, hints)`` for the rules left whose syntax stage narrowed what the index stage
    #: should ask about (``Rule.syntax_hints``: plain values).
    hints: tuple[tuple[str, tuple[Any, ...]], ...] = ()


EMPTY_FACTS = ProjectIndex()
NOTHING = Survey(EMPTY_FACTS, "", None)
EMPTY_SURVEY = Survey(EMPTY_FACTS, "", ())


def survey_source(
    data: bytes, fact_path: str | None, lint: LintOptions | None, collectors: Collectors,
    gather: bool = True,
) -> Survey:
    """Survey one source. ``fact_path`` is the file as the index spells it (``None``: the file is
    not part of the project index); ``lint`` how it is linted (``None``: it is not); ``gather``:
    collect the file's index facts now (``False``: only note which collectors want it, for an
    index built on demand, :mod:`sampler_lint.engine.demand`)."""
    if not data.strip():
        return EMPTY_SURVEY  # nothing to find, nothing to collect
    try:
        text: str | None = decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        text = None  # the lint pass reports it; the index reads what it can
    rules: list[type[Rule]] | None = None
    has_noqa = False
    search = TokenSearch(text) if text is not None else None  # rules and collectors share it
    if lint is not None and text is not None:
        file_codes = frozenset() if lint.ignore_noqa else noqa.file_level_codes(text)
        rules = rules_to_run(text, file_codes, lint, search)
        has_noqa = may_have_unused_noqa(text)
    wanted: list[FactCollector] = []
    questions: list[FactCollector] = []
    if fact_path is not None:
        if text is None:
            index_text = data.decode("utf-8", "replace")
            search = TokenSearch(index_text)
        else:
            index_text = text
        for collector in collectors.collectors:
            if collector.admits(index_text, search):
                (questions if collector.settled or not gather else wanted).append(collector)
    else:
        index_text = text or ""
    syntax_stage = bool(
        rules and lint is not None and lint.use_prefilter
        and all(rule.has_syntax_filter for rule in rules)
    )
    # A file outside the project index (or a run without one: a few named files whose
    # pre-survey decides whether the project is read at all) has no index stage to defer to.
    worth_parsing = fact_path is None or _worth_parsing(rules, search)
    if not wanted and not (syntax_stage and worth_parsing):
        # Nothing parses this file now; project questions read it later only if still open.
        return Survey(EMPTY_FACTS, "", _codes(rules), has_noqa, _names(questions))
    try:
        tree = parsed(index_text if wanted else (text or ""))
    except _PARSE_FAILURES:
        # libcst decides (and reports SL001); the file contributes no facts, as before.
        return Survey(EMPTY_FACTS, "", _codes(rules), has_noqa)
    hints: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    if syntax_stage:
        rules, hints = _syntax_stage(tree, rules, lint, index_text if wanted else (text or ""))
    if not gather:
        read = tuple(
            (collector.name, collector.facts_in(tree, fact_path)) for collector in questions
            if not collector.costly or _reads(rules, collector)
        ) if fact_path is not None else ()
        return Survey(
            EMPTY_FACTS, "", _codes(rules), has_noqa, _names(questions), read, hints
        )
    # Parsed anyway: the project questions are answered from this file now.
    facts = _collect(tree, fact_path, wanted + questions) if fact_path else EMPTY_FACTS
    return Survey(facts, _digest(facts), _codes(rules), has_noqa, hints=hints)


def wants_lint(survey: Survey, lint: LintOptions) -> bool:
    """Whether the lint pass has anything to do for a surveyed file: a rule is left, the survey
    could not decide, or a ``noqa`` comment the unused-noqa check must read."""
    if survey.rules is None or survey.rules:
        return True
    return survey.has_noqa and any(rule.code == UNUSED_NOQA for rule in lint.rules)


def may_be_linted(data: bytes) -> bool:
    """Whether the lint pass may have something to do for a file of content ``data``
    (:func:`wants_lint` of its survey) with every rule enabled and the default vocabulary. A
    guess made before the settings are read (``lint_helper.start_early``): of 3,000 files of
    Lightning, diffusers and torchtune it keeps 213 (the text pre-filter alone, 230); the run
    decides for good, with its settings and the index stage."""
    from sampler_lint.engine.registry import all_rules

    every_rule = LintOptions(all_rules(), {}, Vocabulary())
    return wants_lint(survey_source(data, None, every_rule, Collectors()), every_rule)


def _syntax_stage(
    tree: ast.Module, rules: list[type[Rule]] | None, lint: LintOptions | None, source: str
) -> tuple[list[type[Rule]] | None, tuple[tuple[str, tuple[Any, ...]], ...]]:
    """The rules whose ``may_match`` keeps the file, and the hints they leave the index stage
    (``source``: the code ``tree`` was parsed from). Remembered on the tree for the same
    rules and the same lint options: a few named files are surveyed twice from one parse
    (:func:`~sampler_lint.analysis.syntax_summary.parsed`)."""
    if not rules or lint is None:
        return rules, ()
    remembered: dict[tuple[str, ...], tuple[LintOptions, Any]] = per_tree(
        tree, "syntax stage", dict
    )
    codes = tuple(rule.code for rule in rules)
    known = remembered.get(codes)
    if known is not None and known[0] is lint:  # held here, so no other options share its id
        kept, hints = known[1]
        return list(kept), hints
    summary = SyntaxSummary.of(tree).given(source, lint.vocabulary, lint.options)
    kept = [rule for rule in rules if rule.may_match(summary)]
    found = []
    for rule in kept:
        if rule.gives_hints():
            names = rule.syntax_hints(summary)
            if names is not None:
                found.append((rule.code, tuple(sorted(names, key=repr))))
    remembered[codes] = (lint, (tuple(kept), tuple(found)))
    return kept, tuple(found)


def _worth_parsing(rules: list[type[Rule]] | None, search: TokenSearch | None) -> bool:
    """Whether some rule left wants the syntax stage's parse (``Rule.parse_for``): the others
    leave a file that spells none of their words to the index stage."""
    return search is None or not rules or any(
        not rule.parse_for or search.any(rule.parse_for) for rule in rules
    )


def _reads(rules: list[type[Rule]] | None, collector: FactCollector) -> bool:
    """Whether a rule left for the file (``None``: any rule) reads ``collector``."""
    return rules is None or any(collector in rule.collectors for rule in rules)


def _digest(facts: ProjectIndex) -> str:
    # repr, not pickle: facts are plain values and dataclasses, whose repr is stable.
    return digest(repr(dict(facts.facts))) if facts.facts else ""


def is_survey(value: object) -> bool:
    """The shape of a cached survey (the cache treats anything else as a miss)."""
    return (
        isinstance(value, Survey)
        and isinstance(value.facts, ProjectIndex)
        and isinstance(value.facts.facts, dict)
        and all(isinstance(k, str) and isinstance(v, list) for k, v in value.facts.facts.items())
        and isinstance(value.facts_digest, str)
        and (value.rules is None or (
            isinstance(value.rules, tuple) and all(isinstance(c, str) for c in value.rules)
        ))
        and isinstance(value.has_noqa, bool)
        and isinstance(value.deferred, tuple)
        and all(isinstance(name, str) for name in value.deferred)
        and isinstance(value.read, tuple)
        and all(
            isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
            and isinstance(item[1], dict) for item in value.read
        )
        and isinstance(value.hints, tuple)
        and all(
            isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
            and isinstance(item[1], tuple) and all(_is_hint(hint) for hint in item[1])
            for item in value.hints
        )
    )


def _is_hint(value: object) -> bool:
    """Plain data, as ``Rule.syntax_hints`` promises: strings, numbers, booleans, ``None``, and
    tuples of those."""
    if value is None or type(value) in (str, int, bool):
        return True
    return type(value) is tuple and all(_is_hint(item) for item in value)


def _names(collectors: list[FactCollector]) -> tuple[str, ...]:
    return tuple(collector.name for collector in collectors)


def answer_questions(
    index: ProjectIndex, deferred: list[tuple[Path, str, tuple[str, ...]]],
    collectors: Collectors,
) -> tuple[ProjectIndex, list[str]]:
    """The facts for project questions still open in ``index``, from the files the survey
    deferred (``(path, fact_path, collector names)``, in project order), read one by one until
    each question is settled. Returns the facts and their digests."""
    answers = ProjectIndex()
    digests: list[str] = []
    open_questions = [
        c for c in collectors.collectors if c.settled is not None and not c.settled(index)
    ]
    for collector in open_questions:
        assert collector.settled is not None
        found = ProjectIndex()
        for path, fact_path, names in deferred:
            if collector.name not in names:
                continue
            try:
                tree = ast.parse(source_text(read_source(path)))
            except (OSError, *_PARSE_FAILURES):
                continue
            facts = _collect(tree, fact_path, [collector])
            if facts.facts:
                found.merge(facts)
                digests += [fact_path, _digest(facts)]
                if collector.settled(found):
                    break
        answers.merge(found)
    return answers, digests


def source_text(data: bytes) -> str:
    """The text of a source for the index: its BOM and coding cookie honoured (Python's parser
    rejects a stray BOM), undecodable bytes replaced rather than the file dropped."""
    try:
        return decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return data.decode("utf-8", "replace")


def _codes(rules: list[type[Rule]] | None) -> tuple[str, ...] | None:
    return None if rules is None else tuple(rule.code for rule in rules)


def _collect(tree: ast.Module, path: str, collectors: list[FactCollector]) -> ProjectIndex:
    index = ProjectIndex()
    for collector in collectors:
        for kind, values in collector.collect(tree, path).items():
            index.add(kind, values)
    return index
