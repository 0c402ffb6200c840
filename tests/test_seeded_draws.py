"""A draw from ``random`` or ``numpy.random`` is the same on every rank only when the module
seeds that very module, before the draw, with a seed the same on every rank (SL301, SL302).
``np.random.seed(seed)`` does not seed ``random``: EVA's ``args.seed = random.randint(0,
1e6)`` (one draw per rank, unseeded) passed for a shared seed because the file's text held
``np.random.seed(``, and SL301's fix made every rank shuffle its own way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main


def _codes(path: Path) -> list[tuple[str, int]]:
    result = CliRunner().invoke(main, [
        "check", "--no-cache", "--isolated", "--output-format", "json",
        "--select", "SL301,SL302", str(path),
    ])
    assert result.exit_code in (0, 1), result.output
    return [(f["code"], f["location"]["row"]) for f in json.loads(result.stdout)]


# SL301: the shared seed `args.seed`, unless the script may redraw it per rank.
REDRAWN = '''\
import argparse
import random

import numpy as np
import torch
from torch.utils.data import DistributedSampler


def main(dataset):
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", default=88, type=int)
    parser.add_argument("--rand", action="store_true")
    args = parser.parse_args()
{before}    if args.rand:
        args.seed = {draw}
{after}    torch.manual_seed(args.seed)
    return DistributedSampler(dataset, shuffle=True)
'''


@pytest.mark.parametrize(("before", "draw", "after", "shared"), [
    # Unseeded draws differ per rank: no shared seed (SL301 stays quiet).
    ("", "random.randint(0, 10**6)", "", False),
    ("", "random.randint(0, 10**6)", "    np.random.seed(args.seed)\n", False),
    ("    np.random.seed(7)\n", "random.randint(0, 10**6)", "", False),
    ("", "np.random.randint(10**6)", "    random.seed(7)\n", False),
    # Seeded after the draw, or with a per-rank value: still per rank.
    ("", "random.randint(0, 10**6)", "    random.seed(7)\n", False),
    ("    random.seed(7 + torch.distributed.get_rank())\n", "random.randint(0, 10**6)", "",
     False),
    # Seeded before, the same on every rank: one seed for all.
    ("    random.seed(7)\n", "random.randint(0, 10**6)", "", True),
    ("    np.random.seed(7)\n", "np.random.randint(10**6)", "", True),
    ("", "int(args.seed * 2)", "", True),
])
def test_a_seed_redrawn_per_rank_is_no_shared_seed(
    tmp_path: Path, before: str, draw: str, after: str, shared: bool
) -> None:
    code = REDRAWN.format(before=before, draw=draw, after=after)
    (tmp_path / "train.py").write_text(code)
    line = code.splitlines().index("    return DistributedSampler(dataset, shuffle=True)") + 1
    assert _codes(tmp_path / "train.py") == ([("SL301", line)] if shared else [])


# SL302: a sampler seeded with a draw, the same on every rank only after a shared seeding.
DRAWN = '''\
import random

import numpy as np
from torch.utils.data import DistributedSampler


def build(dataset):
{before}    return DistributedSampler(dataset, seed=random.randint(0, 100))
'''


@pytest.mark.parametrize(("before", "flagged"), [
    ("", True),
    ("    np.random.seed(0)\n", True),
    ("    random.seed(0)\n", False),
    ("    from random import seed\n    seed(0)\n", False),
])
def test_a_draw_is_rank_free_only_after_its_own_module_is_seeded(
    tmp_path: Path, before: str, flagged: bool
) -> None:
    code = DRAWN.format(before=before)
    (tmp_path / "build.py").write_text(code)
    line = len(code.splitlines())
    assert _codes(tmp_path / "build.py") == ([("SL302", line)] if flagged else [])


# SL301's fix, when the seed is left `None` unless the run sets it: `seed=args.seed` would make
# the sampler fail in every run that does not (SimSiam's `--seed`, default None).
DECLARED = '''\
import argparse

from torch.utils.data import DistributedSampler


def main(dataset):
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", {declared})
    args = parser.parse_args()
    return DistributedSampler(dataset)


def build(dataset, seed={default}):
    return DistributedSampler(dataset)
'''


@pytest.mark.parametrize(("declared", "default", "passed", "param"), [
    ("default=None, type=int", "None", "args.seed or 0", "seed or 0"),
    ("type=int", "None", "args.seed or 0", "seed or 0"),
    ("type=int, required=False", "0", "args.seed or 0", "seed"),
    ("default=0, type=int", "1", "args.seed", "seed"),
    ("type=int, required=True", "1", "args.seed", "seed"),
])
def test_a_seed_left_none_by_default_is_passed_with_torchs_default_beside_it(
    tmp_path: Path, declared: str, default: str, passed: str, param: str
) -> None:
    path = tmp_path / "train.py"
    code = DECLARED.format(declared=declared, default=default)
    path.write_text(code)
    result = CliRunner().invoke(main, [
        "check", "--no-cache", "--isolated", "--select", "SL301", "--fix", "--unsafe-fixes",
        str(path),
    ])
    assert result.exit_code == 0, result.output
    assert path.read_text() == code.replace(
        "    args = parser.parse_args()\n    return DistributedSampler(dataset)\n",
        f"    args = parser.parse_args()\n    return DistributedSampler(dataset, seed={passed})\n",
    ).replace(
        f"seed={default}):\n    return DistributedSampler(dataset)\n",
        f"seed={default}):\n    return DistributedSampler(dataset, seed={param})\n",
    )


# A sampler class chosen at run time whose default is torch's DistributedSampler (ColossalAI's
# plugins: `distributed_sampler_cls = distributed_sampler_cls or DistributedSampler`, then built
# without the `seed` the method takes: every plugin-built sampler shuffles with seed 0).
CHOSEN = '''\
from torch.utils.data import DistributedSampler, RandomSampler


class Plugin:
    def prepare(self, dataset, shuffle=False, seed=1024, sampler_cls=None):
{choose}        return sampler_cls(dataset, shuffle=shuffle)
'''


@pytest.mark.parametrize(("choose", "flagged"), [
    ("        sampler_cls = sampler_cls or DistributedSampler\n", True),
    ("        sampler_cls = sampler_cls or self.default_cls or DistributedSampler\n", True),
    ("        sampler_cls = DistributedSampler or sampler_cls or self.default_cls\n", True),
    ("        sampler_cls = DistributedSampler if sampler_cls is None else sampler_cls\n", True),
    ("        sampler_cls = sampler_cls or RandomSampler\n", False),
    ("        sampler_cls = make_sampler_class(sampler_cls)\n", False),
    ("", False),
])
def test_a_sampler_class_chosen_at_run_time_defaults_to_torchs(
    tmp_path: Path, choose: str, flagged: bool
) -> None:
    code = CHOSEN.format(choose=choose)
    (tmp_path / "plugin.py").write_text(code)
    line = len(code.splitlines())
    assert _codes(tmp_path / "plugin.py") == ([("SL301", line)] if flagged else [])


def test_a_parameter_defaulting_to_the_class_is_chosen_too(tmp_path: Path) -> None:
    code = CHOSEN.format(choose="").replace("sampler_cls=None", "sampler_cls=DistributedSampler")
    (tmp_path / "plugin.py").write_text(code)
    assert _codes(tmp_path / "plugin.py") == [("SL301", len(code.splitlines()))]


def test_the_seed_given_to_a_chosen_class_is_an_unsafe_fix(tmp_path: Path) -> None:
    # The caller's class may take no `seed`: only `--unsafe-fixes` passes it.
    path = tmp_path / "plugin.py"
    code = CHOSEN.format(choose="        sampler_cls = sampler_cls or DistributedSampler\n")
    path.write_text(code)
    fixed = code.replace("sampler_cls(dataset, shuffle=shuffle)",
                         "sampler_cls(dataset, shuffle=shuffle, seed=seed)")
    for unsafe, expected in ((False, code), (True, fixed)):
        CliRunner().invoke(main, [
            "check", "--no-cache", "--isolated", "--select", "SL301", "--fix",
            *(["--unsafe-fixes"] if unsafe else []), str(path),
        ])
        assert path.read_text() == expected
