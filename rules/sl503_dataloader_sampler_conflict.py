"""SL503 dataloader-sampler-conflict: DataLoader arguments torch rejects at construction."""

from __future__ import annotations

import ast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import dotted_expression
from sampler_lint.analysis.loader_facts import is_loader_constructor
from sampler_lint.analysis.matching import single_assignment
from sampler_lint.analysis.syntax_summary import SyntaxSummary, is_constant
from sampler_lint.analysis.text_shapes import (
    LOADER_CALL,
    CallText,
    calls_in,
    is_literal,
    keyword_is,
)
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
#            pin_memory, drop_last, ...)
_POSITIONS = {
    "dataset": 0, "batch_size": 1, "shuffle": 2, "sampler": 3, "batch_sampler": 4,
    "num_workers": 5, "collate_fn": 6, "pin_memory": 7, "drop_last": 8, "timeout": 9,
    "worker_init_fn": 10,
}
_NAMES = sorted(_POSITIONS, key=_POSITIONS.__getitem__)


class DataLoaderSamplerConflict(Rule):
    code = "SL503"
    name = "dataloader-sampler-conflict"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    fix_risk = (
        "which of the conflicting arguments was meant is a guess: the sampler is kept, shuffle / "
        "batch_size / drop_last are dropped"
    )
    requires = (("DataLoader",),)  # a sampler may come positionally, named anything
    has_syntax_filter = True

    @classmethod
    def may_match_text(cls, text: str) -> bool:
        calls = calls_in(text, LOADER_CALL)
        return any(call is None or _may_conflict_text(call) for call in calls)

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # A DataLoader(...) with no *args / **kwargs whose visible arguments may conflict.
        return any(
            is_loader_constructor(dotted_expression(call.func)) and _may_conflict(call)
            for call in summary.nodes(ast.Call)
        )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_loader_constructor(dotted_name(node.func)):
            return
        if any(arg.star for arg in node.args):
            return  # *args / **kwargs: the arguments are not all visible
        if self._expects_the_error(node):
            return
        bound = _bind(node)
        if bound is None:
            return
        conflicts: list[str] = []
        what = ""
        batch_sampler = bound.get("batch_sampler")
        sampler = bound.get("sampler")
        if batch_sampler is not None and self._not_none(batch_sampler.value):
            size = bound.get("batch_size")
            if size is not None and _literal_other_than_one(size.value):
                conflicts.append("batch_size")
            if "shuffle" in bound and _is_true(bound["shuffle"].value):
                conflicts.append("shuffle")
            if sampler is not None and self._not_none(sampler.value):
                conflicts.append("sampler")
            if "drop_last" in bound and _is_true(bound["drop_last"].value):
                conflicts.append("drop_last")
            what = "batch_sampler"
        elif sampler is not None and self._not_none(sampler.value):
            if "shuffle" in bound and _is_true(bound["shuffle"].value):
                conflicts.append("shuffle")
            what = "sampler"
        if not conflicts:
            return
        listed = ", ".join(f"`{c}`" for c in conflicts)
        message = (
            f"DataLoader gets `{what}` together with {listed}: torch raises ValueError when it "
            f"is constructed (`{what}` decides the order and the batches itself)"
        )
        self.report(node, message, _drop(node, bound, conflicts))

    def _not_none(self, value: cst.BaseExpression) -> bool:
        """Certainly not ``None``: a construction, or a name assigned one once."""
        if isinstance(value, cst.Call):
            return True
        assigned = single_assignment(self.context, value)
        return isinstance(assigned, cst.Call)

    def _expects_the_error(self, node: cst.CSTNode) -> bool:
        """Inside ``with pytest.raises(...)``: a test that wants torch to refuse."""
        for ancestor in self.context.ancestors(node):
            if isinstance(ancestor, cst.With):
                for item in ancestor.items:
                    if isinstance(item.item, cst.Call) and (
                        dotted_name(item.item.func) or ""
                    ).endswith("raises"):
                        return True
        return False

    documentation = """
    `DataLoader` arguments that torch rejects when the loader is built.

    ## What it does
    Flags `DataLoader(...)` calls (torch's, and look-alikes such as PyTorch Geometric's that pass
    their arguments on) with `sampler` together with `shuffle=True`, or `batch_sampler` together
    with a `batch_size` other than 1, `shuffle=True`, a `sampler` or `drop_last=True`, positional
    arguments included (`dataset, batch_size, shuffle, sampler, batch_sampler, ...`). Only
    literal conflicts are flagged (`shuffle=(sampler is None)` is fine; a sampler counts when it
    is a construction or a name assigned one), and not inside `with pytest.raises(...)`.

    ## Why is this bad
    torch raises `ValueError: sampler option is mutually exclusive with shuffle` (or the
    `batch_sampler` variant) at construction: the job dies, typically only on the distributed
    code path where the sampler is added, after the single-GPU run worked.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, sampler=DistributedSampler(dataset))
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, sampler=DistributedSampler(dataset))
    ```
    Shuffling then belongs to the sampler (`DistributedSampler(shuffle=True)` is its default).

    ## Fix safety
    Unsafe: which argument the author meant is a guess. The fix drops the conflicting arguments
    (`shuffle`, `batch_size`, `sampler`, `drop_last`) and keeps the sampler; when a dropped
    argument was positional, the later positional arguments are passed by keyword.

    ## References
    - torch `DataLoader.__init__` (the `ValueError` checks for `sampler` and `batch_sampler`)
    """

    examples = (
        Example(
            "from torch.utils.data import DataLoader, DistributedSampler\n"
            "\n"
            "loader = DataLoader(data, batch_size=64, shuffle=True, "
            "sampler=DistributedSampler(data))\n",
            lines=(3,),
            fixed=(
                "from torch.utils.data import DataLoader, DistributedSampler\n"
                "\n"
                "loader = DataLoader(data, batch_size=64, sampler=DistributedSampler(data))\n"
            ),
        ),
        Example(
            "from torch.utils.data import DataLoader\n"
            "\n"
            "loader = DataLoader(data, batch_size=64, shuffle=(sampler is None), "
            "sampler=sampler)\n"
        ),
    )


