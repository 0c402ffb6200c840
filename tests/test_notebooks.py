"""Jupyter notebooks: linted cell by cell with IPython lines masked, findings named by cell,
fixes written back touching only the fixed cells, and configurable off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# x.split(n // world_size)[rank]"]},
    {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
     "source": ["%matplotlib inline\n", "!pip install torch\n", "files = !ls\n", "len?\n"]},
    {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [],
     "source": ["def shard(idx, world_size, rank):\n", "    %time y = 1\n",
                "    return idx.chunk(world_size)[rank]"]},
    {"cell_type": "code", "execution_count": 3, "metadata": {}, "outputs": [],
     "source": ["%%bash\n", "echo 'x.split(n // world_size)[rank]'"]},
]


def _notebook(layout: str = "nbformat") -> str:
    notebook = {"cells": CELLS, "metadata": {"kernelspec": {"name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    if layout == "nbformat":
        return json.dumps(notebook, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    return json.dumps(notebook, indent=2)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", "--no-cache", "--jobs", "1", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def nb(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (project / "demo.ipynb").write_text(_notebook())
    monkeypatch.chdir(project)
    return project / "demo.ipynb"


def test_findings_point_at_cell_and_line_and_magics_are_not_errors(nb: Path) -> None:
    code, out, _ = run("--output-format", "concise", ".")
    assert code == 1
    assert out.splitlines()[0].startswith("demo.ipynb:cell 3:3:12: SL102")
    assert "SL001" not in out  # IPython lines are masked, not mis-parsed


def test_fix_touches_only_the_fixed_cell(nb: Path) -> None:
    before = nb.read_text()
    assert run("--fix", "--unsafe-fixes", ".")[0] == 0
    after = nb.read_text()
    expected = before.replace("idx.chunk(world_size)[rank]", "idx.tensor_split(world_size)[rank]")
    assert after == expected  # every other byte, magics included, is as it was


def test_a_notebook_in_another_layout_is_reported_not_rewritten(nb: Path) -> None:
    nb.write_text(_notebook("other"))
    before = nb.read_bytes()
    code, _, err = run("--fix", "--unsafe-fixes", ".")
    assert code == 1 and "not in nbformat's JSON layout" in err
    assert nb.read_bytes() == before


def test_notebooks_can_be_turned_off(nb: Path) -> None:
    (nb.parent / "pyproject.toml").write_text("[tool.sampler-lint]\nnotebooks = false\n")
    assert run(".")[0] == 0


def test_a_broken_notebook_is_a_parse_error(nb: Path) -> None:
    nb.write_text("{not json")
    code, out, _ = run("--output-format", "concise", ".")
    assert code == 1 and "SL001" in out and "cannot read notebook" in out
