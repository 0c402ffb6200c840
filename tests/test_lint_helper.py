"""The lint helper (sampler_lint.engine.lint_helper): a process forked as a small run starts,
which imports libcst meanwhile and lints the files left, asking the run's index its questions.
It may make a run faster, never change what it reports: each test compares a run through it with
one without, and the ways it can fail fall back to linting in the run's own process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.engine import lint_helper, replay, runner, writer
from sampler_lint.engine.cache import Cache, decode
from sampler_lint.engine.config import ConfigResolver, RawSettings
from sampler_lint.engine.demand import DemandIndex
from sampler_lint.engine.findings import FileResult
from sampler_lint.engine.linter import LintOptions
from sampler_lint.engine.survey import Collectors, is_survey

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or sys.platform == "darwin", reason="the helper is forked"
)

# SL301 holds for user.py only if the project's index says that QShuf, defined in base.py,
# derives from DistributedSampler: the helper must ask the run's process.
FILES = {
    "base.py": "from torch.utils.data import DistributedSampler as DS\nclass QShuf(DS): pass\n",
    "user.py": "from base import QShuf\n\n\ndef make(ds, seed):\n"
               "    sampler = QShuf(ds, shuffle=True)\n    return sampler\n",
    "plain.py": "def part(train_idx, world_size, rank):\n"
                "    return train_idx.split(train_idx.size(0) // world_size)[rank]\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("")
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


def _needs_a_fork() -> None:
    """The helper refuses to fork beside other threads (a lock one holds would stay held in
    it): a test that needs one is skipped while an earlier test's thread is still running."""
    import threading

    if threading.active_count() != 1:
        pytest.skip("another thread runs in this test process: no helper forks here")


def _run(
    root: Path, names: list[str], helped: bool, **options: object
) -> runner.RunResult:
    if helped:
        _needs_a_fork()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(runner, "_may_lint_few", lambda paths, run_options: helped)
            return runner.run(
                [Path(name) for name in names], ConfigResolver(RawSettings(), isolated=True),
                runner.RunOptions(**options),  # type: ignore[arg-type]
            )
    finally:
        os.chdir(cwd)


def _findings(result: runner.RunResult) -> list[tuple[str, int, int, str, str]]:
    return sorted(
        (f.filename, f.location.line, f.location.column, f.code, f.message)
        for file in result.results for f in file.findings
    )


