"""Mutation check: each deliberate breakage of the package must fail at least one test.

Every mutant is a textual change to one file. The script copies the package and its tests to a
temporary directory (never touching the checkout), checks the relevant tests pass there unchanged,
then applies each mutant in turn to a fresh copy and runs its tests; a mutant that passes them all
is a promise no test keeps. Run from the checkout's root:

    python scripts/mutants.py                 # all mutants
    python scripts/mutants.py worker-no-write # some, by name

Exit status 1 when a mutant survives (or a mutant no longer applies: the code it breaks moved).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("sampler_lint", "rules", "tests", "pyproject.toml", "README.md", "docs",
          ".pre-commit-hooks.yaml", "CHANGELOG.md")


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str


MUTANTS = [
    Mutant(
        "worker-no-write", "sampler_lint/engine/runner.py",
        "    if fixed is not None and write:\n",
        "    if fixed is not None and write and multiprocessing.parent_process() is None:\n",
        ("tests/test_fix_parallel.py",),
        "--fix in worker processes reports fixes but writes none",
    ),
    Mutant(
        "no-compile-check", "sampler_lint/engine/linter.py",
        "        if original_compiles and not _compiles(new_code):\n",
        "        if False:\n",
        ("tests/test_fix_guards.py",),
        "the fix loop accepts a fix that does not compile",
    ),
    Mutant(
        "no-reduce-guard", "sampler_lint/engine/linter.py",
        "    if len(current.active) >= len(first.active):\n",
        "    if False:\n",
        ("tests/test_fix_guards.py",),
        "the fix loop writes fixes that did not reduce the findings",
    ),
    Mutant(
        "no-settle-guard", "sampler_lint/engine/linter.py",
        "        if any(_applicable(item, lint) for item in current.active):\n",
        "        if False:\n",
        ("tests/test_fix_guards.py",),
        "the fix loop writes a file whose fixes never settled",
    ),
    Mutant(
        "no-parse-guard", "sampler_lint/engine/linter.py",
        "        if isinstance(reparsed, Finding):\n",
        "        if isinstance(reparsed, Finding) and False:\n",
        ("tests/test_fix_guards.py",),
        "the fix loop goes on with fixed code that does not parse",
    ),
    Mutant(
        "silent-fix-exception", "sampler_lint/engine/linter.py",
        '            result.errors.append(f"{result.filename}: fix failed and was not applied: '
        '{error}")\n',
        "            pass\n",
        ("tests/test_fix_guards.py",),
        "a fix that raises is dropped without a word",
    ),
    Mutant(
        "fixed-count-wrong", "sampler_lint/engine/linter.py",
        "    result.fixed = len(first.active) - len(current.active)\n",
        "    result.fixed = len(first.active)\n",
        ("tests/test_fix_parallel.py",),
        "the fixed count includes findings that remain",
    ),
    Mutant(
        "prefilter-spaced-floordiv", "rules/sl101_floor_division_split.py",
        '    requires = (("split",), ("//",), ("{world_size}",), ("{rank}",))\n',
        '    requires = (("split",), (" // ",), ("{world_size}",), ("{rank}",))\n',
        ("tests/test_fixtures.py",
         "tests/test_properties.py::test_prefilter_sees_through_any_spacing"),
        "the text pre-filter hides `x.split(n//w)[rank]`",
    ),
    Mutant(
        "prefilter-spaced-modulo", "rules/sl402_remainder_of_quotient.py",
        '    requires = (("//",), ("%",), CLASS_FACT_WORDS)\n',
        '    requires = (("//",), (" % ",), CLASS_FACT_WORDS)\n',
        ("tests/test_fixtures.py",),
        "the text pre-filter hides `q%k`",
    ),
    Mutant(
        "analysis-imports-engine", "sampler_lint/analysis/loaders.py",
        "from sampler_lint.analysis.imports import dotted_name\n",
        "from sampler_lint.analysis.imports import dotted_name\n"
        "from sampler_lint.engine import findings  # noqa: F401\n",
        ("tests/test_layering.py",),
        "shared analysis reaches into the engine (a layering violation)",
    ),
    Mutant(
        "contract-cycle", "sampler_lint/analysis/tree.py",
        "from sampler_lint.analysis.imports import dotted_name\n",
        "from sampler_lint.analysis.imports import dotted_name\n\n"
        "if False:\n    from sampler_lint.rule import Rule  # noqa: F401\n",
        ("tests/test_layering.py",),
        "the foundation imports the rule contract back (an import cycle)",
    ),
    Mutant(
        "cache-key-no-options", "sampler_lint/engine/runner.py",
        "        sorted((key, repr(value)) for key, value in lint.options.items()),\n",
        "",
        ("tests/test_cache_key.py",),
        "the cache key ignores rule options and the vocabulary",
    ),
    Mutant(
        "cache-key-no-edits", "sampler_lint/engine/runner.py",
        "        lint.want_edits,\n        lint.use_prefilter,\n",
        "        lint.use_prefilter,\n",
        ("tests/test_cache_key.py",),
        "the cache key ignores an output format that needs the fixes' edits",
    ),
    Mutant(
        "cache-key-no-prefilter", "sampler_lint/engine/runner.py",
        "        lint.want_edits,\n        lint.use_prefilter,\n",
        "        lint.want_edits,\n",
        ("tests/test_cache_key.py",),
        "--no-prefilter is answered from a filtered run's cache",
    ),
    Mutant(
        "cache-key-no-selection", "sampler_lint/engine/runner.py",
        "        sorted(rule.code for rule in lint.rules),\n",
        "",
        ("tests/test_cache_key.py",),
        "the cache key ignores the rule selection",
    ),
    Mutant(
        "sarif-region-wrong", "sampler_lint/output/formats.py",
        '                            "endColumn": e.end_location.column,\n',
        '                            "endColumn": e.end_location.column + 1,\n',
        ("tests/test_machine_fixes.py",),
        "SARIF replacements delete one character too many",
    ),
    Mutant(
        "edit-column-wrong", "sampler_lint/engine/linter.py",
        '        column = offset - (before.rfind("\\n", 0, offset) + 1) + 1\n',
        '        column = offset - (before.rfind("\\n", 0, offset) + 1)\n',
        ("tests/test_machine_fixes.py",),
        "JSON and SARIF edits are one column off",
    ),
    Mutant(
        "stdin-ignores-exit-zero", "sampler_lint/cli.py",
        '    code = EXIT_FINDINGS if result.findings and not params["exit_zero"] else EXIT_OK\n',
        "    code = EXIT_FINDINGS if result.findings else EXIT_OK\n",
        ("tests/test_entry_points.py",),
        "--exit-zero is ignored on standard input",
    ),
    Mutant(
        "path-ignores-exit-non-zero-on-fix", "sampler_lint/cli.py",
        '    if params["exit_non_zero_on_fix"] and fixed:\n',
        "    if False:\n",
        ("tests/test_entry_points.py",),
        "--exit-non-zero-on-fix is ignored for paths",
    ),
    Mutant(
        "notebook-rewrites-every-cell", "sampler_lint/engine/notebook.py",
        "            if cell.number not in new_texts:\n                continue\n",
        "            if cell.number not in new_texts:\n"
        "                new_texts = {**new_texts, cell.number: cell.text}\n",
        ("tests/test_entry_points.py", "tests/test_notebooks.py"),
        "a notebook fix re-renders cells it did not fix",
    ),
    Mutant(
        "noqa-in-string", "sampler_lint/engine/noqa.py",
        "        match = _DIRECTIVE_BYTES.search(line, comment_start - blanks)\n",
        "        match = _DIRECTIVE_BYTES.search(line)\n",
        ("tests/test_noqa_strings.py",),
        "the SL002 fix edits a `# noqa` spelled inside a string",
    ),
    Mutant(
        "noqa-lines-rewritten", "sampler_lint/engine/linter.py",
        "            if current.suppressions.any_on(first_line, last_line):\n",
        "            if False:\n",
        ("tests/test_fix_guards.py",),
        "fixes rewrite lines that carry another tool's `# noqa`",
    ),
    # The fixture outputs are data the runtime harness executes: break what they do, keep them
    # valid Python, and only the harness can tell.
    Mutant(
        "fixed-output-floor-split", "tests/fixtures/SL101/odd_spelling.fixed.py",
        "    return x.tensor_split(world_size)[rank]  # expect: SL101\n",
        "    return x.split(len(x) // world_size)[rank]  # expect: SL101\n",
        ("tests/test_runtime_fixtures.py",),
        "a fixed output that still drops items on an uneven split",
    ),
    Mutant(
        "fixed-output-constant-epoch", "tests/fixtures/SL202/epoch_loops.fixed.py",
        "            sampler.set_epoch(epoch)\n        train_one_epoch(loader, epoch)\n",
        "            sampler.set_epoch(0)\n        train_one_epoch(loader, epoch)\n",
        ("tests/test_runtime_fixtures.py",),
        "a fixed output that calls set_epoch with a constant (same order every epoch)",
    ),
    Mutant(
        "fixed-output-literal-seed", "tests/fixtures/SL301/cases.fixed.py",
        "        seed=seed,\n",
        "        seed=0,\n",
        ("tests/test_runtime_fixtures.py",),
        "a fixed output that passes a literal instead of the shared seed",
    ),
    Mutant(
        "sl204-worker-counter-ignored", "sampler_lint/analysis/worker_epochs.py",
        "        stale = (rebound & reads) - writes - members\n",
        "        stale = (rebound & reads) - members\n",
        ("tests/test_fixtures.py",),
        "SL204 flags a dataset whose workers advance their own epoch",
    ),
    Mutant(
        "sl204-batch-sampler-caller-ignored", "rules/sl204_epoch_not_propagated_to_workers.py",
        "        if batch_sampler_epoch_called(index, found.name):\n",
        "        if False:\n",
        ("tests/test_fixtures.py",),
        "SL204 flags a batch sampler whose set_epoch a callback calls",
    ),
    Mutant(
        "sl301-fix-drops-seed", "rules/sl301_hardcoded_sampler_seed.py",
        "SEED_PLACEHOLDER", "SEED_PLACEHOLDER",  # replaced below when the rule has the line
        ("tests/test_fixtures.py", "tests/test_runtime_fixtures.py"),
        "SL301's fix passes a keyword the sampler does not take",
    ),
]


def _copy(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".hypothesis",
                                    ".sampler_lint_cache")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        elif source.exists():
            shutil.copy2(source, target / name)
    # Installed, the rules are the package `sampler_lint.rules`; in an editable install that name
    # resolves to the checkout's rules/, not the copy's. Put the copy's where the name looks first.
    (target / "sampler_lint" / "rules").symlink_to(target / "rules", target_is_directory=True)


def _pytest(copy: Path, tests: tuple[str, ...]) -> tuple[bool, str, float]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    started = time.monotonic()
    # `python -m pytest` from the copy puts the copy first on sys.path: its sampler_lint is the
    # one imported (the script checks), not the checkout's editable install.
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
        cwd=copy, env=env, capture_output=True, text=True, check=False,
    )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    summary = next((line for line in reversed(lines) if " in " in line), lines[-1] if lines else "")
    failed = next((line for line in lines if line.startswith("FAILED")), "")
    return result.returncode == 0, failed or summary, time.monotonic() - started


def _imported_from(copy: Path) -> list[Path]:
    """Where the package and its rules are imported from, run in ``copy``."""
    out = subprocess.run(
        [sys.executable, "-c",
         "import sampler_lint, sampler_lint.engine.registry as r; print(sampler_lint.__file__); "
         "print(r.all_rules()[0].__module__ and __import__(r.all_rules()[0].__module__, "
         "fromlist=['x']).__file__)"],
        cwd=copy, capture_output=True, text=True, check=True,
    ).stdout.split()
    return [Path(line) for line in out]


def _resolve(mutant: Mutant) -> Mutant:
    """The SL301 mutant names its line at run time: the rule module is shared with other work
    and its fix may be spelled differently; it must keep writing a `seed=` keyword."""
    if mutant.name != "sl301-fix-drops-seed":
        return mutant
    text = (ROOT / mutant.path).read_text()
    for line in text.splitlines(keepends=True):
        if "_append_keyword(" in line and "\"seed\"" in line:
            return Mutant(mutant.name, mutant.path, line, line.replace('"seed"', '"sed"'),
                          mutant.tests, mutant.why)
    return mutant


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    args = parser.parse_args()
    chosen = [_resolve(m) for m in MUTANTS if not args.names or m.name in args.names]
    with tempfile.TemporaryDirectory(prefix="sampler-lint-mutants-") as scratch:
        pristine = Path(scratch) / "pristine"
        _copy(pristine)
        for imported in _imported_from(pristine):
            # (not resolved: the rules are reached through the copy's symlink)
            assert imported.is_relative_to(pristine), f"imported from the checkout: {imported}"
        tests = tuple(sorted({t for m in chosen for t in m.tests}))
        ok, summary, seconds = _pytest(pristine, tests)
        print(f"unmutated: {'pass' if ok else 'FAIL'} ({seconds:.0f} s) {summary}")
        if not ok:
            print("the tests fail without any mutant: fix that first")
            return 2
        survivors = 0
        for number, mutant in enumerate(chosen, 1):
            copy = Path(scratch) / f"mutant-{number}"
            _copy(copy)
            target = copy / mutant.path
            text = target.read_text()
            if text.count(mutant.old) != 1 or mutant.old == mutant.new:
                print(f"{mutant.name:36} DOES NOT APPLY (the code it breaks moved)")
                survivors += 1
                continue
            target.write_text(text.replace(mutant.old, mutant.new))
            passed, summary, seconds = _pytest(copy, mutant.tests)
            verdict = "SURVIVED" if passed else "killed"
            survivors += passed
            print(f"{mutant.name:36} {verdict:8} ({seconds:4.0f} s) {mutant.why}")
            if not passed:
                print(f"{'':36} by {summary[:150]}")
            shutil.rmtree(copy, ignore_errors=True)
        print(f"{len(chosen) - survivors} of {len(chosen)} mutants killed")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
