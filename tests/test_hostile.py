"""Hostile inputs: whatever a repository contains, sampler-lint reports it and goes on.

Each case asserts the exact user-visible outcome (finding, message, exit code) and that the other
file's result does not change. CI runs as root, where permissions stop nothing, so permission and
I/O failures are simulated by patching the call that would fail.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from unittest import mock

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main
from sampler_lint.engine import sources, writer

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
GOOD_FINDING = ("good.py", 2, "SL101")


def run(project: Path, *args: str) -> tuple[int, list[dict[str, object]], str]:
    runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = runner.invoke(
            main, ["check", "--output-format", "json", "--isolated", "--jobs", "1", *args],
            catch_exceptions=False,
        )
    finally:
        os.chdir(cwd)
    output = result.stdout
    findings = json.loads(output) if output.strip().startswith("[") else []
    return result.exit_code, findings, result.stderr


def summary(findings: list[dict[str, object]]) -> set[tuple[str, int, str]]:
    return {
        (Path(str(f["filename"])).name, int(f["location"]["row"]), str(f["code"]))  # type: ignore[index]
        for f in findings
    }


@pytest.fixture
def repo(project: Path) -> Path:
    (project / "good.py").write_text(BUGGY)
    return project


def _parse_errors(findings: list[dict[str, object]], name: str) -> list[dict[str, object]]:
    return [f for f in findings if Path(str(f["filename"])).name == name and f["code"] == "SL001"]


# A sampler-lint pattern makes the pre-filter parse these files, so a broken file is reported.
PATTERN = "x.split(n // world_size)[rank]\n"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("syntax.py", PATTERN + "def f(:\n", "syntax error"),
        ("py2.py", PATTERN + "print 'hello'\n", "syntax error"),
        ("undecodable.py", PATTERN.encode() + b"s = '\xff\xfe'\n", "cannot decode"),
        ("nul.py", PATTERN.encode() + b"x = 1\x00\n", "NUL byte"),
        ("deep.py", PATTERN + "y = " + "(" * 1000 + "1" + ")" * 1000 + "\n", None),
    ],
)
def test_unparsable_files_are_findings(repo: Path, name: str, content: str | bytes,
                                       message: str | None) -> None:
    path = repo / name
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    code, findings, stderr = run(repo, ".")
    assert code == 1
    assert GOOD_FINDING in summary(findings)
    if message is None:
        # Deep nesting either parses (and the split is found) or is a clean SL001.
        ours = [f for f in findings if Path(str(f["filename"])).name == name]
        assert ours and all(f["code"] in ("SL001", "SL101") for f in ours)
    else:
        errors = _parse_errors(findings, name)
        assert len(errors) == 1 and message in str(errors[0]["message"])
    assert "Traceback" not in stderr


def test_syntax_error_location(repo: Path) -> None:
    (repo / "syntax.py").write_text(PATTERN + "def f(:\n")
    _, findings, _ = run(repo, ".")
    (error,) = _parse_errors(findings, "syntax.py")
    assert error["location"] == {"row": 2, "column": 7}


def test_latin1_cookie_bom_crlf_tabs_are_linted(repo: Path) -> None:
    (repo / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\n# caf\xe9\n"
        b"def f(x, world_size, rank):\n    return x.split(len(x) // world_size)[rank]\n"
    )
    (repo / "bom.py").write_bytes(b"\xef\xbb\xbf" + BUGGY.encode())
    (repo / "crlf.py").write_bytes(BUGGY.replace("\n", "\r\n").encode())
    (repo / "mixed.py").write_bytes(b"import os\r\n" + BUGGY.encode())
    (repo / "tabs.py").write_text(BUGGY.replace("    ", "\t"))
    code, findings, _ = run(repo, ".")
    assert code == 1
    assert summary(findings) == {
        GOOD_FINDING, ("latin.py", 4, "SL101"), ("bom.py", 2, "SL101"), ("crlf.py", 2, "SL101"),
        ("mixed.py", 3, "SL101"), ("tabs.py", 2, "SL101"),
    }


def test_empty_and_large_files(repo: Path) -> None:
    (repo / "empty.py").write_text("")
    big = "x = 1\n" * (10 * 1024 * 1024 // 6)
    (repo / "big.py").write_text(big)
    (repo / "long.py").write_text("y = '" + "a" * 100_000 + "'\n")
    (repo / "big_pattern.py").write_text(BUGGY + "z = 2\n" * 5_000)
    code, findings, _ = run(repo, ".")
    assert code == 1
    assert summary(findings) == {GOOD_FINDING, ("big_pattern.py", 2, "SL101")}


def test_directory_named_like_a_module_and_links(repo: Path) -> None:
    (repo / "pkg.py").mkdir()
    (repo / "pkg.py" / "inner.py").write_text(BUGGY)
    (repo / "broken.py").symlink_to(repo / "missing.py")
    (repo / "loop").mkdir()
    (repo / "loop" / "again").symlink_to(repo / "loop")
    (repo / "self.py").symlink_to(repo / "self.py")
    code, findings, stderr = run(repo, ".")
    assert code == 1
    assert summary(findings) == {GOOD_FINDING, ("inner.py", 2, "SL101")}
    assert "Traceback" not in stderr
    assert "broken.py: broken symbolic link; skipped" in stderr


def test_paths_with_spaces_and_non_ascii(repo: Path) -> None:
    folder = repo / "my data" / "données"
    folder.mkdir(parents=True)
    (folder / "trainé file.py").write_text(BUGGY)
    code, findings, _ = run(repo, ".")
    assert code == 1
    assert ("trainé file.py", 2, "SL101") in summary(findings)


def test_unreadable_file_is_reported(repo: Path) -> None:
    (repo / "secret.py").write_text(BUGGY)
    real_read = sources._read  # what every read of a source goes through

    def failing(path: Path) -> bytes:
        if Path(path).name == "secret.py":
            raise PermissionError(13, "Permission denied")
        return real_read(path)

    with mock.patch.object(sources, "_read", failing):
        code, findings, stderr = run(repo, ".")
    assert code == 1  # good.py's finding; an unreadable file is a warning, not a finding
    assert summary(findings) == {GOOD_FINDING}
    assert stderr.count("cannot read file (Permission denied)") == 1


def test_file_deleted_mid_run(repo: Path) -> None:
    (repo / "gone.py").write_text(BUGGY)
    real_read = sources._read

    def vanishing(path: Path) -> bytes:
        if Path(path).name == "gone.py":
            Path(path).unlink()
        return real_read(path)

    with mock.patch.object(sources, "_read", vanishing):
        code, findings, stderr = run(repo, ".")
    assert code == 1
    assert summary(findings) == {GOOD_FINDING}
    assert "gone.py: cannot read file" in stderr
    assert "Traceback" not in stderr


# ------------------------------------------------------------------------------------------------
# Writing under --fix


def test_read_only_file_under_fix(repo: Path) -> None:
    (repo / "locked.py").write_text(BUGGY)

    def refusing(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    with mock.patch.object(writer.os, "replace", refusing):
        code, _findings, stderr = run(repo, ".", "--fix", "--unsafe-fixes")
    assert code == 1  # nothing could be written, so the findings remain
    assert (repo / "locked.py").read_text() == BUGGY
    assert (repo / "good.py").read_text() == BUGGY
    assert "cannot write" in stderr and "Permission denied" in stderr
    assert not list(repo.glob(".*.sampler-lint.tmp"))


def test_file_changed_between_read_and_write(repo: Path) -> None:
    real = writer.write_atomic

    def racing(path: Path, expected: bytes, new: bytes) -> None:
        path.write_text("# edited meanwhile\n" + BUGGY)
        real(path, expected, new)

    with mock.patch("sampler_lint.engine.runner.write_atomic", racing):
        code, _, stderr = run(repo, "good.py", "--fix", "--unsafe-fixes")
    assert (repo / "good.py").read_text() == "# edited meanwhile\n" + BUGGY
    assert "changed on disk since it was read; not overwritten" in stderr
    assert code == 1


def test_interrupted_write_keeps_original_and_leaves_no_temp_file(repo: Path) -> None:
    real_fsync = os.fsync

    def crash(descriptor: int) -> None:
        real_fsync(descriptor)
        raise OSError(5, "Input/output error")

    with mock.patch.object(writer.os, "fsync", crash):
        code, _, stderr = run(repo, ".", "--fix", "--unsafe-fixes")
    assert (repo / "good.py").read_text() == BUGGY
    assert not [p for p in repo.iterdir() if p.name.endswith(".sampler-lint.tmp")]
    assert "Input/output error" in stderr
    assert code == 1


# A line of `#`s next to a name a text shape looks for: a pattern where a comment could end
# anywhere cut such a line in exponentially many ways (dgl's test suite held the survey for
# good). The run is a child process, so that a relapse fails at its deadline instead of hanging.
BANNER = "#" * 70


def test_comment_banners_do_not_stall_the_text_shapes(project: Path) -> None:
    import subprocess
    import sys

    (project / "samplers.py").write_text(
        "from torch.utils.data import DistributedSampler\n\n\n"
        "class EvenShards(DistributedSampler):\n    pass\n"
    )
    train = (
        "from torch.utils.data import DataLoader\n"
        "from samplers import EvenShards\n\n"
        f"############# DataLoader #############\n{BANNER}\n\n"
        f"############# EvenShards #############\n{BANNER}\n\n"
        # No conflict: a third argument (`shuffle`) and a `shuffle` that is not a keyword, each
        # after a banner, where the shapes' "is it the literal True" must fail.
        f"other = DataLoader(ds, 64,  {BANNER}\n    {BANNER}\n    flag, sampler=EvenShards(\n"
        f"    ds, shuffle  {BANNER}\n    {BANNER}\n))\n"
        f"loader = DataLoader(ds,  {BANNER}\n    {BANNER}\n"
        f"    shuffle  {BANNER}\n    {BANNER}\n    = True, sampler=EvenShards(ds))\n"
    )
    (project / "train.py").write_text(train)
    done = subprocess.run(
        [sys.executable, "-m", "sampler_lint", "check", "--isolated", "--no-cache",
         "--output-format", "json", "."],
        cwd=project, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1, done.stderr
    line = train[:train.index("loader =")].count("\n") + 1
    assert summary(json.loads(done.stdout)) == {("train.py", line, "SL503")}
