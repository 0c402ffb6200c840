"""The flags Ruff users reach for, with Ruff's names and behaviour (issue 19): fix control
(--fixable / --unfixable / --extend-fixable, --no-fix, --no-unsafe-fixes, --fix-only), noqa control
(--ignore-noqa, --add-noqa=REASON, flake8's file-level directive), configuration (--config
KEY=VALUE, extend, required-version, output-format and force-exclude in the file,
SAMPLER_LINT_OUTPUT_FORMAT, --extend-per-file-ignores), inspection (--show-files,
--show-settings), talk (--color / NO_COLOR / FORCE_COLOR, -q, -s, -v), `clean`, and the cache and
job limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint import cli
from sampler_lint.cli import main, use_color
from sampler_lint.engine.config import OUTPUT_FORMATS
from sampler_lint.output.reporters import REPORTERS

# SL202 (a safe fix: the missing set_epoch) and SL101 (an unsafe fix) in one file.
TRAIN = """\
from torch.utils.data import DataLoader, DistributedSampler


def main(ds, model, epochs):
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            model(batch)


def shard(x, world_size, rank):
    return x.split(x.size(0) // world_size)[rank]
"""


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--jobs", "1", *args], env=env, catch_exceptions=False
    )
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SAMPLER_LINT_OUTPUT_FORMAT", raising=False)
    return tmp_path


def codes(out: str) -> list[str]:
    return [f["code"] for f in json.loads(out)]


def fixable_codes(out: str) -> list[str]:
    return [f["code"] for f in json.loads(out) if f["fix"] is not None]


# -- fix control ---------------------------------------------------------------------------------

def test_unfixable_keeps_the_finding_but_drops_its_fix(repo: Path) -> None:
    _, out, _ = run("--isolated", "--output-format", "json", "--unfixable", "SL202", ".")
    assert sorted(codes(out)) == ["SL101", "SL202"] and fixable_codes(out) == ["SL101"]
    code, _, _ = run("--isolated", "--fix", "--unfixable", "SL202", ".")
    assert code == 1 and (repo / "train.py").read_text() == TRAIN


def test_fixable_limits_and_extend_fixable_adds(repo: Path) -> None:
    _, out, _ = run("--isolated", "--output-format", "json", "--fixable", "SL101", ".")
    assert fixable_codes(out) == ["SL101"]
    _, out, _ = run("--isolated", "--output-format", "json", "--fixable", "SL101",
                    "--extend-fixable", "SL202", ".")
    assert sorted(fixable_codes(out)) == ["SL101", "SL202"]


def test_unfixable_in_the_configuration(repo: Path) -> None:
    (repo / "sampler-lint.toml").write_text('unfixable = ["SL2"]\n')
    _, out, _ = run("--output-format", "json", ".")
    assert fixable_codes(out) == ["SL101"]


def test_no_fix_overrides_fix(repo: Path) -> None:
    code, _, _ = run("--isolated", "--fix", "--no-fix", ".")
    assert code == 1 and (repo / "train.py").read_text() == TRAIN


def test_no_unsafe_fixes_overrides_the_configuration(repo: Path) -> None:
    (repo / "sampler-lint.toml").write_text("unsafe-fixes = true\n")
    run("--fix", "--no-unsafe-fixes", ".")
    text = (repo / "train.py").read_text()
    assert "set_epoch" in text and "tensor_split" not in text


def test_fix_only_fixes_reports_nothing_and_exits_0(repo: Path) -> None:
    code, out, err = run("--isolated", "--fix-only", ".")
    assert code == 0 and out == ""
    assert "Fixed 1 error." in err
    assert "set_epoch" in (repo / "train.py").read_text()


def test_fix_only_with_exit_non_zero_on_fix(repo: Path) -> None:
    code, _, _ = run("--isolated", "--fix-only", "--exit-non-zero-on-fix", ".")
    assert code == 1


# -- noqa control --------------------------------------------------------------------------------

def test_ignore_noqa_reports_what_noqa_hid(repo: Path) -> None:
    (repo / "train.py").write_text(TRAIN.replace("[rank]\n", "[rank]  # noqa: SL101\n"))
    _, out, _ = run("--isolated", "--output-format", "json", ".")
    assert codes(out) == ["SL202"]
    _, out, _ = run("--isolated", "--output-format", "json", "--ignore-noqa", ".")
    assert sorted(codes(out)) == ["SL101", "SL202"]  # and no SL002 for the used directive


def test_flake8_file_level_directive(repo: Path) -> None:
    (repo / "train.py").write_text("# flake8: noqa\n" + TRAIN)
    code, out, _ = run("--isolated", "--output-format", "json", ".")
    assert code == 0 and codes(out) == []
    (repo / "train.py").write_text("# flake8: noqa: SL202\n" + TRAIN)
    _, out, _ = run("--isolated", "--output-format", "json", ".")
    assert codes(out) == ["SL101"]


def test_flake8_directive_in_a_string_is_not_one(repo: Path) -> None:
    (repo / "train.py").write_text('NOTE = "# flake8: noqa"\n' + TRAIN)
    _, out, _ = run("--isolated", "--output-format", "json", ".")
    assert sorted(codes(out)) == ["SL101", "SL202"]


def test_add_noqa_with_a_reason(repo: Path) -> None:
    code, _, err = run("--isolated", "--select", "SL101", "--add-noqa=reviewed by data", ".")
    assert code == 0, err
    assert "[rank]  # noqa: SL101 reviewed by data\n" in (repo / "train.py").read_text()
    _, out, _ = run("--isolated", "--output-format", "json", ".")
    assert codes(out) == ["SL202"]


def test_bare_add_noqa_never_takes_the_path_for_a_reason(repo: Path) -> None:
    code, _, err = run("--isolated", "--select", "SL101", "--add-noqa", "train.py")
    assert code == 0, err
    assert "[rank]  # noqa: SL101\n" in (repo / "train.py").read_text()


# -- configuration -------------------------------------------------------------------------------

def test_inline_config_settings(repo: Path) -> None:
    _, out, _ = run("--config", 'select = ["SL101"]', "--output-format", "json", ".")
    assert codes(out) == ["SL101"]
    (repo / "base.toml").write_text('select = ["SL202"]\n')
    _, out, _ = run("--config", "base.toml", "--config", 'extend-select = ["SL101"]',
                    "--output-format", "json", ".")
    assert sorted(codes(out)) == ["SL101", "SL202"]


def test_inline_config_errors_exit_2(repo: Path) -> None:
    code, _, err = run("--config", "select = [", ".")
    assert code == 2 and "neither a file nor a TOML" in err
    code, _, err = run("--config", 'selekt = ["SL101"]', ".")
    assert code == 2 and "did you mean 'select'" in err


def test_extend_layers_over_a_base_file(repo: Path) -> None:
    (repo / "shared").mkdir()
    (repo / "shared" / "base.toml").write_text('select = ["SL202"]\nunfixable = ["SL202"]\n')
    (repo / "sampler-lint.toml").write_text(
        'extend = "shared/base.toml"\nextend-select = ["SL101"]\n'
    )
    _, out, _ = run("--output-format", "json", ".")
    assert sorted(codes(out)) == ["SL101", "SL202"] and fixable_codes(out) == ["SL101"]


def test_extend_circle_and_missing_base(repo: Path) -> None:
    (repo / "sampler-lint.toml").write_text('extend = "other.toml"\n')
    code, _, err = run(".")
    assert code == 2 and "does not exist" in err
    (repo / "other.toml").write_text('extend = "sampler-lint.toml"\n')
    code, _, err = run(".")
    assert code == 2 and "circle" in err


def test_required_version(repo: Path) -> None:
    (repo / "sampler-lint.toml").write_text('required-version = ">=0.0.1"\n')
    assert run(".")[0] == 1
    (repo / "sampler-lint.toml").write_text('required-version = ">=999"\n')
    code, _, err = run(".")
    assert code == 2 and "required-version '>=999' is not met" in err
    (repo / "sampler-lint.toml").write_text('required-version = "not a version"\n')
    code, _, err = run(".")
    assert code == 2 and "cannot be read" in err


def test_output_format_from_configuration_and_environment(repo: Path) -> None:
    (repo / "sampler-lint.toml").write_text('output-format = "json"\n')
    _, out, _ = run(".")
    assert sorted(codes(out)) == ["SL101", "SL202"]
    _, out, _ = run(".", env={"SAMPLER_LINT_OUTPUT_FORMAT": "concise"})
    assert out.startswith("train.py:")
    _, out, _ = run("--output-format", "json", ".", env={"SAMPLER_LINT_OUTPUT_FORMAT": "concise"})
    assert json.loads(out)


def test_output_format_names_agree_with_the_reporters() -> None:
    assert set(REPORTERS) <= set(OUTPUT_FORMATS)


def test_force_exclude_in_configuration(repo: Path) -> None:
    (repo / "sampler-lint.toml").write_text(
        'extend-exclude = ["train.py"]\nforce-exclude = true\n'
    )
    code, out, _ = run("--output-format", "json", "train.py")
    assert code == 0 and codes(out) == []
    _, out, _ = run("--no-force-exclude", "--output-format", "json", "train.py")
    assert len(codes(out)) == 2


def test_extend_per_file_ignores(repo: Path) -> None:
    (repo / "sampler-lint.toml").write_text('[per-file-ignores]\n"train.py" = ["SL101"]\n')
    _, out, _ = run("--output-format", "json", "--extend-per-file-ignores", "train.py:SL202", ".")
    assert codes(out) == []
    (repo / "sampler-lint.toml").write_text('[extend-per-file-ignores]\n"train.py" = ["SL202"]\n')
    _, out, _ = run("--output-format", "json", ".")
    assert codes(out) == ["SL101"]


# -- inspection ----------------------------------------------------------------------------------

def test_show_files(repo: Path) -> None:
    (repo / "build").mkdir()
    (repo / "build" / "gen.py").write_text("x = 1\n")
    (repo / "util.py").write_text("x = 1\n")
    code, out, _ = run("--show-files", ".")
    assert code == 0
    assert out.splitlines() == [str((repo / name).resolve()) for name in ("train.py", "util.py")]


def test_show_settings(repo: Path) -> None:
    (repo / "sampler-lint.toml").write_text('unfixable = ["SL202"]\nsplit-fix = "ceil"\n')
    code, out, _ = run("--show-settings", "train.py")
    assert code == 0
    assert f"Settings path: {(repo / 'sampler-lint.toml').resolve()}" in out
    assert "SL202" not in out.split("fixable = ")[1].splitlines()[0]
    assert 'split-fix = "ceil"' in out


# -- talk ----------------------------------------------------------------------------------------

def test_use_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert use_color("always", False) and not use_color("never", True)
    assert use_color("auto", True) and not use_color("auto", False)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color("auto", True) and use_color("always", False)
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert use_color("auto", False)


def test_color_always_writes_ansi(repo: Path) -> None:
    _, out, _ = run("--isolated", "--color", "always", ".")
    assert "\x1b[" in out
    _, out, _ = run("--isolated", "--color", "never", ".", env={"FORCE_COLOR": "1"})
    assert "\x1b[" not in out


def test_quiet_prints_findings_only(repo: Path) -> None:
    code, out, _ = run("--isolated", "--output-format", "concise", "-q", ".")
    assert code == 1
    assert out.splitlines() == [line for line in out.splitlines() if line.startswith("train.py:")]
    assert len(out.splitlines()) == 2


def test_silent_prints_nothing(repo: Path) -> None:
    code, out, err = run("--isolated", "-s", ".")
    assert code == 1 and out == "" and err == ""


def test_verbose_says_config_and_timing(repo: Path) -> None:
    (repo / "sampler-lint.toml").write_text('select = ["SL1"]\n')
    _, _, err = run("-v", ".")
    assert f"config {(repo / 'sampler-lint.toml').resolve()}" in err or "config sampler" in err
    assert "timing: settings and rules" in err


def test_verbose_times_each_stage_and_counts_what_the_pre_filters_left(repo: Path) -> None:
    # Four files: one with findings of rules that ask the index, one with a finding of a rule
    # that does not (SL101: not asked about, linted all the same), one no rule wants, one only
    # a rule's index stage drops (a DistributedSampler subclass nobody builds). The survey
    # reads all four; the lint pass gets what the pre-filters left, not every file walked.
    (repo / "shard.py").write_text(
        "def shard(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
    )
    (repo / "readme_helpers.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    (repo / "samplers.py").write_text(
        "from torch.utils.data import DistributedSampler\n\n\n"
        "class Mine(DistributedSampler):\n    pass\n"
    )
    _, _, err = run("-v", "--isolated", ".")
    timing = next(line for line in err.splitlines() if "timing:" in line)
    for stage in ("walk", "survey", "index stage", "lint", "caches"):
        assert f"{stage} " in timing
    assert "(4 files), index stage" in timing  # the survey read every file walked
    assert "(2 files asked about)" in timing  # train.py and samplers.py, not shard.py
    assert "(2 files left by the pre-filters)" in timing  # train.py and shard.py
    assert "for 4 file(s) in all" in timing


def test_stages_of_several_projects_add_up() -> None:
    from sampler_lint.engine.runner import Stages

    total = Stages(walk=0.5, surveyed=2, linted=1)
    total.add(Stages(walk=0.25, survey=1.0, surveyed=3, asked=2, linted=1))
    assert (total.walk, total.survey, total.surveyed, total.asked, total.linted) == (
        0.75, 1.0, 5, 2, 2
    )


# -- clean, cache and jobs ----------------------------------------------------------------------

def test_clean_removes_caches(repo: Path) -> None:
    CliRunner().invoke(main, ["check", "--jobs", "1", "."])
    assert (repo / ".sampler_lint_cache").is_dir()
    result = CliRunner().invoke(main, ["clean"])
    assert result.exit_code == 0
    assert not (repo / ".sampler_lint_cache").exists()
    assert "No cache found." in CliRunner().invoke(main, ["clean"]).stderr


def test_an_unusable_cache_dir_warns_once(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sampler_lint.engine import cache

    monkeypatch.setattr(cache, "UNUSABLE", {})
    monkeypatch.setattr(cli, "_SILENT", False)
    (repo / "a-file").write_text("")
    result = CliRunner().invoke(main, ["check", "--jobs", "1", "--cache-dir", "a-file/cache", "."])
    assert result.stderr.count("cannot write the cache in a-file/cache") == 1
    assert result.exit_code == 1  # the run itself goes on, uncached


def test_jobs_are_capped_at_the_work() -> None:
    from sampler_lint.engine import runner

    pool = runner._pool(64, runner.PARALLEL_THRESHOLD, lambda: None)
    try:
        assert pool is not None and pool._max_workers == runner.PARALLEL_THRESHOLD
    finally:
        if pool is not None:
            pool.shutdown()
