"""What the user names is linted: a folder git ignores, a file the pre-filter would skip; what git
ignores (``.gitignore``, ``.git/info/exclude``, the global excludes file) is left out of walks,
``--no-respect-gitignore`` turns that off, Ruff's default excludes apply, and a run that finds no
file says so instead of "All checks passed!"."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main
from sampler_lint.engine import discovery

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"


@pytest.fixture(autouse=True)
def _git_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No global git configuration of whoever runs the tests."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    discovery.global_excludes_file.cache_clear()


def run(project: Path, *args: str) -> tuple[int, str, str]:
    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(
            main, ["check", "--no-cache", "--isolated", "--jobs", "1",
                   "--output-format", "concise", *args],
        )
    finally:
        os.chdir(cwd)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / "train.py").write_text(BUGGY)
    yield tmp_path


def test_a_named_folder_is_linted_though_git_ignores_it(repo: Path) -> None:
    (repo / ".gitignore").write_text("experiments/\n")
    (repo / "experiments").mkdir()
    (repo / "experiments" / "run.py").write_text(BUGGY)
    code, out, _ = run(repo, ".")
    assert "experiments" not in out
    code, out, _ = run(repo, "experiments")
    assert code == 1 and "experiments/run.py:2:12: SL101" in out
    code, out, err = run(repo, "experiments", "--force-exclude")
    assert code == 0 and "No Python files found" in err


def test_no_respect_gitignore(repo: Path) -> None:
    (repo / ".gitignore").write_text("generated.py\n")
    (repo / "generated.py").write_text(BUGGY)
    _, out, _ = run(repo, ".")
    assert "generated.py" not in out
    _, out, _ = run(repo, ".", "--no-respect-gitignore")
    assert "generated.py:2:12: SL101" in out
    (repo / "pyproject.toml").write_text("[tool.sampler-lint]\nrespect-gitignore = false\n")
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise",
                                           "--respect-gitignore", "."])
    finally:
        os.chdir(cwd)
    assert "generated.py" not in result.stdout


def test_info_exclude_is_honoured(repo: Path) -> None:
    (repo / ".git" / "info" / "exclude").write_text("scratch/\n")
    (repo / "scratch").mkdir()
    (repo / "scratch" / "try.py").write_text(BUGGY)
    _, out, _ = run(repo, ".")
    assert "try.py" not in out and "train.py" in out


def test_global_excludes_file_is_honoured(repo: Path) -> None:
    config_home = Path(os.environ["XDG_CONFIG_HOME"])
    (config_home / "git").mkdir(parents=True)
    (config_home / "git" / "ignore").write_text("*_local.py\n")
    (repo / "paths_local.py").write_text(BUGGY)
    _, out, _ = run(repo, ".")
    assert "paths_local.py" not in out and "train.py" in out


def test_core_excludes_file_is_honoured(repo: Path, tmp_path_factory: pytest.TempPathFactory,
                                        ) -> None:
    elsewhere = tmp_path_factory.mktemp("ignores") / "my-ignores"
    elsewhere.write_text("notes/\n")
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text(f"[core]\n\texcludesFile = {elsewhere}\n")
    (repo / "notes").mkdir()
    (repo / "notes" / "n.py").write_text(BUGGY)
    _, out, _ = run(repo, ".")
    assert "notes" not in out and "train.py" in out


@pytest.mark.parametrize("folder", [".ipynb_checkpoints", "_build", "buck-out", ".direnv"])
def test_ruffs_default_excludes(repo: Path, folder: str) -> None:
    (repo / folder).mkdir()
    (repo / folder / "copy.py").write_text(BUGGY)
    _, out, _ = run(repo, ".")
    assert "copy.py" not in out and "train.py" in out


def test_nothing_found_is_not_all_checks_passed(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("hello\n")
    code, out, err = run(tmp_path, ".")
    assert code == 0
    assert "All checks passed!" not in out
    assert "warning: No Python files found under the given path(s)" in err


def test_a_named_file_with_a_syntax_error_is_reported(repo: Path) -> None:
    """Nothing in it interests any rule, so the pre-filter never parses it; named, it is."""
    (repo / "broken.py").write_text("def f(:\n    pass\n")
    code, out, _ = run(repo, "broken.py")
    assert code == 1 and "broken.py:1:" in out and "SL001" in out
    code, out, _ = run(repo, "train.py", "broken.py")
    assert code == 1 and "SL001" in out and "SL101" in out


def test_a_named_file_that_parses_is_still_skipped_quietly(repo: Path) -> None:
    (repo / "fine.py").write_text("x = 1\n")
    code, out, _ = run(repo, "fine.py")
    assert code == 0 and "All checks passed!" in out
