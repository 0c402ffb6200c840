"""The CI gate: annotation and report formats, several outputs in one run, the baseline and
--since, each checked as a CI system or a user would meet them."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

from .conftest import ROOT

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
CHUNK = "def g(x, world_size, rank):\n    return x.chunk(world_size)[rank]\n"
# The OASIS SARIF 2.1.0 schema (errata01), oasis-tcs/sarif-spec at e0583813, shipped as test data.
SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"


def run(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    previous = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, ["check", "--no-cache", "--jobs", "1", *args])
    finally:
        os.chdir(previous)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def repo(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The tests' second shape is SL102's, which is off by default: this project opts in.
    with (project / "pyproject.toml").open("a") as config:
        config.write('\n[tool.sampler-lint]\nextend-select = ["SL102"]\n')
    (project / "train.py").write_text(BUGGY)
    monkeypatch.chdir(project)
    return project


def test_github_annotations_are_escaped(repo: Path) -> None:
    _git(repo, "init", "-q")  # paths are relative to the repository's root
    (repo / "we,ird:name%.py").write_text(BUGGY)
    code, out, _ = run("--output-format", "github", "we,ird:name%.py")
    assert code == 1
    assert out.startswith(
        "::error file=we%2Cird%3Aname%25.py,line=2,col=12,endLine=2,endColumn=50,"
        "title=sampler-lint (SL101)::SL101 floor-sized split"
    )
    assert out.count("\n") == 1


def test_sarif_is_valid_and_carries_rules_and_fixes(repo: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    code, out, _ = run("--output-format", "sarif", "--unsafe-fixes", ".")
    assert code == 1
    document = json.loads(out)
    jsonschema.validate(document, json.loads(SCHEMA.read_text(encoding="utf-8")))
    run_ = document["runs"][0]
    rules = {rule["id"]: rule for rule in run_["tool"]["driver"]["rules"]}
    assert rules["SL101"]["helpUri"].endswith("#sl101") and rules["SL101"]["help"]["text"]
    (result,) = run_["results"]
    assert result["ruleId"] == "SL101"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    replacement = result["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "tensor_split("


def test_junit_is_valid_xml_with_one_case_per_finding(repo: Path) -> None:
    (repo / "more.py").write_text(BUGGY + CHUNK)
    _, out, _ = run("--output-format", "junit", ".")
    root = ET.fromstring(out)
    cases = root.findall(".//testcase")
    assert len(cases) == 3 and all(case.find("failure") is not None for case in cases)


def test_gitlab_fingerprints_survive_moved_lines(repo: Path) -> None:
    _, before, _ = run("--output-format", "gitlab", ".")
    (repo / "train.py").write_text("import os\n\n\n" + BUGGY)
    _, after, _ = run("--output-format", "gitlab", ".")
    first, second = json.loads(before)[0], json.loads(after)[0]
    assert first["fingerprint"] == second["fingerprint"]
    assert first["location"]["lines"]["begin"] == 2 and second["location"]["lines"]["begin"] == 5


def test_several_formats_in_one_run(repo: Path) -> None:
    code, out, _ = run("--output-format", "concise", "--output-format", "sarif",
                       "--output-format", "junit", "--output-file", "-.unused", ".")
    assert code == 2  # files pair with formats by position: the first format got the file
    code, out, _ = run("--output-format", "sarif", "--output-file", "report.sarif",
                       "--output-format", "concise", ".")
    assert code == 1
    assert out.startswith("train.py:2:12: SL101")
    assert json.loads((repo / "report.sarif").read_text())["version"] == "2.1.0"
    code, _, err = run("--output-format", "sarif", "--output-format", "concise", ".")
    assert code == 2 and "only one --output-format can go to standard output" in err


def test_baseline_keeps_old_findings_quiet_and_new_ones_loud(repo: Path) -> None:
    assert run("--write-baseline", "baseline.json", ".")[0] == 0
    assert run("--baseline", "baseline.json", ".")[0] == 0
    # An unrelated edit above the finding moves it: still in the baseline.
    (repo / "train.py").write_text("import os\n\n\n" + BUGGY)
    assert run("--baseline", "baseline.json", ".")[0] == 0
    # A new finding is reported, the old one is not.
    (repo / "train.py").write_text("import os\n\n\n" + BUGGY + "\n\n" + CHUNK)
    code, out, _ = run("--baseline", "baseline.json", "--output-format", "concise", ".")
    assert code == 1 and "SL102" in out and "SL101" not in out


def test_baseline_entry_disappears_when_the_finding_is_fixed(repo: Path) -> None:
    run("--write-baseline", "baseline.json", ".")
    assert len(json.loads((repo / "baseline.json").read_text())["findings"]) == 1
    assert run("--fix", "--unsafe-fixes", ".")[0] == 0
    assert run("--baseline", "baseline.json", ".")[0] == 0
    assert run("--write-baseline", "baseline.json", ".")[0] == 0
    assert json.loads((repo / "baseline.json").read_text())["findings"] == []


def test_a_broken_baseline_is_a_clear_error(repo: Path) -> None:
    (repo / "baseline.json").write_text("{not json")
    code, _, err = run("--baseline", "baseline.json", ".")
    assert code == 2 and "is not a sampler-lint baseline" in err


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_since_reports_only_changed_lines(repo: Path) -> None:
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    assert run("--since", "HEAD", ".")[0] == 0  # the old finding is not on a changed line
    (repo / "train.py").write_text(BUGGY + "\n\n" + CHUNK)
    (repo / "new.py").write_text(BUGGY)  # untracked: every line is new
    code, out, _ = run("--since", "HEAD", "--output-format", "concise", ".")
    assert code == 1
    assert sorted(line.split(": ")[1].split()[0] + " " + line.split(":")[0]
                  for line in out.splitlines() if ": SL" in line) == ["SL101 new.py",
                                                                     "SL102 train.py"]


def test_since_outside_git_or_with_a_bad_revision(repo: Path) -> None:
    code, _, err = run("--since", "HEAD", ".")
    assert code == 2 and "needs a git repository" in err
    _git(repo, "init", "-q")
    code, _, err = run("--since", "no-such-rev", ".")
    assert code == 2 and "unknown git revision 'no-such-rev'" in err


def test_add_noqa_is_idempotent_and_keeps_existing_codes(repo: Path) -> None:
    (repo / "more.py").write_text(
        BUGGY.replace("[rank]\n", "[rank]  # noqa: E501\n") + CHUNK + "x = 1  # a comment\n"
    )
    code, _, err = run("--add-noqa", ".")
    assert code == 0 and "Added 3 noqa directive(s)." in err
    text = (repo / "more.py").read_text()
    assert "[rank]  # noqa: E501, SL101\n" in text
    assert "x.chunk(world_size)[rank]  # noqa: SL102\n" in text
    assert (repo / "train.py").read_text().endswith("[rank]  # noqa: SL101\n")
    assert run(".")[0] == 0  # everything is suppressed now
    assert run("--add-noqa", ".")[2].strip().endswith("Added 0 noqa directive(s).")
    assert (repo / "more.py").read_text() == text


def test_unused_noqa_is_reported_and_fixed_keeping_other_codes(repo: Path) -> None:
    (repo / "train.py").write_text(
        BUGGY.replace("[rank]\n", "[rank]  # noqa: SL101\n")  # used: stays
        + "y = 2  # noqa: SL101, E501\n"  # SL101 unused, E501 belongs to another tool
        + "z = 3  # keep me  # noqa: SL203\n"
        + "w = 4  # noqa\n"  # bare: left alone
    )
    code, out, _ = run("--output-format", "concise", ".")
    assert code == 1
    flagged = [line for line in out.splitlines() if ": SL" in line]
    assert [line.split(":")[1] for line in flagged] == ["3", "4"]
    assert all(" SL002 " in line for line in flagged)
    assert run("--fix", ".")[0] == 0
    text = (repo / "train.py").read_text()
    assert "[rank]  # noqa: SL101\n" in text
    assert "y = 2  # noqa: E501\n" in text
    assert "z = 3  # keep me\n" in text
    assert "w = 4  # noqa\n" in text


def test_baseline_matches_however_the_paths_are_spelled(repo: Path) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "twice.py").write_text(BUGGY + BUGGY.replace("def f", "def g"))
    assert run("--write-baseline", "baseline.json", ".")[0] == 0
    # From another directory, with another spelling of the same files: still known.
    assert run("--baseline", "baseline.json", str(repo / "pkg"), "train.py")[0] == 0
    assert run("--baseline", "../baseline.json", ".", cwd=repo / "pkg")[0] == 0
    # The same code flagged twice: fixing one keeps the other known; a third copy is new.
    (repo / "pkg" / "twice.py").write_text(BUGGY)
    assert run("--baseline", "baseline.json", ".")[0] == 0
    (repo / "pkg" / "twice.py").write_text(BUGGY + BUGGY.replace("def f", "def g") +
                                           BUGGY.replace("def f", "def h"))
    code, out, _ = run("--baseline", "baseline.json", "--output-format", "concise", ".")
    assert code == 1
    assert [line.split(": ")[0] for line in out.splitlines() if ": SL" in line] == [
        "pkg/twice.py:6:12"
    ]


def test_since_handles_unusual_file_names(repo: Path) -> None:
    _git(repo, "init", "-q")
    (repo / "données d'essai.py").write_text("x = 1\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    (repo / "données d'essai.py").write_text("x = 1\n" + CHUNK)
    (repo / "new\tfile.py").write_text(BUGGY)
    code, out, _ = run("--since", "HEAD", "--output-format", "concise", ".")
    assert code == 1
    assert sorted(line.split(": ")[0] for line in out.splitlines() if ": SL" in line) == [
        "données d'essai.py:3:12", "new\tfile.py:2:12"
    ]


def test_reports_stay_well_formed_for_unusual_paths(repo: Path) -> None:
    _git(repo, "init", "-q")
    (repo / "a&b <c>.py").write_text(BUGGY)
    _, out, _ = run("--output-format", "junit", "a&b <c>.py")
    (case,) = ET.fromstring(out).findall(".//testcase")
    assert case.get("file") == "a&b <c>.py"
    _, out, _ = run("--output-format", "sarif", "a&b <c>.py", str(repo / "train.py"))
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(out)["runs"][0]["results"]]
    # Both relative to the repository's root, however they were named.
    assert sorted(uris) == sorted(["a%26b%20%3Cc%3E.py", "train.py"])


def test_add_noqa_after_a_backslash_continuation(repo: Path) -> None:
    (repo / "train.py").write_text(
        "def f(x, world_size, rank):\n"
        "    return x.split(x.size(0) // \\\n"
        "                   world_size)[rank]\n"
    )
    code, _, err = run("--add-noqa", ".")
    assert (code, err.strip()) == (0, "Added 1 noqa directive(s).")
    assert (repo / "train.py").read_text().endswith("world_size)[rank]  # noqa: SL101\n")
    assert run(".")[0] == 0
