"""A rule from another distribution, written against the public contract only (``sampler_lint.rule``
and ``sampler_lint.analysis``), registered through the ``sampler_lint.rules`` entry-point group:
it is found, documented, run, fixed and suppressed like a bundled rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import ROOT

RULE_MODULE = '''
"""A third party's rule: ``torch.utils.data.DataLoader(..., num_workers=0)`` in a training loop."""

import libcst as cst

from sampler_lint.analysis.matching import call_name, get_arg
from sampler_lint.rule import Applicability, Example, FileContext, Fix, Rule, Severity


class NoWorkers(Rule):
    code = "ACME001"
    name = "no-workers"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE
    requires = (("num_workers",),)
    documentation = """## What it does
Flags a loader built with `num_workers=0`.

## Example
```python
loader = DataLoader(ds, num_workers=0)
```
"""
    examples = (Example("loader = DataLoader(ds, num_workers=0)\\n", (1,)),)

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)

    def visit_Call(self, node: cst.Call) -> None:
        if call_name(node) != "DataLoader":
            return
        arg = get_arg(node, None, "num_workers")
        value = arg.value if isinstance(arg, cst.Arg) else None
        if isinstance(value, cst.Integer) and value.value == "0":
            new = arg.with_changes(value=cst.Integer("2"))
            self.report(node, "loader without workers", Fix([(arg, new)], Applicability.SAFE,
                                                            "use two workers"))
'''

ENTRY_POINTS = "[sampler_lint.rules]\nacme = acme_rules.no_workers\n"
METADATA = "Metadata-Version: 2.1\nName: acme-rules\nVersion: 0.1\n"


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    package = site / "acme_rules"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "no_workers.py").write_text(RULE_MODULE)
    info = site / "acme_rules-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(METADATA)
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT), env.get("PYTHONPATH", "")])
    env.pop("FORCE_COLOR", None)
    env["NO_COLOR"] = "1"
    return env


def run(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sampler_lint", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )


def test_a_third_party_rule_runs_fixes_and_documents(plugin_env: dict[str, str],
                                                      tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    source = textwrap.dedent("""\
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, num_workers=0)
        other = DataLoader(ds, num_workers=0)  # noqa: ACME001
    """)
    (project / "train.py").write_text(source)

    found = run(plugin_env, "check", "--isolated", "--no-cache", "--select", "ACME001",
                "--output-format", "json", "--exit-zero", ".", cwd=project)
    assert found.returncode == 0, found.stderr
    findings = json.loads(found.stdout)
    assert [(f["code"], f["location"]["row"]) for f in findings] == [("ACME001", 2)]

    shown = run(plugin_env, "rule", "ACME001", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "num_workers=0" in shown.stdout

    fixed = run(plugin_env, "check", "--isolated", "--no-cache", "--select", "ACME001", "--fix",
                ".", cwd=project)
    assert fixed.returncode == 0, fixed.stderr + fixed.stdout
    text = (project / "train.py").read_text()
    assert "loader = DataLoader(ds, num_workers=2)" in text
    assert "other = DataLoader(ds, num_workers=0)  # noqa: ACME001" in text


def test_the_bundled_rules_stay_when_a_plugin_is_installed(plugin_env: dict[str, str],
                                                          tmp_path: Path) -> None:
    listed = run(plugin_env, "rule", "--all", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "ACME001" in listed.stdout and "SL101" in listed.stdout


def test_no_plugin_declared_means_no_importlib_metadata(tmp_path: Path) -> None:
    """Listing the rules where no distribution declares the group leaves importlib.metadata
    (25 ms of start-up) unimported, and the command line does not import what only one output
    format needs (xml.sax, 10 ms); with a plugin, see the tests above."""
    code = (
        "import sys\n"
        "import sampler_lint.cli\n"
        "from sampler_lint.engine import registry\n"
        "assert registry.all_rules()\n"
        "print([m for m in ('importlib.metadata', 'xml.sax.saxutils') if m in sys.modules])\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    shown = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == "[]"


def test_the_plugin_look_leaves_unsure_cases_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sampler_lint.engine import registry

    site = tmp_path / "site"
    (site / "plain-1.0.dist-info").mkdir(parents=True)
    (site / "plain-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nx = y\n")
    (site / "old-1.0.egg-info").write_text("Metadata-Version: 1.0\n")  # a file: no entry points
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "absent")])
    assert registry._surely_no_plugins()

    declared = site / "acme-0.1.dist-info"
    declared.mkdir()
    (declared / "entry_points.txt").write_text(ENTRY_POINTS)
    assert not registry._surely_no_plugins()
    declared.joinpath("entry_points.txt").unlink()
    assert registry._surely_no_plugins()

    shouting = site / "Shout-1.0.DIST-INFO"  # importlib.metadata ignores the case
    shouting.mkdir()
    (shouting / "entry_points.txt").write_text(ENTRY_POINTS)
    assert not registry._surely_no_plugins()
    (shouting / "entry_points.txt").unlink()

    monkeypatch.setattr(sys, "path", [site, str(site)])  # a Path: left to importlib.metadata
    assert not registry._surely_no_plugins()

    zipped = tmp_path / "bundle.zip"
    zipped.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    monkeypatch.setattr(sys, "path", [str(site), str(zipped)])
    assert not registry._surely_no_plugins()  # importlib.metadata reads zips; we do not

    class Finder:
        @staticmethod
        def find_distributions(*args: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "path", [str(site)])
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert not registry._surely_no_plugins()
