"""Linting and fixing one source: pre-filter, one parse, one batched traversal of all enabled rules,
positions only when something was reported, and the fix loop with its safety checks.
"""

from __future__ import annotations

import ast
import difflib
import tokenize
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.index import EMPTY_INDEX, ProjectIndex
from sampler_lint.analysis.loader_facts import is_package_init
from sampler_lint.analysis.positions import positions_around, positions_of
from sampler_lint.analysis.syntax_summary import summarize
from sampler_lint.analysis.text_shapes import TokenSearch
from sampler_lint.analysis.vocabulary import Vocabulary
from sampler_lint.engine import noqa, walk
from sampler_lint.engine.findings import Edit, FileResult, Finding, FixInfo, Location
from sampler_lint.rule import Applicability, FileContext, Fix, Report, Rule, TokenGroup

if TYPE_CHECKING:
    from libcst.metadata import CodeRange

PARSE_ERROR = "SL001"
UNUSED_NOQA = "SL002"
MAX_FIX_ROUNDS = 10


@dataclass(frozen=True)
class LintOptions:
    """How one file is linted: which rules, fixing or not, what to build."""

    rules: tuple[type[Rule], ...]
    options: dict[str, Any]
    vocabulary: Vocabulary
    fix: bool = False
    unsafe_fixes: bool = False
    want_edits: bool = False  # json and sarif print each fix's edits
    want_diff: bool = False
    use_prefilter: bool = True
    #: The codes whose fixes may be offered and applied (``None``: every code); a finding of
    #: another code carries no fix (``--unfixable``, ``fixable``).
    fixable: frozenset[str] | None = None
    #: ``--ignore-noqa``: report what ``# noqa`` comments and file-level directives suppress.
    ignore_noqa: bool = False


@dataclass
class Located:
    report: Report
    range: CodeRange
    statement_lines: tuple[int, int]


# ------------------------------------------------------------------------------------------------
# Decoding


def decode(data: bytes) -> str:
    """The text of a Python source, honouring its BOM and coding cookie."""
    encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
    return data.decode(encoding)


def _parse_error(path: str, message: str, line: int = 1, column: int = 1) -> Finding:
    from sampler_lint.engine.registry import rules_by_code

    rule = rules_by_code().get(PARSE_ERROR)
    return Finding(
        code=PARSE_ERROR,
        name=rule.name if rule else "parse-error",
        severity="error",
        message=message,
        filename=path,
        location=Location(line, column),
        end_location=Location(line, column),
    )


def _python_syntax_error(data: bytes) -> tuple[str, int, int] | None:
    try:
        compile(data, "<sampler-lint>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        return f"syntax error: {error.msg}", error.lineno or 1, error.offset or 1
    except (ValueError, RecursionError, MemoryError):
        return None
    return None


@contextmanager
def _parser_built_nodes() -> Iterator[None]:
    """libcst checks every node as it is built (``CSTNode.__post_init__`` calls ``_validate``).
    Nodes its parser builds from source are valid by construction and the check is about 15% of
    the parse (libcst's own comment there suggests moving it out). It is off while the parser
    runs and on again for everything else: nodes that fixes build by hand are still checked."""
    original = cst.CSTNode.__dict__["__post_init__"]
    cst.CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign]
    try:
        yield
    finally:
        cst.CSTNode.__post_init__ = original  # type: ignore[method-assign]


def _unchecked(self: cst.CSTNode) -> None:
    return None


def parse(path: str, data: bytes) -> cst.Module | Finding:
    """The libcst module, or the SL001 finding that says why there is none."""
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        return _parse_error(path, "file contains a NUL byte and cannot be parsed", line)
    try:
        decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        return _parse_error(path, f"cannot decode file: {error}")
    try:
        with _parser_built_nodes():
            return cst.parse_module(data)
    except cst.ParserSyntaxError as error:
        # Python's own parser places syntax errors better than libcst's; use it when it agrees
        # that the file is invalid.
        located = _python_syntax_error(data)
        if located is not None:
            return _parse_error(path, *located)
        return _parse_error(
            path, f"syntax error: {error.message}", error.raw_line, error.raw_column + 1
        )
    except RecursionError:
        return _parse_error(path, "file is nested too deeply to parse")
    except MemoryError:
        return _parse_error(path, "file is too large to parse")
    except Exception as error:  # the native parser raises a few other types on odd input
        return _parse_error(path, f"cannot parse file: {type(error).__name__}: {error}")


# ------------------------------------------------------------------------------------------------
# Running the rules


