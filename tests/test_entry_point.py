"""The ``sampler-lint`` command enters through the replay of unchanged runs
(:mod:`sampler_lint.engine.replay`), then tunes Python's collector of reference cycles for a
short run of many syntax trees; ``main``, which tests and other programs call in their own process,
leaves their collector as it is."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from sampler_lint import cli

from .conftest import ROOT


def test_the_command_and_python_dash_m_run_the_tuned_entry() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '\nsampler-lint = "sampler_lint.console:script"\n' in pyproject
    main = (ROOT / "sampler_lint" / "__main__.py").read_text()
    assert "from sampler_lint.console import script" in main


def test_console_main_freezes_what_the_imports_made_and_raises_the_thresholds() -> None:
    code = (
        "import gc\n"
        "from sampler_lint import cli, console\n"
        "cli.main = lambda: print(gc.get_threshold(), gc.get_freeze_count() > 0)\n"
        "console.main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"{cli.GC_THRESHOLDS} True"


def test_main_leaves_the_callers_collector_alone() -> None:
    before = gc.get_threshold()
    result = CliRunner().invoke(cli.main, ["--version"])
    assert result.exit_code == 0 and gc.get_threshold() == before


@pytest.mark.parametrize(("code", "status", "stderr"), [
    ("None", 0, ""), ("0", 0, ""), ("1", 1, ""), ("2", 2, ""), ("'a message'", 1, "a message\n"),
])
def test_the_script_ends_with_the_runs_status_its_output_flushed_and_no_teardown(
    code: str, status: int, stderr: str
) -> None:
    # The script ends the process at once (os._exit): what was printed must still come out, the
    # status be main's, and nothing be torn down (an atexit handler would run in a normal exit).
    program = (
        "import atexit, sys\n"
        "from sampler_lint import console\n"
        "atexit.register(lambda: print('torn down'))\n"
        "def main():\n"
        "    print('found', end='')\n"  # unflushed when main ends
        f"    sys.exit({code})\n"
        "console.main = main\n"
        "console.script()\n"
    )
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    out = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=buffered
    )
    assert (out.returncode, out.stdout, out.stderr) == (status, "found", stderr)


def test_the_script_ends_a_run_that_returns_with_zero() -> None:
    program = (
        "from sampler_lint import console\n"
        "console.main = lambda: print('done')\n"
        "console.script()\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert (out.returncode, out.stdout) == (0, "done\n")
