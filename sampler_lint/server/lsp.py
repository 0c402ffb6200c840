"""``sampler-lint server``: a language server over standard input and output (pygls).

A thin layer over :class:`sampler_lint.server.session.ProjectSession`: one session per project (the
nearest ``pyproject.toml`` or git root, as the command line finds it), kept warm for the life of
the server. This module turns findings into diagnostics, fixes into code actions, and rule
documentation into hovers; it never writes a file itself (edits go to the editor).

Needs the ``server`` extra (``pip install "sampler-lint[server]"``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from sampler_lint import __version__
from sampler_lint.engine import registry
from sampler_lint.engine.config import CONFIG_FILES, ConfigError, ConfigResolver, RawSettings
from sampler_lint.engine.discovery import SOURCE_SUFFIXES, project_root
from sampler_lint.engine.findings import Edit, Finding
from sampler_lint.engine.linter import UNUSED_NOQA
from sampler_lint.output.docs import render_rule
from sampler_lint.server.quick_fixes import add_noqa, remove_unused_noqa, rule_fix, smallest_edit
from sampler_lint.server.session import Linted, ProjectSession

NAME = "sampler-lint"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{NAME}"
FIX_ALL_TITLE = f"{NAME}: fix all safe fixes in this file"
# Projects kept warm at once.
MAX_PROJECTS = 8
# A pause in typing this long before a changed buffer is linted again.
DEBOUNCE_SECONDS = 0.15
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}
_LOG_LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "warn": logging.WARNING,
               "info": logging.INFO, "debug": logging.DEBUG}

logger = logging.getLogger("sampler_lint.server.lsp")


# ------------------------------------------------------------------------------------------------
# Settings


@dataclass(frozen=True)
class ServerSettings:
    """What the client may set (``initializationOptions`` or ``workspace/didChangeConfiguration``,
    flat or under ``"sampler-lint"`` / ``"settings"``)."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    configuration: str | None = None
    log_level: str = "warning"

    @classmethod
    def parse(cls, value: Any, base: ServerSettings | None = None) -> tuple[ServerSettings, str]:
        """The settings, and a problem to report ("" when none); unknown values keep ``base``."""
        base = base or cls()
        table = _settings_table(value)
        if not table:
            return base, ""
        problems: list[str] = []
        select = base.select
        if "select" in table:
            select = _codes(table["select"], "select", problems) or None
        ignore = _codes(table["ignore"], "ignore", problems) if "ignore" in table else base.ignore
        unsafe = table.get("unsafeFixes", base.unsafe_fixes)
        if not isinstance(unsafe, bool):
            problems.append(f"unsafeFixes must be true or false, got {unsafe!r}")
            unsafe = base.unsafe_fixes
        configuration = table.get("configuration", base.configuration)
        if configuration is not None and not isinstance(configuration, str):
            problems.append(f"configuration must be a path, got {configuration!r}")
            configuration = base.configuration
        level = str(table.get("logLevel", base.log_level)).lower()
        if level not in _LOG_LEVELS:
            problems.append(f"logLevel must be one of {', '.join(sorted(_LOG_LEVELS))}")
            level = base.log_level
        settings = cls(select, ignore, unsafe, configuration or None, level)
        return settings, "; ".join(problems)


