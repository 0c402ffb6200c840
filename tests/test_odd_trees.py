"""Odd trees never crash a run: unreadable folders and files anywhere under the project (a
root-owned Docker volume, lost+found), broken links and paths that do not exist are each said
once, and everything else is linted with the usual exit code."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main
from tests.unprivileged import run_unprivileged

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
# SL202 reads the project index (who else calls set_epoch on this sampler).
LOOP = (
    "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
    "def train(dataset, epochs, step):\n"
    "    sampler = DistributedSampler(dataset)\n"
    "    loader = DataLoader(dataset, sampler=sampler)\n"
    "    for epoch in range(epochs):\n"
    "        for batch in loader:\n"
    "            step(batch)\n"
)


@pytest.fixture
def odd(project: Path) -> Iterator[Path]:
    (project / "ok.py").write_text("x = 1\n")
    (project / "bad.py").write_text(BUGGY)
    volume = project / "volume"
    volume.mkdir()
    (volume / "inside.py").write_text(BUGGY)
    (project / "secret.py").write_text(BUGGY)
    (project / "secret.py").chmod(0)
    volume.chmod(0)
    (project / "dangling.py").symlink_to(project / "nowhere.py")
    os.chmod(project, 0o777)  # the unprivileged run may write its cache there
    yield project
    volume.chmod(0o755)


def _check(project: Path, *args: str) -> tuple[int, str, str]:
    done = run_unprivileged(project, "check", "--isolated", "--no-cache", "--jobs", "1",
                            "--output-format", "concise", *args)
    return done.returncode, done.stdout, done.stderr


def test_a_named_file_is_linted_whatever_else_the_project_holds(odd: Path) -> None:
    code, out, err = _check(odd, "ok.py")
    assert "Traceback" not in err
    assert code == 0 and "All checks passed!" in out
    # No rule that reads the project index is left for ok.py: the project is not walked.
    assert "volume" not in err


def test_a_named_file_that_reads_the_index_walks_the_project(odd: Path) -> None:
    (odd / "train.py").write_text(LOOP)
    code, out, err = _check(odd, "train.py")
    assert "Traceback" not in err
    assert code == 1 and "SL202" in out
    assert err.count("volume: cannot read directory (Permission denied); skipped") == 1


def test_the_rest_of_the_project_is_linted(odd: Path) -> None:
    code, out, err = _check(odd, ".")
    assert "Traceback" not in err
    assert code == 1
    assert "bad.py:2:12: SL101" in out and "inside.py" not in out and "secret.py" not in out
    assert err.count("volume: cannot read directory (Permission denied); skipped") == 1
    assert err.count("secret.py: cannot read file (Permission denied); skipped") == 1
    assert err.count("dangling.py: broken symbolic link; skipped") == 1


def test_an_unreadable_config_folder_is_no_crash(odd: Path) -> None:
    """The project index walks the whole project and looks for configuration files in every
    folder: one that may not be searched answered PermissionError before."""
    nested = odd / "nested"
    nested.mkdir()
    (nested / "inner").mkdir()
    (nested / "inner" / "x.py").write_text("x = 1\n")
    (nested / "inner").chmod(0o600)  # listable names, no search: stat() of its files fails
    try:
        code, _, err = _check(odd, "ok.py")
        assert "Traceback" not in err and code == 0
    finally:
        (nested / "inner").chmod(0o755)


def _run(project: Path, *args: str) -> tuple[int, str, str]:
    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(
            main, ["check", "--isolated", "--no-cache", "--jobs", "1",
                   "--output-format", "concise", *args],
        )
    finally:
        os.chdir(cwd)
    return result.exit_code, result.stdout, result.stderr


def test_a_missing_path_is_an_error_for_that_path_only(project: Path) -> None:
    (project / "bad.py").write_text(BUGGY)
    code, out, err = _run(project, "missing.py", "bad.py", "gone/")
    assert code == 2
    assert "bad.py:2:12: SL101" in out
    assert "error: missing.py: No such file or directory" in err
    assert "error: gone: No such file or directory" in err or "error: gone/: No such" in err


def test_a_named_broken_link_is_a_warning(project: Path) -> None:
    (project / "ok.py").write_text("x = 1\n")
    (project / "link.py").symlink_to(project / "nowhere.py")
    code, _, err = _run(project, "link.py", "ok.py")
    assert code == 0
    assert "warning: link.py: broken symbolic link; skipped" in err
