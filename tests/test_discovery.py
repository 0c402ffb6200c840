"""The walk's fast exclude check answers exactly as the exclude patterns do."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sampler_lint.engine.config import DEFAULT_EXCLUDES, ConfigResolver, RawSettings, Settings
from sampler_lint.engine.discovery import iter_source_files

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


GITIGNORES = {
    "plain": "build/\n*.log\n/dist\n__pycache__/\n**/gen/*.py\n",
    "negated": "*.log\n!keep.log\nbuild/\n!build/\nlogs/**\n!logs/**/important.py\n",
    "negation first": "!a.py\n*.py\n",
    "directory then file": "data/\n!data/x.py\n*.tmp\n!*.tmp/\n",
    "only negations": "!a.py\n!b/\n",
    # Unanchored expressions: pathspec searches `*/` (`(?P<ps_d>/)`) anywhere in the path.
    "whitelist": "/*\n!*/\n!*.py\n",
    "any folder": "*/\n!keep/\n",
    "comments and blanks": "# a comment\n\n   \n*.pyc\n\\!literal.py\n",
    "anchored and deep": (
        "/a.py\nsrc/**/gen/\n**/logs\nb/*.py\nd[a-c]ta/\n!src/keep/gen/\n*\n!*/\n!*.py\n"
    ),
    "a lone negation": "*.log\n!\nbuild/\n!keep.log\n",
}
GITIGNORE_PATHS = [
    "a.py", "b/", "b/a.py", "build/", "build/x.py", "src/build/", "x.log", "keep.log",
    "deep/keep.log", "dist/", "src/dist/", "gen/m.py", "a/gen/m.py", "logs/", "logs/x/",
    "logs/x/important.py", "logs/x/other.py", "data/", "data/x.py", "data/y.py", "t.tmp",
    "t.tmp/", "!literal.py", "m.pyc", "__pycache__/", "pkg/__pycache__/", "src/x/gen/",
    "src/keep/gen/", "src/gen/", "x/logs", "dbta/", "b/c.py", "notes.txt", "x/notes.txt",
    "pkg/", "pkg/train.py", "keep/", "keep/a.py", "top.py",
]


@pytest.mark.parametrize("text", GITIGNORES.values(), ids=GITIGNORES.keys())
def test_gitignore_matcher_answers_as_pathspec(text: str) -> None:
    """The combined expressions (with a fallback where an ignoring and a negating pattern both
    match) answer exactly as pathspec's pattern-by-pattern loop, negations included."""
    import pathspec

    from sampler_lint.engine.discovery import _matcher

    lines = [line for line in text.splitlines() if line != "!"]  # pathspec cannot read it
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    matches = _matcher(text.splitlines())
    for path in GITIGNORE_PATHS:
        assert matches(path) == bool(spec.match_file(path)), path


@pytest.mark.parametrize("text", GITIGNORES.values(), ids=GITIGNORES.keys())
def test_gitignore_expressions_are_those_pathspec_compiles(text: str) -> None:
    """The matcher reads each line's expression as text (compiling them one by one took 5 ms
    per 140-line ``.gitignore``): the same expressions, ignoring or negating, as the spec's."""
    import pathspec

    from sampler_lint.engine.discovery import _expressions
    from sampler_lint.engine.plain_patterns import PlainPatterns

    readable, pairs, _ = _expressions(text.splitlines())
    assert readable == [line for line in text.splitlines() if line != "!"]
    # The plain lines are matched without an expression (test_plain_patterns_...).
    spec = pathspec.GitIgnoreSpec.from_lines(
        [line for line in readable if not PlainPatterns().add(line)]
    )
    assert pairs == [(p.regex.pattern, p.include) for p in spec.patterns if p.include is not None]


_PLAIN_NAMES = ["build", "dist", ".env", "a.b", "x-y", "__pycache__", "egg-info", ".egg-info",
                "log", "b.log", "A_1"]
_PATH_PARTS = ["build", "dist", ".env", "a.b", "x-y", "__pycache__", "pkg.egg-info", "egg-info",
               "x.log", "log", "blog", "src", "build.py", "mybuild", "", "A_1", "a.b.c"]