def run_rules(
    path: Path, module: cst.Module, rules: Sequence[type[Rule]], lint: LintOptions,
    index: ProjectIndex, source: str | None = None,
) -> FileContext:
    context = FileContext(
        path=path,
        module=module,
        options=lint.options,
        vocabulary=lint.vocabulary,
        index=index,
    )
    if source is not None:
        context.known_source(source)
    visitors = [rule(context) for rule in rules]
    if walk.supported(visitors):
        parents: dict[cst.CSTNode, cst.CSTNode] = {}
        context.set_parents(parents, complete=False)
        walk.walk(module, visitors, parents, context.visiting)
        context.set_parents(parents, complete=True)
    else:
        # Attribute visitors or metadata: libcst's traversal (rules are its batchable
        # visitors by duck typing), with each rule's providers resolved first.
        if any(v.METADATA_DEPENDENCIES for v in visitors):
            wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
            for visitor in visitors:
                visitor.metadata = wrapper.resolve_many(_dependencies(type(visitor)))
        cst.visit_batched(module, visitors)  # type: ignore[arg-type]
    return context


def _apply_fixes(module: cst.Module, fixes: Sequence[Fix], path: Path) -> cst.Module | None:
    # engine.fixes subclasses libcst's transformer, so importing it imports libcst: the first
    # fix pays for it, not the start-up of every run.
    from sampler_lint.engine.fixes import apply_fixes

    return apply_fixes(module, fixes, package_init=is_package_init(path))


def _dependencies(rule: type[Rule]) -> set[Any]:
    """The providers a rule and its bases declare (libcst's ``get_inherited_dependencies``)."""
    return {
        provider
        for kind in rule.__mro__
        for provider in vars(kind).get("METADATA_DEPENDENCIES", ())
    }


def locate(context: FileContext) -> list[Located]:
    """Positions for the reports; computed only for files that have some."""
    if not context.reports:
        return []
    positions = positions_around(context, [report.node for report in context.reports])
    located = []
    for report in context.reports:
        node_range = positions[report.node]
        statement = context.enclosing_statement(report.node)
        first, last = node_range.start.line, node_range.end.line
        if statement is not None and statement in positions:
            statement_range = positions[statement]
            first = min(first, statement_range.start.line)
            if isinstance(statement, cst.SimpleStatementLine):
                last = max(last, statement_range.end.line)
        located.append(Located(report, node_range, (first, last)))
    return located


def _fix_range(item: Located, positions: Any) -> tuple[int, int]:
    fix = item.report.fix
    assert fix is not None
    lines = [item.range.start.line, item.range.end.line]
    for old, _ in fix.replacements:
        if old in positions:
            lines += [positions[old].start.line, positions[old].end.line]
    return min(lines), max(lines)


def _to_finding(
    item: Located, path: str, lines: list[str], edits: tuple[Edit, ...] | None
) -> Finding:
    rule = item.report.rule
    start, end = item.range.start, item.range.end
    fix = item.report.fix
    return Finding(
        code=rule.code,
        name=rule.name,
        severity=rule.severity.value,
        message=item.report.message,
        filename=path,
        location=Location(start.line, start.column + 1),
        end_location=Location(end.line, end.column + 1),
        fix=FixInfo(fix.applicability.value, fix.message, edits, _risk(rule, fix)) if fix else None,
        source_line=lines[start.line - 1] if 0 < start.line <= len(lines) else "",
        **_frame(lines, start.line, end.line),
    )


FRAME_LINES = 40  # a flagged class or loop is cut here; the reporter elides the middle anyway


def _frame(lines: list[str], first: int, last: int) -> dict[str, Any]:
    """The lines a code frame shows: one line of context before the finding, then all of it."""
    if not 0 < first <= last <= len(lines):
        return {}
    start = max(1, first - 1)
    end = min(last, start + FRAME_LINES - 1)
    return {"frame": tuple(lines[start - 1 : end]), "frame_start": start}


def _risk(rule: type[Rule], fix: Fix) -> str:
    """The line the reporters print under an unsafe fix: the fix's own, else the rule's."""
    if fix.applicability is not Applicability.UNSAFE:
        return ""
    return fix.risk or rule.fix_risk


def _text_edit(before: str, after: str) -> Edit:
    """The smallest single edit turning ``before`` into ``after``."""
    prefix = 0
    limit = min(len(before), len(after))
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < limit - prefix
        and before[len(before) - 1 - suffix] == after[len(after) - 1 - suffix]
    ):
        suffix += 1

    def location(offset: int) -> Location:
        line = before.count("\n", 0, offset) + 1
        column = offset - (before.rfind("\n", 0, offset) + 1) + 1
        return Location(line, column)

    replacement = after[prefix : len(after) - suffix]
    return Edit(replacement, location(prefix), location(len(before) - suffix))


