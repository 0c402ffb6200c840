"""``ProjectSession``: the warm project index an editor lints against. What it reports must be what
a ``check`` run over the same files reports; an edit re-surveys one file, never the project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main
from sampler_lint.engine import registry, runner
from sampler_lint.engine.config import ConfigResolver, RawSettings
from sampler_lint.server.session import ProjectSession

BASE = """\
import torch.utils.data as tud


class BaseSampler(tud.DistributedSampler):
    def __init__(self, dataset):
        super().__init__(dataset)
        self.sub_num_samples = 3
"""

CHILD = """\
from base import BaseSampler


class ChildSampler(BaseSampler):
    def size(self):
        return self.subnum_samples
"""

SHARD = """\
def shard(train_idx, world_size, rank):
    return train_idx.split(train_idx.size(0) // world_size)[rank]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (tmp_path / "base.py").write_text(BASE)
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "shard.py").write_text(SHARD)
    return tmp_path.resolve()


def _session(project: Path) -> ProjectSession:
    return ProjectSession(project, ConfigResolver(RawSettings(), cwd=project), use_cache=False)


def _cli(project: Path) -> list[tuple[str, str, int, int]]:
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "json", str(project)]
    )
    assert result.exit_code in (0, 1), result.output
    return sorted(
        (Path(f["filename"]).name, f["code"], f["location"]["row"], f["location"]["column"])
        for f in json.loads(result.stdout)
    )


def test_findings_are_the_check_runs(project: Path) -> None:
    session = _session(project)
    found = sorted(
        (path.name, f.code, f.location.line, f.location.column)
        for path in sorted(project.glob("*.py"))
        for f in session.lint(path, path.read_text()).result.findings
    )
    assert found == _cli(project)
    assert ("child.py", "SL401", 6, 16) in found


def test_the_index_is_the_check_runs(project: Path) -> None:
    session = _session(project)
    files = sorted(project.glob("*.py"))
    cold = runner.build_index(files, registry.all_rules())
    assert dict(session.index().facts) == dict(cold.facts)


def test_an_unsaved_edit_changes_the_index_and_closing_it_restores_the_disk(
    project: Path
) -> None:
    session = _session(project)
    child = project / "child.py"
    assert [f.code for f in session.lint(child, CHILD).result.findings] == ["SL401"]
    base = project / "base.py"
    assert session.lint(base, BASE.replace("sub_num", "subnum")).index_changed
    assert session.lint(child, CHILD).result.findings == []
    assert session.update(base, None)  # closed without saving
    assert [f.code for f in session.lint(child, CHILD).result.findings] == ["SL401"]


def test_an_edit_that_leaves_the_facts_alone_keeps_the_index(project: Path) -> None:
    session = _session(project)
    base = project / "base.py"
    session.lint(base, BASE)
    index = session.index()
    linted = session.lint(base, BASE + "\n# a comment\n")
    assert not linted.index_changed
    assert session.index() is index


def test_a_keystroke_never_surveys_the_project_again(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _session(project)
    session.survey()
    calls: list[object] = []
    monkeypatch.setattr(
        "sampler_lint.server.session.survey_files", lambda *args, **kwargs: calls.append(args)
    )
    for number in range(3):
        session.lint(project / "shard.py", SHARD + f"x = {number}\n")
    assert calls == []


def test_a_new_file_joins_the_project_and_a_deleted_one_leaves(project: Path) -> None:
    session = _session(project)
    session.survey()
    files = session.files
    extra = project / "extra.py"
    extra.write_text(BASE.replace("BaseSampler", "OtherSampler"))
    assert session.update(extra, None)
    assert session.files == files + 1
    extra.unlink()
    assert session.update(extra, None)
    assert session.files == files


def test_a_buffer_that_does_not_parse_gives_sl001(project: Path) -> None:
    session = _session(project)
    result = session.lint(project / "broken.py", "def f(:\n    pass\n").result
    assert [f.code for f in result.findings] == ["SL001"]


def test_excluded_files_report_nothing(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.sampler-lint]\nextend-exclude = ["shard.py"]\n'
    )
    session = _session(project)
    linted = session.lint(project / "shard.py", SHARD)
    assert linted.excluded and linted.result.findings == []


def test_an_indented_cell_is_placed_as_written_and_offers_no_fix(project: Path) -> None:
    # IPython removes a cell's leading indent; the editor shows the cell as written.
    notebook = project / "demo.ipynb"
    notebook.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                    "nbformat_minor": 5}))
    session = _session(project)
    indented = "".join("  " + line for line in SHARD.splitlines(keepends=True))
    linted = session.lint_cell(notebook, indented, number=1, fix=True, unsafe_fixes=True)
    (finding,) = linted.result.findings
    assert (finding.code, finding.location.line, finding.location.column) == ("SL101", 2, 14)
    assert finding.fix is None and linted.fixed is None
    assert finding.source_line == indented.splitlines()[1]  # the cell's line, as written
    assert session.lint_cell(notebook, SHARD, number=1).result.findings[0].location.column == 12
