"""A progress bar on a terminal (stderr), shown only for runs long enough to need one."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from sampler_lint.engine import replay

SHOW_AFTER_SECONDS = 1.0


class TerminalProgress:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.progress: Progress | None = None
        self.task = None

    def __call__(self, done: int, total: int, doing: str = "linting") -> None:
        """``doing`` says what the run is at: ``reading N files`` (each linted file once, for
        the pre-filters), ``indexing W files`` (the files some rule still wants, judged by
        the index stage: a large project's questions are asked here), then ``linting M``
        (those kept; the index is read further as rules ask)."""
        if self.progress is None:
            if time.monotonic() - self.started < SHOW_AFTER_SECONDS or done >= total:
                return
            self.progress = Progress(
                "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), console=Console(stderr=True), transient=True,
            )
            self.progress.start()
            replay.spoil()  # a bar drawn over the output: such a run is not replayed
            self.task = self.progress.add_task(doing, total=total)  # type: ignore[assignment]
        assert self.task is not None
        # The total changes per stage (reading, indexing, linting); ``done`` never goes back.
        self.progress.update(self.task, completed=done, total=total, description=doing)
        if done >= total:
            self.progress.stop()
