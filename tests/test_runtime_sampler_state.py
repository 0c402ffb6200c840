"""Runtime proof for SL401/SL402 (plain Python, no torch needed): after the fix a sub-epoch
sampler's ``__len__`` equals the number of indices its ``__iter__`` yields; before it, it does
not (or raises)."""

from __future__ import annotations

from typing import Any

import pytest

from sampler_lint.api import lint_code

IMPORT = "from torch.utils.data import Sampler\n"
SAMPLER = IMPORT + """\

class SubEpochSampler(Sampler):
    def __init__(self, num_samples, k, sub_epoch):
        self.num_samples = num_samples
        self.sub_epochs_per_epoch = k
        self.sub_epoch = sub_epoch
        self.set_sub_num_samples()

    def __iter__(self):
        indices = list(range(self.num_samples))
        k = self.sub_epochs_per_epoch
        return iter(indices[(self.sub_epoch % k) :: k])

    def __len__(self):
        return self.sub_num_samples

    def set_sub_num_samples(self):
        self.sub_num_samples = self.num_samples // self.sub_epochs_per_epoch
        if self.{read} % self.sub_epochs_per_epoch > self.sub_epoch:
            self.sub_num_samples += 1
"""
CASES = [(10, 3, 0), (10, 3, 1), (10, 3, 2), (11, 4, 2), (7, 2, 0), (100, 7, 1)]


def _sampler(source: str, case: tuple[int, int, int]) -> Any:
    # torch's Sampler adds nothing these methods use: a plain base stands in, no torch needed.
    namespace: dict[str, Any] = {"Sampler": object}
    exec(compile(source.replace(IMPORT, ""), "<sampler>", "exec"), namespace)
    return namespace["SubEpochSampler"](*case)


@pytest.mark.parametrize("read", ["sub_num_samples", "subnum_samples"], ids=["code", "article"])
def test_fix_makes_len_agree_with_iter(read: str) -> None:
    buggy = SAMPLER.replace("{read}", read)
    result = lint_code(buggy, select=["SL401", "SL402"], fix=True, unsafe_fixes=True)
    assert result.fixed is not None
    assert "if self.num_samples % self.sub_epochs_per_epoch > self.sub_epoch:" in result.fixed
    disagreements = 0
    for case in CASES:
        try:
            before = _sampler(buggy, case)
            disagreements += len(before) != len(list(before))
        except AttributeError:  # the article's form: the misspelled name was never assigned
            disagreements += 1
        after = _sampler(result.fixed, case)
        assert len(after) == len(list(after)), case
    assert disagreements > 0
