"""A file's facts are the same in every process: Python salts the hash of strings per process,
so a fact list built from a set must be put in an order of its own. Facts that changed order
from one run to the next would change their digests, and a warm run would re-lint every file
that read them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"

# Every collector's facts of every file named on the command line, one line per file.
_DUMP = """
import ast, sys
from sampler_lint.engine import registry
from sampler_lint.engine.survey import Collectors
collectors = Collectors.for_rules(tuple(registry.all_rules())).collectors
for path in sys.argv[1:]:
    tree = ast.parse(open(path, encoding="utf-8").read())
    print(path, [(c.name, c.facts_in(tree, path)) for c in collectors])
"""

# One call that may be handed either of two constructions under one keyword.
BRANCHES = (
    "from torchvision import transforms\nfrom timm.data import create_transform\n"
    "from torch.utils.data import DataLoader\nfrom data import ImageDataset\n\n\n"
    "def build(cfg, train):\n"
    "    if train:\n        transform = create_transform(cfg.size)\n"
    "    else:\n        transform = transforms.Compose([transforms.ToTensor()])\n"
    "    data = ImageDataset(root=cfg.root, transform=transform)\n"
    "    return DataLoader(data, batch_size=8, num_workers=2)\n"
)


def _facts(files: list[Path], salt: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", _DUMP, *map(str, files)], capture_output=True, text=True,
        env={**os.environ, "PYTHONHASHSEED": salt}, check=True,
    )
    return result.stdout


def test_facts_do_not_depend_on_the_hash_salt(tmp_path: Path) -> None:
    (tmp_path / "branches.py").write_text(BRANCHES)
    files = [tmp_path / "branches.py"]
    for path in sorted(FIXTURES.rglob("*.py")):
        try:
            compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        except SyntaxError:
            continue
        files.append(path)
    first = _facts(files, "1")
    assert "Compose" in first and "create_transform" in first  # both constructions are facts
    for salt in ("2", "3", "4"):
        assert _facts(files, salt) == first, salt
