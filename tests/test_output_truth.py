"""Output that tells the truth (issue 19): counts by severity, --fail-on, statistics with honest
`[*]` and as JSON, the rdjson and json-lines formats, --diff with only unsafe fixes and a valid
patch without a final newline, CI paths from the git root whatever the working folder, carets
after wide characters, and the `rule` command's prefix listing, JSON listing and TOML defaults."""

from __future__ import annotations

import json
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

# SL202 (warning, safe fix) and SL101 (error, unsafe fix).
TRAIN = """\
from torch.utils.data import DataLoader, DistributedSampler


def main(ds, model, epochs):
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            model(batch)
"""
SHARD = "def shard(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--jobs", "1", *args],
                                catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "train.py").write_text(TRAIN)
    (tmp_path / "sub" / "shard.py").write_text(SHARD)  # no final newline
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SAMPLER_LINT_OUTPUT_FORMAT", raising=False)
    return tmp_path


def test_counts_errors_and_warnings_apart(repo: Path) -> None:
    code, out, _ = run("--output-format", "concise", ".")
    assert code == 1 and "Found 1 error and 1 warning." in out


def test_fail_on_error_lets_warnings_pass(repo: Path) -> None:
    assert run("--fail-on", "error", "sub/train.py")[0] == 0
    assert run("--fail-on", "error", ".")[0] == 1
    assert run("sub/train.py")[0] == 1  # by default a warning fails the run too


def test_statistics_mark_only_what_fix_would_apply(repo: Path) -> None:
    _, out, _ = run("--statistics", ".")
    rows = {line.split()[1]: line for line in out.splitlines() if "\tSL" in line}
    assert "[*]" in rows["SL202"] and "[*]" not in rows["SL101"]
    _, out, _ = run("--statistics", "--unsafe-fixes", ".")
    assert "[*]" in next(line for line in out.splitlines() if "SL101" in line)


def test_statistics_as_json(repo: Path) -> None:
    _, out, _ = run("--statistics", "--output-format", "json", ".")
    rows = {row["code"]: row for row in json.loads(out)}
    assert rows["SL101"]["count"] == 1 and rows["SL101"]["fixable_count"] == 0
    assert rows["SL202"]["fixable"] is True


def test_rdjson_and_json_lines(repo: Path) -> None:
    _, out, _ = run("--output-format", "rdjson", ".")
    rd = json.loads(out)
    assert rd["source"]["name"] == "sampler-lint"
    assert sorted(d["code"]["value"] for d in rd["diagnostics"]) == ["SL101", "SL202"]
    _, out, _ = run("--output-format", "json-lines", ".")
    assert sorted(json.loads(line)["code"] for line in out.splitlines()) == ["SL101", "SL202"]


def test_diff_with_only_unsafe_fixes_says_so(repo: Path) -> None:
    code, out, err = run("--diff", "sub/shard.py")
    assert code == 0 and out == ""
    assert "No errors would be fixed (1 fix available with `--unsafe-fixes`)" in err


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_diff_without_a_final_newline_is_a_valid_patch(repo: Path) -> None:
    code, patch, _ = run("--diff", "--unsafe-fixes", "sub/shard.py")
    assert code == 1 and "\\ No newline at end of file" in patch
    (repo / "fix.diff").write_text(patch)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    checked = subprocess.run(["git", "apply", "-p0", "--check", "fix.diff"], cwd=repo,
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_ci_paths_come_from_the_git_root(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    monkeypatch.chdir(repo / "sub")
    _, out, _ = run("--output-format", "sarif", ".")
    sarif = json.loads(out)["runs"][0]
    location = sarif["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location["uri"].startswith("sub/") and location["uriBaseId"] == "%SRCROOT%"
    assert sarif["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"
    _, out, _ = run("--output-format", "github", ".")
    assert all("file=sub/" in line for line in out.splitlines() if line.startswith("::"))


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def test_carets_align_after_wide_characters(repo: Path) -> None:
    line = '    y = "漢字漢字"; return x.split(x.size(0) // world_size)[rank]'
    (repo / "wide.py").write_text(f"def shard(x, world_size, rank):\n{line}\n")
    _, out, _ = run("--color", "never", "wide.py")
    frame = out.splitlines()
    source = next(i for i, text in enumerate(frame) if "漢字" in text)
    carets = frame[source + 1]
    gutter = frame[source].index("|") + 2
    assert carets.index("^") - gutter == _width(line[: line.index("x.split")])


def test_rule_prefix_and_json_listing() -> None:
    result = CliRunner().invoke(main, ["rule", "SL2"])
    table = result.stdout.split("\n\n", 1)[0].splitlines()[1:]  # the listing, then each page
    codes = [line.split()[0] for line in table if line.strip()]
    assert codes and all(code.startswith("SL2") for code in codes) and "SL201" in codes
    result = CliRunner().invoke(main, ["rule", "--all", "--output-format", "json"])
    listed = {row["code"]: row for row in json.loads(result.stdout)}
    assert "SL101" in listed and listed["SL101"]["severity"] == "error"


def test_rule_options_render_their_defaults_as_toml() -> None:
    result = CliRunner().invoke(main, ["rule", "SL101"])
    assert 'split-fix = "tensor_split"' in result.stdout


def test_very_long_lines_are_truncated_in_the_frame(repo: Path) -> None:
    (repo / "long.py").write_text(
        "def shard(x, world_size, rank):\n"
        "    return x.split(x.size(0) // world_size)[rank]" + " + 0" * 80 + "\n"
    )
    _, out, _ = run("--color", "never", "long.py")
    frame_line = next(line for line in out.splitlines() if line.startswith("2 |"))
    assert frame_line.endswith("…") and len(frame_line) < 200


def test_a_misspelt_table_asks_did_you_mean(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.sampler_lint]\nselect = ["SL1"]\n')
    (tmp_path / "t.py").write_text(SHARD)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "t.py"])
    assert result.exit_code == 2
    assert "did you mean [tool.sampler-lint]?" in result.stderr