def _may_conflict_text(call: CallText) -> bool:
    """The text twin of :func:`_may_conflict`, looser still: a batch sampler (by keyword, or
    fifth by position), or a sampler (the same) with `shuffle` the literal True."""
    positional, arguments = call.positional, call.arguments
    if len(positional) > _POSITIONS["batch_sampler"] or "batch_sampler" in arguments:
        return True
    sampler = len(positional) > _POSITIONS["sampler"] or "sampler" in arguments
    shuffle = keyword_is(arguments, "shuffle", "True") or (
        len(positional) > _POSITIONS["shuffle"] and is_literal(positional[2], "True")
    )
    return sampler and shuffle


def _may_conflict(call: ast.Call) -> bool:
    """The ``ast`` twin of the checks in ``visit_Call``, loosened where only libcst can tell."""
    if len(call.args) > len(_NAMES) or any(type(a) is ast.Starred for a in call.args):
        return False
    if any(keyword.arg is None for keyword in call.keywords):
        return False
    bound: dict[str, ast.expr] = dict(zip(_NAMES, call.args, strict=False))
    bound.update((keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg)

    def true(name: str) -> bool:
        value = bound.get(name)
        return isinstance(value, ast.Constant) and value.value is True

    def given(name: str) -> bool:  # a construction, or a name that may be assigned one
        return type(bound.get(name)) in (ast.Call, ast.Name)

    size = bound.get("batch_size")
    literal_size = isinstance(size, ast.Constant) and (size.value is None or is_constant(size, int))
    if given("batch_sampler") and (literal_size or true("shuffle") or given("sampler")
                                   or true("drop_last")):
        return True
    return given("sampler") and true("shuffle")


def _bind(call: cst.Call) -> dict[str, cst.Arg] | None:
    bound: dict[str, cst.Arg] = {}
    for position, arg in enumerate(a for a in call.args if a.keyword is None):
        if position >= len(_NAMES):
            return None
        bound[_NAMES[position]] = arg
    for arg in call.args:
        if arg.keyword is not None:
            bound[arg.keyword.value] = arg
    return bound


def _is_true(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "True"


def _literal_other_than_one(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.Integer):
        return value.value != "1"
    return isinstance(value, cst.Name) and value.value == "None"


def _drop(call: cst.Call, bound: dict[str, cst.Arg], conflicts: list[str]) -> Fix:
    dropped = {id(bound[name]) for name in conflicts}
    first_dropped = min(
        (_POSITIONS[name] for name in conflicts if bound[name].keyword is None), default=None
    )
    args: list[cst.Arg] = []
    for position, arg in enumerate(call.args):
        if id(arg) in dropped:
            continue
        if first_dropped is not None and arg.keyword is None and position > first_dropped:
            arg = arg.with_changes(
                keyword=cst.Name(_NAMES[position]),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(""),
                ),
            )
        args.append(arg)
    if args:
        last_original = call.args[-1]
        args[-1] = args[-1].with_changes(comma=last_original.comma)
    return Fix(
        replacements=[(call, call.with_changes(args=args))],
        applicability=Applicability.UNSAFE,
        message="Drop " + ", ".join(f"`{name}`" for name in conflicts),
    )
