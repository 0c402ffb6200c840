"""``scripts/ecosystem.py --fix``: every fix applied to a copy of a repository must compile, hold
under a second run, and leave no unused import or local behind."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "ecosystem.py"

SPLIT = """\
import torch


def shard(idx, world_size, rank):
    return idx.split(idx.size(0) // world_size)[rank]
"""


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ecosystem_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_clean_fix_passes_every_check(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "shard.py").write_text(SPLIT)
    untouched = (repo / "shard.py").read_bytes()
    site = tmp_path / "site"  # empty: the installed sampler-lint is the one run
    site.mkdir()
    found = _script().check_fixes(site, repo)
    assert (found.changed, found.broken, found.unstable, found.leftovers) == (1, [], [], [])
    assert (repo / "shard.py").read_bytes() == untouched  # the repository itself is not touched


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff counts the unused names")
def test_unused_names_are_counted_per_file(tmp_path: Path) -> None:
    path = tmp_path / "left.py"
    path.write_text("import math\n\n\ndef f():\n    unused = 1\n")
    assert _script()._unused_names([path]) == {("left.py", "F401"): 1, ("left.py", "F841"): 1}


@pytest.mark.parametrize(("edit", "caught"), [
    (lambda text: text + "def broken(:\n", "broken"),
    (lambda text: text + "# again\n", "unstable"),  # every run appends: never settles
])
def test_a_bad_fix_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Callable[[str], str], caught: str
) -> None:
    script = _script()

    def fake_fix(site: Path, copy: Path) -> None:
        target = copy / "shard.py"
        target.write_text(edit(target.read_text()))

    monkeypatch.setattr(script, "_fix_all", fake_fix)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "shard.py").write_text(SPLIT)
    found = script.check_fixes(tmp_path, repo)
    assert getattr(found, caught) == ["shard.py"]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff counts the unused names")
def test_a_fix_that_leaves_an_unused_import_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _script()
    fixed_once = SPLIT.replace("import torch\n", "import math\nimport torch\n")

    def fake_fix(site: Path, copy: Path) -> None:
        (copy / "shard.py").write_text(fixed_once)

    monkeypatch.setattr(script, "_fix_all", fake_fix)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "shard.py").write_text(SPLIT)
    assert script.check_fixes(tmp_path, repo).leftovers == ["shard.py F401"]
