"""Runtime proof for SL501 with real Lightning: its own DDP re-instantiation step (the one that
injects a DistributedSampler) rejects the flagged batch samplers with the messages of Lightning
issue #19371, and accepts the form the rule's documentation gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sampler_lint.api import lint_code

torch = pytest.importorskip("torch")
fabric_data = pytest.importorskip("lightning.fabric.utilities.data")

FIXTURES = Path(__file__).parent / "fixtures" / "SL501"


def _classes(name: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    source = (FIXTURES / name).read_text(encoding="utf-8")
    exec(compile(source, name, "exec"), namespace)
    return namespace


def _inject(batch_sampler: Any) -> Any:
    """What Lightning does to each loader under DDP: re-create it around a DistributedSampler."""
    dataset = list(range(16))
    loader = torch.utils.data.DataLoader(dataset, batch_sampler=batch_sampler)
    sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=False)
    return fabric_data._update_dataloader(loader, sampler)


def test_the_flagged_classes_are_rejected_by_lightning() -> None:
    source = (FIXTURES / "two_stream.py").read_text(encoding="utf-8")
    flagged = {f.location.line for f in lint_code(source, select=["SL501"]).findings}
    assert flagged == {6, 33}
    classes = _classes("two_stream.py")
    with pytest.raises(Exception, match="can't inject a \\(distributed\\) sampler"):
        _inject(classes["TwoStreamBatchSampler"](list(range(8)), list(range(8, 16)), 4, 2))
    # Built inside a `*_dataloader` hook, Lightning records the arguments (as here) and needs
    # one called `sampler` to put the DistributedSampler in.
    with fabric_data._replace_dunder_methods(torch.utils.data.BatchSampler):
        no_sampler_argument = classes["NoSamplerArgument"](
            torch.utils.data.SequentialSampler(range(16)), 4, False
        )
    with pytest.raises(TypeError, match="does not have an argument called `sampler"):
        _inject(no_sampler_argument)


def test_the_documented_forms_are_accepted_and_draw_from_the_injected_sampler() -> None:
    source = (FIXTURES / "not_flagged.py").read_text(encoding="utf-8")
    assert lint_code(source, select=["SL501"]).findings == []
    classes = _classes("not_flagged.py")
    base = torch.utils.data.SequentialSampler(range(16))
    with fabric_data._replace_dunder_methods(torch.utils.data.BatchSampler):
        two_stream = classes["TwoStreamBatchSampler"](base, 4, False)
    for batch_sampler in (two_stream, classes["LooksLikeOne"](base, batch_size=4, drop_last=False)):
        loader = _inject(batch_sampler)
        seen = sorted(int(i) for batch in loader for i in batch)
        assert seen == list(range(0, 16, 2))  # rank 0's half: the injected sampler is used


def _built_in_a_hook(cls: Any, *args: Any, **kwargs: Any) -> Any:
    """Built as inside a `*_dataloader` hook, where Lightning records BatchSampler arguments."""
    with fabric_data._replace_dunder_methods(torch.utils.data.BatchSampler):
        return cls(*args, **kwargs)


def test_the_base_swap_fix_makes_lightning_keep_the_arguments() -> None:
    """SL501's safe fix: the flagged `Sampler` subclass is re-created by Lightning's fallback
    with `reverse` lost; the fixed `BatchSampler` subclass is re-created with all its arguments
    and yields rank 0's share of the injected DistributedSampler, in the order it asked for."""
    source = (FIXTURES / "base_swap.py").read_text(encoding="utf-8")
    fixed = (FIXTURES / "base_swap.fixed.py").read_text(encoding="utf-8")
    assert lint_code(source, select=["SL501"], fix=True).fixed == fixed
    rank0_reversed = [[14, 12, 10, 8], [6, 4, 2, 0]]
    base = torch.utils.data.SequentialSampler(range(16))

    flagged = _built_in_a_hook(_classes("base_swap.py")["AlternatingBatches"],
                               base, 4, reverse=True)
    recreated = _inject(flagged)
    assert recreated.batch_sampler.reverse is False  # the argument Lightning could not keep
    assert [[int(i) for i in b] for b in recreated] != rank0_reversed

    swapped = _built_in_a_hook(_classes("base_swap.fixed.py")["AlternatingBatches"],
                               base, 4, reverse=True)
    recreated = _inject(swapped)
    assert recreated.batch_sampler.reverse is True
    assert [[int(i) for i in b] for b in recreated] == rank0_reversed
