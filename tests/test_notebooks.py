"""Jupyter notebooks: linted cell by cell with IPython lines masked, findings named by cell (and
placed in the notebook's JSON for the machine formats, the baseline and --since), fixes written
back touching only the fixed cells, and configurable off."""

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
    # The notebook shapes use SL102's `chunk(world_size)[rank]`; SL102 is off by default.
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--jobs", "1", "--extend-select", "SL102", *args]
    )
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


def test_a_notebook_in_another_layout_keeps_every_other_byte(nb: Path) -> None:
    # Two-space indent, unsorted keys, escaped non-ASCII and CRLF: not how nbformat writes.
    cells = json.loads(json.dumps(CELLS))
    cells[2]["source"].insert(0, "# r\u00e9partition des donn\u00e9es\n")
    # Python's json writes NaN, which nbformat's schema does not allow but notebooks hold.
    notebook = {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
                "metadata": {"best_loss": float("nan")}}
    before = json.dumps(notebook, indent=2).replace("\n", "\r\n").encode()
    assert b"\\u00e9" in before
    nb.write_bytes(before)
    assert run("--fix", "--unsafe-fixes", ".")[0] == 0
    assert nb.read_bytes() == before.replace(
        b'"    return idx.chunk(world_size)[rank]"',
        b'"    return idx.tensor_split(world_size)[rank]"',
    )


def test_ipython_lines_are_masked_only_where_a_statement_starts(nb: Path) -> None:
    source = [
        "y = (10\n",
        "     % 3)\n",  # a continued expression, not a magic
        "text = \"\"\"\n",
        "!a line of text, not a shell escape\n",
        "\"\"\"\n",
        "z = f(y)  # why?\n",  # a comment ending in '?', not help syntax
        "np.mean?\n",
        "!pip install \\\n",  # a shell escape continued over lines
        "    -r requirements.txt\n",
        "def shard(idx, world_size, rank):\n",
        "    return idx.chunk(world_size)[rank]\n",
    ]
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": source}
    nb.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                              "nbformat_minor": 5}, indent=1))
    from sampler_lint.engine.notebook import mask

    masked = mask("".join(source))
    assert masked is not None
    assert masked[1] == ["np.mean?", "!pip install \\", "    -r requirements.txt"]
    code, out, _ = run("--output-format", "concise", ".")
    assert code == 1
    assert [line.split(": ")[0:2] for line in out.splitlines() if ": SL" in line] == [
        ["demo.ipynb:cell 1:11:12", "SL102 chunk of `idx` across `world_size` ranks yields "
         "fewer than `world_size` chunks when the length is small (about n < world_size * "
         "(world_size - 1))"]
    ]


def test_machine_formats_point_into_the_notebook_file(nb: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=nb.parent, check=True)  # paths from its root
    lines = nb.read_text().splitlines()
    json_line = next(i for i, line in enumerate(lines, start=1) if "idx.chunk" in line)
    column = lines[json_line - 1].index("idx.chunk") + 1
    _, out, _ = run("--output-format", "github", ".")
    assert out.startswith(
        f"::warning file=demo.ipynb,line={json_line},col={column},endLine={json_line},"
        f"endColumn={column + len('idx.chunk(world_size)[rank]')},"
        "title=sampler-lint (SL102)::SL102 cell 3, line 3: chunk of `idx`"
    )
    _, out, _ = run("--output-format", "json", ".")
    (finding,) = json.loads(out)
    assert (finding["filename"], finding["cell"], finding["location"]) == (
        "demo.ipynb", 3, {"row": 3, "column": 12}
    )
    _, out, _ = run("--output-format", "sarif", ".")
    (result,) = json.loads(out)["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "demo.ipynb"
    assert location["region"]["startLine"] == json_line
    assert result["properties"] == {"cell": 3, "cellLine": 3, "cellColumn": 12}


def test_baseline_survives_a_cell_inserted_above(nb: Path) -> None:
    assert run("--write-baseline", "baseline.json", ".")[0] == 0
    notebook = json.loads(nb.read_text())
    notebook["cells"].insert(0, {"cell_type": "code", "execution_count": None, "metadata": {},
                                 "outputs": [], "source": ["import torch\n"]})
    nb.write_text(json.dumps(notebook, sort_keys=True, indent=1) + "\n")
    assert run("--baseline", "baseline.json", ".")[0] == 0
    assert "demo.ipynb:cell 4:3:12: SL102" in run("--output-format", "concise", ".")[1]


def test_since_reports_only_changed_cell_lines(nb: Path) -> None:
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
                       cwd=nb.parent, check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "base")
    assert run("--since", "HEAD", ".")[0] == 0
    notebook = json.loads(nb.read_text())
    notebook["cells"][1]["source"] = ["def more(x, world_size, rank):\n",
                                      "    return x.chunk(world_size)[rank]\n"]
    nb.write_text(json.dumps(notebook, sort_keys=True, indent=1, ensure_ascii=False) + "\n")
    code, out, _ = run("--since", "HEAD", "--output-format", "concise", ".")
    assert code == 1
    assert [line.split(": ")[0] for line in out.splitlines() if ": SL" in line] == [
        "demo.ipynb:cell 2:2:12"
    ]


