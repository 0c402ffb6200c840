"""The pre-commit hooks through the real ``pre-commit try-repo``, as a user's repository meets them.

The hook repository is a committed copy of this checkout's sources (the checkout itself may be
dirty, or not a git repository at all in CI), so pre-commit builds the hook environment once and
every run below reuses it. Skipped where pre-commit or git is not installed; about 20 s."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .conftest import ROOT

pytest.importorskip("pre_commit")
if shutil.which("git") is None:
    pytest.skip("git is not installed", allow_module_level=True)

pytestmark = pytest.mark.slow

BUGGY = (
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "\n"
    "\n"
    "def train(dataset, epochs, step):\n"
    "    sampler = DistributedSampler(dataset)\n"
    "    loader = DataLoader(dataset, sampler=sampler)\n"
    "    for epoch in range(epochs):\n"
    "        for batch in loader:\n"
    "            step(batch)\n"
)
FIXED = BUGGY.replace(
    "    for epoch in range(epochs):\n",
    "    for epoch in range(epochs):\n"
    '        if hasattr(sampler, "set_epoch"):\n'
    "            sampler.set_epoch(epoch)\n",
)
# What pip says when it cannot reach a package index: an environment problem, not ours.
OFFLINE = ("No matching distribution found", "Network is unreachable",
           "Temporary failure in name resolution", "Failed to establish a new connection")
SHIPPED = ["pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "sampler_lint", "rules"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=test@example.com", "-c", "user.name=test",
         "-c", "commit.gpgsign=false", *args],
        cwd=cwd, check=True, capture_output=True,
    )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("hook-repo")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SHIPPED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=ignore)
        else:
            shutil.copy2(source, repo / name)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "hooks")
    return repo


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "user"
    repo.mkdir()
    (repo / "train.py").write_text(BUGGY)
    (repo / "notes.txt").write_text("not Python\n")
    (repo / "vendor").mkdir()
    (repo / "vendor" / "copied.py").write_text(BUGGY)
    (repo / "pyproject.toml").write_text(
        "[project]\nname = 'user'\n\n[tool.sampler-lint]\nextend-exclude = ['vendor']\n"
    )
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    return repo


def try_repo(hook_repo: Path, user_repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # try-repo builds the hook environment afresh in a temporary store each time (~15 s), so the
    # scenarios below use as few runs as they can.
    env = {**os.environ, "PRE_COMMIT_COLOR": "never"}
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), *args],
        cwd=user_repo, env=env, capture_output=True, text=True, check=False, timeout=600,
    )
    output = result.stdout + result.stderr
    if "An unexpected error has occurred" in output and any(
        sign in output for sign in OFFLINE
    ):
        # "No matching distribution found" is also what a packaging error says (a dependency
        # pinned to a version that does not exist): skip only when the index itself is out of
        # reach, which a plain download of a dependency shows.
        if not _index_reachable():
            pytest.skip("pre-commit could not install the hook's dependencies (no package index)")
        pytest.fail("the hook's environment did not build, yet the package index answers:\n"
                    + output)
    return result


@functools.cache
def _index_reachable() -> bool:
    """Whether pip (with this environment's configuration, as pre-commit's pip has) can fetch a
    distribution the hook needs."""
    with tempfile.TemporaryDirectory() as destination:
        probe = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest",
             destination, "click"],
            capture_output=True, text=True, check=False, timeout=300,
        )
    return probe.returncode == 0


def _hook_output(stdout: str, name: str) -> str:
    """What pre-commit printed for one hook (its status line and what follows)."""
    start = stdout.index(name + ".")
    following = [stdout.find(other, start + 1) for other in ("sampler-lint.", "sampler-lint (fix)")]
    ends = [position for position in following if position > start]
    return stdout[start: min(ends) if ends else len(stdout)]


def test_check_hook_fails_then_passes_after_the_fix_hook(hook_repo: Path, user_repo: Path) -> None:
    both = try_repo(hook_repo, user_repo, "--files", "train.py")
    assert both.returncode == 1, both.stdout + both.stderr
    check = _hook_output(both.stdout, "sampler-lint")
    assert "Failed" in check and "train.py:5:15: SL202" in check
    fix = _hook_output(both.stdout, "sampler-lint (fix)")
    # pre-commit fails a hook that modified files, so the user reviews and stages the fix.
    assert "Failed" in fix and "files were modified by this hook" in fix
    assert (user_repo / "train.py").read_text() == FIXED

    # The fixed file passes; a staged file the configuration excludes is dropped by
    # --force-exclude instead of being linted because pre-commit named it.
    _git(user_repo, "add", "train.py")
    again = try_repo(hook_repo, user_repo, "sampler-lint", "--files", "train.py",
                     "vendor/copied.py")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Passed" in _hook_output(again.stdout, "sampler-lint")
    assert "SL202" not in again.stdout


def test_no_matching_files_passes_quietly(hook_repo: Path, user_repo: Path) -> None:
    result = try_repo(hook_repo, user_repo, "--files", "notes.txt")
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("sampler-lint", "sampler-lint (fix)"):
        assert "(no files to check)Skipped" in _hook_output(result.stdout, name)
    assert "SL" not in result.stdout.split("=" * 79)[-1]
