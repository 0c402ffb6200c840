"""``-`` with ``--stdin-filename``: standard input is linted as the file it names, with that
file's configuration, per-file-ignores, excludes and project; with ``--fix`` standard output
carries the fixed source and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

from .test_epoch_project import BATCH_SAMPLER, MAIN, SAMPLER_ONLY, TRAINER

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
FIXED = BUGGY.replace("x.split(x.size(0) // world_size)", "x.tensor_split(world_size)")


def run(name: str, source: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--jobs", "1", "--stdin-filename", name, *args, "-"],
        input=source,
    )
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def repo(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (project / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n\n[tool.sampler-lint]\nextend-exclude = ['vendor']\n"
        "extend-select = ['SL102']\n"
        "per-file-ignores = { 'legacy/*.py' = ['SL101'] }\n"
    )
    (project / "sub").mkdir()
    (project / "sub" / "pyproject.toml").write_text("[tool.sampler-lint]\nignore = ['SL1']\n")
    monkeypatch.chdir(project)
    return project


def test_the_named_files_configuration_applies(repo: Path) -> None:
    code, out, _ = run("train.py", BUGGY, "--output-format", "concise")
    assert code == 1 and out.startswith("train.py:2:12: SL101 ")
    assert run("sub/train.py", BUGGY)[:2] == (0, "All checks passed!\n")
    assert run("legacy/old.py", BUGGY)[:2] == (0, "All checks passed!\n")


def test_an_excluded_name_is_passed_through_untouched(repo: Path) -> None:
    assert run("vendor/copied.py", BUGGY) == (0, "", "")
    assert run("vendor/copied.py", BUGGY, "--fix", "--unsafe-fixes") == (0, BUGGY, "")


def test_fix_writes_the_fixed_source_and_nothing_else(repo: Path) -> None:
    code, out, err = run("train.py", BUGGY, "--fix", "--unsafe-fixes")
    assert (code, out, err) == (0, FIXED, "")
    # The safe fix (an unused noqa) is applied, the unsafe one is not: what remains goes to
    # standard error, whatever the output format.
    source = "def g(x, world_size, rank):\n    return x.chunk(world_size)[rank]  # noqa: SL101\n"
    code, out, err = run("train.py", source, "--fix", "--output-format", "json")
    assert (code, out) == (1, source.replace("  # noqa: SL101", ""))
    assert err.startswith("train.py:2:12: SL102 ")
    assert "Found 2 warnings (1 fixed, 1 remaining)." in err  # SL002 fixed, SL102 left
    assert not (repo / "train.py").exists()  # nothing was written to disk


def test_a_notebook_on_stdin_is_linted_and_fixed_cell_by_cell(repo: Path) -> None:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": ["%matplotlib inline\n", *BUGGY.splitlines(keepends=True)]}
    notebook = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                           "nbformat_minor": 5}, indent=1) + "\n"
    code, out, _ = run("nb.ipynb", notebook, "--output-format", "concise")
    assert code == 1 and out.startswith("nb.ipynb:cell 1:3:12: SL101 ")
    code, out, err = run("nb.ipynb", notebook, "--fix", "--unsafe-fixes")
    assert (code, err) == (0, "")
    assert out == notebook.replace("x.split(x.size(0) // world_size)", "x.tensor_split(world_size)")


@pytest.mark.parametrize(("arguments", "expected"), [(SAMPLER_ONLY, []), (BATCH_SAMPLER, [8])])
def test_stdin_sees_the_project_around_the_named_file(
    repo: Path, arguments: str, expected: list[int]
) -> None:
    (repo / "main.py").write_text(MAIN.format(arguments=arguments))
    code, out, _ = run("trainer.py", TRAINER, "--select", "SL201", "--output-format", "json")
    assert [f["location"]["row"] for f in json.loads(out)] == expected
    assert code == (1 if expected else 0)
