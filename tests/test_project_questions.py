"""Project questions ("does any file import Lightning?") are answered from the files parsed
anyway, and parse more files only while the answer is still no: the same answer as reading every
file, for less."""

from __future__ import annotations

from pathlib import Path

from sampler_lint.analysis.frameworks import FACT_MODULES
from sampler_lint.engine.registry import rules_by_code
from sampler_lint.engine.runner import build_index

SAMPLER = (
    "from torch.utils.data import BatchSampler\n\n\n"
    "class Chunks(BatchSampler):\n"
    "    def __init__(self, sizes):\n"
    "        self.sizes = sizes\n\n"
    "    def __iter__(self):\n"
    "        yield from self.sizes\n"
)


def _modules(tmp_path: Path, files: dict[str, str]) -> list[str]:
    for name, code in files.items():
        (tmp_path / name).write_text(code)
    index = build_index(sorted(tmp_path.glob("*.py")), [rules_by_code()["SL501"]])
    return sorted(set(index.get(FACT_MODULES)))


def test_an_import_nothing_else_parses_is_still_found(tmp_path: Path) -> None:
    # app.py mentions nothing any rule or other fact needs: only the open question reads it.
    found = _modules(tmp_path, {"app.py": "import lightning as L\n\nx = 1\n", "s.py": SAMPLER})
    assert found == ["lightning"]


def test_no_import_anywhere_stays_no(tmp_path: Path) -> None:
    found = _modules(tmp_path, {"app.py": "# lightning is not used here\nx = 1\n", "s.py": SAMPLER})
    assert found == []


def test_a_settled_question_reads_no_more_files(tmp_path: Path) -> None:
    # a.py is parsed anyway (it passes batch_sampler=) and answers the question; z.py would only
    # be read for it, and is not.
    files = {
        "a.py": "import lightning as L\nL.Trainer().fit(m, DataLoader(d, batch_sampler=b))\n",
        "z.py": "import lightning.fabric\n",
        "s.py": SAMPLER,
    }
    assert _modules(tmp_path, files) == ["lightning"]
