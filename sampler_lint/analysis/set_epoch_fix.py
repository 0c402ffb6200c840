"""Inserting ``<sampler>.set_epoch(<epoch>)`` as the first statement of an epoch loop: the code
SL202's fix writes (with its ``hasattr`` guard) and SL104's (on the sampler it just added).

SL202 still carries its own copy (``MissingSetEpoch._guarded_call`` / ``_fix``); this module is
the shared form for rules written since, and SL202 can move to it without a change of output."""

from __future__ import annotations

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.rule import FileContext, Replacement


def set_epoch_statement(
    context: FileContext, sampler: str, epoch: str, *, guarded: bool
) -> cst.BaseStatement:
    """``sampler.set_epoch(epoch)``, or ``if hasattr(sampler, "set_epoch"): ...`` when the
    sampler may be ``None`` or one of torch's samplers without ``set_epoch``."""
    config = context.module.config_for_parsing
    if guarded:
        code = f'if hasattr({sampler}, "set_epoch"):\n    {sampler}.set_epoch({epoch})\n'
    else:
        code = f"{sampler}.set_epoch({epoch})\n"
    return cst.parse_module(code, config=config).body[0]


def at_epoch_start(
    context: FileContext, loop: cst.For, sampler: str, *, guarded: bool
) -> Replacement | None:
    """The replacement of ``loop``'s body that calls ``set_epoch`` first, with the loop's
    counter; ``None`` for a loop without a plain counter or an indented body."""
    if not isinstance(loop.target, cst.Name) or not isinstance(loop.body, cst.IndentedBlock):
        return None
    statement = set_epoch_statement(context, sampler, loop.target.value, guarded=guarded)
    body = loop.body
    return body, body.with_changes(body=[statement, *body.body])
