from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


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

    from sampler_lint.cache import KEY_ENVIRONMENT

    os.environ.setdefault(KEY_ENVIRONMENT, str(tmp_path_factory.mktemp("key") / "cache-key"))
