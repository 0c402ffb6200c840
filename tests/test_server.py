"""End to end: a real LSP client (pytest-lsp) talking to ``sampler-lint server`` in its own
process. Each test has its own project folder; the findings used are simple, stable ones."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

SERVER = [sys.executable, "-m", "sampler_lint", "server"]
TIMEOUT = 30

SHARD = """\
def shard(train_idx, world_size, rank):
    return train_idx.split(train_idx.size(0) // world_size)[rank]
"""

MISSPELLED = """\
import torch.utils.data as tud


class SubSampler(tud.DistributedSampler):
    def __init__(self, dataset, parts):
        super().__init__(dataset)
        self.sub_num_samples = self.num_samples // parts

    def __len__(self):
        return self.subnum_samples
"""

BASE = """\
import torch.utils.data as tud


class BaseSampler(tud.DistributedSampler):
    def __init__(self, dataset):
        super().__init__(dataset)
        self.sub_num_samples = 3
"""

CHILD = """\
from base import BaseSampler


class ChildSampler(BaseSampler):
    def size(self):
        return self.subnum_samples
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, project: Path) -> AsyncIterator[None]:
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
            code_action=types.CodeActionClientCapabilities(
                resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]),
            ),
        )),
        root_uri=project.as_uri(),
        initialization_options={"unsafeFixes": False},
    ))
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, path: Path, text: str | None = None) -> str:
    text = path.read_text() if text is None else text
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
    ))
    return uri


async def _diagnostics(
    client: LanguageClient, uri: str, until: object = None
) -> list[types.Diagnostic]:
    """The diagnostics for ``uri``, waiting for a publication for it (that satisfies ``until``,
    a function of the codes, when given)."""

    async def wait() -> list[types.Diagnostic]:
        while True:
            if uri in client.diagnostics:
                found = list(client.diagnostics[uri])
                if until is None or until([d.code for d in found]):  # type: ignore[operator]
                    return found
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    return await asyncio.wait_for(wait(), TIMEOUT)


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)

    def offset(position: types.Position) -> int:
        return sum(len(line) for line in lines[: position.line]) + position.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        start, end = offset(edit.range.start), offset(edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
    return text


def _change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
    ))


async def _actions(
    client: LanguageClient, uri: str, diagnostic: types.Diagnostic, only: list[str] | None = None
) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic], only=only),
    ))
    return [action for action in result or [] if isinstance(action, types.CodeAction)]


@pytest.mark.asyncio
async def test_diagnostics_quick_fix_and_the_finding_goes_away(
    client: LanguageClient, project: Path
) -> None:
    path = project / "sampler.py"
    path.write_text(MISSPELLED)
    uri = _open(client, path)
    diagnostics = await _diagnostics(client, uri)
    assert [d.code for d in diagnostics] == ["SL401"]
    found = diagnostics[0]
    assert found.source == "sampler-lint"
    assert found.severity == types.DiagnosticSeverity.Error
    assert found.range.start == types.Position(line=9, character=15)
    assert found.code_description is not None
    assert found.code_description.href.endswith("docs/rules.md#sl401")
    assert "subnum_samples" in found.message

    actions = await _actions(client, uri, found)
    fixes = [a for a in actions if a.is_preferred]
    assert len(fixes) == 1 and fixes[0].kind == types.CodeActionKind.QuickFix
    noqa = [a for a in actions if "noqa" in a.title]
    assert len(noqa) == 1 and "SL401" in noqa[0].title
    assert fixes[0].edit is not None and fixes[0].edit.changes is not None
    fixed = _apply(MISSPELLED, list(fixes[0].edit.changes[uri]))
    assert "return self.sub_num_samples" in fixed

    _change(client, uri, fixed, 2)
    assert await _diagnostics(client, uri, until=lambda codes: codes == []) == []


