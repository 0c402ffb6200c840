"""How the index resolves an import's candidate files: links resolved as ``os.path.realpath``
resolves them, one folder at a time."""

from __future__ import annotations

import os
from pathlib import Path, PurePath

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
    (real / "pkg" / "deep" / "shared.py").symlink_to("../linked.py")  # up, then a link again
    (real / "pkg" / "deep" / "abs.py").symlink_to(tmp_path / "alias" / "pkg" / "mod.py")
    (real / "pkg" / "deep" / "ping.py").symlink_to("pong.py")  # a loop of two
    (real / "pkg" / "deep" / "pong.py").symlink_to("ping.py")
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
        Path("alias") / "pkg" / "deep" / "up" / ".." / "linked.py",  # up after a link
        Path("loop") / "x.py",
        Path("..") / tmp_path.name / "alias" / "pkg" / "mod.py",
        Path("."),
        tmp_path / "alias" / "pkg" / "deep" / "shared.py",
        tmp_path / "alias" / "pkg" / "deep" / "abs.py",
        tmp_path / "alias" / "pkg" / "deep" / "ping.py",
        tmp_path / "alias" / "pkg" / "deep" / "up" / "deep" / "pong.py",
        tmp_path / "alias" / "pkg" / "deep" / "ping.py" / "below.py",  # under the loop
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


def _candidates_as_paths(importer: str, module: str) -> list[str]:
    """The candidate files of an import as ``pathlib`` spells them (the resolver builds them
    as strings, which is faster): the module file first, then the package's ``__init__.py``, in
    every folder Python may start from, nearest first."""
    dotted = module.lstrip(".")
    level = len(module) - len(dotted)
    parts = [p for p in dotted.split(".") if p]
    if level:
        base = PurePath(importer).parent
        for _ in range(level - 1):
            base = base.parent
        starts = [base]
    elif parts:
        folder = PurePath(importer).parent
        starts = [root for up in (folder, *folder.parents) for root in (up, up / "src")]
    else:
        return []
    found = []
    for start in starts:
        folder = start.joinpath(*parts) if parts else start
        if parts:
            found.append(str(folder.with_name(folder.name + ".py")))
        found.append(str(folder / "__init__.py"))
    return found


@pytest.mark.parametrize("module", [
    "pkg", "pkg.data", "a.b.c", ".", "..", "...", ".data", "..pkg.data", "", "...deep.er",
])
def test_an_import_looks_where_python_would(module: str) -> None:
    importer = "/repo/src/pkg/sub/train.py"
    wanted = _candidates_as_paths(importer, module)
    resolver = ModuleResolver(wanted[::2])  # every other candidate is a project file
    assert list(resolver.resolve(importer, module)) == list(dict.fromkeys(
        path for path in wanted if path in set(wanted[::2])
    ))
    starts, parts = resolver.starts(importer, module)
    assert [os.path.join(start, *parts) for start in starts] == [
        str(PurePath(path).parent if path.endswith("__init__.py") else path[:-3])
        for path in wanted if path.endswith("__init__.py")
    ]
    assert resolver.roots(importer)[-2:] == ["/", "/src"]  # up to the file system's root


def test_imports_of_neighbouring_files_share_their_probes(tmp_path: Path) -> None:
    """Where an import may lead depends on the importer's folder: a module is looked for in
    every folder above it, once per folder for all the files below, and a path that is not
    there is not asked about (icefall: 183,000 probes of 49,000 paths, most of them absent)."""
    root = tmp_path.resolve()
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "data.py").write_text("")
    (root / "recipes" / "a").mkdir(parents=True)
    (root / "recipes" / "b").mkdir()
    (root / "recipes" / "a" / "shared.py").symlink_to(root / "pkg" / "data.py")
    files = {str(root / "pkg" / "__init__.py"), str(root / "pkg" / "data.py")}

    class Counting(ModuleResolver):
        asked: list[str]

        def is_known(self, path: str) -> bool:
            self.asked.append(path)
            return path in files

    resolver = Counting([])
    resolver.asked = []
    data = (str(root / "pkg" / "data.py"),)
    for importer in ("recipes/a/train.py", "recipes/a/decode.py", "recipes/b/train.py"):
        assert resolver.resolve(str(root / importer), "pkg.data") == data
        assert resolver.resolve(str(root / importer), "pkg") == (str(root / "pkg" / "__init__.py"),)
    assert resolver.resolve(str(root / "recipes" / "a" / "train.py"), "shared") == data  # a link
    assert resolver.resolve(str(root / "recipes" / "b" / "train.py"), "shared") == ()
    assert resolver.resolve(str(root / "recipes" / "a" / "train.py"), ".shared") == data
    # Each path once: the two files of the package, then the link that leads to one of them.
    assert sorted(resolver.asked) == sorted([*files, str(root / "pkg" / "data.py")])


def test_a_missing_path_is_asked_about_where_files_need_not_be_on_disk() -> None:
    """The resolver skips a path that is not there only for an index whose every fact comes
    from a file on disk: standard input's buffer and ``--since``'s revision stand in for files
    that may not be (a plain index, or a demand-built one under an overlay)."""
    from sampler_lint.analysis.index import ProjectIndex
    from sampler_lint.engine.demand import DemandIndex
    from sampler_lint.engine.sources import overlay

    assert DemandIndex([], []).files_on_disk() is True
    with overlay({}):
        assert DemandIndex([], []).files_on_disk() is False
    assert ProjectIndex().files_on_disk() is False
