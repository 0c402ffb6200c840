"""The ``sampler-lint`` command enters through the replay of unchanged runs
(:mod:`sampler_lint.engine.replay`), then tunes Python's collector of reference cycles for a
short run of many syntax trees; ``main``, which tests and other programs call in their own process,
leaves their collector as it is."""

from __future__ import annotations

import gc
import subprocess
import sys

from click.testing import CliRunner

from sampler_lint import cli

from .conftest import ROOT


def test_the_command_and_python_dash_m_run_the_tuned_entry() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '\nsampler-lint = "sampler_lint.console:main"\n' in pyproject
    main = (ROOT / "sampler_lint" / "__main__.py").read_text()
    assert "from sampler_lint.console import main" in main


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
