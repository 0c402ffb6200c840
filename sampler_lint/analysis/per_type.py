"""A table of answers about types, each worked out the first time the type is met.

The loops that visit every node of a syntax tree ask the same question of each node's type (which
fields hold nodes, which blocks a statement has, whether a value is a child to visit): a
subscript of this table answers it after the first time, with no call. A helper that kept its
own cache cost a call per node, and ``get(kind) or make(kind)`` a call for every empty answer (a
name, a third of all nodes, has no fields to visit). An exact ``dict``'s ``get`` is a little
faster than this subclass's subscript (15 ns a look-up), not worth a second pattern.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

Kind = TypeVar("Kind", bound=type)
Answer = TypeVar("Answer")


class PerType(dict[Kind, Answer], Generic[Kind, Answer]):
    """``table[kind]``: ``make(kind)``, made once per type."""

    def __init__(self, make: Callable[[Kind], Answer]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, kind: Kind) -> Answer:
        answer = self[kind] = self._make(kind)
        return answer
