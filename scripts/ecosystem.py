#!/usr/bin/env python3
"""Ecosystem check: run two versions of sampler-lint over real repositories and compare.

    python scripts/ecosystem.py --base main --head HEAD /path/to/repo1 /path/to/repo2 ...

For each git revision of this project it exports the tree into a temporary directory (no install:
the export is laid out as the installed package would be, ``rules/`` inside ``sampler_lint/``),
runs ``check --select ALL --output-format json`` over every repository, and prints the findings
added and removed per repository and per rule. With ``--fix`` it also copies each repository,
applies every fix (unsafe ones included) with the head version, and checks that every file the fix
changed still compiles. It downloads nothing; pass paths to repositories you have.

Exit status: 0 when the head version neither crashed nor produced a file that fails to compile.
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


def check_fixes(site: Path, repo: Path) -> tuple[int, int, list[str]]:
    """Fix a copy of ``repo``; return (files changed, files that no longer compile, names)."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / repo.name
        shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        before = {p: p.read_bytes() for p in copy.rglob("*.py") if p.is_file()}
        env = {**os.environ, "PYTHONPATH": str(site)}
        subprocess.run(
            [sys.executable, "-m", "sampler_lint", "check", "--isolated", "--select", "ALL",
             "--fix", "--unsafe-fixes", "--exit-zero", "--no-cache", "--output-format", "concise",
             str(copy)],
            capture_output=True, text=True, env=env, cwd=copy,
        )
        changed, broken, names = 0, 0, []
        for path, data in before.items():
            if path.read_bytes() != data:
                changed += 1
                try:
                    compile(data, str(path), "exec", dont_inherit=True)
                    compiled_before = True
                except (SyntaxError, ValueError):
                    compiled_before = False
                try:
                    compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
                except (SyntaxError, ValueError):
                    if compiled_before:
                        broken += 1
                        names.append(str(path.relative_to(copy)))
        return changed, broken, names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--base", default="HEAD~1", help="the version to compare against")
    parser.add_argument("--head", default="HEAD", help="the version under test")
    parser.add_argument("--fix", action="store_true", help="also check that fixed files compile")
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
                changed, broken, names = check_fixes(head_site, repo)
                print(f"   fix: {changed} files changed, {broken} no longer compile")
                for name in names:
                    print(f"     does not compile after fix: {name}")
                if broken:
                    status = 1
        print("## total per rule: " + ", ".join(f"{c} {n}" for c, n in sorted(totals.items())))
    return status


if __name__ == "__main__":
    sys.exit(main())