# ------------------------------------------------------------------------------------------------
# One file


class _Outcome:
    def __init__(self, module: cst.Module, context: FileContext, located: list[Located],
                 suppressions: noqa.Suppressions) -> None:
        self.module = module
        self.context = context
        self.located = located
        self.suppressions = suppressions

    @property
    def code(self) -> str:
        """The module's source (the text it was parsed from; regenerating it costs a parse)."""
        return self.context.source

    @property
    def active(self) -> list[Located]:
        return [
            item for item in self.located
            if not self.suppressions.suppresses(item.report.rule.code, *item.statement_lines)
        ]


def _lint_module(
    path: Path, module: cst.Module, rules: Sequence[type[Rule]], lint: LintOptions,
    index: ProjectIndex, source: str | None = None,
) -> _Outcome:
    context = run_rules(path, module, rules, lint, index, source)
    if lint.fixable is not None:
        for report in context.reports:
            if report.fix is not None and report.rule.code not in lint.fixable:
                report.fix = None
    located = locate(context)
    wanted = located and not lint.ignore_noqa
    suppressions = noqa.parse(context.source) if wanted else noqa.Suppressions()
    return _Outcome(module, context, located, suppressions)


def _same_as_parsed(text: str) -> str | None:
    """``text`` when libcst's ``module.code`` is known to equal it (always, but for old Mac
    ``\r`` line ends, which libcst rewrites), so the code need not be regenerated."""
    return None if "\r" in text.replace("\r\n", "") else text


def _applicable(item: Located, lint: LintOptions) -> bool:
    fix = item.report.fix
    if fix is None:
        return False
    return fix.applicability is Applicability.SAFE or lint.unsafe_fixes


def _compiles(text: str) -> bool:
    try:
        # The user's own code may warn at compile time (`1()`, invalid escapes): not ours to print.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<sampler-lint>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def rules_to_run(
    text: str, file_codes: frozenset[str], lint: LintOptions, search: TokenSearch | None = None
) -> list[type[Rule]]:
    """The enabled rules not suppressed for the whole file whose text pre-filter matches (its
    tokens, then its shape). ``search``: the text's token search, shared with the fact
    collectors' pre-filters."""
    tokens = search or TokenSearch(text)
    found: dict[TokenGroup, bool] = {}  # rules share groups: decide each once

    def passes(rule: type[Rule]) -> bool:
        for group in rule.prefilter_groups(lint.vocabulary):
            hit = found.get(group)
            if hit is None:
                hit = found[group] = tokens.any(group.tokens)
            if not hit:
                return False
        return True

    return [
        rule for rule in lint.rules
        if not rule.engine_rule
        and not (noqa.ALL in file_codes or rule.code in file_codes)
        and (not lint.use_prefilter or (passes(rule) and rule.may_match_text(text)))
    ]


def _prefiltered_rules(
    text: str, file_codes: frozenset[str], lint: LintOptions
) -> list[type[Rule]]:
    """The rules that pass both pre-filter stages (text, then the ``ast`` summary) for ``text``."""
    rules = rules_to_run(text, file_codes, lint)
    if rules and lint.use_prefilter and all(rule.has_syntax_filter for rule in rules):
        summary = summarize(text)
        if summary is not None:
            summary.given(text, lint.vocabulary, lint.options)
            rules = [rule for rule in rules if rule.may_match(summary)]
    return rules


def lint_source(path: Path, data: bytes, lint: LintOptions, index: ProjectIndex = EMPTY_INDEX,
                display_name: str | None = None, only: tuple[str, ...] | None = None,
                ) -> tuple[FileResult, bytes | None]:
    """Lint (and with ``lint.fix``, fix) one source. Returns the result and the fixed bytes, or
    ``None`` when the source is to be left as it is. ``only``: the rules the survey of this very
    source left after the pre-filter stages (``sampler_lint.engine.survey``), so they are not run
    again."""
    result, fixed, used, current = _lint_with_rules(path, data, lint, index, display_name, only)
    if (current is not None and not lint.ignore_noqa
            and any(rule.code == UNUSED_NOQA for rule in lint.rules)):
        fixed = _unused_noqa(result, data if fixed is None else fixed, current, used, lint, fixed)
    return result, fixed


_Linted = tuple[FileResult, "bytes | None", set[tuple[int, str]], "str | None"]


