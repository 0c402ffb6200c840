"""The two entry points (paths and standard input) honour the same exit-code options, and a
notebook fix touches only the cells it fixes, whatever the JSON spelling of the others."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
CLEAN = "def f(x, world_size, rank):\n    return x.tensor_split(world_size)[rank]\n"
SOURCES = {"buggy": BUGGY, "clean": CLEAN}
FLAG_SETS = [
    list(flags) for n in range(4)
    for flags in itertools.combinations(
        ["--exit-zero", "--exit-non-zero-on-fix", "--fix", "--unsafe-fixes"], n
    )
]


def _expected(source: str, flags: list[str]) -> int:
    """The contract: 1 when findings remain (unless --exit-zero), or when a fix was applied
    and --exit-non-zero-on-fix asks for it; 0 otherwise."""
    fixing = "--fix" in flags and "--unsafe-fixes" in flags  # SL101's fix is unsafe
    remaining = source == "buggy" and not fixing
    fixed = source == "buggy" and fixing
    if remaining and "--exit-zero" not in flags:
        return 1
    return 1 if fixed and "--exit-non-zero-on-fix" in flags else 0


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("flags", FLAG_SETS, ids=lambda f: " ".join(f) or "none")
def test_path_and_stdin_exit_alike(project: Path, source: str, flags: list[str]) -> None:
    path = project / "shard.py"
    path.write_text(SOURCES[source])
    common = ["check", "--no-cache", "--jobs", "1", "--select", "SL101", *flags]
    on_path = CliRunner().invoke(main, [*common, str(path)])
    on_stdin = CliRunner().invoke(
        main, [*common, "--stdin-filename", str(path), "-"], input=SOURCES[source]
    )
    expected = _expected(source, flags)
    assert on_path.exit_code == expected, on_path.output
    assert on_stdin.exit_code == expected, on_stdin.output
    if "--fix" in flags:
        assert on_stdin.stdout.encode() == path.read_bytes()  # the same fixed source


# ------------------------------------------------------------------------------------------------
# Notebooks: an unfixed cell is kept byte for byte

# The untouched cell's source is one JSON string (not a list of lines) written with escapes no
# serializer would choose: \/ for '/', \u0041 for 'A', \t, a non-ASCII character spelled \u00e9.
UNTOUCHED_CELL = (
    '  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [],\n'
    '   "source": "path = \\"a\\/b\\"  # \\u0041 caf\\u00e9\\n\\tx = 1 // 2\\n"}'
)
FIXED_CELL = (
    '  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [],\n'
    '   "source": ["def shard(x, world_size, rank):\\n",\n'
    '              "    return x.split(x.size(0) // world_size)[rank]\\n"]}'
)
NOTEBOOK = (
    '{"cells": [\n' + UNTOUCHED_CELL + ",\n" + FIXED_CELL + ",\n" + UNTOUCHED_CELL + "\n],\n"
    ' "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'
)


def test_notebook_fix_keeps_single_string_cells_byte_identical(project: Path) -> None:
    json.loads(NOTEBOOK)  # the fixture is valid JSON
    path = project / "demo.ipynb"
    path.write_text(NOTEBOOK)
    result = CliRunner().invoke(main, [
        "check", "--no-cache", "--jobs", "1", "--select", "ALL", "--fix", "--unsafe-fixes",
        str(path),
    ])
    assert result.exit_code == 0, result.output
    after = path.read_text()
    assert after != NOTEBOOK, "the middle cell is fixable"
    assert after.count(UNTOUCHED_CELL) == 2, after
    assert after.startswith('{"cells": [\n' + UNTOUCHED_CELL + ",\n")
    assert after.endswith(",\n" + UNTOUCHED_CELL + "\n],\n" + NOTEBOOK.rsplit("],\n", 1)[1])
    fixed_source = "".join(json.loads(after)["cells"][1]["source"])
    assert "tensor_split" in fixed_source or "ceil" in fixed_source
