"""Adopting sampler-lint on a legacy repository: a baseline of known findings, and reporting only
what changed since a git revision.

Baseline entries match on file, rule and a fingerprint of the flagged code (see
:func:`sampler_lint.output.formats.fingerprints`), never on line numbers: an unrelated edit above a
finding keeps it in the baseline, and a fixed finding simply stops matching."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sampler_lint.engine.discovery import project_root
from sampler_lint.engine.findings import Finding
from sampler_lint.output.formats import code_fingerprint

FORMAT_VERSION = 1


class BaselineError(Exception):
    pass


def _key_file(filename: str, base: Path) -> str:
    return Path(os.path.relpath(os.path.abspath(filename), base)).as_posix()


def write_baseline(path: Path, findings: Sequence[Finding]) -> None:
    base = path.resolve().parent
    entries = [
        {"file": _key_file(f.path, base), "code": f.code, "fingerprint": code_fingerprint(f),
         "line": f.file_location.line}  # for people reading the file; matching ignores it
        for f in findings
    ]
    document = {"tool": "sampler-lint", "version": FORMAT_VERSION, "findings": entries}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise BaselineError(f"cannot write baseline {path}: {error}") from None


def without_baseline(path: Path, findings: Sequence[Finding]) -> list[Finding]:
    """The findings that the baseline at ``path`` does not hold. Each entry absorbs one finding of
    its file, rule and code: with the same line flagged twice, fixing one leaves the other known,
    and adding a third reports one."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        entries = document["findings"]
        known = Counter((e["file"], e["code"], e["fingerprint"]) for e in entries)
    except OSError as error:
        raise BaselineError(f"cannot read baseline {path}: {error.strerror or error}") from None
    except (ValueError, KeyError, TypeError, RecursionError):
        raise BaselineError(
            f"{path} is not a sampler-lint baseline (write one with --write-baseline)"
        ) from None
    base = path.resolve().parent
    kept = []
    for f in findings:
        key = (_key_file(f.path, base), f.code, code_fingerprint(f))
        if known[key] > 0:
            known[key] -= 1
        else:
            kept.append(f)
    return kept


# ------------------------------------------------------------------------------------------------
# --since REV: every finding that is new relative to a revision
#
# The files are linted a second time as they were at the revision, read from git into memory
# (``git ls-tree`` and ``git cat-file --batch``, never a checkout), with the project index of the
# revision, and the findings are compared by fingerprint (file, rule, flagged code: line shifts
# do not matter), as semgrep's --baseline-commit does. A finding counts as new when the revision
# did not have it: in a changed file, or in an unchanged file whose cross-file facts a change
# altered (a deleted `sampler.set_epoch(epoch)` in a helper, a removed guard).

_SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")


