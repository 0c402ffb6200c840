"""The engine reads a file's bytes with the system's own calls (``sources.read_source``): the
same bytes and the same errors as ``Path.read_bytes``, whatever the size."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sampler_lint.engine import sources
from sampler_lint.engine.sources import read_source

CHUNK = sources._CHUNK


@pytest.mark.parametrize("size", [0, 1, 4096, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7])
def test_a_file_is_read_whole(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    (tmp_path / "f.py").write_bytes(data)
    assert read_source(tmp_path / "f.py") == data


@pytest.mark.parametrize("name", ["missing.py", "folder"])
def test_a_file_that_cannot_be_read_raises_what_path_read_bytes_raises(
    tmp_path: Path, name: str
) -> None:
    (tmp_path / "folder").mkdir()
    with pytest.raises(OSError) as expected:
        (tmp_path / name).read_bytes()
    with pytest.raises(type(expected.value)):
        read_source(tmp_path / name)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_an_unreadable_file_raises_permission_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked.py"
    locked.write_text("x = 1\n")
    locked.chmod(0)
    with pytest.raises(PermissionError):
        read_source(locked)


def test_no_descriptor_is_left_open(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("x = 1\n")
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    for _ in range(50):
        read_source(tmp_path / "f.py")
        with pytest.raises(OSError):
            read_source(tmp_path)
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before