def _counting_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets a 1 for each fork from now on."""
    forks: list[int] = []
    forked = os.fork

    def fork() -> int:
        forks.append(1)
        return forked()

    monkeypatch.setattr(os, "fork", fork)
    return forks


def _no_children() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.mark.parametrize("names", [["user.py", "plain.py"], ["plain.py", "user.py"], ["."]])
def test_files_linted_by_the_helper_get_the_findings_of_a_run_without_it(
    project: Path, names: list[str]
) -> None:
    # plain.py starts the helper (SL101 lints it whatever the index says); user.py, which only
    # SL301's index stage keeps, is then linted there too, asking this process about QShuf.
    alone = _run(project, names, helped=False, use_cache=False)
    helped = _run(project, names, helped=True, use_cache=False)
    assert alone.stages.helped == 0
    assert helped.stages.helped == 2
    assert _findings(helped) == _findings(alone)
    assert ("user.py", 5, 15, "SL301") in [finding[:4] for finding in _findings(helped)]
    assert _no_children()


def test_a_file_only_the_index_stage_keeps_is_linted_here(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Forked once the index stage has kept it, the helper would have nothing left to overlap.
    forks = _counting_forks(monkeypatch)
    result = _run(project, ["user.py"], helped=True, use_cache=False)
    assert (result.stages.helped, forks) == (0, [])
    assert ("user.py", 5, 15, "SL301") in [finding[:4] for finding in _findings(result)]


def test_a_warm_run_through_the_helper_caches_what_a_run_without_it_does(project: Path) -> None:
    cold = _findings(_run(project, ["."], helped=False, use_cache=False))
    _run(project, ["."], helped=True)  # fills the cache through the helper
    (project / "base.py").write_text(FILES["base.py"] + "# changed\n")
    assert _findings(_run(project, ["."], helped=True)) == cold
    warm = _run(project, ["."], helped=True)  # nothing left to lint: the helper is stopped
    assert warm.stages.helped == 0
    assert _findings(warm) == cold
    assert _no_children()


def test_a_run_that_lints_nothing_forks_nothing(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(project, ["."], helped=True)
    forks = _counting_forks(monkeypatch)
    (project / "notes.py").write_text("print('no loader, no sampler')\n")
    assert _run(project, ["."], helped=True).stages.helped == 0
    assert forks == []
    # Linted whatever the index says (SL101 has no index stage): forked as the survey meets it.
    (project / "plain.py").write_text(FILES["plain.py"] + "# changed\n")
    assert _run(project, ["."], helped=True).stages.helped == 1
    assert forks == [1]
    # Kept by SL301's index stage only: linted here, with nothing left to overlap a fork.
    (project / "user.py").write_text(FILES["user.py"] + "# changed\n")
    assert _run(project, ["."], helped=True).stages.helped == 0
    assert forks == [1]


def test_a_fix_written_by_the_helper_is_counted_and_whole(project: Path) -> None:
    expected = project.parent / "expected"
    expected.mkdir()
    for name, text in FILES.items():
        (expected / name).write_text(text)
    (expected / "pyproject.toml").write_text("")
    without = _run(
        expected, ["plain.py"], helped=False, fix=True, unsafe_fixes=True, use_cache=False
    )
    helped = _run(
        project, ["plain.py"], helped=True, fix=True, unsafe_fixes=True, use_cache=False
    )
    assert helped.stages.helped == 1
    assert writer.files_written() == 1  # counted where an interrupted --fix reports it
    assert (project / "plain.py").read_text() == (expected / "plain.py").read_text()
    assert (project / "plain.py").read_text() != FILES["plain.py"]  # SL101's fix
    assert [r.wrote for r in helped.results] == [r.wrote for r in without.results] == [True]
    assert sorted(os.listdir(project)) == sorted(os.listdir(expected))  # no temporary file left


def test_when_the_helper_is_gone_the_file_is_linted_here(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = lint_helper.LintHelper.want

    def start_then_die(helper: lint_helper.LintHelper) -> None:
        started(helper)
        if helper._pid:
            os.kill(helper._pid, 9)

    monkeypatch.setattr(lint_helper.LintHelper, "want", start_then_die)
    names = ["plain.py", "user.py"]
    result = _run(project, names, helped=True, use_cache=False)
    assert result.stages.helped == 0
    assert _findings(result) == _findings(_run(project, names, helped=False, use_cache=False))
    assert _no_children()


def test_a_question_the_run_cannot_answer_over_the_pipe_has_the_file_linted_here(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An answer that does not pickle: the helper gives the file up, and it is linted here,
    # where the same question gets the same answer, unpickled.
    asked = DemandIndex.get_for

    class Unpicklable(list):  # type: ignore[type-arg]
        def __reduce__(self) -> str:
            raise TypeError("not over a pipe")

    monkeypatch.setattr(
        DemandIndex, "get_for", lambda self, kind, token: Unpicklable(asked(self, kind, token))
    )
    names = ["plain.py", "user.py"]
    result = _run(project, names, helped=True, use_cache=False)
    assert result.stages.helped <= 1  # plain.py, which asks nothing, if it came first
    assert _findings(result) == _findings(_run(project, names, helped=False, use_cache=False))
    assert ("user.py", 5, 15, "SL301") in [finding[:4] for finding in _findings(result)]
    assert _no_children()


def test_the_modules_the_helper_imports_are_named_to_a_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "imported_by_the_helper.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def lint(
        path: Path, options: LintOptions, write: bool, index: ProjectIndex,
        only: tuple[str, ...] | None,
    ) -> FileResult:
        import imported_by_the_helper  # type: ignore[import-not-found]  # noqa: F401

        return FileResult(filename=str(path))

    noted: list[str] = []
    monkeypatch.setattr(replay, "note_code", noted.extend)
    _needs_a_fork()
    helper = lint_helper.LintHelper(lint)
    helper.want()
    try:
        options = LintOptions((), {}, None)  # type: ignore[arg-type]  # the fake lint reads none
        result = helper.lint(Path("x.py"), options, False, ProjectIndex(), None)
    finally:
        helper.close()
    assert result == FileResult(filename="x.py")
    assert str(tmp_path / "imported_by_the_helper.py") in noted
    assert "imported_by_the_helper" not in sys.modules  # imported there, not here
    assert _no_children()


def test_two_projects_named_together_share_one_helper(tmp_path: Path, project: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / ".git").mkdir()
    (other / "plain.py").write_text(FILES["plain.py"])
    names = [str(other / "plain.py"), str(project / "user.py")]  # plain.py's project first
    helped = _run(tmp_path, names, helped=True, use_cache=False)
    assert helped.stages.helped == 2
    assert _findings(helped) == _findings(_run(tmp_path, names, helped=False, use_cache=False))


def test_it_is_not_started_where_it_cannot_help(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "libcst", raising=False)
    monkeypatch.setattr(lint_helper, "_cores", lambda: 2)
    assert lint_helper.worth_starting(0)
    assert not lint_helper.worth_starting(1)  # --jobs 1: one process
    monkeypatch.setattr(lint_helper, "_cores", lambda: 1)
    assert not lint_helper.worth_starting(0)
    monkeypatch.setattr(lint_helper, "_cores", lambda: 2)
    monkeypatch.setitem(sys.modules, "libcst", object())
    assert not lint_helper.worth_starting(0)  # this process lints as fast


def test_a_run_from_the_command_line_lints_through_the_helper(project: Path) -> None:
    # A new process, where libcst is not imported yet: the case the helper is for.
    def check(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sampler_lint", "check", "--isolated", "--no-cache",
             "--output-format", "concise", *args],
            cwd=project, capture_output=True, text=True, check=False,
        )

    helped = check("-v", "user.py", "plain.py")
    alone = check("--jobs", "1", "-v", "user.py", "plain.py")
    assert "2 in the helper process" in helped.stderr
    assert "helper" not in alone.stderr
    assert helped.stdout == alone.stdout
    assert "user.py:5:15: SL301" in helped.stdout
    assert helped.returncode == alone.returncode == 1


# The survey's order with a helper (runner.survey_files, ``linting``): the files not in the
# cache are surveyed before the cached surveys are decoded, so that the helper forks as early
# as the run can know it will lint; a change large enough for a pool starts no helper.


def _survey_jobs(root: Path, names: list[str]) -> tuple[list[runner._Job], LintOptions]:
    paths = [root / name for name in names]
    settings = ConfigResolver(RawSettings(), isolated=True).for_path(paths[0])
    lint = runner.lint_options_for(settings, paths[0], runner.RunOptions())
    return [runner._Job(path, None, 0) for path in paths], lint


def _stored_surveys(root: Path, jobs: list[runner._Job], lint: LintOptions) -> Cache:
    collectors = Collectors.for_rules(lint.rules)
    cache = Cache(root / "cache", "survey", is_survey)
    runner.survey_files(jobs, [lint], collectors, cache, 1)
    cache.save()
    return Cache(root / "cache", "survey", is_survey)


def test_with_a_helper_changed_files_are_surveyed_before_cached_surveys_are_read(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = [f"quiet_{n}.py" for n in range(5)]
    for name in quiet:
        (project / name).write_text("x = 1\n")
    jobs, lint = _survey_jobs(project, [*quiet, "plain.py"])
    cache = _stored_surveys(project, jobs[:-1], lint)
    events: list[str] = []
    got = cache.get

    def get(key: str) -> object:
        events.append("get")
        return got(key)

    monkeypatch.setattr(cache, "get", get)
    collectors = Collectors.for_rules(lint.rules)
    surveys, _, _ = runner.survey_files(
        jobs, [lint], collectors, cache, 1, linting=lambda: events.append("linting")
    )
    assert events[0] == "linting" and events.count("get") == len(quiet)
    assert surveys == runner.survey_files(jobs, [lint], collectors, None, 1)[0]


def test_a_change_large_enough_for_a_pool_starts_no_helper(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "PARALLEL_THRESHOLD", 2)
    jobs, lint = _survey_jobs(project, ["plain.py", "user.py", "base.py"])
    called: list[int] = []
    runner.survey_files(
        jobs, [lint], Collectors.for_rules(lint.rules), None, 1, linting=lambda: called.append(1)
    )
    assert called == []


def test_a_stored_survey_this_version_cannot_read_is_surveyed_again(project: Path) -> None:
    jobs, lint = _survey_jobs(project, ["plain.py", "user.py"])
    collectors = Collectors.for_rules(lint.rules)
    cache = _stored_surveys(project, jobs, lint)
    for key in list(cache.old):
        cache.old[key] = ("not", "a", "survey")
    for linting in (None, lambda: None):
        surveys, _, _ = runner.survey_files(jobs, [lint], collectors, cache, 1, linting=linting)
        assert surveys == runner.survey_files(jobs, [lint], collectors, None, 1)[0]
        assert len(cache.new) == 2 and all(is_survey(decode(value)) for value in cache.new.values())


# Interruptions: a helper with a file in hand stops with the run.


@pytest.mark.parametrize("write", [False, True])
def test_an_interrupted_run_does_not_wait_for_the_helper_s_file(
    write: bool, tmp_path: Path
) -> None:
    # In a process of its own, as a run is (this one may hold threads or fork handlers that
    # other tests' imports left): the run is interrupted while its helper lints a file that
    # would take a minute; it stops (a fix being written would be finished first). Ctrl-C is
    # handled as in a terminal: a test run started in the background by a shell without job
    # control (`.ci/run &`) passes SIGINT on ignored, and a Python started so keeps ignoring it.
    script = tmp_path / "run.py"
    script.write_text(
        "import os, signal, threading, time\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from pathlib import Path\n"
        "from sampler_lint.analysis.index import ProjectIndex\n"
        "from sampler_lint.engine import lint_helper\n"
        "from sampler_lint.engine.linter import LintOptions\n"
        "helper = lint_helper.LintHelper(lambda *task: time.sleep(60))\n"
        "helper.want()\n"
        "assert helper._pid\n"
        "threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
        "began = time.monotonic()\n"
        "try:\n"
        "    options = LintOptions((), {}, None)\n"
        f"    helper.lint(Path('x.py'), options, {write}, ProjectIndex(), None)\n"
        "    print('not interrupted')\n"
        "except KeyboardInterrupt:\n"
        "    helper.close()\n"
        "    print(round(time.monotonic() - began))\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.stdout.strip().isdigit(), (done.stdout, done.stderr)
    assert int(done.stdout) < 30  # not the 60 s the file would take


def test_a_helper_whose_run_was_killed_stops(tmp_path: Path) -> None:
    # The run's process is killed (SIGKILL: no chance to close anything) while the helper
    # lints: the helper is interrupted (Linux) rather than finishing, and writing, for no one.
    script = tmp_path / "run.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "from pathlib import Path\n"
        "from sampler_lint.engine import lint_helper\n"
        "from sampler_lint.engine.linter import LintOptions\n"
        "helper = lint_helper.LintHelper(lambda *task: time.sleep(60))\n"
        "helper.want()\n"
        "print(helper._pid, flush=True)\n"
        "task = (Path('x.py'), LintOptions((), {}, None), True, None)\n"
        "lint_helper._send(helper._tasks, task)\n"
        "time.sleep(1.5)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.stdout.strip(), done.stderr
    pid = int(done.stdout.split()[0])

    def alive() -> bool:
        try:
            state = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        return "\nState:\tZ" not in state

    import time

    for _ in range(100):
        if not alive():
            break
        time.sleep(0.1)
    assert not alive()


# The helper forked as the process starts (lint_helper.start_early), from a guess at the
# arguments: the run takes it where it would have started one, and stops it elsewhere.


def test_the_early_guess_takes_a_check_of_files_named_one_by_one(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("")
    (tmp_path / "src").mkdir()
    named = str(script)
    def few(argv: list[str]) -> bool:
        return bool(lint_helper._named_files(argv))

    assert lint_helper._named_files(["check", "-q", named]) == [named]
    assert few(["check", named])
    assert few(["check", "--select", "SL301", "-q", named, "--fix", named])  # a value skipped
    assert few(["check", "--config=x.toml", named])
    assert not few(["check"])  # the current folder
    assert not few(["check", named, str(tmp_path / "src")])  # a folder
    assert not few(["check", named, str(tmp_path / "missing.py")])
    assert not few(["check", "-", named])  # standard input
    assert not few(["check", "--stdin-filename=x.py", named])
    assert not few(["check", "--show-settings", named])
    assert not few(["rule", named])
    assert not few(["check", *[named] * (lint_helper.FEW_FILES + 1)])
    assert [lint_helper._jobs(argv) for argv in (
        ["check", "-j", "1"], ["check", "--jobs=1"], ["check", "-j1"], ["check", "--jobs", "4"],
        ["check", named], ["check", "--jobs", "x"],
    )] == [1, 1, 1, 4, 0, 0]


def _console(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``sampler-lint ARGS`` in a new process (libcst not imported: where the helper helps),
    reporting on its last line whether a helper was forked as it started and taken by the run,
    and whether any child process outlived the run."""
    script = root.parent / "console.py"
    script.write_text(
        "import os, sys\n"
        "from sampler_lint.engine import lint_helper\n"
        "from sampler_lint import console\n"
        "seen = []\n"
        "start, take = lint_helper.start_early, lint_helper.take_early\n"
        "def started(argv, engine):\n"
        "    start(argv, engine)\n"
        "    seen.append('forked' if lint_helper._EARLY else 'not forked')\n"
        "def taken():\n"
        "    helper = take()\n"
        "    seen.append('taken' if helper else 'none')\n"
        "    return helper\n"
        "lint_helper.start_early, lint_helper.take_early = started, taken\n"
        "sys.argv = ['sampler-lint', *sys.argv[1:]]\n"
        "try:\n"
        "    console.main()\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "try:\n"
        "    os.waitpid(-1, os.WNOHANG)\n"
        "    seen.append('a child left')\n"
        "except ChildProcessError:\n"
        "    pass\n"
        "from sampler_lint.engine import writer\n"
        "print(f'written {writer.files_written()}', *seen, flush=True)\n"
        "sys.exit(code)\n"
    )
    return subprocess.run(
        [sys.executable, str(script), "check", "--isolated", "--no-cache",
         "--output-format", "concise", *args],
        cwd=root, capture_output=True, text=True, check=False,
    )


