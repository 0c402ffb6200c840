"""The plain, picklable results the engine hands to reporters."""

from __future__ import annotations

from dataclasses import dataclass, field

DOCS_URL = "https://github.com/sampler-lint/sampler-lint/blob/main/docs/rules.md#{code}"


def plural(count: int, word: str) -> str:
    """``1 error``, ``2 errors``: counts as the reports and the progress line say them."""
    return f"{count} {word}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class Location:
    """1-based line and column."""

    line: int
    column: int


@dataclass(frozen=True)
class Edit:
    content: str
    location: Location
    end_location: Location


@dataclass(frozen=True)
class FixInfo:
    applicability: str
    message: str
    edits: tuple[Edit, ...] | None = None  # computed only for formats that print them
    risk: str = ""  # unsafe fixes: what could go wrong when it is applied (one line)


@dataclass(frozen=True)
class NotebookPlace:
    """Where a finding in a notebook cell sits in the ``.ipynb`` file itself: the formats and
    filters that address files (github, sarif, gitlab, the baseline, ``--since``) use this, while
    people read ``path.ipynb:cell N`` with the line inside the cell."""

    path: str
    cell: int
    location: Location  # line and column in the notebook's JSON text
    end_location: Location


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: FixInfo | None = None
    source_line: str = ""
    notebook: NotebookPlace | None = None
    #: The code frame: the line before the finding (when there is one) through its last line,
    #: the first of them numbered ``frame_start``; empty when only ``source_line`` is known.
    frame: tuple[str, ...] = ()
    frame_start: int = 0

    @property
    def path(self) -> str:
        """The file the finding is in (``filename`` names the cell for a notebook)."""
        return self.notebook.path if self.notebook is not None else self.filename

    @property
    def file_location(self) -> Location:
        return self.notebook.location if self.notebook is not None else self.location

    @property
    def file_end_location(self) -> Location:
        return self.notebook.end_location if self.notebook is not None else self.end_location

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code.lower())

    def sort_key(self) -> tuple[str, int, int, int, str]:
        cell = self.notebook.cell if self.notebook is not None else 0  # cell 10 after cell 9
        return (self.path, cell, self.location.line, self.location.column, self.code)


@dataclass
class FileResult:
    """What happened to one file."""

    filename: str
    findings: list[Finding] = field(default_factory=list)
    fixed: int = 0  # findings removed by applied fixes
    fixed_codes: dict[str, int] = field(default_factory=dict)
    diff: str | None = None  # unified diff, with --diff
    fixed_source: bytes | None = None  # with --stdin-filename and --fix
    wrote: bool = False
    errors: list[str] = field(default_factory=list)  # fix failures and internal errors
    internal_error: bool = False
    skipped: bool = False  # no enabled rule could match: never parsed
    unreadable: bool = False  # could not be read: nothing was linted
