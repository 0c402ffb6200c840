"""Adopting sampler-lint on a legacy repository: a baseline of known findings, and reporting only
what changed since a git revision.

Baseline entries match on file, rule and a fingerprint of the flagged code (see
:func:`sampler_lint.formats.fingerprints`), never on line numbers: an unrelated edit above a
finding keeps it in the baseline, and a fixed finding simply stops matching."""

from __future__ import annotations

import codecs
import json
import os
import re
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from sampler_lint.findings import Finding
from sampler_lint.formats import code_fingerprint

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
    except (ValueError, KeyError, TypeError):
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
# --since REV

_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def _git(args: list[str], cwd: Path) -> bytes:
    try:
        process = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except OSError as error:
        raise BaselineError(f"--since needs git: {error}") from None
    if process.returncode != 0:
        message = process.stderr.decode("utf-8", "replace").strip()
        raise BaselineError(message or f"git {' '.join(args)} failed")
    return process.stdout


def _unquote(name: bytes) -> str:
    """A path as git prints it: C-quoted (``"a\\tb"``, ``"\\303\\251"``) when it holds unusual
    characters."""
    if name.startswith(b'"') and name.endswith(b'"'):
        name = codecs.escape_decode(name[1:-1])[0]
    return os.fsdecode(name)


def changed_lines(revision: str, start: Path) -> dict[str, set[int] | None]:
    """Real path of each file changed since ``revision`` -> its added or changed lines (``None``
    for a file git does not track yet: all of it is new)."""
    directory = start if start.is_dir() else start.parent
    try:
        top = Path(os.fsdecode(_git(["rev-parse", "--show-toplevel"], directory.resolve()).strip()))
    except BaselineError:
        raise BaselineError(
            f"--since needs a git repository, and {directory} is not inside one"
        ) from None
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], top)
    except BaselineError:
        raise BaselineError(f"--since: unknown git revision '{revision}'") from None
    changed: dict[str, set[int] | None] = {}
    # Working tree against the revision: committed, staged and unstaged changes alike.
    diff = _git(["diff", "--unified=0", "--no-color", "--no-ext-diff", "--no-textconv",
                 "--src-prefix=a/", "--dst-prefix=b/", revision, "--"], top)
    current: str | None = None
    for line in diff.split(b"\n"):
        if line.startswith(b"+++ "):
            name = _unquote(line[4:].rstrip(b"\t"))
            current = None if name == "/dev/null" else os.path.realpath(top / name[2:])
            if current is not None:
                changed.setdefault(current, set())
            continue
        match = _HUNK.match(line)
        if match and current is not None:
            first, count = int(match.group(1)), int(match.group(2) or b"1")
            lines = changed[current]
            if lines is not None:
                lines.update(range(first, first + count))
    untracked = _git(["ls-files", "-z", "--others", "--exclude-standard"], top)
    for name_bytes in untracked.split(b"\0"):
        if name_bytes:
            changed[os.path.realpath(top / os.fsdecode(name_bytes))] = None
    return changed


def only_changed(findings: Sequence[Finding], changed: dict[str, set[int] | None]) -> list[Finding]:
    kept = []
    for f in findings:
        key = os.path.realpath(f.path)
        if key not in changed:
            continue
        lines = changed[key]
        first, last = f.file_location.line, f.file_end_location.line
        if lines is None or any(line in lines for line in range(first, last + 1)):
            kept.append(f)
    return kept
