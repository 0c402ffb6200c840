"""Exit codes mean one thing on every path: 0 clean, 1 findings, 2 any error, 130 interrupted;
an unexpected exception is one line asking for a report, never a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
ROOT = Path(__file__).resolve().parent.parent


def run(project: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(
            main, ["check", "--no-cache", "--jobs", "1", "--output-format", "concise", *args],
            input=stdin,
        )
    finally:
        os.chdir(cwd)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_a_config_error_on_the_stdin_path_is_exit_2(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.sampler-lint]\nbogus = 1\n")
    code, _, err = run(project, "--stdin-filename", "train.py", "-", stdin=BUGGY)
    assert code == 2
    assert "error:" in err and "unknown key 'bogus'" in err and "Traceback" not in err


def test_a_sibling_config_error_on_the_stdin_path_is_a_warning(project: Path) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "pyproject.toml").write_text("[tool.sampler-lint]\nbogus = 1\n")
    code, out, err = run(project, "--stdin-filename", "train.py", "-", stdin=BUGGY)
    assert code == 1 and "SL101" in out
    assert "warning:" in err and "unknown key 'bogus'" in err


@pytest.mark.parametrize("stdin", [BUGGY, "x = 1\n"])
def test_stdin_exit_codes(project: Path, stdin: str) -> None:
    code, _, _ = run(project, "--stdin-filename", "train.py", "-", stdin=stdin)
    assert code == (1 if stdin == BUGGY else 0)


def test_an_unexpected_exception_is_exit_2_and_asks_for_a_report(project: Path) -> None:
    (project / "train.py").write_text(BUGGY)
    with mock.patch("sampler_lint.cli.run", side_effect=RuntimeError("boom")):
        code, _, err = run(project, ".")
    assert code == 2
    assert "sampler-lint: error: RuntimeError: boom" in err
    assert "please report it" in err and "Traceback" not in err


def test_an_unexpected_exception_on_stdin_is_exit_2(project: Path) -> None:
    with mock.patch("sampler_lint.engine.linter.lint_source", side_effect=ValueError("bad")):
        code, _, err = run(project, "--stdin-filename", "t.py", "-", stdin=BUGGY)
    assert code == 2 and "ValueError: bad" in err


def test_ctrl_c_is_130(project: Path) -> None:
    (project / "train.py").write_text(BUGGY)
    with mock.patch("sampler_lint.cli.run", side_effect=KeyboardInterrupt):
        code, _, err = run(project, ".")
    assert code == 130 and "interrupted" in err


def test_an_interrupted_fix_says_how_many_files_were_rewritten(project: Path) -> None:
    from sampler_lint.engine import runner

    for number in range(5):
        (project / f"m{number}.py").write_text(BUGGY)
    real = runner.check_file
    calls = []

    def interrupting(*args: object, **kwargs: object) -> object:
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    with mock.patch.object(runner, "check_file", interrupting):
        code, _, err = run(project, ".", "--fix", "--unsafe-fixes")
    assert code == 130
    assert "2 file(s) were already fixed and rewritten" in err
    rewritten = [p for p in project.glob("m*.py") if p.read_text() != BUGGY]
    assert len(rewritten) == 2
    for path in rewritten:
        compile(path.read_text(), str(path), "exec")  # whole files


def test_a_real_sigint_during_a_parallel_fix(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    body = BUGGY + "".join(f"\n\ndef g{n}(x, world_size, rank):\n"
                           f"    return x.split(x.size(0) // world_size)[rank]\n"
                           for n in range(20))
    for number in range(200):
        (tmp_path / f"m{number:03}.py").write_text(body)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "sampler_lint", "check", "--no-cache", "--jobs", "2",
         "--fix", "--unsafe-fixes", "--output-format", "concise", "."],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        # A shell without job control starts a background command (`.ci/run &`) with SIGINT
        # ignored, and the child would inherit that and never see the signal: give it the
        # default, as a terminal's Ctrl-C finds it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if any(path.read_text() != body for path in tmp_path.glob("m*.py")):
            break
        time.sleep(0.05)
    if process.poll() is not None:
        pytest.skip("the run finished before it could be interrupted")
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    changed = sum(1 for p in tmp_path.glob("m*.py") if p.read_text() != body)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert f"{changed} file(s) were already fixed and rewritten" in err
    assert changed < 200
    for path in tmp_path.glob("m*.py"):
        compile(path.read_text(), str(path), "exec")
