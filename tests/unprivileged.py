"""Running sampler-lint as a user permissions apply to.

CI runs as root, where a mode-000 file or folder stops nothing. As root, the command runs without
any capability (``setpriv``: uid 0 then obeys file modes like anyone, and can still read the
interpreter under /root), or else as ``nobody`` when that user can run this interpreter; the test
is skipped when neither is possible.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest


def _nobody_can_run() -> int | None:
    try:
        uid = pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return None
    probe = subprocess.run(
        [sys.executable, "-c", "import sampler_lint"], capture_output=True, check=False,
        preexec_fn=lambda: os.setuid(uid),
    )
    return uid if probe.returncode == 0 else None


def _prefix() -> tuple[list[str], int | None]:
    if os.geteuid() != 0:
        return [], None
    locked = Path(tempfile.mkdtemp()) / "probe-locked"
    locked.write_text("")
    locked.chmod(0)
    setpriv = shutil.which("setpriv")
    if setpriv:
        command = [setpriv, "--inh-caps=-all", "--bounding-set=-all", "--"]
        check = subprocess.run([*command, "cat", str(locked)], capture_output=True, check=False)
        if check.returncode != 0:  # the mode is obeyed: privileges are really dropped
            return command, None
    uid = _nobody_can_run()
    if uid is not None:
        return [], uid
    pytest.skip("cannot drop root's privileges here (no setpriv, nobody cannot run Python)")


def run_unprivileged(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``sampler-lint *args`` in ``cwd`` as a user file modes apply to."""
    prefix, uid = _prefix()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "sampler_lint", *args],
        cwd=cwd, capture_output=True, text=True, check=False, env=env,
        preexec_fn=(lambda: os.setuid(uid)) if uid is not None else None,
    )
