"""Parsing with libcst's node checks off must leave them on for everything else."""

from __future__ import annotations

import libcst as cst
import pytest

from sampler_lint.engine.findings import Finding
from sampler_lint.engine.linter import parse


def test_node_checks_are_back_after_parsing() -> None:
    module = parse("ok.py", b"x = compute(1, 2)  # note\n")
    assert isinstance(module, cst.Module)
    assert module.code == "x = compute(1, 2)  # note\n"
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")  # a fix building an invalid node is still refused


def test_node_checks_are_back_after_a_syntax_error() -> None:
    assert isinstance(parse("bad.py", b"def broken(:\n"), Finding)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
