"""The command line as a user meets it: exit codes, output formats, configuration errors, noqa,
rule selection, excludes, --diff and --fix, through click's runner and through a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint import __version__
from sampler_lint.cli import main

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
FIXED = "def f(x, world_size, rank):\n    return x.tensor_split(world_size)[rank]\n"
CHUNKED = "def g(x, world_size, rank):\n    return x.chunk(world_size)[rank]\n"
CLEAN = "def h(x):\n    return x\n"


def run(project: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """``sampler-lint check ARGS`` in ``project`` (the caller has changed into it)."""
    assert Path.cwd() == project
    result = CliRunner().invoke(main, ["check", "--no-cache", "--jobs", "1", *args], input=stdin,
                                catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def repo(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (project / "train.py").write_text(BUGGY)
    (project / "clean.py").write_text(CLEAN)
    monkeypatch.chdir(project)
    return project


# -- exit codes --------------------------------------------------------------------------------

def test_exit_0_when_nothing_to_report(repo: Path) -> None:
    code, out, _ = run(repo, "clean.py")
    assert code == 0
    assert "All checks passed!" in out


def test_exit_1_when_findings_remain(repo: Path) -> None:
    code, out, _ = run(repo, ".")
    assert code == 1
    assert "train.py:2:12: SL101" in out
    assert "Found 1 error." in out


def test_exit_zero_option(repo: Path) -> None:
    assert run(repo, "--exit-zero", ".")[0] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--select", "SL9"], "--select: unknown rule selector 'SL9'"),
        (["missing.py"], "error: missing.py: No such file or directory"),
        (["--per-file-ignores", "nonsense"], "--per-file-ignores expects PATTERN:CODE"),
        (["--config", "x.toml", "--isolated"], "--config and --isolated cannot be used together"),
    ],
)
def test_exit_2_on_usage_errors(repo: Path, args: list[str], message: str) -> None:
    code, out, err = run(repo, *args)
    assert code == 2
    assert message in err
    assert "Traceback" not in out + err


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("bogus = 1\n", "unknown key 'bogus'"),
        ("select = 3\n", "'select' must be a list of strings, got 3"),
        ('split-fix = "floor"\n', "split-fix"),
    ],
)
def test_configuration_errors_name_the_key_and_the_file(
    repo: Path, table: str, message: str
) -> None:
    (repo / "pyproject.toml").write_text("[tool.sampler-lint]\n" + table)
    code, _, err = run(repo, ".")
    assert code == 2
    assert message in err
    assert str(repo / "pyproject.toml") in err


# -- output formats -----------------------------------------------------------------------------

def test_json_output_field_by_field(repo: Path) -> None:
    code, out, _ = run(repo, "--output-format", "json", "train.py")
    assert code == 1
    (finding,) = json.loads(out)
    assert finding["code"] == "SL101"
    assert finding["name"] == "floor-division-split"
    assert finding["severity"] == "error"
    assert finding["filename"] == "train.py"
    assert finding["location"] == {"row": 2, "column": 12}
    assert finding["end_location"] == {"row": 2, "column": 50}
    assert finding["fix"]["applicability"] == "unsafe"
    assert finding["fix"]["edits"] == [{
        "content": "tensor_split(",
        "location": {"row": 2, "column": 14},
        "end_location": {"row": 2, "column": 33},
    }]
    assert finding["url"].endswith("#sl101")
    assert "world_size" in finding["message"]


def test_json_output_is_an_empty_list_when_clean(repo: Path) -> None:
    code, out, _ = run(repo, "--output-format", "json", "clean.py")
    assert (code, json.loads(out)) == (0, [])


def test_concise_output(repo: Path) -> None:
    _, out, _ = run(repo, "--output-format", "concise", ".")
    assert out.splitlines()[0].startswith("train.py:2:12: SL101 floor-sized split of `x`")


def test_full_output_has_a_code_frame_and_the_fix_hint(repo: Path) -> None:
    _, out, _ = run(repo, "train.py")
    assert "2 |     return x.split(x.size(0) // world_size)[rank]" in out
    assert "^^^^" in out
    assert "help (unsafe fix)" in out
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option." in out


def test_statistics(repo: Path) -> None:
    (repo / "more.py").write_text(BUGGY + CHUNKED)
    # Both rules' fixes are unsafe: `[*]` (fixable by --fix) only with --unsafe-fixes.
    _, out, _ = run(repo, "--statistics", "--extend-select", "SL102", ".")
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert ["2", "SL101", "[", "]", "floor-division-split"] in rows
    assert ["1", "SL102", "[", "]", "uneven-chunk-shard"] in rows
    _, out, _ = run(repo, "--statistics", "--extend-select", "SL102", "--unsafe-fixes", ".")
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert ["2", "SL101", "[*]", "floor-division-split"] in rows
    assert ["1", "SL102", "[*]", "uneven-chunk-shard"] in rows


def test_output_file(repo: Path) -> None:
    code, out, _ = run(repo, "--output-format", "json", "--output-file", "report.json", ".")
    assert code == 1
    assert out == ""
    assert json.loads((repo / "report.json").read_text())[0]["code"] == "SL101"


# -- selection ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("args", "codes"),
    [
        ([], {"SL101"}),  # SL102 is off by default (RULES.md)
        (["--extend-select", "SL102"], {"SL101", "SL102"}),
        (["--select", "SL102"], {"SL102"}),
        (["--select", "uneven-chunk-shard"], {"SL102"}),
        (["--select", "SL1", "--ignore", "floor-division-split"], {"SL102"}),
        (["--select", "SL102", "--extend-select", "SL101"], {"SL101", "SL102"}),
        (["--select", "ALL", "--ignore", "SL10"], set()),
        (["--per-file-ignores", "more.py:SL102"], {"SL101"}),
    ],
)
def test_rule_selection(repo: Path, args: list[str], codes: set[str]) -> None:
    (repo / "more.py").write_text(BUGGY + CHUNKED)
    _, out, _ = run(repo, "--output-format", "json", *args, "more.py")
    assert {finding["code"] for finding in json.loads(out)} == codes


def test_configuration_selection_and_cli_on_top(repo: Path) -> None:
    (repo / "more.py").write_text(BUGGY + CHUNKED)
    (repo / "pyproject.toml").write_text(
        '[tool.sampler-lint]\nignore = ["SL101"]\nextend-select = ["SL102"]\n'
    )
    _, out, _ = run(repo, "--output-format", "json", "more.py")
    assert {f["code"] for f in json.loads(out)} == {"SL102"}
    _, out, _ = run(repo, "--output-format", "json", "--isolated", "more.py")
    assert {f["code"] for f in json.loads(out)} == {"SL101"}


def test_closest_configuration_wins(repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.sampler-lint]\nignore = ["SL101"]\n')
    sub = repo / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[tool.sampler-lint]\nselect = ["SL101"]\n')
    (sub / "train.py").write_text(BUGGY)
    _, out, _ = run(repo, "--output-format", "json", ".")
    assert [f["filename"] for f in json.loads(out)] == [str(Path("sub/train.py"))]


# -- files --------------------------------------------------------------------------------------

def test_gitignore_default_and_configured_excludes(repo: Path) -> None:
    for directory in ("build", ".venv", "ignored_dir", "vendored"):
        (repo / directory).mkdir()
        (repo / directory / "x.py").write_text(BUGGY)
    (repo / ".gitignore").write_text("ignored_dir/\n")
    (repo / "stub.pyi").write_text(BUGGY)
    _, out, _ = run(repo, "--output-format", "json", "--extend-exclude", "vendored", ".")
    assert sorted(f["filename"] for f in json.loads(out)) == ["stub.pyi", "train.py"]


def test_force_exclude_applies_to_named_files(repo: Path) -> None:
    assert run(repo, "--extend-exclude", "train.py", "train.py")[0] == 1
    assert run(repo, "--extend-exclude", "train.py", "--force-exclude", "train.py")[0] == 0


# -- noqa ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "source",
    [
        BUGGY.replace("[rank]\n", "[rank]  # noqa\n"),
        BUGGY.replace("[rank]\n", "[rank]  # noqa: SL101\n"),
        "def f(x, world_size, rank):\n    return x.split(  # noqa: SL101\n"
        "        x.size(0) // world_size\n    )[rank]\n",
        "# sampler-lint: noqa\n" + BUGGY,
        "# sampler-lint: noqa: SL101\n" + BUGGY,
    ],
)
def test_noqa_suppresses(repo: Path, source: str) -> None:
    (repo / "train.py").write_text(source)
    assert run(repo, "train.py")[0] == 0


def test_noqa_for_another_code_does_not_suppress(repo: Path) -> None:
    (repo / "train.py").write_text(BUGGY.replace("[rank]\n", "[rank]  # noqa: SL102\n"))
    assert run(repo, "train.py")[0] == 1


# -- fixing -------------------------------------------------------------------------------------

def test_safe_fix_only_leaves_unsafe_fixes_alone(repo: Path) -> None:
    code, _, _ = run(repo, "--fix", "train.py")
    assert code == 1
    assert (repo / "train.py").read_text() == BUGGY


def test_unsafe_fix_writes_and_reports(repo: Path) -> None:
    code, out, _ = run(repo, "--fix", "--unsafe-fixes", "--show-fixes", "train.py")
    assert code == 0
    assert (repo / "train.py").read_text() == FIXED
    assert "SL101" in out and "1 fixed" in out


def test_exit_non_zero_on_fix(repo: Path) -> None:
    assert run(repo, "--fix", "--unsafe-fixes", "--exit-non-zero-on-fix", "train.py")[0] == 1


def test_diff_prints_and_writes_nothing(repo: Path) -> None:
    code, out, err = run(repo, "--diff", "--unsafe-fixes", "train.py")
    assert code == 1
    assert "-    return x.split(x.size(0) // world_size)[rank]" in out
    assert "+    return x.tensor_split(world_size)[rank]" in out
    assert "Would fix 1 error" in err
    assert (repo / "train.py").read_text() == BUGGY
    assert run(repo, "--diff", "--unsafe-fixes", "clean.py")[0] == 0


@pytest.mark.parametrize("newline", ["\r\n", "\n"])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_fix_keeps_line_endings_and_bom(repo: Path, newline: str, bom: bytes) -> None:
    (repo / "train.py").write_bytes(bom + BUGGY.replace("\n", newline).encode())
    assert run(repo, "--fix", "--unsafe-fixes", "train.py")[0] == 0
    assert (repo / "train.py").read_bytes() == bom + FIXED.replace("\n", newline).encode()


# -- stdin, rule docs, version ------------------------------------------------------------------

def test_stdin_is_linted_under_its_filename(repo: Path) -> None:
    code, out, _ = run(repo, "--stdin-filename", "src/x.py", "--output-format", "concise", "-",
                       stdin=BUGGY)
    assert code == 1
    assert out.startswith("src/x.py:2:12: SL101")


def test_stdin_fix_writes_only_the_fixed_source(repo: Path) -> None:
    code, out, _ = run(repo, "--fix", "--unsafe-fixes", "--stdin-filename", "x.py", "-",
                       stdin=BUGGY)
    assert (code, out) == (0, FIXED)


@pytest.mark.parametrize("selector", ["SL101", "sl101", "floor-division-split"])
def test_rule_documentation(selector: str) -> None:
    result = CliRunner().invoke(main, ["rule", selector])
    assert result.exit_code == 0
    for section in ("What it does", "Why is this bad", "Example", "Use instead", "Fix safety",
                    "References"):
        assert section in result.stdout
    assert "| 9 | 4 |" in result.stdout  # the chunk-count table


def test_rule_all_lists_every_rule_with_its_default() -> None:
    result = CliRunner().invoke(main, ["rule", "--all"])
    assert result.exit_code == 0
    assert "SL101" in result.stdout and "floor-division-split" in result.stdout
    assert " on" in result.stdout


def test_unknown_rule_is_an_error() -> None:
    result = CliRunner().invoke(main, ["rule", "SL999"])
    assert result.exit_code == 2
    assert "SL999" in result.stderr


def test_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.stdout.strip() == f"sampler-lint, version {__version__}"


def test_real_process_end_to_end(repo: Path) -> None:
    """The installed entry point as a shell runs it: exit code, stdout, no traceback."""
    process = subprocess.run(
        [sys.executable, "-m", "sampler_lint", "check", "--no-cache", "--output-format",
         "concise", "."],
        cwd=repo, capture_output=True, text=True, check=False,
    )
    assert process.returncode == 1
    assert process.stdout.startswith("train.py:2:12: SL101")
    assert "Traceback" not in process.stderr
