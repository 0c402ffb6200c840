"""benchmarks/bench.py, the timing tool: what it checks before it times anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _warning(package_root: Path, dont_write_bytecode: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(package_root)
    if dont_write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import bench; "
        "print(bench.uncompiled_warning())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
        cwd=package_root,  # `-c` puts the working folder first on the path: not this checkout
    )
    return done.stdout.strip()


def test_it_warns_when_every_timed_run_would_compile_the_tool(tmp_path: Path) -> None:
    # An editable install in a shell with PYTHONDONTWRITEBYTECODE: no bytecode beside the
    # modules, none written, so each run compiles them (0.1 s that no installed copy pays).
    shutil.copytree(
        ROOT / "sampler_lint", tmp_path / "sampler_lint",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    assert "compileall" in _warning(tmp_path, dont_write_bytecode=True)
    assert _warning(tmp_path, dont_write_bytecode=False) == "None"  # the first run writes it
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tmp_path)], check=True)
    assert _warning(tmp_path, dont_write_bytecode=True) == "None"
