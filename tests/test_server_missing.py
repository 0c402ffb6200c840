"""Without the `server` extra, `sampler-lint server` says how to install it (this runs whether or
not pygls is installed: the import is blocked in the child process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_without_the_extra_the_command_says_how_to_install_it(tmp_path: Path) -> None:
    blocker = (
        "import sys\n"
        "sys.modules['pygls'] = None\n"
        "from sampler_lint.cli import main\n"
        "main(['server'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocker], capture_output=True, text=True, timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert 'pip install "sampler-lint[server]"' in done.stderr