def test_a_helper_forked_as_the_process_starts_lints_for_the_run(project: Path) -> None:
    helped = _console(project, "-v", "user.py", "plain.py")
    alone = _console(project, "--jobs", "1", "-v", "user.py", "plain.py")
    assert helped.stdout.splitlines()[-1] == "written 0 forked taken", helped.stderr
    assert alone.stdout.splitlines()[-1] == "written 0 not forked none"
    assert "2 in the helper process" in helped.stderr
    assert helped.stdout.splitlines()[:-1] == alone.stdout.splitlines()[:-1]
    assert "user.py:5:15: SL301" in helped.stdout
    assert helped.returncode == alone.returncode == 1


def test_a_fix_written_by_a_helper_forked_as_the_process_starts_is_counted(
    project: Path, tmp_path: Path
) -> None:
    expected = tmp_path / "expected"
    expected.mkdir()
    for name, text in FILES.items():
        (expected / name).write_text(text)
    (expected / "pyproject.toml").write_text("")
    helped = _console(project, "--fix", "--unsafe-fixes", "plain.py")
    alone = _console(expected, "--jobs", "1", "--fix", "--unsafe-fixes", "plain.py")
    assert helped.stdout.splitlines()[-1] == "written 1 forked taken", helped.stderr
    assert alone.stdout.splitlines()[-1] == "written 1 not forked none"
    assert (project / "plain.py").read_text() == (expected / "plain.py").read_text()
    assert (project / "plain.py").read_text() != FILES["plain.py"]
    assert sorted(os.listdir(project)) == sorted(os.listdir(expected))


def test_a_helper_forked_as_the_process_starts_is_stopped_when_no_run_takes_it(
    project: Path,
) -> None:
    # A file no rule's text pre-filter passes: nothing forks (as the run itself forks nothing).
    (project / "notes.py").write_text("print('no loader, no sampler')\n")
    quiet = _console(project, "notes.py")
    assert quiet.stdout.splitlines()[-1] == "written 0 not forked none"
    assert quiet.returncode == 0
    # Forked for plain.py, and taken, but --select leaves no rule to lint it with.
    other = _console(project, "--select", "SL401", "plain.py")
    assert other.stdout.splitlines()[-1] == "written 0 forked taken"
    assert other.returncode == 0
    # The run never starts (a configuration file that is not there): stopped all the same.
    broken = _console(project, "--config", "missing.toml", "plain.py")
    assert broken.stdout.splitlines()[-1] == "written 0 forked"
    assert broken.returncode == 2