def _settings_table(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    for key in (NAME, "samplerLint", "sampler_lint", "settings"):
        inner = value.get(key)
        if isinstance(inner, Mapping):
            return _settings_table(inner) or dict(inner)
    return dict(value)


def _codes(value: Any, key: str, problems: list[str]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        problems.append(f"{key} must be a list of rule codes")
        return ()
    codes = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            registry.expand_selector(text)
        except registry.SelectorError as error:
            problems.append(f"{key}: {error}")
            continue
        codes.append(text)
    return tuple(codes)


# ------------------------------------------------------------------------------------------------
# What the server remembers per document


@dataclass
class _Linted:
    """The last lint of one document (or notebook cell), for code actions and hovers."""

    text: str
    findings: list[Finding]
    diagnostics: list[types.Diagnostic]
    code: str  # the text as linted (a notebook cell's IPython lines masked)
    masked_lines: frozenset[int] = frozenset()


@dataclass
class _Cell:
    notebook: str  # the notebook's path
    number: int  # 1-based among all cells, as the command line counts them


@dataclass
class _State:
    linted: dict[str, _Linted] = field(default_factory=dict)
    pending: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    reported: set[str] = field(default_factory=set)  # configuration errors already shown


class SamplerLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            NAME, __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[types.NotebookDocumentFilterWithCells(
                    notebook="*", cells=[types.NotebookCellLanguage(language="python")],
                )],
                save=True,
            ),
        )
        self.settings = ServerSettings()
        self.sessions: dict[Path, ProjectSession] = {}
        self.state = _State()
        self.jobs = 0  # processes for the first survey (0: all cores)

    # -- logging ---------------------------------------------------------------------------------

    def log(self, level: int, message: str) -> None:
        logger.log(level, message)
        if level < _LOG_LEVELS[self.settings.log_level]:
            return
        kind = {
            logging.ERROR: types.MessageType.Error, logging.WARNING: types.MessageType.Warning,
            logging.INFO: types.MessageType.Info,
        }.get(level, types.MessageType.Log)
        self.window_log_message(types.LogMessageParams(type=kind, message=f"{NAME}: {message}"))

    def report_error(self, message: str) -> None:
        """An error the user must act on (an invalid configuration): in the client's log and, once
        per distinct message, shown to the user."""
        self.log(logging.ERROR, message)
        if message not in self.state.reported:
            self.state.reported.add(message)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=f"{NAME}: {message}")
            )

    def apply_settings(self, value: Any) -> ServerSettings:
        """The client's settings over the current ones; a bad value is reported and ignored."""
        settings, problem = ServerSettings.parse(value, self.settings)
        logging.getLogger("sampler_lint").setLevel(_LOG_LEVELS[settings.log_level])
        if problem:
            self.report_error(f"invalid settings: {problem}")
        return settings

    # -- sessions --------------------------------------------------------------------------------

    def session_for(self, path: Path) -> ProjectSession:
        root = project_root([path])
        session = self.sessions.pop(root, None)
        if session is not None:
            self.sessions[root] = session  # the most recently used last
        else:
            config = Path(self.settings.configuration) if self.settings.configuration else None
            if config is not None and not config.is_absolute():
                config = root / config
            cli = RawSettings(select=self.settings.select, ignore=self.settings.ignore)
            resolver = ConfigResolver(cli, config_file=config, cwd=root)  # may raise ConfigError
            session = ProjectSession(root, resolver, jobs=self.jobs or os.cpu_count() or 1)
            self.sessions[root] = session
            # Memory stays bounded however many projects are visited: the least recently used
            # project is dropped (and surveyed again, from the cache, if it comes back).
            while len(self.sessions) > MAX_PROJECTS:
                del self.sessions[next(iter(self.sessions))]
        return session

    def reset(self) -> None:
        """Configuration changed: every project is read again on the next lint (from the survey
        cache, so cheaply), with configuration errors reported afresh."""
        from sampler_lint.engine.config import _has_our_table

        _has_our_table.cache_clear()
        self.sessions.clear()
        self.state.reported.clear()

    # -- linting ---------------------------------------------------------------------------------

    def lint_uri(self, uri: str) -> None:
        """Lint one document or notebook cell and publish its diagnostics; never raises."""
        try:
            self._lint_uri(uri)
        except ConfigError as error:
            self.report_error(f"invalid configuration: {error}")
            self.state.linted.pop(uri, None)
            self.publish(uri, [])
            # Read the configuration afresh next time: the user is about to mend it, and a
            # client that does not watch configuration files would never tell us.
            project = self.project_of(uri)
            if project is not None:
                self.sessions.pop(project, None)
            from sampler_lint.engine.config import _has_our_table

            _has_our_table.cache_clear()
        except Exception as error:  # a bug must cost one file's diagnostics, not the server
            logger.exception("internal error")
            self.log(logging.ERROR, f"internal error on {uri}, please report it: "
                                    f"{type(error).__name__}: {error}")

    def _lint_uri(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        cell = self.cell_of(uri)
        path = _path_of(cell.notebook if cell else uri)
        if path is None:
            return
        if cell is None and path.suffix not in SOURCE_SUFFIXES:
            return
        text = document.source
        session = self.session_for(path)
        if not session.surveyed:
            self.first_survey(session)
        changed = False  # notebooks add nothing to the index
        if cell is not None:
            linted = session.lint_cell(
                path, text, number=cell.number, unsafe_fixes=self.settings.unsafe_fixes
            )
        else:
            linted = session.lint(path, text, unsafe_fixes=self.settings.unsafe_fixes)
            changed = linted.index_changed
        self.report_lint_problems(linted)
        findings = linted.result.findings
        diagnostics = [_diagnostic(document, finding) for finding in findings]
        self.state.linted[uri] = _Linted(
            text, findings, diagnostics, linted.code or text, linted.masked_lines
        )
        self.publish(uri, diagnostics)
        if changed:
            # The index changed: the other open files of this project may read it.
            for other in self.open_uris():
                if other != uri and self.project_of(other) == session.root:
                    self.schedule(other)

    def first_survey(self, session: ProjectSession) -> None:
        # The survey may fork worker processes: nothing of ours may wait in a buffer they would
        # flush a second time into the client's channel.
        sys.stdout.flush()
        start = time.perf_counter()
        session.survey()
        self.log(logging.INFO, f"surveyed {session.files} files of {session.root} in "
                               f"{time.perf_counter() - start:.1f} s")

    def report_lint_problems(self, linted: Linted) -> None:
        for message in linted.result.errors:
            self.log(logging.WARNING, message)

    def publish(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        version = self.workspace.get_text_document(uri).version
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def schedule(self, uri: str, delay: float = DEBOUNCE_SECONDS) -> None:
        """Lint ``uri`` after ``delay``, replacing a lint already waiting (typing debounced)."""
        waiting = self.state.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()

        async def later() -> None:
            await asyncio.sleep(delay)
            self.state.pending.pop(uri, None)
            self.lint_uri(uri)

        self.state.pending[uri] = asyncio.ensure_future(later())

    def forget(self, uri: str) -> None:
        waiting = self.state.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.state.linted.pop(uri, None)
        self.publish(uri, [])

    def open_uris(self) -> list[str]:
        """Every open document and notebook cell."""
        return list(self.workspace.text_documents)

    def relint_all(self) -> None:
        for uri in self.open_uris():
            self.schedule(uri, 0)

    def project_of(self, uri: str) -> Path | None:
        cell = self.cell_of(uri)
        path = _path_of(cell.notebook if cell else uri)
        return project_root([path]) if path is not None else None

    def cell_of(self, uri: str) -> _Cell | None:
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is None:
            return None
        for number, cell in enumerate(notebook.cells, start=1):
            if cell.document == uri:
                return _Cell(notebook.uri, number)
        return None

    def current(self, uri: str) -> _Linted | None:
        """The lint of the document as it is now (linted again when it changed since)."""
        document = self.workspace.get_text_document(uri)
        linted = self.state.linted.get(uri)
        if linted is None or linted.text != document.source:
            self.lint_uri(uri)
            linted = self.state.linted.get(uri)
        return linted

    # -- code actions ----------------------------------------------------------------------------

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        linted = self.current(uri)
        if linted is None:
            return []
        document = self.workspace.get_text_document(uri)
        only = params.context.only
        actions: list[types.CodeAction] = []
        fixable = False
        for finding, diagnostic in zip(linted.findings, linted.diagnostics, strict=True):
            if finding.fix is not None and finding.fix.applicability == "safe":
                fixable = True
            if not _overlaps(diagnostic.range, params.range):
                continue
            fixes = [
                fix for fix in (rule_fix(finding), remove_unused_noqa(linted.code, finding))
                if fix is not None and (fix.safe or self.settings.unsafe_fixes)
                and _clear_of(fix.edit, linted.masked_lines)
            ]
            for fix in fixes:
                actions.append(_action(
                    ("" if fix.safe else "(unsafe) ") + f"{fix.title} ({finding.code})",
                    types.CodeActionKind.QuickFix, uri, document, [fix.edit], [diagnostic],
                    preferred=fix.safe,
                ))
            if finding.code != UNUSED_NOQA:
                noqa_fix = add_noqa(linted.code, finding)
                if noqa_fix is not None and _clear_of(noqa_fix.edit, linted.masked_lines):
                    actions.append(_action(
                        f"{noqa_fix.title} (suppress this finding)",
                        types.CodeActionKind.QuickFix, uri, document, [noqa_fix.edit],
                        [diagnostic],
                    ))
        if fixable and only and _wanted(FIX_ALL, only):
            # Asked for by kind (fix on save, a "Source Action" menu): computed now.
            fix_all = self.fix_all(uri, linted.text)
            if fix_all is not None:
                actions.append(_action(
                    FIX_ALL_TITLE, FIX_ALL, uri, document, [fix_all], [],
                ))
        elif fixable and not only and self.resolves_edits():
            # Every cursor move asks for code actions: the whole fix loop runs only when this
            # one is chosen (codeAction/resolve).
            actions.append(types.CodeAction(
                title=FIX_ALL_TITLE, kind=FIX_ALL, data={"fixAll": uri},
            ))
        return [action for action in actions if _wanted(action.kind, only)]

    def resolves_edits(self) -> bool:
        document = self.client_capabilities.text_document
        code_action = document.code_action if document else None
        support = code_action.resolve_support if code_action else None
        return support is not None and "edit" in support.properties

    def resolve(self, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("fixAll")
        if not isinstance(uri, str) or action.edit is not None:
            return action
        linted = self.current(uri)
        if linted is None:
            return action
        fix_all = self.fix_all(uri, linted.text)
        if fix_all is not None:
            document = self.workspace.get_text_document(uri)
            action.edit = types.WorkspaceEdit(changes={uri: [_text_edit(document, fix_all)]})
        return action

    def fix_all(self, uri: str, text: str) -> Edit | None:
        cell = self.cell_of(uri)
        path = _path_of(cell.notebook if cell else uri)
        if path is None:
            return None
        session = self.session_for(path)
        if cell is not None:
            linted = session.lint_cell(path, text, number=cell.number, fix=True,
                                       unsafe_fixes=False)
        else:
            linted = session.lint(path, text, fix=True, unsafe_fixes=False)
        if linted.fixed is None or linted.fixed == text:
            return None
        return smallest_edit(text, linted.fixed)

    # -- hover -----------------------------------------------------------------------------------

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        linted = self.state.linted.get(params.text_document.uri)
        if linted is None:
            return None
        position = params.position
        point = types.Range(start=position, end=position)
        codes: list[str] = []
        for finding, diagnostic in zip(linted.findings, linted.diagnostics, strict=True):
            if _overlaps(diagnostic.range, point) and finding.code not in codes:
                codes.append(finding.code)
        rules = registry.rules_by_code()
        parts = [render_rule(rules[code]) for code in codes if code in rules]
        if not parts:
            return None
        return types.Hover(contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n---\n\n".join(parts),
        ))


# ------------------------------------------------------------------------------------------------
# Conversions


def _path_of(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(path) if path and uri.startswith("file:") else None


def _range(document: TextDocument, start_line: int, start_column: int, end_line: int,
           end_column: int) -> types.Range:
    """A 1-based code-point span as the client counts (UTF-16 unless negotiated otherwise)."""
    server = ServerTextRange(
        start=ServerTextPosition(max(start_line - 1, 0), max(start_column - 1, 0)),
        end=ServerTextPosition(max(end_line - 1, 0), max(end_column - 1, 0)),
    )
    return document.range_to_client_units(server)


def _diagnostic(document: TextDocument, finding: Finding) -> types.Diagnostic:
    start, end = finding.location, finding.end_location
    return types.Diagnostic(
        range=_range(document, start.line, start.column, end.line, end.column),
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=finding.url),
        source=NAME,
        message=finding.message,
        tags=[types.DiagnosticTag.Unnecessary] if finding.code == UNUSED_NOQA else None,
    )


def _text_edit(document: TextDocument, edit: Edit) -> types.TextEdit:
    start, end = edit.location, edit.end_location
    return types.TextEdit(
        range=_range(document, start.line, start.column, end.line, end.column),
        new_text=edit.content,
    )


def _action(
    title: str, kind: str, uri: str, document: TextDocument, edits: Sequence[Edit],
    diagnostics: list[types.Diagnostic], preferred: bool = False,
) -> types.CodeAction:
    changes = types.WorkspaceEdit(changes={uri: [_text_edit(document, e) for e in edits]})
    return types.CodeAction(
        title=title, kind=kind, diagnostics=diagnostics or None, edit=changes,
        is_preferred=preferred or None,
    )


def _clear_of(edit: Edit, lines: frozenset[int]) -> bool:
    """Whether ``edit`` (of a cell's masked text) stays off the masked lines, so that it holds
    for the cell as the user wrote it."""
    return not any(
        line in lines for line in range(edit.location.line, edit.end_location.line + 1)
    )


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(position: types.Position) -> tuple[int, int]:
        return position.line, position.character

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _wanted(kind: str | None, only: Sequence[str] | None) -> bool:
    """Whether ``kind`` answers a request limited to ``only`` (kinds are hierarchical:
    ``source.fixAll`` asks for ``source.fixAll.sampler-lint`` too)."""
    if not only or kind is None:
        return True
    return any(kind == wanted or kind.startswith(f"{wanted}.") for wanted in only)


def _is_config_file(uri: str) -> bool:
    path = _path_of(uri)
    return path is not None and path.name in CONFIG_FILES


# ------------------------------------------------------------------------------------------------
# The protocol


def build() -> SamplerLintServer:
    server = SamplerLintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: SamplerLintServer, params: types.InitializeParams) -> None:
        ls.settings = ls.apply_settings(params.initialization_options)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: SamplerLintServer, params: types.InitializedParams) -> None:
        ls.log(logging.INFO, f"{NAME} {__version__} ready")
        workspace = ls.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace else None
        if watched is None or not watched.dynamic_registration:
            return
        # Configuration files and Python files changed outside the editor (a checkout, a save
        # from elsewhere) keep the projects' configuration and index true.
        patterns = [f"**/{name}" for name in CONFIG_FILES] + ["**/*.py", "**/*.pyi"]
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[
                types.Registration(
                    id=f"{NAME}-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(
                        watchers=[types.FileSystemWatcher(glob_pattern=p) for p in patterns]
                    ),
                )
            ]))
        except Exception as error:  # a client that refuses: configuration read on errors only
            ls.log(logging.INFO, f"file watching not available: {error}")

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(
        ls: SamplerLintServer, params: types.DidChangeConfigurationParams
    ) -> None:
        ls.settings = ls.apply_settings(params.settings)
        ls.reset()
        ls.relint_all()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: SamplerLintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.lint_uri(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: SamplerLintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: SamplerLintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if _is_config_file(uri):
            ls.reset()
            ls.relint_all()
            return
        ls.lint_uri(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: SamplerLintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.forget(uri)
        path = _path_of(uri)
        session = ls.sessions.get(project_root([path])) if path is not None else None
        if path is not None and session is not None and session.update(path, None):
            for other in ls.open_uris():
                if ls.project_of(other) == session.root:
                    ls.schedule(other)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: SamplerLintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        for cell in params.cell_text_documents:
            ls.lint_uri(cell.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(
        ls: SamplerLintServer, params: types.DidChangeNotebookDocumentParams
    ) -> None:
        cells = params.change.cells
        if cells is None:
            return
        if cells.structure is not None:
            for closed in cells.structure.did_close or []:
                ls.forget(closed.uri)
            # Cells moved or were added: every cell's number may have changed.
            notebook = ls.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri)
            for cell in notebook.cells if notebook else []:
                ls.schedule(cell.document)
        for changed in cells.text_content or []:
            ls.schedule(changed.document.uri)
        for opened in (cells.structure.did_open or []) if cells.structure else []:
            ls.schedule(opened.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: SamplerLintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        notebook = ls.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri)
        for cell in notebook.cells if notebook else []:
            ls.lint_uri(cell.document)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(
        ls: SamplerLintServer, params: types.DidCloseNotebookDocumentParams
    ) -> None:
        for cell in params.cell_text_documents:
            ls.forget(cell.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files(ls: SamplerLintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(_is_config_file(change.uri) for change in params.changes):
            ls.reset()
            ls.relint_all()
            return
        changed = False
        for change in params.changes:
            path = _path_of(change.uri)
            if path is None or change.uri in ls.workspace.text_documents:
                continue  # an open buffer stands for its file
            session = ls.sessions.get(project_root([path]))
            if session is not None:
                changed = session.update(path, None) or changed
        if changed:
            ls.relint_all()

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL],
            resolve_provider=True,
        ),
    )
    def code_action(
        ls: SamplerLintServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        try:
            return ls.code_actions(params) or None
        except ConfigError as error:
            ls.report_error(f"invalid configuration: {error}")
            return None

    @server.feature(types.CODE_ACTION_RESOLVE)
    def code_action_resolve(ls: SamplerLintServer, params: types.CodeAction) -> types.CodeAction:
        try:
            return ls.resolve(params)
        except ConfigError as error:
            ls.report_error(f"invalid configuration: {error}")
            return params

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: SamplerLintServer, params: types.HoverParams) -> types.Hover | None:
        return ls.hover(params)

    return server


def start() -> None:
    """Serve over standard input and output until the client says exit."""
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")
    build().start_io()