@settings(max_examples=400, deadline=None)
@example(patterns=[(False, "build", False)], parts=["", "build"])  # `/build`: no match
@example(patterns=[(False, "build", False)], parts=["", "", "build"])  # `//build`: a match
@example(patterns=[(True, "log", True)], parts=["x.log", ""])  # `x.log/`: a folder's ending
@given(
    patterns=st.lists(
        st.tuples(st.booleans(), st.sampled_from(_PLAIN_NAMES), st.booleans()),
        min_size=1, max_size=4,
    ),
    parts=st.lists(st.sampled_from(_PATH_PARTS), min_size=1, max_size=5),
)
def test_plain_patterns_answer_as_pathspecs_expressions(
    patterns: list[tuple[bool, str, bool]], parts: list[str]
) -> None:
    """A name, a folder's name, a name's ending (``*.log``), a folder name's ending: what
    pathspec's expression of any of them answers (``re.match``, as the walk asks it) for a path
    of any depth, a folder's (``/`` at the end) and odd ones (``//``, ``/`` first) included."""
    import re

    import pathspec

    from sampler_lint.engine.plain_patterns import PlainPatterns

    lines = [f"{'*' if star else ''}{name}{'/' if folder else ''}"
             for star, name, folder in patterns]
    plain = PlainPatterns()
    assert all(plain.add(line) for line in lines)
    path = "/".join(parts)
    expressions = [
        pattern.regex for line in lines
        for pattern in pathspec.GitIgnoreSpec.from_lines([line]).patterns
    ]
    assert plain.matches(path) == any(re.match(regex, path) for regex in expressions), path


@pytest.mark.parametrize("pattern", [
    "*", "**", "/build", "build/*", "a/b", "!build", "# build", "build ", "b*d", "b?d", "[ab]",
    ".", "..", "./", "*.", "\\build", "bu\\ild", "**/build", "build/**", "ünïcode",
])
def test_only_plain_patterns_are_taken(pattern: str) -> None:
    from sampler_lint.engine.plain_patterns import PlainPatterns

    assert PlainPatterns().add(pattern) is False


def test_a_negated_gitignore_pattern_keeps_its_files_in_the_walk(tmp_path: Path) -> None:
    from sampler_lint.engine.config import ConfigResolver, RawSettings
    from sampler_lint.engine.discovery import iter_source_files

    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("*_gen.py\n!kept_gen.py\nscratch/\n")
    for name in ("a.py", "x_gen.py", "kept_gen.py", "scratch/s.py", "sub/y_gen.py",
                 "sub/kept_gen.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    resolver = ConfigResolver(RawSettings(), isolated=True)
    found = {p.relative_to(tmp_path).as_posix() for p in iter_source_files([tmp_path], resolver)}
    assert found == {"a.py", "kept_gen.py", "sub/kept_gen.py"}


def test_a_gitignore_line_pathspec_cannot_read_is_left_out(tmp_path: Path) -> None:
    """git skips a lone `!`; the walk must not stop on it."""
    from sampler_lint.engine.config import ConfigResolver, RawSettings
    from sampler_lint.engine.discovery import iter_source_files

    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("!\nskipped_*.py\n")
    for name in ("a.py", "skipped_b.py"):
        (tmp_path / name).write_text("x = 1\n")
    resolver = ConfigResolver(RawSettings(), isolated=True)
    found = {p.name for p in iter_source_files([tmp_path], resolver)}
    assert found == {"a.py"}


def test_a_file_linked_into_other_folders_is_linted_once(tmp_path: Path) -> None:
    # Recipe trees link one shared module into many folders (icefall: 1,400 links): each is
    # the same file, reached by its real path, whatever way the link spells it.
    project = tmp_path / "project"
    (project / "shared").mkdir(parents=True)
    (project / "shared" / "data.py").write_text("x = 1\n")
    outside = tmp_path / "outside.py"
    outside.write_text("y = 2\n")
    for recipe in ("r1", "r2", "r3"):
        (project / recipe / "deep").mkdir(parents=True)
        (project / recipe / "data.py").symlink_to("../shared/data.py")
        (project / recipe / "deep" / "data.py").symlink_to("../data.py")  # a link to a link
        (project / recipe / "abs.py").symlink_to(project / "shared" / "data.py")
        (project / recipe / "out.py").symlink_to(outside)
    found = list(iter_source_files([project], ConfigResolver(RawSettings())))
    assert [path.relative_to(project).as_posix() for path in found] == ["r1/abs.py", "r1/out.py"]
