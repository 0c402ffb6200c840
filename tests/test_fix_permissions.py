"""--fix respects permissions: a read-only file is not rewritten (a warning, its findings kept);
a writable file in a folder where no file may be created is fixed in place."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main
from tests.unprivileged import run_unprivileged

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"


def run(project: Path, *args: str) -> tuple[int, str, str]:
    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(
            main, ["check", "--isolated", "--no-cache", "--jobs", "1",
                   "--output-format", "concise", "--fix", "--unsafe-fixes", *args],
        )
    finally:
        os.chdir(cwd)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_a_read_only_file_is_not_rewritten(project: Path) -> None:
    """As a user file modes apply to (root may write anything, as any editor run by root)."""
    (project / "locked.py").write_text(BUGGY)
    (project / "open.py").write_text(BUGGY)
    (project / "open.py").chmod(0o666)
    (project / "locked.py").chmod(0o444)
    os.chmod(project, 0o777)
    done = run_unprivileged(project, "check", "--isolated", "--no-cache", "--jobs", "1",
                            "--output-format", "concise", "--fix", "--unsafe-fixes", ".")
    assert done.returncode == 1, done.stderr
    assert (project / "locked.py").read_text() == BUGGY
    assert "locked.py:2:12: SL101" in done.stdout and "open.py" not in done.stdout
    assert "warning:" in done.stderr and "locked.py: read-only; not rewritten" in done.stderr
    assert stat.S_IMODE((project / "locked.py").stat().st_mode) == 0o444
    assert (project / "open.py").read_text() != BUGGY


def test_the_read_only_check_in_process(project: Path) -> None:
    from unittest import mock

    (project / "locked.py").write_text(BUGGY)
    with mock.patch("sampler_lint.engine.writer._may_write", return_value=False):
        code, out, err = run(project, ".")
    assert code == 1 and "locked.py:2:12: SL101" in out
    assert (project / "locked.py").read_text() == BUGGY
    assert "locked.py: read-only; not rewritten" in err


@pytest.fixture
def sealed(project: Path) -> Iterator[Path]:
    folder = project / "sealed"
    folder.mkdir()
    (folder / "train.py").write_text(BUGGY)
    (folder / "train.py").chmod(0o666)
    (project / "locked.py").write_text(BUGGY)
    (project / "locked.py").chmod(0o444)
    folder.chmod(0o555)
    os.chmod(project, 0o777)
    yield project
    folder.chmod(0o755)


def test_unprivileged_fix_of_read_only_and_sealed_folders(sealed: Path) -> None:
    done = run_unprivileged(sealed, "check", "--isolated", "--no-cache", "--jobs", "1",
                            "--output-format", "concise", "--fix", "--unsafe-fixes", ".")
    assert "Traceback" not in done.stderr
    fixed = (sealed / "sealed" / "train.py").read_text()
    assert fixed != BUGGY and "tensor_split" in fixed  # fixed in place
    assert (sealed / "locked.py").read_text() == BUGGY
    assert "locked.py: read-only; not rewritten" in done.stderr
    assert done.returncode == 1 and "locked.py:2:12: SL101" in done.stdout
    assert not list((sealed / "sealed").glob(".*.tmp"))
