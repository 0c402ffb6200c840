"""Documentation stays true: docs/rules.md is what the rules say, and every rule's page has the
sections a user looks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from sampler_lint.engine.registry import all_rules
from sampler_lint.output.docs import render_rule, rules_markdown

from .conftest import ROOT

SECTIONS = ("## What it does", "## Why is this bad", "## Example", "## Use instead",
            "## Fix safety", "## References")


def test_rules_markdown_is_up_to_date() -> None:
    written = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert written == rules_markdown(), (
        "docs/rules.md is stale: python -m sampler_lint.output.docs > docs/rules.md"
    )


@pytest.mark.parametrize("rule", [r for r in all_rules() if not r.engine_rule],
                         ids=lambda r: r.code)
def test_every_rule_documents_every_section(rule: type) -> None:
    page = render_rule(rule)
    for section in SECTIONS:
        assert section in page, f"{rule.code} lacks {section}"
    assert f'<a id="{rule.code.lower()}"></a>' in rules_markdown()


def test_readme_lists_every_rule() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for rule in all_rules():
        assert f"| {rule.code} | {rule.name} |" in readme, f"README lacks {rule.code}"


def test_every_option_the_ci_guide_uses_exists() -> None:
    import re

    from click.testing import CliRunner

    from sampler_lint.cli import main

    help_text = CliRunner().invoke(main, ["check", "--help"]).output
    guide = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    used = set(re.findall(r"(--[a-z][a-z-]+)", guide))
    assert used, "the guide names no options"
    missing = sorted(option for option in used if option not in help_text)
    assert not missing, f"docs/ci.md uses options `check` does not have: {missing}"


def test_pre_commit_hooks_run_their_entries(tmp_path: Path) -> None:
    import shlex
    import subprocess
    import sys

    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    entries = [line.split(":", 1)[1].strip() for line in hooks.splitlines()
               if line.strip().startswith("entry:")]
    assert len(entries) == 2
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    target = tmp_path / "train.py"
    for entry in entries:
        target.write_text(
            "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"
        )
        argv = shlex.split(entry)
        assert argv[0] == "sampler-lint"
        process = subprocess.run(
            [sys.executable, "-m", "sampler_lint", *argv[1:], "--no-cache", str(target)],
            cwd=tmp_path, capture_output=True, text=True, check=False,
        )
        # pre-commit fails the commit on exit 1: the finding remains (its fix is unsafe).
        assert process.returncode == 1, process.stderr
        assert "SL101" in process.stdout


def _yaml_blocks(markdown: str) -> list[str]:
    import re

    return re.findall(r"```yaml\n(.*?)```", markdown, re.DOTALL)


def test_readme_ci_snippets_parse_and_run_the_right_commands() -> None:
    import shlex

    yaml = __import__("pytest").importorskip("yaml")
    from click.testing import CliRunner

    from sampler_lint.cli import main

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Use in CI"):]
    blocks = [yaml.safe_load(block) for block in _yaml_blocks(section)]
    workflow, gitlab, pre_commit = blocks[:3]
    steps = workflow["jobs"]["lint"]["steps"]
    commands = [step["run"] for step in steps if "run" in step and "sampler-lint" in step["run"]]
    assert any("--output-format github" in c and "--output-format sarif" in c
               and "--baseline" in c for c in commands)
    assert any(step.get("uses", "").startswith("github/codeql-action/upload-sarif")
               for step in steps)
    assert gitlab["sampler-lint"]["artifacts"]["reports"]["codequality"] == "gl-code-quality.json"
    hooks = {hook["id"] for repo in pre_commit["repos"] for hook in repo["hooks"]}
    defined = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hooks <= {hook["id"] for hook in defined}
    # Every sampler-lint command in the snippets is accepted by the CLI as written.
    for command in [*commands, *gitlab["sampler-lint"]["script"]]:
        if not command.startswith("sampler-lint"):
            continue
        argv = shlex.split(command)[1:]
        result = CliRunner().invoke(main, [*argv, "--help"])
        assert result.exit_code == 0, (command, result.output)
        for option in (a for a in argv if a.startswith("--")):
            assert option in result.output, (command, option)


def test_the_readme_demo_shows_the_sl101_finding_with_a_code_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first README command lints examples/ with this repository's own configuration."""
    from click.testing import CliRunner

    from sampler_lint.cli import main

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    demo = readme.split("<!-- demo-command -->", 1)[1].split("```bash\n", 1)[1].split("\n")[0]
    check = demo[demo.index("check"):].split()
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, [*check, "--no-cache"])
    assert result.exit_code == 0  # --exit-zero: the demo command itself succeeds
    assert "examples/train_ddp.py:17:17: SL101" in result.stdout
    assert "train_idx = train_idx.split(train_idx.size(0) // world_size)[rank]" in result.stdout
    assert "^^^" in result.stdout
