from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

# CI (.ci/run) sets this: the runtime tests skip where torch, Lightning or accelerate are missing,
# and there a skip would let CI pass untested, so their absence stops the run instead.
if os.environ.get("SAMPLER_LINT_REQUIRE_RUNTIME"):
    for _module in ("torch", "lightning", "accelerate"):
        importlib.import_module(_module)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory with its own (empty) pyproject, isolated from ours."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return tmp_path


@pytest.fixture(autouse=True, scope="session")
def _cache_key(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The cache's secret lives in a scratch folder, not in the home directory of whoever runs
    the tests (subprocesses inherit it through the environment)."""
    import os

    from sampler_lint.engine.replay import KEY_ENVIRONMENT

    os.environ.setdefault(KEY_ENVIRONMENT, str(tmp_path_factory.mktemp("key") / "cache-key"))