def test_add_noqa_in_a_notebook(nb: Path) -> None:
    before = nb.read_text()
    code, _, err = run("--add-noqa", ".")
    assert code == 0 and "Added 1 noqa directive(s)." in err
    assert nb.read_text() == before.replace(
        '"    return idx.chunk(world_size)[rank]"',
        '"    return idx.chunk(world_size)[rank]  # noqa: SL102"',
    )
    assert run(".")[0] == 0
    assert "Added 0 noqa directive(s)." in run("--add-noqa", ".")[2]
    assert nb.read_text() != before


def test_notebooks_can_be_turned_off(nb: Path) -> None:
    (nb.parent / "pyproject.toml").write_text("[tool.sampler-lint]\nnotebooks = false\n")
    assert run(".")[0] == 0


def test_a_broken_notebook_is_a_parse_error(nb: Path) -> None:
    nb.write_text("{not json")
    code, out, _ = run("--output-format", "concise", ".")
    assert code == 1 and "SL001" in out and "cannot read notebook" in out


@pytest.mark.parametrize("layout", ["\n", "\r\n", "", "\n\n\n"])
def test_findings_are_placed_on_the_lines_of_the_json_text(layout: str) -> None:
    from sampler_lint.engine.notebook import _Notebook

    text = ('{"cells": [' + layout + '{"cell_type": "code", "source": ["x = 1\\n"]}' + layout
            + '], "metadata": {}}' + layout)
    notebook = _Notebook(text.encode())
    assert notebook._line_starts == [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]


# IPython removes a cell's leading indent before it reads the cell (code pasted with its indent
# runs): such a cell is Python, and its findings sit on its own, indented, lines.
INDENTED_CELLS = [
    ["    !python train.py \\\n", "        --epochs 3 \\\n", "        --lr 0.1\n"],
    ["\n", "  def shard(idx, world_size, rank):\n",
     "      return idx.chunk(world_size)[rank]\n"],
]


def _indented_notebook(nb: Path) -> None:
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": source} for source in INDENTED_CELLS]
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                              "nbformat_minor": 5}, indent=1) + "\n")


def test_an_indented_cell_is_read_as_ipython_reads_it(nb: Path) -> None:
    _indented_notebook(nb)
    code, out, _ = run("--output-format", "concise", ".")
    assert code == 1
    assert [line.split(": ")[0] for line in out.splitlines() if ": SL" in line] == [
        "demo.ipynb:cell 2:3:14"  # the column of the cell as written, not of the dedented code
    ]
    code, out, _ = run(".")
    assert "      return idx.chunk(world_size)[rank]" in out  # the frame shows the cell's line
    assert "fix" not in out  # reported, not fixed: nothing to apply
    _, out, _ = run("--output-format", "json", ".")
    (finding,) = json.loads(out)
    assert (finding["location"], finding["fix"]) == ({"row": 3, "column": 14}, None)


def test_an_indented_cell_is_never_rewritten_by_a_fix(nb: Path) -> None:
    _indented_notebook(nb)
    before = nb.read_text()
    code, _, _ = run("--fix", "--unsafe-fixes", ".")
    assert code == 1 and nb.read_text() == before


def test_add_noqa_keeps_an_indented_cell_indented(nb: Path) -> None:
    _indented_notebook(nb)
    code, _, err = run("--add-noqa", ".")
    assert code == 0 and "Added 1 noqa directive(s)." in err
    sources = ["".join(cell["source"]) for cell in json.loads(nb.read_text())["cells"]]
    assert sources[0] == "".join(INDENTED_CELLS[0])
    assert sources[1] == (
        "\n  def shard(idx, world_size, rank):\n"
        "      return idx.chunk(world_size)[rank]  # noqa: SL102\n"
    )
    assert run(".")[0] == 0


@pytest.mark.parametrize("text", [
    "", "x = 1\n", "\n\n  a = 1\n  b = 2\n", "\t!ls \\\n\t  -l\n", "  a = (1,\n2)\n  b = 3",
    "   \n  a = 1\n", "  s = '''\nno indent here\n  '''\n",
])
def test_the_leading_indent_comes_off_and_goes_back(text: str) -> None:
    from sampler_lint.engine.notebook import dedented, indented_again, leading_indent

    indent = leading_indent(text)
    code = dedented(text, indent)
    assert indented_again(code, indent, text) == text
    assert code.count("\n") == text.count("\n")
    first = next((line for line in code.split("\n") if line.strip()), "")
    assert first == first.lstrip()  # the first line with code starts at column 1, as in IPython
