"""An unchanged `check` is replayed (sampler_lint.engine.replay): same output, same exit code,
no run; anything it read that changes, and anything else about the invocation, makes the run
again."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sampler_lint import cli, console
from sampler_lint.engine import discovery, replay
from sampler_lint.engine.replay import secret_key

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
CLEAN = "def f(x):\n    return x\n"


class Invocations:
    """``sampler-lint ARGS`` as the console script runs it, in this process: each call says
    whether the linter ran (``ran``) or the recording was replayed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                 cache: Path) -> None:
        self.monkeypatch = monkeypatch
        self.capsys = capsys
        self.cache = cache
        self.ran = 0
        self.during: Callable[[], object] | None = None  # called at the end of a real run

        def run() -> None:
            self.ran += 1
            discovery.global_excludes_file.cache_clear()  # asked once per process, as a run is
            try:
                cli.main()
            finally:
                if self.during is not None:
                    self.during()

        monkeypatch.setattr(cli, "console_main", run)

    def __call__(self, *args: str) -> tuple[int, str, str, bool]:
        before = self.ran
        argv = ["check", "--cache-dir", str(self.cache), *args]
        self.monkeypatch.setattr(sys, "argv", ["sampler-lint", *argv])
        with pytest.raises(SystemExit) as exit:
            console.main()
        out, err = self.capsys.readouterr()
        code = exit.value.code
        return (0 if code is None else int(str(code))), out, err, self.ran > before


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.sampler-lint]\n")
    (root / "split.py").write_text(BUGGY)
    (root / "other.py").write_text(CLEAN)
    monkeypatch.chdir(root)
    settle()
    return root


def settle() -> None:
    # A file changed just before a run may have changed during it: such runs are not recorded.
    time.sleep(0.12)