def _lint_with_rules(path: Path, data: bytes, lint: LintOptions, index: ProjectIndex,
                     display_name: str | None, only: tuple[str, ...] | None = None) -> _Linted:
    """Everything but SL002; also returns the (line, code) noqa pairs that suppressed something
    and the final text (``None`` when the file could not be decoded or parsed)."""
    name = display_name or str(path)
    result = FileResult(filename=name)
    try:
        text = decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        result.findings.append(_parse_error(name, f"cannot decode file: {error}"))
        return result, None, set(), None
    file_codes = frozenset() if lint.ignore_noqa else noqa.file_level_codes(text)
    if only is not None:
        rules = [rule for rule in lint.rules if rule.code in only]
    else:
        rules = _prefiltered_rules(text, file_codes, lint)
    if not rules:
        result.skipped = True
        return result, None, set(), text
    parsed = parse(name, data)
    if isinstance(parsed, Finding):
        if PARSE_ERROR in {r.code for r in lint.rules} and not (
            noqa.ALL in file_codes or PARSE_ERROR in file_codes
        ):
            result.findings.append(parsed)
        return result, None, set(), None
    try:
        outcome = _lint_module(path, parsed, rules, lint, index, _same_as_parsed(text))
    except RecursionError:
        result.findings.append(_parse_error(name, "file is nested too deeply to analyse"))
        return result, None, set(), None

    fixed_bytes: bytes | None = None
    if lint.fix:
        outcome, fixed_bytes = _fix_loop(path, data, outcome, rules, lint, index, result)

    # Regenerating the source costs as much as parsing it: only files with findings pay for it.
    lines = outcome.code.splitlines() if outcome.active else []
    for item in outcome.active:
        edits = None
        if lint.want_edits and item.report.fix is not None:
            try:
                fixed_module = _apply_fixes(outcome.module, [item.report.fix], path)
            except Exception:  # a rule built a tree libcst refuses: no edits, never a crash
                fixed_module = None
            if fixed_module is not None:
                edits = (_text_edit(outcome.code, fixed_module.code),)
        result.findings.append(_to_finding(item, name, lines, edits))
    result.findings.sort(key=Finding.sort_key)

    if lint.want_diff and fixed_bytes is not None:
        result.diff = unified_diff(parsed.code, outcome.code, name)
    current = text if fixed_bytes is None else outcome.code
    return result, fixed_bytes, outcome.suppressions.used, current


