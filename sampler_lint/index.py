"""The project index: facts from every file of the project that a rule may need while linting
one file (a base class defined elsewhere, whether the project uses Lightning, who calls
``set_epoch``).

A rule contributes facts through ``Rule.collect_facts`` (a classmethod taking the file's ``ast``
tree) guarded by ``Rule.index_requires`` (a text pre-filter in the shape of ``Rule.requires``). The
engine builds the index in a first pass over the whole project (the nearest ``pyproject.toml`` or
git root above the linted paths), so a run over a few changed files sees the same facts as a run
over everything. Facts are plain picklable values keyed by a fact name.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ProjectIndex:
    facts: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))

    def add(self, kind: str, values: list[Any]) -> None:
        self.facts[kind].extend(values)

    def get(self, kind: str) -> list[Any]:
        return self.facts.get(kind, [])

    def merge(self, other: ProjectIndex) -> None:
        for kind, values in other.facts.items():
            self.facts[kind].extend(values)


EMPTY_INDEX = ProjectIndex()