@pytest.fixture
def invoke(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> Invocations:
    monkeypatch.setenv(replay.KEY_ENVIRONMENT, str(tmp_path / "key" / "cache-key"))
    # Made now, not by the first run: a folder above the project that changes while a run reads
    # keeps that run from being recorded.
    secret_key()
    (tmp_path / "cache").mkdir()
    settle()
    return Invocations(monkeypatch, capsys, tmp_path / "cache")


def test_an_unchanged_run_is_replayed_exactly(project: Path, invoke: Invocations) -> None:
    first = invoke(".")
    second = invoke(".")
    assert first[0] == 1 and "SL101" in first[1] and first[3]
    assert second == (*first[:3], False)  # same exit code and output, and the linter did not run


def test_a_changed_file_runs_again(project: Path, invoke: Invocations) -> None:
    invoke(".")
    (project / "split.py").write_text(CLEAN)
    code, out, _, ran = invoke(".")
    assert ran and code == 0 and "SL101" not in out


def test_a_file_only_a_worker_read_is_watched(
    project: Path, invoke: Invocations, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Enough files for the survey to run in worker processes, which this process's hook does not
    # see: the files of every folder the run listed are watched all the same.
    from sampler_lint.engine import runner

    monkeypatch.setattr(runner, "PARALLEL_THRESHOLD", 2)
    for number in range(6):
        (project / f"part{number}.py").write_text(CLEAN)
    settle()
    invoke("-j", "2", ".")
    assert not invoke("-j", "2", ".")[3]
    (project / "part3.py").write_text(BUGGY.replace("x", "y"))
    _, out, _, ran = invoke("-j", "2", ".")
    assert ran and "part3.py" in out


def test_code_another_process_imported_for_the_run_is_watched(
    project: Path, invoke: Invocations, tmp_path: Path
) -> None:
    # The lint helper imports libcst for the run (sampler_lint.engine.lint_helper) and names the
    # modules it imported; a change to one of them makes the run again.
    module = tmp_path / "elsewhere" / "helper_module.py"
    module.parent.mkdir()
    module.write_text("X = 1\n")
    settle()
    invoke.during = lambda: replay.note_code([str(module)])
    invoke(".")
    invoke.during = None
    assert not invoke(".")[3]
    module.write_text("X = 2\n")
    assert invoke(".")[3]


def test_a_new_or_removed_file_runs_again(project: Path, invoke: Invocations) -> None:
    invoke(".")
    (project / "more.py").write_text(BUGGY)
    _, out, _, ran = invoke(".")
    assert ran and out.count(": SL101 ") == 2
    settle()
    invoke(".")
    (project / "more.py").unlink()
    _, out, _, ran = invoke(".")
    assert ran and out.count(": SL101 ") == 1


def test_configuration_made_above_the_project_runs_again(
    project: Path, invoke: Invocations
) -> None:
    (project / "pyproject.toml").unlink()  # the closest configuration is then looked for above
    settle()
    invoke(".")
    assert not invoke(".")[3]
    (project.parent / "sampler-lint.toml").write_text('ignore = ["SL101"]\n')
    code, out, _, ran = invoke(".")
    assert ran and code == 0 and "SL101" not in out


def test_configuration_above_a_linked_folder_is_watched_where_it_really_is(
    project: Path, invoke: Invocations, tmp_path: Path
) -> None:
    # `work/code` links to `elsewhere/code`: configuration is looked for above the real folder.
    real = tmp_path / "elsewhere" / "code"
    real.mkdir(parents=True)
    (real / "split.py").write_text(BUGGY)
    work = tmp_path / "work"
    work.mkdir()
    (work / "code").symlink_to(real, target_is_directory=True)
    os.chdir(work)
    settle()
    invoke("--no-respect-gitignore", "code")
    assert not invoke("--no-respect-gitignore", "code")[3]
    (real.parent / "sampler-lint.toml").write_text('ignore = ["SL101"]\n')
    code, out, _, ran = invoke("--no-respect-gitignore", "code")
    assert ran and code == 0 and "SL101" not in out


def test_a_cache_folder_holding_the_project_is_never_recorded(
    project: Path, invoke: Invocations
) -> None:
    # Its files are not inputs, so a project inside it could not be watched. (The first runs
    # also write the cache beside the project, which alone keeps them from being recorded.)
    for _ in range(4):
        assert invoke("--cache-dir", str(project.parent), ".")[3]
        settle()


def test_a_cache_that_cannot_be_written_is_not_recorded(
    project: Path, invoke: Invocations, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sampler_lint.engine import cache

    monkeypatch.setattr(cache, "UNUSABLE", {})  # what this process could not write, this test
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    settle()
    for _ in range(2):  # the warning may be gone next time: said again only if still true
        _, _, err, ran = invoke("--cache-dir", str(blocker / "cache"), ".")
        assert ran and "cannot write the cache" in err


@pytest.mark.parametrize("change", ["made above", "input removed", "folder renamed"])
def test_a_change_above_the_project_during_the_run_is_not_recorded(
    project: Path, invoke: Invocations, tmp_path: Path, change: str
) -> None:
    settings = tmp_path / "settings"
    settings.mkdir()
    (settings / "lint.toml").write_text("select = ['ALL']\n")
    (project / "pyproject.toml").unlink()
    args: tuple[str, ...] = (".",)
    if change == "input removed":
        args = ("--config", str(settings / "lint.toml"), ".")
    elif change == "folder renamed":
        os.chdir(tmp_path)
        args = ("project",)
    settle()
    if change == "made above":
        invoke.during = lambda: (tmp_path / "sampler-lint.toml").write_text('ignore = ["SL101"]\n')
    elif change == "input removed":
        invoke.during = (settings / "lint.toml").unlink
    else:  # the project swapped for a clean copy, by renaming the folders above it
        clean = tmp_path / "clean"
        clean.mkdir()
        (clean / "split.py").write_text(CLEAN)
        (clean / "other.py").write_text(CLEAN)
        settle()

        def swap() -> None:
            project.rename(tmp_path / "old")
            clean.rename(project)

        invoke.during = swap
    first = invoke(*args)
    invoke.during = None
    settle()
    again = invoke(*args)
    assert again[3] and again[:3] != first[:3]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_configuration_included_from_elsewhere_is_watched(
    project: Path, invoke: Invocations, tmp_path: Path
) -> None:
    # The global excludes file is named in a file the repository's configuration includes.
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    included = tmp_path / "included.gitconfig"
    included.write_text("[core]\n")
    subprocess.run(["git", "-C", str(project), "config", "include.path", str(included)],
                   check=True)
    (tmp_path / "excludes").write_text("split.py\n")
    settle()
    invoke(".")
    assert not invoke(".")[3]
    included.write_text(f"[core]\n\texcludesFile = {tmp_path / 'excludes'}\n")
    _, out, _, ran = invoke(".")
    assert ran and "SL101" not in out


def test_a_relative_key_path_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    # Relative, it would name a file of whatever checkout the run is in: a key committed there
    # would sign a cache or a recording that hides every finding.
    monkeypatch.setenv(replay.KEY_ENVIRONMENT, "key/cache-key")
    assert os.path.isabs(replay.key_path())


def test_arguments_and_environment_are_part_of_the_key(
    project: Path, invoke: Invocations, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke(".")
    assert invoke("--statistics", ".")[3]
    monkeypatch.setenv("NO_COLOR", "1")
    assert invoke(".")[3]
    assert not invoke(".")[3]


@pytest.mark.parametrize("args", [
    ["--no-cache"], ["--verbose"], ["--output-format", "json", "--output-file", "out.json"],
])
def test_runs_that_write_or_time_are_never_replayed(
    project: Path, invoke: Invocations, args: list[str]
) -> None:
    for _ in range(2):
        assert invoke(*args, ".")[3]


def test_a_run_with_plugin_rules_is_never_recorded(
    project: Path, invoke: Invocations, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plugin's reads are not followed. Its rule is told apart by the module it comes from.
    from sampler_lint.engine import registry

    ours = registry.all_rules()
    plugin = type("AcmeRule", (ours[0],), {"__module__": "acme_rules.checks"})
    monkeypatch.setattr(registry, "all_rules", lambda: (*ours, plugin))
    assert registry.has_plugins()
    for _ in range(2):
        assert invoke(".")[3]
    monkeypatch.setattr(registry, "all_rules", lambda: ours)
    assert not registry.has_plugins()


def test_a_fix_is_replayed_only_once_nothing_is_left_to_fix(
    project: Path, invoke: Invocations
) -> None:
    fix = ("--fix", "--unsafe-fixes", ".")
    assert invoke(*fix)[3] and (project / "split.py").read_text() != BUGGY
    settle()
    assert invoke(*fix)[3]  # the first run wrote: not recorded
    again = invoke(*fix)
    assert not again[3] and again[0] == 0
    assert invoke("--diff", ".")[3] and not invoke("--diff", ".")[3]


def test_a_run_that_changed_under_it_is_not_recorded(
    project: Path, invoke: Invocations
) -> None:
    invoke.during = lambda: (project / "other.py").write_text(CLEAN + "\n")
    invoke(".")
    invoke.during = None
    settle()
    assert invoke(".")[3]  # ran: the first was not recorded
    assert not invoke(".")[3]


def _write_bytes(data: bytes) -> None:
    with contextlib.suppress(TypeError):  # the stream beneath may take text only
        sys.stdout.write(data)  # type: ignore[arg-type]


@pytest.mark.parametrize("spoil", [
    replay.spoil,  # a progress bar was drawn
    lambda: subprocess.run([sys.executable, "-c", "pass"], check=True),  # unseen reads
    lambda: sys.stdout.buffer.write(b""),  # bytes past the text layer
    lambda: _write_bytes(b"\n"),  # bytes, not text
])
def test_spoiled_runs_are_not_recorded(
    project: Path, invoke: Invocations, spoil: Callable[[], object]
) -> None:
    invoke.during = spoil
    invoke(".")
    invoke.during = None
    assert invoke(".")[3]


def test_errors_are_not_recorded(project: Path, invoke: Invocations) -> None:
    assert invoke("missing.py")[0] == 2
    assert invoke("missing.py")[3]


@pytest.mark.parametrize("files", [0, 80])  # the output written at exit, or while it is made
def test_output_cut_short_is_not_recorded(project: Path, tmp_path: Path, files: int) -> None:
    for number in range(files):
        (project / f"split{number}.py").write_text(BUGGY)
    environment = {**os.environ, replay.KEY_ENVIRONMENT: str(tmp_path / "key" / "cache-key")}
    command = [sys.executable, "-m", "sampler_lint", "check", "--cache-dir",
               str(tmp_path / "cache"), "--exit-zero", "."]
    subprocess.run(command, capture_output=True, env=environment)  # the cache is made
    settle()
    # `| head -c 0`: the reader is gone before the output is written.
    closed = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              env=environment)
    assert closed.stdout is not None
    closed.stdout.close()
    closed.wait()
    whole = subprocess.run(command, capture_output=True, text=True, env=environment)
    assert whole.returncode == 0  # the cut run exited 1 (click's answer to a closed pipe)
    assert "SL101" in whole.stdout and whole.stdout.rstrip().endswith("option.")


def test_a_recording_this_user_did_not_write_is_ignored(
    project: Path, invoke: Invocations, tmp_path: Path
) -> None:
    invoke(".")
    recordings = list((tmp_path / "key" / "replays").iterdir())
    assert len(recordings) == 1
    data = recordings[0].read_bytes()
    payload = data[: -replay.MAC_SIZE]
    forged = payload.replace(b"SL101", b"SL999")
    assert forged != payload
    # The same output claimed, but signed with another key, or altered after signing.
    for content in (payload + replay.mac(b"k" * 32, payload), forged + data[-replay.MAC_SIZE:]):
        recordings[0].write_bytes(content)
        code, out, _, ran = invoke(".")
        assert ran and code == 1 and "SL999" not in out
        settle()


def test_only_the_latest_recordings_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "replays"
    folder.mkdir()
    for number in range(6):
        recording = folder / f"{number}.marshal"
        recording.write_bytes(b"x" * 100)
        os.utime(recording, ns=(number * 10**9, number * 10**9))
    monkeypatch.setattr(replay, "_KEEP", 4)
    replay._prune(str(folder))
    assert sorted(path.name for path in folder.iterdir()) == [f"{n}.marshal" for n in (2, 3, 4, 5)]
    monkeypatch.setattr(replay, "_KEEP_BYTES", 250)  # the latest always stays, whatever its size
    replay._prune(str(folder))
    assert sorted(path.name for path in folder.iterdir()) == ["4.marshal", "5.marshal"]


def test_clean_forgets_recordings(project: Path, invoke: Invocations, tmp_path: Path) -> None:
    invoke(".")
    assert replay.forget() == 1
    assert invoke(".")[3]


class Console:
    """``python -m sampler_lint ARGS`` in a process of its own, as a user runs it."""

    def __init__(self, tmp_path: Path, *args: str, unbuffered: bool = True) -> None:
        self.recordings = tmp_path / "key" / "replays"
        self.environment = {
            **os.environ, replay.KEY_ENVIRONMENT: str(tmp_path / "key" / "cache-key")
        }
        if not unbuffered:
            self.environment.pop("PYTHONUNBUFFERED", None)
        self.command = [sys.executable, "-m", "sampler_lint", "check", "--cache-dir",
                        str(tmp_path / "cache"), *args]

    def __call__(self, **streams: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command, text=True, env=self.environment, **streams)

    def recorded(self) -> list[tuple[int, int]]:
        """The recordings there are (a replay leaves them as they are; a run rewrites its own)."""
        if not self.recordings.exists():
            return []
        return sorted((p.stat().st_ino, p.stat().st_mtime_ns) for p in self.recordings.iterdir())


def test_messages_come_back_in_the_order_they_were_printed(
    project: Path, tmp_path: Path
) -> None:
    # `2>&1`: a diff on standard output, then its summary on standard error, without
    # Python's unbuffered mode, in which each write would reach the file at once anyway.
    console = Console(tmp_path, "--diff", "--unsafe-fixes", ".", unbuffered=False)
    merged = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
    made = console(**merged).stdout
    settle()
    console(**merged)  # recorded
    recorded = console.recorded()
    replayed = console(**merged).stdout
    assert recorded and console.recorded() == recorded  # replayed, not made again
    assert replayed == made and made.index("+++") < made.index("Would fix")


def test_the_console_script_replays_the_same_output(project: Path, tmp_path: Path) -> None:
    console = Console(tmp_path, ".")
    made = console(capture_output=True)
    settle()
    console(capture_output=True)
    recorded = console.recorded()
    replayed = console(capture_output=True)
    assert len(recorded) == 1 and console.recorded() == recorded
    assert (replayed.returncode, replayed.stdout, replayed.stderr) == (
        made.returncode, made.stdout, made.stderr
    )
    assert made.returncode == 1 and "SL101" in made.stdout