def _patch_lines(text: str) -> list[str]:
    """Lines as ``patch`` and ``git apply`` see them: split at ``\\n`` only (a form feed or a
    ``\\u2028`` inside a line is no line break to them), the last one marked when the file does not
    end with a newline."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1] + "\n\\ No newline at end of file\n")
    return out


def unified_diff(before: str, after: str, name: str) -> str:
    """A diff ``git apply`` and ``patch -p0`` accept, also for a file without a final newline."""
    return "".join(difflib.unified_diff(
        _patch_lines(before), _patch_lines(after), fromfile=name, tofile=name
    ))


def _unused_noqa(
    result: FileResult, current: bytes, text: str, used: set[tuple[int, str]],
    lint: LintOptions, fixed: bytes | None,
) -> bytes | None:
    """SL002: report (or, fixing, remove) the ``# noqa`` codes of enabled rules that suppressed
    nothing. Returns the fixed bytes, as they now are."""
    if not may_have_unused_noqa(text):
        return fixed
    from sampler_lint.engine.registry import rules_by_code

    known = set(rules_by_code())
    enabled = {rule.code for rule in lint.rules}
    suppressions = noqa.parse(text)
    if suppressions.file_suppresses(UNUSED_NOQA):
        return fixed
    unused: dict[int, set[str]] = {}
    for line, codes in sorted(suppressions.lines.items()):
        if noqa.ALL in codes:
            continue
        for code in sorted(codes):
            if code in known and code != UNUSED_NOQA and (line, code) not in used:
                unused.setdefault(line, set()).add(code)
    if not unused:
        return fixed
    fixable = lint.fixable is None or UNUSED_NOQA in lint.fixable
    if lint.fix and fixable:
        candidate = noqa.remove_codes(current, unused, suppressions.comments)
        if candidate != current and _compiles(decode(candidate)):
            result.fixed += sum(len(codes) for codes in unused.values())
            result.fixed_codes[UNUSED_NOQA] = (
                result.fixed_codes.get(UNUSED_NOQA, 0) + sum(len(c) for c in unused.values())
            )
            return candidate
    lines = text.splitlines()
    rule = rules_for_noqa()
    for line, unused_codes in sorted(unused.items()):
        source = lines[line - 1] if line <= len(lines) else ""
        # The directive inside the comment the tokenizer found, not its look-alike in a string.
        comment_column, comment = suppressions.comments.get(line, (0, source))
        match = noqa.LINE_DIRECTIVE.search(comment)
        column = comment_column + (match.start() if match else 0) + 1
        fix = FixInfo("safe", "Remove the unused noqa code", None) if fixable else None
        for code in sorted(unused_codes):
            result.findings.append(Finding(
                code=UNUSED_NOQA, name=rule, severity="warning",
                message=f"`# noqa: {code}` suppresses nothing here"
                + ("" if code in enabled else f" ({code} is not enabled)"),
                filename=result.filename,
                location=Location(line, column),
                end_location=Location(line, len(source) + 1),
                fix=fix, source_line=source,
            ))
    result.findings.sort(key=Finding.sort_key)
    return fixed


def may_have_unused_noqa(text: str) -> bool:
    """Whether ``text`` may hold a ``# noqa`` naming one of this tool's codes (only those are
    ever reported unused): without one, no need to tokenize the file for its comments."""
    if "noqa" not in text.lower():
        return False
    from sampler_lint.engine.registry import all_rules

    return any(rule.code in text for rule in all_rules())


def rules_for_noqa() -> str:
    from sampler_lint.engine.registry import rules_by_code

    rule = rules_by_code().get(UNUSED_NOQA)
    return rule.name if rule else "unused-noqa"


def _fix_loop(
    path: Path, original: bytes, outcome: _Outcome, rules: Sequence[type[Rule]],
    lint: LintOptions, index: ProjectIndex, result: FileResult,
) -> tuple[_Outcome, bytes | None]:
    """Apply fixes round after round until none is left (a fixed point) or the cap is reached.
    Every round must parse again, and compile when the original did; any failure leaves the
    file exactly as it was."""
    first = outcome
    current = outcome
    original_compiles: bool | None = None
    applied_codes: dict[str, int] = {}
    for _ in range(MAX_FIX_ROUNDS):
        candidates = [item for item in current.active if _applicable(item, lint)]
        if not candidates:
            break
        positions = positions_of(current.module)
        chosen: list[Located] = []
        taken: list[tuple[int, int]] = []
        for item in sorted(candidates, key=lambda i: (i.range.start.line, i.range.start.column)):
            first_line, last_line = _fix_range(item, positions)
            if current.suppressions.any_on(first_line, last_line):
                continue  # lines under a noqa are never rewritten
            if any(not (last_line < a or first_line > b) for a, b in taken):
                continue  # overlapping fixes wait for the next round
            taken.append((first_line, last_line))
            chosen.append(item)
        if not chosen:
            break
        fixes = [item.report.fix for item in chosen if item.report.fix is not None]
        try:
            new_module = _apply_fixes(current.module, fixes, path)
        except Exception as error:  # a rule built an invalid tree: refuse, never crash
            result.errors.append(f"{result.filename}: fix failed and was not applied: {error}")
            return first, None
        if new_module is None:
            result.errors.append(f"{result.filename}: fix failed and was not applied")
            return first, None
        new_code = new_module.code
        if new_code == current.code:
            break
        reparsed = parse(result.filename, new_module.bytes)
        if isinstance(reparsed, Finding):
            result.errors.append(
                f"{result.filename}: fixed code would not parse ({reparsed.message}); "
                "file left unchanged"
            )
            return first, None
        if original_compiles is None:
            original_compiles = _compiles(first.code)
        if original_compiles and not _compiles(new_code):
            result.errors.append(
                f"{result.filename}: fixed code would not compile; file left unchanged"
            )
            return first, None
        for item in chosen:
            code = item.report.rule.code
            applied_codes[code] = applied_codes.get(code, 0) + 1
        # A fix may make another rule's pattern appear (SL401's rename can leave a remainder of
        # a quotient for SL402): the pre-filters judge the fixed code afresh.
        file_codes = frozenset() if lint.ignore_noqa else noqa.file_level_codes(new_code)
        rules = _prefiltered_rules(new_code, file_codes, lint)
        current = _lint_module(path, reparsed, rules, lint, index, _same_as_parsed(new_code))
    else:
        if any(_applicable(item, lint) for item in current.active):
            result.errors.append(
                f"{result.filename}: fixes did not settle after {MAX_FIX_ROUNDS} rounds; "
                "file left unchanged"
            )
            return first, None
    if current is first:
        return first, None
    if len(current.active) >= len(first.active):
        result.errors.append(
            f"{result.filename}: fixing did not reduce the findings; file left unchanged"
        )
        return first, None
    result.fixed = len(first.active) - len(current.active)
    result.fixed_codes = applied_codes
    fixed = current.module.bytes
    return current, (fixed if fixed != original else None)
