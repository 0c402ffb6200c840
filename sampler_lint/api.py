"""A small programmatic API: lint or fix a string of code (used by the tests and by editors).

    >>> from sampler_lint.api import lint_code
    >>> result = lint_code(source, fix=True)          # safe fixes only
    >>> result.findings, result.fixed                 # what remains, the fixed code (or None)
    >>> lint_code(source, fix=True, unsafe_fixes=True)  # opt in to unsafe fixes, as on the CLI

Like the command line, it is safe by default: ``unsafe_fixes=False`` unless asked. It never
reads, imports or runs anything but the code it is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sampler_lint.analysis.index import EMPTY_INDEX, ProjectIndex
from sampler_lint.engine import registry
from sampler_lint.engine.config import RawSettings, resolve
from sampler_lint.engine.findings import FileResult, Finding
from sampler_lint.engine.linter import LintOptions, lint_source


def index_sources(sources: Mapping[str, str], select: Iterable[str] | None = None) -> ProjectIndex:
    """A project index built from in-memory sources ``{path: code}`` (for tests and editors)."""
    from sampler_lint.analysis.loader_facts import forget_file_keys
    from sampler_lint.engine.runner import index_source, needs_index

    forget_file_keys()  # a link may have changed since the last call of this process

    raw = RawSettings(select=tuple(select) if select is not None else None)
    settings = resolve(raw, Path("."), None)
    rules = tuple(r for r in registry.all_rules() if r.code in settings.enabled)
    index = ProjectIndex()
    if not needs_index(rules):
        return index
    for path, code in sources.items():
        index.merge(index_source(code, path, rules))
    return index


@dataclass
class CodeResult:
    findings: list[Finding]
    fixed: str | None  # the fixed code, when fixing changed it
    result: FileResult


def lint_code(
    code: str | bytes,
    *,
    select: Iterable[str] | None = None,
    options: Mapping[str, Any] | None = None,
    fix: bool = False,
    unsafe_fixes: bool = False,
    path: str = "example.py",
    index: ProjectIndex | None = None,
    use_prefilter: bool = True,
    want_edits: bool = False,
) -> CodeResult:
    """Lint ``code`` (text or bytes) as the file ``path``, and with ``fix`` apply the safe fixes,
    the unsafe ones too with ``unsafe_fixes=True``. ``select`` and ``options`` are as in
    ``[tool.sampler-lint]``; ``index`` is the project index (by default the project is this one
    file, see :func:`index_sources`). Returns the remaining findings and the fixed code."""
    raw = RawSettings(select=tuple(select) if select is not None else None,
                      options=dict(options or {}))
    settings = resolve(raw, Path("."), None)
    rules = tuple(r for r in registry.all_rules() if r.code in settings.enabled)
    lint = LintOptions(
        rules=rules,
        options=dict(settings.options),
        vocabulary=settings.vocabulary,
        fix=fix,
        unsafe_fixes=unsafe_fixes,
        want_edits=want_edits,
        use_prefilter=use_prefilter,
    )
    data = code.encode("utf-8") if isinstance(code, str) else code
    if index is None:
        # Linting one file on its own: the project is that file.
        from sampler_lint.engine.runner import needs_index
        from sampler_lint.engine.survey import source_text

        text = source_text(data)
        index = index_sources({path: text}, select) if needs_index(rules) else EMPTY_INDEX
    result, fixed = lint_source(Path(path), data, lint, index)
    fixed_text = None
    if fixed is not None:
        fixed_text = fixed.decode("utf-8") if isinstance(code, str) else fixed.decode("latin-1")
    return CodeResult(result.findings, fixed_text, result)
