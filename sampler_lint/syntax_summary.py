"""The second pre-filter stage: a summary of a file's syntax from Python's own parser.

After the text pre-filter, a file whose text mentions what a rule needs is still often far from a
match (Lightning: 97 of 646 files mention ranks, world sizes and ``//``; 15 have the shapes).
``ast.parse`` is several times cheaper than libcst's parse and traversal, so the engine parses
with it first and asks each rule's :meth:`~sampler_lint.rule.Rule.may_match` whether the node
kinds and names present could hold its pattern; only files some rule still wants are parsed with
libcst. Like the text stage, a rule's answer must never hide a finding: answer ``True`` whenever
unsure.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class SyntaxSummary:
    #: Class names of every node in the tree (``"Subscript"``, ``"FloorDiv"``, ``"Slice"``...).
    kinds: frozenset[str]
    #: The last name of every called function (``x.split(...)`` -> ``"split"``, ``X[T](...)`` ->
    #: ``"X"``) and the original
    #: name of everything imported (``from itertools import islice as cut`` -> ``"islice"``), so
    #: an aliased import still counts.
    names: frozenset[str]

    @classmethod
    def of(cls, tree: ast.Module) -> SyntaxSummary:
        kinds: set[str] = set()
        names: set[str] = set()
        for node in ast.walk(tree):
            kind = type(node)
            kinds.add(kind.__name__)
            if kind is ast.Call:
                func = node.func  # type: ignore[attr-defined]
                if type(func) is ast.Subscript:  # X[T](...) constructs X
                    func = func.value
                if type(func) is ast.Name:
                    names.add(func.id)
                elif type(func) is ast.Attribute:
                    names.add(func.attr)
            elif kind is ast.Import or kind is ast.ImportFrom:
                for alias in node.names:  # type: ignore[attr-defined]
                    names.add(alias.name.rsplit(".", 1)[-1])
        return cls(frozenset(kinds), frozenset(names))


def summarize(text: str) -> SyntaxSummary | None:
    """The summary, or ``None`` when Python cannot parse the text (libcst then decides)."""
    try:
        return SyntaxSummary.of(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
