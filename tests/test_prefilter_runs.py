"""A whole run finds the same with every pre-filter stage (text, syntax, index) as without any:
over all fixtures at once as one project, so the index stage sees a real project index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from sampler_lint.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


def _findings(root: Path, *extra: str) -> list[tuple[str, str, int, int]]:
    result = CliRunner().invoke(
        main,
        ["check", "--isolated", "--no-cache", "--output-format", "json", *extra, str(root)],
    )
    assert result.exit_code in (0, 1), result.output
    return sorted(
        (Path(f["filename"]).name, f["code"], f["location"]["row"], f["location"]["column"])
        for f in json.loads(result.stdout)
    )


def test_every_stage_together_hides_nothing(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES, project, ignore=shutil.ignore_patterns("*.fixed.py"))
    (project / "pyproject.toml").write_text("[project]\nname = 'fixtures'\n")
    filtered = _findings(project)
    unfiltered = _findings(project, "--no-prefilter")
    assert filtered == unfiltered
    assert len({code for _, code, _, _ in filtered}) >= 12  # nearly every rule has findings
