#!/usr/bin/env python3
"""How long the language server takes to answer a keystroke in a large file of a large project.

    python benchmarks/server_latency.py /work/eco/diffusers \
        examples/dreambooth/train_dreambooth_lora_flux_kontext.py --edits 20

Starts ``sampler-lint server`` as an editor would (a real LSP client over standard input and
output, from pygls), opens FILE (relative to PROJECT), waits for its first diagnostics (the first
survey of the project happens then), then makes ``--edits`` edits, one at a time, each a new line
at the end of the file, and times each from ``textDocument/didChange`` to the
``textDocument/publishDiagnostics`` for that version. The server waits
``DEBOUNCE_SECONDS`` for more typing before it lints; the figures are printed with and without
it. The project's Python files and configuration are copied to a temporary folder first, so the
server's cache is never written into PROJECT. ``--in-process`` also times the engine alone
(``ProjectSession.lint``), without the protocol.
Prints medians, the 90th percentile and the maximum, and the server's peak memory (Linux).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from sampler_lint.server.lsp import DEBOUNCE_SECONDS


def _summary(name: str, seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p90 = ordered[max(0, int(len(ordered) * 0.9) - 1)]
    return (f"{name:<34} median {statistics.median(ordered) * 1000:7.1f} ms   "
            f"p90 {p90 * 1000:7.1f} ms   max {ordered[-1] * 1000:7.1f} ms   (n={len(ordered)})")


def _peak_rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


async def over_lsp(project: Path, file: Path, edits: int) -> None:
    client = LanguageClient("server-latency", "1")
    published: dict[int | None, asyncio.Future[float]] = {}
    loop = asyncio.get_running_loop()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(_: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        waiting = published.get(params.version)
        if waiting is not None and not waiting.done():
            waiting.set_result(time.perf_counter())

    await client.start_io(sys.executable, "-m", "sampler_lint", "server")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=project.as_uri(),
    ))
    client.initialized(types.InitializedParams())
    uri = file.as_uri()
    text = file.read_text(encoding="utf-8")
    print(f"{file}: {text.count(chr(10))} lines; project {project}")

    published[1] = loop.create_future()
    start = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
    ))
    first = await asyncio.wait_for(published[1], 600) - start
    print(f"first diagnostics (with the first survey of the project): {first:.2f} s")

    latencies: list[float] = []
    for number in range(edits):
        version = number + 2
        lines = text.count("\n")
        published[version] = loop.create_future()
        start = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=lines, character=0),
                                  end=types.Position(line=lines, character=0)),
                text=f"edit_{number} = {number}\n",
            )],
        ))
        text += f"edit_{number} = {number}\n"
        latencies.append(await asyncio.wait_for(published[version], 120) - start)
    server = client._server
    peak = _peak_rss_mib(server.pid) if server is not None else None
    print(_summary("keystroke -> diagnostics", latencies))
    print(_summary(f"  without the {DEBOUNCE_SECONDS * 1000:.0f} ms debounce",
                   [max(0.0, s - DEBOUNCE_SECONDS) for s in latencies]))
    if peak is not None:
        print(f"server peak memory: {peak:.0f} MiB")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


def in_process(project: Path, file: Path, edits: int) -> None:
    from sampler_lint.engine.config import ConfigResolver, RawSettings
    from sampler_lint.server.session import ProjectSession

    session = ProjectSession(project, ConfigResolver(RawSettings(), cwd=project), jobs=2)
    start = time.perf_counter()
    session.survey()
    session.index()
    print(f"in process: first survey {time.perf_counter() - start:.2f} s "
          f"({session.files} files)")
    text = file.read_text(encoding="utf-8")
    timings, cpu = [], []
    for number in range(edits):
        text += f"edit_{number} = {number}\n"
        start, start_cpu = time.perf_counter(), time.process_time()
        session.lint(file, text)
        timings.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    print(_summary("ProjectSession.lint", timings))
    # CPU time is what the wall time would be on an idle core: on a loaded machine the wall
    # time also counts the waits for a core.
    print(_summary("  CPU time", cpu))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("file", type=Path, help="relative to PROJECT")
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="server-latency-") as folder:
        project = _copy(args.project.resolve(), Path(folder) / args.project.resolve().name)
        file = (project / args.file).resolve()
        asyncio.run(over_lsp(project, file, args.edits))
        if args.in_process:
            in_process(project, file, args.edits)


def _copy(source: Path, target: Path) -> Path:
    """The project's ``.py`` files and configuration files, in the same layout."""
    keep = {".py", ".pyi", ".toml"}
    for path in source.rglob("*"):
        if path.suffix in keep and path.is_file() and ".git" not in path.parts:
            destination = target / path.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
    return target.resolve()


if __name__ == "__main__":
    main()
