"""A run over a few named files (pre-commit, an editor) reports for each exactly what a run over
the whole project reports for it, whether or not it surveyed the project: the project is walked
and indexed only when a named file keeps, after the pre-filters, a rule that reads the index."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main
from sampler_lint.engine import runner
from sampler_lint.engine.config import ConfigResolver, RawSettings

from .conftest import ROOT

# Cross-file facts: a loader built in one module and iterated in another, a sampler class defined
# in one module and used in another, a seed read through an import.
PROJECT = {
    "pkg/__init__.py": "",
    "pkg/data.py": (
        "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
        "def build_loader(dataset, batch_size):\n"
        "    sampler = DistributedSampler(dataset)\n"
        "    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)\n"
    ),
    "pkg/samplers.py": (
        "from torch.utils.data import Sampler\n\n\n"
        "class Chunked(Sampler):\n"
        "    def __init__(self, data, num_replicas, rank, seed=0):\n"
        "        self.data, self.num_replicas, self.rank = data, num_replicas, rank\n"
        "        self.seed = seed\n"
        "        self.epoch = 0\n\n"
        "    def set_epoch(self, epoch):\n"
        "        self.epoch = epoch\n\n"
        "    def __iter__(self):\n"
        "        return iter(range(self.rank, len(self.data), self.num_replicas))\n"
    ),
    "train.py": (
        "from pkg.data import build_loader\n"
        "from pkg.samplers import Chunked\n"
        "from torch.utils.data import DataLoader\n\n\n"
        "def main(dataset, epochs, rank, world):\n"
        "    loader = build_loader(dataset, 8)\n"
        "    other = DataLoader(dataset, sampler=Chunked(dataset, world, rank, seed=1234))\n"
        "    for epoch in range(epochs):\n"
        "        for batch in loader:\n"
        "            pass\n"
        "        for batch in other:\n"
        "            pass\n"
    ),
    "setup.py": "from setuptools import setup\n\nsetup(name='demo')\n",
    "util.py": "def add(a, b):\n    return a + b\n",
}


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for name, code in PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(code)
    # Two fixtures of each rule, as more files of the same project (a run per file costs a
    # second or so: all of them would make this the slowest test).
    for folder in sorted((ROOT / "tests" / "fixtures").iterdir()):
        fixtures = [f for f in sorted(folder.glob("*.py")) if not f.name.endswith(".fixed.py")]
        for fixture in fixtures[:2]:
            target = root / "fixtures" / fixture.parent.name / fixture.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fixture, target)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return root


def _findings(root: Path, *paths: str) -> list[tuple[Any, ...]]:
    cwd = os.getcwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(main, [
            "check", "--no-cache", "--isolated", "--jobs", "1", "--exit-zero",
            "--output-format", "json", *paths,
        ])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    return [_key(root, finding) for finding in json.loads(result.stdout)]


def _key(root: Path, finding: dict[str, Any]) -> tuple[Any, ...]:
    return (os.path.normpath(root / finding["filename"]), finding["code"],
            finding["location"]["row"], finding["location"]["column"], finding["message"],
            json.dumps(finding["fix"]))


@pytest.mark.slow
def test_each_file_alone_reports_what_the_whole_project_reports(tmp_path: Path) -> None:
    root = _project(tmp_path)
    whole: dict[str, list[tuple[Any, ...]]] = {}
    for key in _findings(root, "."):
        whole.setdefault(key[0], []).append(key)
    assert whole, "the project has findings to compare"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*.py"))
    for name in files:
        alone = sorted(_findings(root, name))
        assert alone == sorted(whole.get(str(root / name), [])), name
    # And several files named together.
    named = ("train.py", "setup.py", "pkg/data.py")
    together = sorted(_findings(root, *named))
    expected = sorted(k for name in named for k in whole.get(str(root / name), []))
    assert together == expected


def _run(root: Path, name: str) -> runner.RunResult:
    cwd = os.getcwd()
    os.chdir(root)
    try:
        options = runner.RunOptions(jobs=1, use_cache=False)
        return runner.run([Path(name)], ConfigResolver(RawSettings(), isolated=True), options)
    finally:
        os.chdir(cwd)


def test_a_file_no_index_rule_wants_does_not_survey_the_project(tmp_path: Path) -> None:
    root = _project(tmp_path)
    result = _run(root, "setup.py")
    assert isinstance(result.project, runner._LazyProject)
    assert result.project._files is None  # never walked
    # Asked for (--since), it is the project's files in the project's order.
    assert Path("setup.py") in list(result.project)
    assert len(result.project) == len(list(root.rglob("*.py")))


def test_a_file_that_reads_the_index_surveys_the_project(tmp_path: Path) -> None:
    root = _project(tmp_path)
    result = _run(root, "train.py")
    assert not isinstance(result.project, runner._LazyProject)
    assert len(result.project) == len(list(root.rglob("*.py")))


def test_a_file_the_seed_rules_drop_by_its_syntax_does_not_survey_the_project(
    tmp_path: Path,
) -> None:
    """SL301 and SL302 leave a project file that names no distributed sampler to their index
    stage unparsed (``Rule.parse_for``); a file named alone is parsed for them first, as
    before: one that builds no sampler at all keeps neither, and the project is not read."""
    root = _project(tmp_path)
    (root / "describe.py").write_text(
        "def describe(loader):\n    return type(loader.sampler).__name__\n"
    )
    result = _run(root, "describe.py")
    assert isinstance(result.project, runner._LazyProject)
    assert result.project._files is None  # never walked


# The builder's package re-exports it: the script that holds the run's seed imports the package,
# and never spells the builder's module name.
REEXPORTED = {
    "pyproject.toml": "[project]\nname = 'demo'\n",
    "train.py": (
        "import torch\n"
        "from feeds import make_loader\n\n\n"
        "def main(cfg):\n"
        "    torch.manual_seed(cfg.SEED)\n"
        "    loader = make_loader(cfg)\n"
        "    for epoch in range(cfg.EPOCHS):\n"
        "        loader.sampler.set_epoch(epoch)\n"
    ),
    "feeds/__init__.py": "from .build import make_loader\n",
    "feeds/build.py": (
        "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
        "def make_loader(cfg):\n"
        "    dataset = list(range(cfg.SIZE))\n"
        "    sampler = DistributedSampler(dataset, shuffle=True)\n"
        "    return DataLoader(dataset, sampler=sampler)\n"
    ),
}


def test_a_seed_reaches_a_builder_through_its_package_in_a_run_over_it_alone(
    tmp_path: Path,
) -> None:
    for name, code in REEXPORTED.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(code)
    builder = str(tmp_path / "feeds" / "build.py")
    whole = [key for key in _findings(tmp_path, ".") if key[0] == builder]
    assert [(key[1], key[2]) for key in whole] == [("SL301", 6)]
    assert "`cfg.SEED`" in whole[0][4]
    assert _findings(tmp_path, "feeds/build.py") == whole  # pre-commit names it alone
    # The rule reads the packages' re-exports itself: alone, it still follows them.
    assert _findings(tmp_path, "--select", "SL301", "feeds/build.py") == whole
    # The fix passes the seed the script holds, and a second --fix finds nothing to change.
    fix = ["check", "--no-cache", "--isolated", "--jobs", "1", "--fix", "--unsafe-fixes", "."]
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        first = CliRunner().invoke(main, fix)
        fixed = (tmp_path / "feeds" / "build.py").read_text()
        second = CliRunner().invoke(main, fix)
    finally:
        os.chdir(cwd)
    assert first.exit_code == 0, first.output
    assert fixed == REEXPORTED["feeds/build.py"].replace(
        "shuffle=True)", "shuffle=True, seed=cfg.SEED)"
    )
    assert second.exit_code == 0, second.output
    assert (tmp_path / "feeds" / "build.py").read_text() == fixed
    assert "All checks passed!" in second.output


def test_a_file_that_reads_the_index_is_parsed_and_judged_by_ast_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its pre-survey (is the project needed?), its survey, its syntax stage and the positions
    # of its findings all read one `ast` tree: each parse of a 1,000-line file costs 10 ms of a
    # run whose budget is a few times the tool's start-up.
    import ast

    from sampler_lint.analysis import syntax_summary

    root = _project(tmp_path)
    text = (
        "import torch\n"
        "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
        "def main(dataset, args):\n"
        "    torch.manual_seed(args.seed)\n"
        "    sampler = DistributedSampler(dataset, shuffle=True, seed=0)\n"
        "    loader = DataLoader(dataset, sampler=sampler)\n"
        "    for epoch in range(args.epochs):\n"
        "        sampler.set_epoch(epoch)\n"
        "        for batch in loader:\n"
        "            pass\n"
    )
    (root / "seeded.py").write_text(text)
    parses: list[str] = []
    real = ast.parse

    def counting(source: Any, *args: Any, **kwargs: Any) -> ast.AST:
        if source == text:
            parses.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    # And the syntax stage judges it once: the pre-survey's answer serves the survey.
    judged: list[str] = []
    given = syntax_summary.SyntaxSummary.given

    def judging(self: Any, source: str, *args: Any) -> Any:
        if source == text:
            judged.append(source)
        return given(self, source, *args)

    monkeypatch.setattr(syntax_summary.SyntaxSummary, "given", judging)
    syntax_summary.parsed.cache_clear()
    assert [key[1] for key in _findings(root, "seeded.py")] == ["SL301"]  # found, and placed
    assert len(parses) == 1
    assert len(judged) == 1


def test_the_remembered_syntax_stage_serves_only_the_same_lint_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The judgment is kept on the tree, which outlives a run (the last text's tree is kept):
    # another run's options (another vocabulary, other rule options) are judged anew.
    from sampler_lint.analysis import syntax_summary
    from sampler_lint.engine import registry, survey

    text = "from torch.utils.data import DistributedSampler\nDistributedSampler(ds, seed=0)\n"
    settings = ConfigResolver(RawSettings(), isolated=True).for_path(Path("train.py"))
    first, second = (
        runner.lint_options_for(settings, Path("train.py"), runner.RunOptions()) for _ in range(2)
    )
    rules = list(registry.all_rules())
    tree = syntax_summary.parsed(text)
    judged: list[object] = []
    given = syntax_summary.SyntaxSummary.given

    def judging(self: Any, source: str, vocabulary: Any, options: Any) -> Any:
        judged.append(options)
        return given(self, source, vocabulary, options)

    monkeypatch.setattr(syntax_summary.SyntaxSummary, "given", judging)
    kept = survey._syntax_stage(tree, rules, first, text)
    assert survey._syntax_stage(tree, rules, first, text) == kept and len(judged) == 1
    assert survey._syntax_stage(tree, rules[:3], first, text)[0] == [
        rule for rule in kept[0] if rule in rules[:3]
    ] and len(judged) == 2
    assert survey._syntax_stage(tree, rules, second, text) == kept and len(judged) == 3
