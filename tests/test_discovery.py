"""The walk's fast exclude check answers exactly as the exclude patterns do."""

from __future__ import annotations

from pathlib import Path

import pytest

from sampler_lint.engine.config import DEFAULT_EXCLUDES, Settings

PATHS = [
    "build/", "src/build/", "build.py", "builder/", ".git/", ".venv/", "venv/", "x/venv/",
    "node_modules/", "pkg/__pycache__/", "a.egg-info/", "dist/", "distance.py", "third_party/",
    "third_party/lib/", "src/third_party/", "tests/test_x.py", "tests/", "notes/tests.py",
    "gen/a_pb2.py", "gen/", "deep/er/gen/b_pb2.py",
]


def _settings(exclude: tuple[str, ...]) -> Settings:
    return Settings(
        root=Path("/project"), source=None, enabled=frozenset(), exclude=exclude,
        per_file_ignores=(), respect_gitignore=True, unsafe_fixes=False, options={},
    )


@pytest.mark.parametrize(
    "exclude",
    [
        DEFAULT_EXCLUDES,
        (*DEFAULT_EXCLUDES, "third_party", "tests/", "*_pb2.py", "/gen"),
        ("*.py", "!tests/*.py"),  # a negated pattern: the spec itself answers
        (),
    ],
    ids=["defaults", "extended", "negated", "none"],
)
def test_fast_exclude_matches_the_spec(exclude: tuple[str, ...]) -> None:
    settings = _settings(exclude)
    for relative in PATHS:
        name = relative.rstrip("/").rsplit("/", 1)[-1] + ("/" if relative.endswith("/") else "")
        expected = bool(settings.exclude_spec.match_file(name)) or bool(
            settings.exclude_spec.match_file(relative)
        )
        assert settings.is_excluded_entry(name, relative) == expected, relative


def _tree(root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("generated/\n*_pb2.py\n")
    for folder in ("a", "a/deep", "b", "b/generated", "c", "build"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "m.py").write_text("x = 1\n")
        (root / folder / "m_pb2.py").write_text("x = 1\n")
    (root / "a" / ".gitignore").write_text("deep/\n")
    (root / "top.py").write_text("x = 1\n")


def test_a_project_walk_reusing_the_linted_folders_finds_the_same_files(tmp_path: Path) -> None:
    """The project index walks the project around the linted folders; reusing what the lint walk
    found there gives exactly the files a fresh walk finds, in the same order."""
    from sampler_lint.engine.config import ConfigResolver, RawSettings
    from sampler_lint.engine.discovery import Walked, iter_source_files

    _tree(tmp_path)
    resolver = ConfigResolver(RawSettings(), isolated=True)
    walked: Walked = {}
    linted = list(iter_source_files(
        [tmp_path / "a", tmp_path / "b", tmp_path / "build"], resolver, record=walked
    ))
    assert sorted(p.relative_to(tmp_path).as_posix() for p in linted) == [
        "a/m.py", "b/m.py", "build/m.py",  # build/ is excluded by default, but named here
    ]
    fresh = list(iter_source_files([tmp_path], resolver))
    reused = list(iter_source_files([tmp_path], resolver, known=walked))
    assert reused == fresh
    assert [p.relative_to(tmp_path).as_posix() for p in fresh] == ["a/m.py", "b/m.py", "c/m.py",
                                                                    "top.py"]


def test_paths_from_two_repositories_index_those_two_not_their_common_folder(
    tmp_path: Path,
) -> None:
    from sampler_lint.engine.config import ConfigResolver, RawSettings
    from sampler_lint.engine.discovery import project_roots
    from sampler_lint.engine.runner import RunOptions, run

    for name in ("a", "b", "unrelated"):
        (tmp_path / name / ".git").mkdir(parents=True)
        (tmp_path / name / "pkg").mkdir()
        (tmp_path / name / "pkg" / "data.py").write_text(
            "from torch.utils.data import DataLoader\nloader = DataLoader(ds, shuffle=True)\n"
        )
    a, b = tmp_path / "a", tmp_path / "b"
    inner = a / "pkg" / "data.py"
    assert project_roots([a, b]) == [a.resolve(), b.resolve()]
    assert project_roots([inner, b / "pkg", a]) == [a.resolve(), b.resolve()]
    assert project_roots([inner, a / "pkg"]) == [a.resolve()]
    result = run([inner, b / "pkg"], ConfigResolver(RawSettings(select=("ALL",)), isolated=True),
                 RunOptions(use_cache=False, jobs=1))
    project = {Path(path).resolve() for path in result.project}
    assert project == {(a / "pkg" / "data.py").resolve(), (b / "pkg" / "data.py").resolve()}