@pytest.mark.asyncio
async def test_noqa_quick_fix_suppresses_and_unused_noqa_is_unnecessary(
    client: LanguageClient, project: Path
) -> None:
    path = project / "sampler.py"
    path.write_text(MISSPELLED)
    uri = _open(client, path)
    found = (await _diagnostics(client, uri))[0]
    noqa = next(a for a in await _actions(client, uri, found) if "noqa" in a.title)
    assert noqa.edit is not None and noqa.edit.changes is not None
    suppressed = _apply(MISSPELLED, list(noqa.edit.changes[uri]))
    assert "return self.subnum_samples  # noqa: SL401" in suppressed
    _change(client, uri, suppressed, 2)
    assert await _diagnostics(client, uri, until=lambda codes: codes == []) == []

    # The same directive on a line with nothing to suppress is reported, marked unnecessary.
    unused = SHARD.replace("def shard(", "def shard(  # noqa: SL401\n    ", 1)
    _change(client, uri, unused, 3)
    diagnostics = await _diagnostics(client, uri, until=lambda codes: "SL002" in codes)
    sl002 = next(d for d in diagnostics if d.code == "SL002")
    assert list(sl002.tags or []) == [types.DiagnosticTag.Unnecessary]
    removal = [a for a in await _actions(client, uri, sl002) if a.is_preferred]
    assert removal and removal[0].edit is not None and removal[0].edit.changes is not None
    assert "noqa" not in _apply(unused, list(removal[0].edit.changes[uri]))


@pytest.mark.asyncio
async def test_unsafe_fix_offered_only_with_the_setting(
    client: LanguageClient, project: Path
) -> None:
    path = project / "shard.py"
    path.write_text(SHARD)
    uri = _open(client, path)
    found = (await _diagnostics(client, uri))[0]
    assert found.code == "SL101"
    titles = [a.title for a in await _actions(client, uri, found)]
    assert not any(title.startswith("(unsafe)") for title in titles)

    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"sampler-lint": {"unsafeFixes": True}}
    ))
    await _diagnostics(client, uri)
    actions = await _actions(client, uri, found)
    unsafe = [a for a in actions if a.title.startswith("(unsafe)")]
    assert len(unsafe) == 1 and not unsafe[0].is_preferred
    assert unsafe[0].edit is not None and unsafe[0].edit.changes is not None
    assert "tensor_split(world_size)" in _apply(SHARD, list(unsafe[0].edit.changes[uri]))


@pytest.mark.asyncio
async def test_fix_all_applies_only_safe_fixes(client: LanguageClient, project: Path) -> None:
    path = project / "both.py"
    text = MISSPELLED + "\n\n" + SHARD
    path.write_text(text)
    uri = _open(client, path)
    diagnostics = await _diagnostics(client, uri)
    assert sorted(d.code for d in diagnostics) == ["SL101", "SL401"]
    actions = await _actions(client, uri, diagnostics[0], only=["source.fixAll"])
    assert [a.kind for a in actions] == ["source.fixAll.sampler-lint"]
    assert actions[0].edit is not None and actions[0].edit.changes is not None
    fixed = _apply(text, list(actions[0].edit.changes[uri]))
    assert "self.sub_num_samples\n" in fixed and "// world_size)[rank]" in fixed

    # Offered beside the quick fixes too, its edit computed only when chosen.
    offered = [
        a for a in await _actions(client, uri, diagnostics[0])
        if a.kind == "source.fixAll.sampler-lint"
    ]
    assert len(offered) == 1 and offered[0].edit is None
    resolved = await client.code_action_resolve_async(offered[0])
    assert resolved.edit is not None and resolved.edit.changes is not None
    assert _apply(text, list(resolved.edit.changes[uri])) == fixed


@pytest.mark.asyncio
async def test_hover_shows_the_rule_documentation(client: LanguageClient, project: Path) -> None:
    path = project / "shard.py"
    path.write_text(SHARD)
    uri = _open(client, path)
    found = (await _diagnostics(client, uri))[0]
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=found.range.start,
    ))
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "SL101" in hover.contents.value and "What it does" in hover.contents.value


@pytest.mark.asyncio
async def test_a_file_that_does_not_parse_gives_one_sl001_and_the_server_goes_on(
    client: LanguageClient, project: Path
) -> None:
    broken = project / "broken.py"
    broken.write_text("def f(:\n    pass\n")
    uri = _open(client, broken)
    assert [d.code for d in await _diagnostics(client, uri)] == ["SL001"]
    good = project / "shard.py"
    good.write_text(SHARD)
    assert [d.code for d in await _diagnostics(client, _open(client, good))] == ["SL101"]