def _git(args: list[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    try:
        process = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, check=False, input=stdin
        )
    except OSError as error:
        raise BaselineError(f"--since needs git: {error}") from None
    if process.returncode != 0:
        message = process.stderr.decode("utf-8", "replace").strip()
        raise BaselineError(message or f"git {' '.join(args)} failed")
    return process.stdout


def _toplevel(start: Path) -> Path:
    directory = start if start.is_dir() else start.parent
    try:
        output = _git(["rev-parse", "--show-toplevel"], directory.resolve())
    except BaselineError:
        raise BaselineError(
            f"--since needs a git repository, and {directory} is not inside one"
        ) from None
    return Path(os.fsdecode(output.strip()))


def _commit(revision: str, top: Path) -> str:
    try:
        return _git(
            ["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], top
        ).decode().strip()
    except BaselineError:
        pass
    shallow = False
    with contextlib.suppress(BaselineError):
        shallow = _git(["rev-parse", "--is-shallow-repository"], top).strip() == b"true"
    if shallow:
        raise BaselineError(
            f"--since: unknown git revision '{revision}': this is a shallow clone, which lacks "
            "the base revision. Fetch the history (`git fetch --unshallow`, or with "
            "actions/checkout `fetch-depth: 0`; GitLab: `GIT_DEPTH: 0`) and run again."
        ) from None
    raise BaselineError(f"--since: unknown git revision '{revision}'") from None


def _tree(commit: str, top: Path) -> dict[str, str]:
    """Path below the git root -> blob id of every regular source file at ``commit``."""
    listing = _git(["ls-tree", "-r", "-z", "--full-tree", commit], top)
    tree: dict[str, str] = {}
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode, kind, blob = meta.split()
        path = os.fsdecode(name)
        if kind == b"blob" and mode in (b"100644", b"100755") and path.endswith(_SOURCE_SUFFIXES):
            tree[path] = blob.decode()
    return tree


def _renames(commit: str, top: Path) -> dict[str, str]:
    """Path now -> path at ``commit`` for the files renamed since (their findings are not new)."""
    output = _git(["diff", "-z", "--name-status", "-M", "--no-ext-diff", "--no-textconv",
                   commit, "--"], top)
    fields = output.split(b"\0")
    renames: dict[str, str] = {}
    number = 0
    while number < len(fields):
        status = fields[number]
        if status.startswith((b"R", b"C")) and number + 2 < len(fields):
            old, new = os.fsdecode(fields[number + 1]), os.fsdecode(fields[number + 2])
            if status.startswith(b"R"):
                renames[new] = old
            number += 3
        else:
            number += 2
    return renames


def _blobs(blob_ids: list[str], top: Path) -> dict[str, bytes]:
    """The content of each blob, read in one ``git cat-file --batch``."""
    unique = list(dict.fromkeys(blob_ids))
    if not unique:
        return {}
    output = _git(["cat-file", "--batch"], top, ("\n".join(unique) + "\n").encode())
    contents: dict[str, bytes] = {}
    position = 0
    for blob in unique:
        end = output.index(b"\n", position)
        header = output[position:end].split()
        if len(header) != 3:
            raise BaselineError(f"--since: git cannot read object {blob}")
        size = int(header[2])
        contents[blob] = output[end + 1:end + 1 + size]
        position = end + 1 + size + 1
    return contents


def _key(finding: Finding) -> tuple[str, str, str]:
    return (os.path.realpath(finding.path), finding.code, code_fingerprint(finding))


def new_since(
    revision: str, targets: list[Path], findings: Sequence[Finding],
    lint_revision: Callable[[Revision], Sequence[Finding]],
    linted: Sequence[Path], project: Sequence[Path], excluded: Callable[[Path], bool],
) -> list[Finding]:
    """The ``findings`` that the files had not at ``revision``. ``linted`` and ``project`` are
    today's run's files (as it spelled them, in its order); ``lint_revision`` lints a
    :class:`Revision`; ``excluded`` says which files the project leaves out (for files deleted
    since, which today's walk did not meet)."""
    top = _toplevel(targets[0])
    commit = _commit(revision, top)
    if not findings:
        return []
    tree = _tree(commit, top)
    renames = _renames(commit, top)
    real_top = os.path.realpath(top)
    blob_of: dict[str, str] = {}  # absolute path -> blob id at the revision
    met: set[str] = set()  # paths below the git root met today

    def at_revision(path: Path) -> str | None:
        relative = Path(os.path.relpath(os.path.realpath(path), real_top)).as_posix()
        met.add(relative)
        blob = tree.get(renames.get(relative, relative))
        if blob is not None:
            blob_of[os.path.abspath(path)] = blob
        return blob

    # Today's files as they were (a file added since has no past, and all its findings are new);
    # only those with a finding today need their lint results.
    files = [path for path in linted if at_revision(path) is not None]
    members = [path for path in project if at_revision(path) is not None]
    wanted = frozenset(os.path.abspath(f.path) for f in findings) & frozenset(blob_of)
    if not wanted:
        return list(findings)
    if project:
        # Files deleted since were part of the project then, and their facts with them.
        root = project_root(targets)
        for relative in sorted(set(tree) - met - set(renames.values())):
            absolute = Path(real_top) / relative
            if absolute.suffix == ".ipynb" or not absolute.is_relative_to(root):
                continue
            if not excluded(absolute):
                members.append(absolute)
                blob_of[str(absolute)] = tree[relative]
    blobs = _blobs(list(blob_of.values()), top)
    contents = {path: blobs[blob] for path, blob in blob_of.items()}
    known = Counter(_key(f) for f in lint_revision(Revision(files, members, wanted, contents)))
    new = []
    for finding in findings:
        key = _key(finding)
        if known[key] > 0:
            known[key] -= 1
        else:
            new.append(finding)
    return new


@dataclass(frozen=True)
class Revision:
    """Today's files as they were at a revision: what to survey, the project, whose results are
    needed, and every file's content (absolute path -> bytes)."""

    files: list[Path]
    project: list[Path]
    wanted: frozenset[str]
    contents: dict[str, bytes]
