"""A configuration governs only the files under it: a broken ``[tool.sampler-lint]`` in a sibling
sub-project is a warning for a run over files it does not govern (its folder is then left out of
the project index), and an error where it governs a linted file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
BROKEN = "/pyproject.toml [tool.sampler-lint]: unknown key 'bogus'"
# A loop SL202 looks at: it reads the project index, so a run over this file walks the project
# (a file that keeps no such rule after the pre-filters does not, and meets no sibling config).
READS_INDEX = BUGGY + (
    "\n\ndef train(dataset, epochs, step):\n"
    "    from torch.utils.data import DataLoader, DistributedSampler\n"
    "    sampler = DistributedSampler(dataset)\n"
    "    for epoch in range(epochs):\n"
    "        for batch in DataLoader(dataset, sampler=sampler):\n"
    "            step(batch)\n"
)


def run(project: Path, *args: str) -> tuple[int, str, str]:
    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(
            main, ["check", "--no-cache", "--jobs", "1", "--output-format", "concise", *args],
        )
    finally:
        os.chdir(cwd)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def monorepo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(READS_INDEX)
    for name in ("vision", "speech"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.py").write_text(READS_INDEX)
    (tmp_path / "speech" / "pyproject.toml").write_text("[tool.sampler-lint]\nbogus = 1\n")
    return tmp_path


def test_a_root_script_is_linted_despite_a_broken_sibling(monorepo: Path) -> None:
    code, out, err = run(monorepo, "train.py")
    assert code == 1 and "train.py:2:12: SL101" in out
    assert err.count(BROKEN) == 1 and "warning:" in err and "left out of the project index" in err
    assert "error:" not in err


def test_a_sibling_folder_is_linted_despite_a_broken_sibling(monorepo: Path) -> None:
    code, out, err = run(monorepo, "vision")
    assert code == 1 and "vision/model.py:2:12: SL101" in out
    assert "warning:" in err and "error:" not in err


def test_a_file_that_reads_no_index_meets_no_sibling(monorepo: Path) -> None:
    (monorepo / "plain.py").write_text(BUGGY)
    code, out, err = run(monorepo, "plain.py")
    assert code == 1 and "plain.py:2:12: SL101" in out
    assert "speech" not in err


def test_it_is_an_error_where_it_governs_a_linted_file(monorepo: Path) -> None:
    code, _out, err = run(monorepo, "speech/model.py")
    assert code == 2
    assert f"error: {monorepo / 'speech'}{BROKEN}" in err


def test_a_whole_run_reports_the_error_once_and_lints_the_rest(monorepo: Path) -> None:
    code, out, err = run(monorepo, ".")
    assert code == 2
    assert "train.py:2:12: SL101" in out and "vision/model.py:2:12: SL101" in out
    assert "speech/model.py" not in out
    assert err.count(BROKEN) == 1 and "error:" in err


def test_broken_toml_in_a_sibling_is_a_warning(monorepo: Path) -> None:
    (monorepo / "speech" / "pyproject.toml").write_text("[tool.sampler-lint\nselect = [\n")
    code, out, err = run(monorepo, "train.py")
    assert code == 1 and "train.py:2:12: SL101" in out
    assert "invalid TOML" in err and "warning:" in err and "error:" not in err


def test_run_from_inside_a_broken_sub_project(monorepo: Path) -> None:
    code, out, err = run(monorepo / "speech", "../train.py")
    assert code == 1 and "train.py:2:12: SL101" in out and "Traceback" not in err


def test_a_deeply_nested_config_is_a_config_error(monorepo: Path) -> None:
    (monorepo / "speech" / "pyproject.toml").write_text(
        "[tool.sampler-lint]\nselect = " + "[" * 50_000 + "\n"
    )
    code, _, err = run(monorepo, "speech/model.py")
    assert code == 2 and "invalid TOML" in err and "report it" not in err


def test_the_resolver_finds_each_folders_closest_configuration_searching_each_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Remembered per folder (a walk asks for every folder of a tree): the same answers as
    ``find_config`` asked afresh, and no folder's files are looked for twice."""
    from sampler_lint.engine import config

    (tmp_path / "pyproject.toml").write_text("[tool.sampler-lint]\nselect = ['SL1']\n")
    inner = tmp_path / "a" / "b"
    (inner / "c" / "d").mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text("[tool.black]\n")  # not ours: passed over
    (inner / "sampler-lint.toml").write_text("select = ['SL2']\n")
    (tmp_path / "e" / "f").mkdir(parents=True)
    folders = [inner / "c" / "d", inner / "c", inner, tmp_path / "a", tmp_path / "e" / "f",
               tmp_path / "e", tmp_path, inner / "c" / "d"]
    expected = [config.find_config(folder) for folder in folders]
    assert expected[:4] == [inner / "sampler-lint.toml"] * 3 + [tmp_path / "pyproject.toml"]
    searched: list[Path] = []
    real = config._config_in
    monkeypatch.setattr(config, "_config_in", lambda f: searched.append(f) or real(f))
    resolver = config.ConfigResolver(config.RawSettings())
    assert [resolver._find_config(folder) for folder in folders] == expected
    assert len(searched) == len(set(searched))
    assert tmp_path.parent not in searched  # the project's own file answers before the root
