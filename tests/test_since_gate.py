"""--since REV reports every finding that is new relative to REV, wherever it is: the files are
linted as they were at REV (read from git into memory) and compared by fingerprint, so a pull
request that deletes a `set_epoch` call or a divisibility guard cannot pass the gate because the
flagged line itself did not change."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

TRAIN = '''from torch.utils.data import DataLoader, DistributedSampler

from helpers import run_epoch


def main(dataset, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        run_epoch(loader, epoch)
'''
HELPERS = '''def run_epoch(loader, epoch):
    loader.sampler.set_epoch(epoch)
    for batch in loader:
        print(batch)
'''
SHARD = '''def shard(x, world_size, rank):
    n = x.size(0)
    assert n % world_size == 0
    return x.split(n // world_size)[rank]
'''
OLD = "def old(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout


def run(repo: Path, *args: str) -> tuple[int, list[str], str]:
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        result = CliRunner().invoke(
            main, ["check", "--jobs", "1", "--output-format", "concise", *args]
        )
    finally:
        os.chdir(cwd)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    found = sorted(line.split(" ")[0] + " " + line.split(" ")[1]
                   for line in result.stdout.splitlines() if ": SL" in line)
    return result.exit_code, found, result.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "shard.py").write_text(SHARD)
    (tmp_path / "legacy.py").write_text(OLD)  # a finding that predates the pull request
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "base")
    return tmp_path


def test_nothing_new_nothing_reported(repo: Path) -> None:
    assert run(repo, "--since", "HEAD", ".")[:2] == (0, [])


def test_a_deleted_set_epoch_in_another_file_is_caught(repo: Path) -> None:
    (repo / "helpers.py").write_text(HELPERS.replace("    loader.sampler.set_epoch(epoch)\n", ""))
    code, found, _ = run(repo, "--since", "HEAD", ".")
    assert code == 1 and found == ["train.py:7:15: SL202"]


def test_a_deleted_guard_is_caught(repo: Path) -> None:
    (repo / "shard.py").write_text(SHARD.replace("    assert n % world_size == 0\n", ""))
    code, found, _ = run(repo, "--since", "HEAD", ".")
    assert code == 1 and found == ["shard.py:3:12: SL101"]


def test_old_findings_stay_quiet_when_lines_shift_or_files_move(repo: Path) -> None:
    (repo / "legacy.py").write_text("import os\n\n\n" + OLD)
    git(repo, "mv", "shard.py", "sharding.py")
    git(repo, "commit", "-qam", "move")
    (repo / "new.py").write_text(OLD.replace("old", "new"))  # untracked: new
    code, found, _ = run(repo, "--since", "HEAD~1", ".")
    assert code == 1 and found == ["new.py:2:12: SL101"]


def test_a_second_copy_of_an_old_finding_is_new(repo: Path) -> None:
    (repo / "legacy.py").write_text(OLD + "\n\n" + OLD.replace("def old", "def old2"))
    code, found, _ = run(repo, "--since", "HEAD", ".")
    assert code == 1 and found == ["legacy.py:6:12: SL101"]


def test_committed_staged_and_unstaged_changes_count(repo: Path) -> None:
    (repo / "helpers.py").write_text(HELPERS.replace("    loader.sampler.set_epoch(epoch)\n", ""))
    git(repo, "commit", "-qam", "drop set_epoch")
    (repo / "shard.py").write_text(SHARD.replace("    assert n % world_size == 0\n", ""))
    code, found, _ = run(repo, "--since", "HEAD~1", ".")
    assert code == 1 and found == ["shard.py:3:12: SL101", "train.py:7:15: SL202"]


def test_the_working_tree_is_never_touched(repo: Path) -> None:
    (repo / "helpers.py").write_text(HELPERS.replace("    loader.sampler.set_epoch(epoch)\n", ""))
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    status = git(repo, "status", "--porcelain")
    run(repo, "--since", "HEAD", "--no-cache", ".")
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before and git(repo, "status", "--porcelain") == status
    assert git(repo, "worktree", "list").count("\n") == 1


def test_a_shallow_clone_says_how_to_fetch_the_base(repo: Path, tmp_path_factory:
                                                    pytest.TempPathFactory) -> None:
    (repo / "train.py").write_text(TRAIN + "\n")
    git(repo, "commit", "-qam", "second")
    clone = tmp_path_factory.mktemp("clone") / "c"
    git(repo, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))
    code, _, err = run(clone, "--since", "HEAD~1", ".")
    assert code == 2
    assert "shallow clone" in err and "fetch-depth: 0" in err


def test_with_the_cache_the_answer_is_the_same(repo: Path) -> None:
    run(repo, ".")  # a warm cache of today's files
    (repo / "shard.py").write_text(SHARD.replace("    assert n % world_size == 0\n", ""))
    for _ in range(2):
        code, found, _ = run(repo, "--since", "HEAD", ".")
        assert code == 1 and found == ["shard.py:3:12: SL101"]
