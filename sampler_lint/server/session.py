"""A project kept warm in memory, for editors (``sampler-lint server``) and other long-lived
callers: the project index is surveyed once, then updated one file at a time, so a keystroke
re-reads the file being typed in and never the project.

The session holds each project file's facts (``Survey.facts``), not its text: memory grows with
the facts the rules collect, not with the project's size in bytes. Unsaved editor buffers stand in
for the files of the same name, so cross-file rules see what the user sees.

It is the same index a ``check`` run builds (same collectors, same project order), with one
difference by design: a file that was edited in the session contributes its facts for every
collector, including the project questions (``FactCollector.settled``) a cold run may leave
unread once settled. Those questions are yes-or-no, so the answers agree.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.analysis.loader_facts import forget_file_keys
from sampler_lint.engine import noqa, registry
from sampler_lint.engine.cache import DIRECTORY, Cache
from sampler_lint.engine.config import ConfigResolver
from sampler_lint.engine.discovery import SOURCE_SUFFIXES, iter_source_files
from sampler_lint.engine.findings import FileResult, Finding
from sampler_lint.engine.linter import PARSE_ERROR, LintOptions, decode, lint_source, parse
from sampler_lint.engine.runner import (
    RunOptions,
    _index_stage,
    _Job,
    lint_options_for,
    survey_files,
)
from sampler_lint.engine.survey import Collectors, Survey, _collect, source_text, survey_source

_PARSE_FAILURES = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)


@dataclass
class Linted:
    """One source linted in a session: the result and, when fixing, the fixed text (``None``
    when nothing changed)."""

    result: FileResult
    fixed: str | None = None
    excluded: bool = False  # the configuration excludes the file: nothing is reported
    index_changed: bool = False  # the text changed the project index: other files may read it
    #: For a notebook cell: the text as linted (IPython lines masked) and the masked lines, where
    #: no edit may go.
    code: str | None = None
    masked_lines: frozenset[int] = frozenset()


class ProjectSession:
    """The project under ``root``: its index, warm, and linting against it.

    ``resolver`` decides each file's configuration exactly as the command line does (the closest
    configuration file, with the caller's settings layered on top)."""

    def __init__(
        self, root: Path, resolver: ConfigResolver, *, jobs: int = 1, use_cache: bool = True
    ) -> None:
        self.root = root.resolve()
        self.resolver = resolver
        self.jobs = jobs
        self.use_cache = use_cache
        # Facts for every rule, not only the enabled ones: a file's selection may differ from its
        # neighbour's, and changing a setting must not need a new survey.
        self._collectors = Collectors.for_rules(registry.all_rules())
        self._order: list[str] = []  # the project's file order: the order facts are merged in
        self._facts: dict[str, ProjectIndex] = {}
        self._deferred: dict[str, tuple[str, ...]] = {}  # project questions not read yet
        self._buffers: dict[str, str] = {}  # unsaved text standing in for the file on disk
        self._index: ProjectIndex | None = None
        self._surveyed = False

    # -- the index -------------------------------------------------------------------------------

    @property
    def surveyed(self) -> bool:
        return self._surveyed

    @property
    def files(self) -> int:
        return len(self._order)

    def survey(self) -> None:
        """The first survey of the whole project (once; later calls do nothing)."""
        if self._surveyed:
            return
        self._surveyed = True
        forget_file_keys()
        paths = list(iter_source_files([self.root], self.resolver))
        jobs = [_Job(path, str(path), None) for path in paths]
        cache = Cache(self.root / DIRECTORY, "survey") if self.use_cache else None
        surveys, _, _ = survey_files(jobs, [], self._collectors, cache, self.jobs)
        if cache is not None:
            cache.save()
        for job, survey in zip(jobs, surveys, strict=True):
            key = str(job.path)
            self._order.append(key)
            self._facts[key] = survey.facts
            if survey.deferred:
                self._deferred[key] = survey.deferred
        for key, text in self._buffers.items():
            if key in self._facts or self._belongs(Path(key), True):
                data = text.encode("utf-8", "surrogatepass")
                self._store(key, survey_source(data, key, None, self._collectors))
        self._index = None

    def index(self) -> ProjectIndex:
        """The project index as it now is (merged again only after some file's facts changed)."""
        self.survey()
        if self._index is None:
            self._index = self._merge()
        return self._index

    def update(self, path: Path, text: str | None) -> bool:
        """``path`` now reads ``text`` (an unsaved buffer), or, with ``None``, what is on disk
        (the buffer was saved or closed, the file changed or disappeared). Returns whether the
        project index changed."""
        forget_file_keys()  # a link may have changed since
        key = self._key(path)
        if text is None:
            self._buffers.pop(key, None)
        else:
            self._buffers[key] = text
        if not self._surveyed:
            return False
        if key not in self._facts and not self._belongs(path, text is not None):
            return False
        if text is None:
            try:
                data = Path(key).read_bytes()
            except OSError:  # deleted: it contributes nothing any more
                return self._forget(key)
        else:
            data = text.encode("utf-8", "surrogatepass")
        return self._store(key, survey_source(data, key, None, self._collectors))

    def _belongs(self, path: Path, open_buffer: bool) -> bool:
        """Whether a file the survey did not meet is part of the project (a new file)."""
        if path.suffix not in SOURCE_SUFFIXES or (not open_buffer and not path.is_file()):
            return False
        try:
            path.resolve().relative_to(self.root)
        except ValueError:
            return False
        return not self.resolver.for_path(path).is_excluded(path)

    def _store(self, key: str, survey: Survey) -> bool:
        """Keep what a new survey of ``key`` says; whether the index changed."""
        facts, deferred = survey.facts, survey.deferred
        same_questions = self._deferred.get(key, ()) == deferred
        if deferred:
            self._deferred[key] = deferred
        else:
            self._deferred.pop(key, None)
        if key not in self._facts:
            self._order.append(key)
        elif self._facts[key].facts == facts.facts and same_questions:
            self._facts[key] = facts
            return False
        self._facts[key] = facts
        self._index = None
        return True

    def _forget(self, key: str) -> bool:
        self._deferred.pop(key, None)
        if key not in self._facts:
            return False
        del self._facts[key]
        self._order.remove(key)
        self._index = None
        return True

    def _merge(self) -> ProjectIndex:
        index = ProjectIndex()
        for key in self._order:
            index.merge(self._facts[key])
        self._answer_open_questions(index)
        return index

    def _answer_open_questions(self, index: ProjectIndex) -> None:
        """Read the files deferred for a project question the index leaves open, in project
        order, until it is settled (as ``survey.answer_questions`` does for a run); what they
        say is kept, so each is read at most once per session."""
        for collector in self._collectors.collectors:
            settled = collector.settled
            if settled is None or settled(index):
                continue
            for key in list(self._order):
                names = self._deferred.get(key, ())
                if collector.name not in names:
                    continue
                rest = tuple(name for name in names if name != collector.name)
                if rest:
                    self._deferred[key] = rest
                else:
                    del self._deferred[key]
                text = self._text(key)
                if text is None:
                    continue
                try:
                    facts = _collect(ast.parse(text), key, [collector])
                except _PARSE_FAILURES:
                    continue
                if facts.facts:
                    # A new object: the survey shares one empty index between files.
                    merged = ProjectIndex()
                    merged.merge(self._facts[key])
                    merged.merge(facts)
                    self._facts[key] = merged
                    index.merge(facts)
                    if settled(index):
                        break

    def _text(self, key: str) -> str | None:
        buffer = self._buffers.get(key)
        if buffer is not None:
            return buffer
        try:
            return source_text(Path(key).read_bytes())
        except OSError:
            return None

    def _key(self, path: Path) -> str:
        """A file as the index spells it: its resolved path (the walk yields the resolved root
        joined with the relative path), so rules comparing paths agree."""
        return str(path.resolve())

    # -- linting ---------------------------------------------------------------------------------

    def lint(
        self, path: Path, text: str, *, fix: bool = False, unsafe_fixes: bool | None = None,
    ) -> Linted:
        """Lint ``text`` as the file ``path``, the text standing in for the file in the index
        first (``Linted.index_changed``: whether that changed the index). ``unsafe_fixes``:
        ``None`` takes the configuration's. Each finding with a fix carries its edit
        (``FixInfo.edits``).

        One survey of the text serves both the index facts and the pre-filters, as in a run;
        then the libcst parse, only if a rule is left."""
        path = Path(self._key(path))
        key = str(path)
        self._buffers[key] = text
        self.survey()
        settings = self.resolver.for_path(path)
        excluded = settings.is_excluded(path)
        belongs = key in self._facts or self._belongs(path, True)
        lint = lint_options_for(
            settings, path, RunOptions(fix=fix, unsafe_fixes=unsafe_fixes, want_edits=True)
        )
        data = text.encode("utf-8", "surrogatepass")
        survey = survey_source(
            data, key if belongs else None, None if excluded else lint, self._collectors
        )
        changed = self._store(key, survey) if belongs else False
        if excluded:
            result = FileResult(filename=key, skipped=True)
            return Linted(result, excluded=True, index_changed=changed)
        index = self.index()
        if belongs:
            survey = _index_stage(survey, _Job(path, key, 0), lint, index)
        result, fixed = lint_source(path, data, lint, index, only=survey.rules)
        if result.skipped:
            _report_parse_error(result, path, data, lint)
        fixed_text = fixed.decode("utf-8", "surrogatepass") if fixed else None
        return Linted(result, fixed_text, index_changed=changed)

    def lint_cell(
        self, path: Path, text: str, *, number: int, fix: bool = False,
        unsafe_fixes: bool | None = None,
    ) -> Linted:
        """Lint one code cell of the notebook ``path`` as the command line does (IPython lines
        masked; a cell magic's cell is not Python and reports nothing)."""
        from sampler_lint.engine.notebook import (
            dedented,
            in_indented_cell,
            leading_indent,
            mask,
            unmask,
        )

        path = Path(self._key(path))
        settings = self.resolver.for_path(path)
        name = f"{path}:cell {number}"
        indent = leading_indent(text)
        masked = mask(dedented(text, indent))
        if settings.is_excluded(path) or not settings.options.get("notebooks", True):
            return Linted(FileResult(filename=name, skipped=True), excluded=True)
        if masked is None:
            return Linted(FileResult(filename=name, skipped=True))
        code, magics = masked
        # An indented cell is reported, not fixed, as on the command line (lint_notebook).
        options = RunOptions(fix=fix and not indent, unsafe_fixes=unsafe_fixes, want_edits=True)
        lint = lint_options_for(settings, path, options)
        data = code.encode("utf-8", "surrogatepass")
        result, fixed = lint_source(path, data, lint, self.index(), display_name=name)
        if result.skipped:
            _report_parse_error(result, name, data, lint)
        restored = unmask(fixed.decode("utf-8"), magics) if fixed is not None else None
        result.findings = [in_indented_cell(f, indent, text) for f in result.findings]
        masked_lines = frozenset(
            number for number, (before, after)
            in enumerate(zip(text.split("\n"), code.split("\n"), strict=False), start=1)
            if before != after
        )
        if masked_lines:
            # An edit of the masked text holds for the cell only away from the masked lines.
            result.findings = [_off_lines(f, masked_lines) for f in result.findings]
        return Linted(result, restored, code=code, masked_lines=masked_lines)


