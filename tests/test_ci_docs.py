"""docs/ci.md as a user copies it: its YAML parses into the workflows it describes, and every
``sampler-lint`` command on the page runs in a scratch git repository with the outcome the page
promises (exit code, report files that parse)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

from .conftest import ROOT

yaml = pytest.importorskip("yaml")

GUIDE = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
OLD = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
NEW = "\n\ndef g(x, world_size, rank):\n    return x.chunk(world_size)[rank]\n"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE, re.DOTALL)


def _workflows() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    github, gitlab, pre_commit = (yaml.safe_load(block) for block in _blocks("yaml"))
    return github, gitlab, pre_commit


def _commands() -> list[str]:
    github, gitlab, _ = _workflows()
    steps = github["jobs"]["lint"]["steps"]
    commands = [step["run"] for step in steps if "run" in step]
    commands += gitlab["sampler-lint"]["script"]
    commands += [line for block in _blocks("bash") for line in block.splitlines()]
    return [" ".join(c.split()) for c in commands if c.lstrip().startswith("sampler-lint")]


def test_the_workflows_parse_and_fit_together() -> None:
    github, gitlab, pre_commit = _workflows()
    steps = github["jobs"]["lint"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload"))
    sarif_runs = [s["run"] for s in steps if "--output-format sarif" in s.get("run", "")]
    assert len(sarif_runs) == 1
    assert f"--output-file {upload['with']['sarif_file']}" in " ".join(sarif_runs[0].split())
    assert any("--output-format github" in s.get("run", "") and "--since" in s["run"]
               for s in steps)
    job = gitlab["sampler-lint"]
    script = " ".join(job["script"])
    for kind, file in job["artifacts"]["reports"].items():
        fmt = {"codequality": "gitlab", "junit": "junit"}[kind]
        assert f"--output-format {fmt} --output-file {file}" in script
    hooks = {hook["id"] for repo in pre_commit["repos"] for hook in repo["hooks"]}
    defined = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hooks <= {hook["id"] for hook in defined}
    assert all("jupyter" in hook["types_or"] for hook in defined)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "commit.gpgsign=false", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout.strip()


@pytest.fixture
def scratch(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose main branch has one finding, with a pull request adding another."""
    # SL102 (the pull request's new finding) is off by default: this project opts in.
    with (project / "pyproject.toml").open("a") as config:
        config.write('\n[tool.sampler-lint]\nextend-select = ["SL102"]\n')
    (project / "src").mkdir()
    (project / "src" / "train.py").write_text(OLD)
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "commit", "-qm", "main")
    _git(project, "update-ref", "refs/remotes/origin/main", "HEAD")
    monkeypatch.chdir(project)
    assert CliRunner().invoke(
        main, ["check", "--no-cache", "--write-baseline", ".sampler-lint-baseline.json", "."]
    ).exit_code == 0
    (project / "src" / "train.py").write_text(OLD + NEW)
    return project


@pytest.mark.parametrize("command", _commands())
def test_every_command_runs_as_documented(scratch: Path, command: str) -> None:
    base = _git(scratch, "rev-parse", "HEAD")
    command = command.replace("${{ github.base_ref }}", "main")
    command = command.replace("$CI_MERGE_REQUEST_DIFF_BASE_SHA", base)
    argv = shlex.split(command)
    stdin = None
    if "<" in argv:
        stdin = (scratch / argv[argv.index("<") + 1]).read_text()
        argv = argv[: argv.index("<")]
    assert argv[0] == "sampler-lint"
    result = CliRunner().invoke(main, [*argv[1:], "--no-cache"], input=stdin)
    quiet = {"--exit-zero", "--write-baseline", "--add-noqa"} & set(argv)
    # Everything else meets the pull request's new finding (the baseline and --since keep it).
    assert result.exit_code == (0 if quiet else 1), (command, result.output)
    if "--since" in argv or "--baseline" in argv:
        assert "SL101" not in result.stdout and "SL102" in result.stdout
    outputs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--output-file"]
    for output in outputs:
        text = (scratch / output).read_text(encoding="utf-8")
        if output.endswith(".sarif"):
            assert json.loads(text)["version"] == "2.1.0"
        elif output.endswith(".xml"):
            assert len(ET.fromstring(text).findall(".//testcase")) == 2
        else:
            assert {item["check_name"] for item in json.loads(text)} == {"SL101", "SL102"}
    if "--add-noqa" in argv:
        assert CliRunner().invoke(main, ["check", "--no-cache", "."]).exit_code == 0


def test_the_guide_covers_each_command() -> None:
    commands = " ".join(_commands())
    for option in ("--output-format github", "--output-format sarif", "--output-format gitlab",
                   "--output-format junit", "--baseline", "--write-baseline", "--since",
                   "--add-noqa", "--stdin-filename"):
        assert option in commands, option
    assert "notebooks = false" in GUIDE
