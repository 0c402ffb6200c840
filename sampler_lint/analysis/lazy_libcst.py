"""libcst, imported when one of its names is first read.

Importing libcst takes longer than everything else the tool imports together (about 0.3 s of
the 0.5 s ``sampler-lint --version`` took on the 2-core CI machine), yet a run whose files the
cache answers, or whose pre-filters rule every file out (most one-file pre-commit runs), never
builds a libcst tree. So every module of the tool writes ``import
sampler_lint.analysis.lazy_libcst as cst`` and reads ``cst.Name`` as it would read libcst's: the
first read imports libcst, and each name read is then kept in this module's namespace, so later
reads are plain attribute lookups.
``lazy_libcst.pyi`` tells type checkers that this module is libcst.

A name read while a module is being imported (a base class, a tuple of node types kept in a
constant) imports libcst at start-up again: such reads belong inside functions.
``tests/test_lazy_libcst.py`` fails when one creeps in.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        # Dunder probes (``__path__``, ``__wrapped__``) from importlib, inspect or pytest are
        # about this module, not libcst's names: answering them would import libcst.
        raise AttributeError(name)
    value = getattr(importlib.import_module("libcst"), name)
    globals()[name] = value
    return value