def _off_lines(finding: Finding, lines: frozenset[int]) -> Finding:
    """``finding`` without the edits of its fix that touch ``lines``."""
    fix = finding.fix
    if fix is None or not fix.edits:
        return finding
    if any(
        line in lines
        for edit in fix.edits
        for line in range(edit.location.line, edit.end_location.line + 1)
    ):
        return replace(finding, fix=replace(fix, edits=None))
    return finding


def _report_parse_error(result: FileResult, name: Path | str, data: bytes,
                        lint: LintOptions) -> None:
    """SL001 for a source no rule wanted. A run skips such a file unparsed (it cannot hold a
    finding); in an editor the file being typed is always wanted, and a syntax error in it must
    show (Python's parser says whether; libcst's path then words the finding as a run would)."""
    if not any(rule.code == PARSE_ERROR for rule in lint.rules):
        return
    try:
        text: str | None = decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        text = None  # undecodable: libcst's path says so
    if text is not None:
        file_codes = noqa.file_level_codes(text)
        if noqa.ALL in file_codes or PARSE_ERROR in file_codes:
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(text, "<sampler-lint>", "exec", flags=ast.PyCF_ONLY_AST,
                        dont_inherit=True)
            return
        except (SyntaxError, ValueError):
            pass
        except (RecursionError, MemoryError, OverflowError):
            return
    parsed = parse(str(name), data)
    if isinstance(parsed, Finding):
        result.findings.append(parsed)
        result.skipped = False
