"""The run's project index as the lint helper (:mod:`sampler_lint.engine.lint_helper`) sees it:
each question goes over the pipe to the run's process, which holds the index. A module of its
own because the helper module is imported as the process starts, and the index's is not light."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sampler_lint.analysis.index import ProjectIndex


class RemoteIndex(ProjectIndex):
    """The run's index, in the helper: each question is asked there once per task."""

    def __init__(self, ask: Callable[[tuple[Any, ...]], Any]) -> None:
        super().__init__()
        self._ask = ask
        self._answers: dict[tuple[Any, ...], Any] = {}

    def get(self, kind: str) -> list[Any]:
        return self._asked(("get", kind))  # type: ignore[no-any-return]

    def get_for(self, kind: str, token: str) -> list[Any]:
        return self._asked(("get_for", kind, token))  # type: ignore[no-any-return]

    def files_on_disk(self) -> bool:
        return self._asked(("files_on_disk",))  # type: ignore[no-any-return]

    def _asked(self, question: tuple[Any, ...]) -> Any:
        if question not in self._answers:
            self._answers[question] = self._ask(question)
        return self._answers[question]
