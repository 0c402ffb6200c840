"""The walk's fast exclude check answers exactly as the exclude patterns do."""

from __future__ import annotations

from pathlib import Path

import pytest

from sampler_lint.config import DEFAULT_EXCLUDES, Settings

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