@pytest.mark.asyncio
async def test_cross_file_rule_follows_an_unsaved_edit_in_another_file(
    client: LanguageClient, project: Path
) -> None:
    (project / "base.py").write_text(BASE)
    (project / "child.py").write_text(CHILD)
    child = _open(client, project / "child.py")
    assert [d.code for d in await _diagnostics(client, child)] == ["SL401"]
    base = _open(client, project / "base.py")
    await _diagnostics(client, base)
    # The base class now assigns the attribute the child reads: not saved, yet seen.
    _change(client, base, BASE.replace("sub_num_samples", "subnum_samples"), 2)
    assert await _diagnostics(client, child, until=lambda codes: codes == []) == []
    # Closing the buffer without saving: the file on disk stands again.
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=base)
    ))
    assert [d.code for d in await _diagnostics(
        client, child, until=lambda codes: codes == ["SL401"]
    )] == ["SL401"]


@pytest.mark.asyncio
async def test_notebook_cells(client: LanguageClient, project: Path) -> None:
    notebook = project / "train.ipynb"
    notebook.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                    "nbformat_minor": 5}))
    cells = ["%matplotlib inline\nimport torch\n", "# notes", SHARD,
             "%load_ext autoreload\n" + SHARD]
    cell_uris = [f"vscode-notebook-cell:{notebook}#cell{n}" for n in range(len(cells))]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=notebook.as_uri(), notebook_type="jupyter-notebook", version=1,
            cells=[
                types.NotebookCell(
                    kind=types.NotebookCellKind.Markup if n == 1 else types.NotebookCellKind.Code,
                    document=uri,
                )
                for n, uri in enumerate(cell_uris)
            ],
        ),
        cell_text_documents=[
            types.TextDocumentItem(uri=uri, language_id="markdown" if n == 1 else "python",
                                   version=1, text=cells[n])
            for n, uri in enumerate(cell_uris)
        ],
    ))
    diagnostics = await _diagnostics(client, cell_uris[2])
    assert [d.code for d in diagnostics] == ["SL101"]
    assert diagnostics[0].range.start.line == 1
    assert await _diagnostics(client, cell_uris[0]) == []
    # A cell with an IPython line: the edit goes to the cell as written, the magic stays.
    found = await _diagnostics(client, cell_uris[3])
    assert [(d.code, d.range.start.line) for d in found] == [("SL101", 2)]
    noqa = [a for a in await _actions(client, cell_uris[3], found[0]) if "noqa" in a.title]
    assert noqa and noqa[0].edit is not None and noqa[0].edit.changes is not None
    edited = _apply(cells[3], list(noqa[0].edit.changes[cell_uris[3]]))
    assert edited.startswith("%load_ext autoreload\n")
    assert edited.splitlines()[2].endswith("[rank]  # noqa: SL101")


@pytest.mark.asyncio
async def test_invalid_configuration_is_reported_and_the_server_keeps_serving(
    client: LanguageClient, project: Path
) -> None:
    (project / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.sampler-lint]\nselect = ["SL999"]\n'
    )
    path = project / "shard.py"
    path.write_text(SHARD)
    uri = _open(client, path)
    assert await _diagnostics(client, uri) == []

    async def reported() -> types.ShowMessageParams:
        while not client.messages:
            await client.wait_for_notification(types.WINDOW_SHOW_MESSAGE)
        return client.messages[0]

    message = await asyncio.wait_for(reported(), TIMEOUT)
    assert message.type == types.MessageType.Error
    assert "pyproject.toml" in message.message and "SL999" in message.message
    assert any("SL999" in m.message for m in client.log_messages)

    # Mended: the next edit brings the diagnostics back, whether or not the client tells the
    # server about the configuration file, and without restarting anything.
    (project / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.sampler-lint]\nselect = ["SL101"]\n'
    )
    _change(client, uri, SHARD + "\n", 2)
    assert [d.code for d in await _diagnostics(
        client, uri, until=lambda codes: codes == ["SL101"]
    )] == ["SL101"]


@pytest.mark.asyncio
async def test_select_and_ignore_settings(client: LanguageClient, project: Path) -> None:
    path = project / "both.py"
    path.write_text(MISSPELLED + "\n\n" + SHARD)
    uri = _open(client, path)
    assert len(await _diagnostics(client, uri, until=lambda codes: len(codes) == 2)) == 2
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"sampler-lint": {"ignore": ["SL101"]}}
    ))
    codes = [d.code for d in await _diagnostics(client, uri, until=lambda c: c == ["SL401"])]
    assert codes == ["SL401"]
