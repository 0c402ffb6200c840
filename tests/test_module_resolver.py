"""How the index resolves an import's candidate files: links resolved as ``os.path.realpath``
resolves them, one folder at a time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sampler_lint.analysis.index import ModuleResolver


def test_candidates_resolve_as_realpath_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real"
    (real / "pkg").mkdir(parents=True)
    (real / "pkg" / "mod.py").write_text("")
    (real / "pkg" / "shared.py").write_text("")
    (real / "pkg" / "linked.py").symlink_to("shared.py")  # a file that is a link
    (tmp_path / "alias").symlink_to(real)  # a folder that is a link
    (tmp_path / "loop").symlink_to("loop")  # a link to itself
    (real / "pkg" / "deep").mkdir()
    (real / "pkg" / "deep" / "up").symlink_to("..")  # a folder linked to the one above it
    (real / "pkg" / "deep" / "hop").symlink_to(tmp_path / "alias" / "pkg")  # link to a link
    monkeypatch.chdir(tmp_path)
    resolver = ModuleResolver([])
    paths = [
        real / "pkg" / "mod.py",
        real / "pkg" / "linked.py",
        tmp_path / "alias" / "pkg" / "mod.py",
        tmp_path / "alias" / "pkg" / "linked.py",
        tmp_path / "alias" / "pkg" / "missing.py",  # absent, under a linked folder
        tmp_path / "alias" / "gone" / "missing.py",  # absent folder under a linked folder
        tmp_path / "loop" / "x.py",
        tmp_path / "alias" / "pkg" / "deep" / "up" / "deep" / "hop" / "linked.py",
        tmp_path / "alias" / "pkg" / "deep" / "hop" / "deep" / "up" / "missing" / "x.py",
        tmp_path / "alias" / "pkg" / ".." / "pkg" / "mod.py",  # a part that goes up
        Path("alias") / "pkg" / "linked.py",  # relative: from the working folder
        Path("mod.py"),
    ]
    for path in paths:
        assert resolver._real(str(path)) == os.path.realpath(path), path
        assert resolver._real(str(path)) == os.path.realpath(path), path  # remembered alike
    # Every folder and file on the way, each resolved on its own after its parts were.
    fresh = ModuleResolver([])
    for path in paths:
        for part in reversed([path, *path.parents]):
            assert fresh._real(str(part)) == os.path.realpath(part), part


def test_a_path_of_more_parts_than_python_has_frames(tmp_path: Path) -> None:
    deep = str(tmp_path.joinpath(*["d"] * 1500, "m.py"))
    assert ModuleResolver([])._real(deep) == os.path.realpath(deep)
