"""Runtime proof for SL503 with real torch: each flagged DataLoader raises at construction, and
the one the fix writes is built and yields every sample."""

from __future__ import annotations

from typing import Any

import pytest

from sampler_lint.api import lint_code

torch = pytest.importorskip("torch")

HEADER = (
    "from torch.utils.data import BatchSampler, DataLoader, DistributedSampler\n\n\n"
    "def build(dataset):\n"
    "    sampler = DistributedSampler(dataset, num_replicas=1, rank=0)\n"
)
CASES = {
    "sampler+shuffle": (
        "    return DataLoader(dataset, batch_size=8, shuffle=True, sampler=sampler)\n"
    ),
    "positional": "    return DataLoader(dataset, 8, True, sampler, None, 0)\n",
    "batch_sampler+batch_size+drop_last": (
        "    return DataLoader(dataset, batch_size=8, drop_last=True,\n"
        "                      batch_sampler=BatchSampler(sampler, 8, drop_last=False))\n"
    ),
}


def _build(source: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<loader>", "exec"), namespace)
    return namespace["build"](torch.arange(64))


@pytest.mark.parametrize("case", sorted(CASES))
def test_torch_refuses_the_flagged_call_and_builds_the_fixed_one(case: str) -> None:
    source = HEADER + CASES[case]
    assert [f.code for f in lint_code(source, select=["SL503"]).findings] == ["SL503"]
    with pytest.raises(ValueError, match="mutually exclusive"):
        _build(source)
    fixed = lint_code(source, select=["SL503"], fix=True, unsafe_fixes=True).fixed
    assert fixed is not None
    loader = _build(fixed)
    assert sorted(int(i) for batch in loader for i in batch) == list(range(64))
