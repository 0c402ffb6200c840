#!/usr/bin/env python3
"""Ecosystem check: run two versions of sampler-lint over real repositories and compare.

    python scripts/ecosystem.py --base main --head HEAD /path/to/repo1 /path/to/repo2 ...

For each git revision of this project it exports the tree into a temporary directory (no install:
the export is laid out as the installed package would be, ``rules/`` inside ``sampler_lint/``),
runs ``check --select ALL --output-format json`` over every repository, and prints the findings
added and removed per repository and per rule. With ``--fix`` it also copies each repository,
applies every fix (unsafe ones included) with the head version, and checks that every file the fix
changed still compiles, that a second ``--fix`` changes nothing, and (with ruff on PATH) that no
fix left an unused import or local (F401, F841) the file did not have. It downloads nothing; pass
paths to repositories you have.

Exit status: 0 when the head version neither crashed nor produced a fixed file that fails one of
those checks.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def export(revision: str, into: Path) -> Path:
    """The project at ``revision``, laid out importable from ``into``."""
    tree = into / "tree"
    tree.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(PROJECT), "archive", revision], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    site = into / "site"
    shutil.copytree(tree / "sampler_lint", site / "sampler_lint")
    shutil.copytree(tree / "rules", site / "sampler_lint" / "rules")
    return site


def run_lint(site: Path, repo: Path, *extra: str) -> tuple[list[dict[str, object]], int, str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    process = subprocess.run(
        [sys.executable, "-m", "sampler_lint", "check", "--isolated", "--select", "ALL",
         "--output-format", "json", "--exit-zero", "--no-cache", *extra, str(repo)],
        capture_output=True, text=True, env=env, cwd=repo,
    )
    try:
        findings = json.loads(process.stdout) if process.stdout.strip() else []
    except json.JSONDecodeError:
        findings = []
    return findings, process.returncode, process.stderr


def key(finding: dict[str, object], repo: Path) -> tuple[str, str, str]:
    filename = str(finding["filename"])
    try:
        relative = str(Path(filename).resolve().relative_to(repo.resolve()))
    except ValueError:
        relative = filename
    location = finding["location"]
    assert isinstance(location, dict)
    line = ""
    try:
        lines = Path(filename if Path(filename).is_absolute() else repo / filename).read_text(
            encoding="utf-8", errors="replace"
        ).splitlines()
        line = lines[int(location["row"]) - 1].strip()
    except (OSError, IndexError, ValueError):
        pass
    return relative, str(finding["code"]), line


@dataclass
class FixCheck:
    """What applying every fix to a copy of a repository did."""

    changed: int = 0
    broken: list[str] = field(default_factory=list)  # compiled before the fix, not after
    unstable: list[str] = field(default_factory=list)  # a second --fix changed them again
    leftovers: list[str] = field(default_factory=list)  # an unused import or local the fix left


def _fix_all(site: Path, copy: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(site)}
    subprocess.run(
        [sys.executable, "-m", "sampler_lint", "check", "--isolated", "--select", "ALL",
         "--fix", "--unsafe-fixes", "--exit-zero", "--no-cache", "--output-format", "concise",
         str(copy)],
        capture_output=True, text=True, env=env, cwd=copy,
    )


def _unused_names(paths: list[Path]) -> Counter[tuple[str, str]]:
    """(file name, code) of ruff's unused-import and unused-local findings (F401, F841) in
    ``paths``; empty when ruff is not on PATH."""
    ruff = shutil.which("ruff")
    if ruff is None or not paths:
        return Counter()
    done = subprocess.run(
        [ruff, "check", "--isolated", "--no-cache", "--select", "F401,F841", "--exit-zero",
         "--output-format", "json", *map(str, paths)],
        capture_output=True, text=True,
    )
    return Counter((Path(f["filename"]).name, f["code"]) for f in json.loads(done.stdout or "[]"))


def check_fixes(site: Path, repo: Path) -> FixCheck:
    """Fix a copy of ``repo`` with every fix, then again: each changed file must still compile,
    the second run must change nothing, and no fix may leave an unused import or local behind
    (ruff's F401 and F841, counted before and after, when ruff is on PATH)."""
    found = FixCheck()
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / repo.name
        shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        before = {p: p.read_bytes() for p in copy.rglob("*.py") if p.is_file()}
        _fix_all(site, copy)
        after = {p: p.read_bytes() for p in before if p.read_bytes() != before[p]}
        found.changed = len(after)
        for path, data in after.items():
            if _compiles(before[path]) and not _compiles(data):
                found.broken.append(str(path.relative_to(copy)))
        _fix_all(site, copy)
        found.unstable = [
            str(path.relative_to(copy)) for path, data in after.items() if path.read_bytes() != data
        ]
        originals = Path(scratch) / "originals"
        names: dict[Path, Path] = {}
        for number, path in enumerate(after):
            folder = originals / str(number)
            folder.mkdir(parents=True)
            names[path] = folder / path.name
            names[path].write_bytes(before[path])
        unused_after = _unused_names(list(after))
        unused_before = _unused_names(list(names.values()))
        for name, code in sorted(unused_after - unused_before):
            found.leftovers.append(f"{name} {code}")
    return found


def _compiles(data: bytes) -> bool:
    try:
        compile(data, "<fixed>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--base", default="HEAD~1", help="the version to compare against")
    parser.add_argument("--head", default="HEAD", help="the version under test")
    parser.add_argument("--fix", action="store_true",
                        help="also apply every fix to a copy and check the result")
    parser.add_argument("--show", type=int, default=20, help="findings to list per change")
    args = parser.parse_args()

    status = 0
    with tempfile.TemporaryDirectory() as scratch:
        base_site = export(args.base, Path(scratch) / "base")
        head_site = export(args.head, Path(scratch) / "head")
        totals: Counter[str] = Counter()
        for repo in args.repos:
            base, _base_rc, _ = run_lint(base_site, repo)
            head, head_rc, head_err = run_lint(head_site, repo)
            crashed = head_rc not in (0, 1) or "internal error" in head_err
            base_keys = Counter(key(f, repo) for f in base)
            head_keys = Counter(key(f, repo) for f in head)
            added = head_keys - base_keys
            removed = base_keys - head_keys
            per_rule = Counter(f["code"] for f in head)
            totals.update({str(k): v for k, v in per_rule.items()})
            print(f"## {repo}  files: {len(list(repo.rglob('*.py')))}  findings: {len(head)}"
                  f"  (base {len(base)})  exit: {head_rc}{'  CRASH' if crashed else ''}")
            print("   per rule: " + ", ".join(f"{c} {n}" for c, n in sorted(per_rule.items())))
            for label, changes in (("added", added), ("removed", removed)):
                for (path, code, line), count in sorted(changes.items())[: args.show]:
                    times = f" (x{count})" if count > 1 else ""
                    print(f"   {label}: {code} {path}: {line}{times}")
            if crashed:
                status = 1
                print("   " + head_err.strip().replace("\n", "\n   "))
            if args.fix:
                fixed = check_fixes(head_site, repo)
                print(f"   fix: {fixed.changed} files changed, {len(fixed.broken)} no longer "
                      f"compile, {len(fixed.unstable)} changed again by a second run, "
                      f"{len(fixed.leftovers)} unused names left")
                for label, names in (("does not compile after fix", fixed.broken),
                                     ("changed again by a second --fix", fixed.unstable),
                                     ("left unused by a fix", fixed.leftovers)):
                    for name in names:
                        print(f"     {label}: {name}")
                if fixed.broken or fixed.unstable or fixed.leftovers:
                    status = 1
        print("## total per rule: " + ", ".join(f"{c} {n}" for c, n in sorted(totals.items())))
    return status


if __name__ == "__main__":
    sys.exit(main())
