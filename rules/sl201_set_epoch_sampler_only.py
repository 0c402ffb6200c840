"""SL201 set-epoch-sampler-only: ``loader.sampler.set_epoch(epoch)`` misses batch samplers."""

from __future__ import annotations

import ast
import re
from typing import Any

import libcst as cst

from sampler_lint.imports import dotted_name
from sampler_lint.loaders import (
    INDEX_REQUIRES,
    can_carry_batch_sampler,
    collect_loader_facts,
    origins_at,
)
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity
from sampler_lint.syntax_summary import SyntaxSummary

# Calls a reused guard may keep: they read, they do not act.
_PURE_CALLS = {"isinstance", "hasattr", "getattr", "callable", "type"}


class SetEpochSamplerOnly(Rule):
    code = "SL201"
    name = "set-epoch-sampler-only"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    requires = (("set_epoch",), (".sampler",))
    index_requires = INDEX_REQUIRES
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        return "set_epoch" in summary.names

    @classmethod
    def collect_facts(cls, tree: ast.Module, path: str) -> dict[str, list[Any]]:
        return collect_loader_facts(tree, path)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "set_epoch"):
            return
        receiver = func.value
        alias = False
        if isinstance(receiver, cst.Name):
            assigned = self._sampler_alias(receiver)
            if assigned is None:
                return
            receiver, alias = assigned, True
        if not (isinstance(receiver, cst.Attribute) and receiver.attr.value == "sampler"):
            return
        loader = receiver.value
        loader_name = dotted_name(loader)
        if loader_name == "self":
            return  # a sampler wrapper passing the epoch on to its own sampler
        scope = self.context.enclosing_function(node) or self.context.module
        if "batch_sampler" in self.context.code_for(scope):
            return  # the code already looks at the batch sampler
        origins = origins_at(self.context, loader)
        if origins and all(o[0] == "call" and o[2].endswith("Sampler") for o in origins):
            return  # `L` is itself a (batch) sampler: `L.sampler` is what it draws from
        if not can_carry_batch_sampler(self.context.index, origins):
            return  # every loader reaching here is built with sampler= and no batch_sampler=
        shown = loader_name or self.context.code_for(loader)
        message = (
            f"`set_epoch` reaches only `{shown}.sampler`: a loader built with `batch_sampler=` "
            "keeps torch's default sampler there, so the sampler that shuffles never learns the "
            "epoch and every epoch repeats one order"
        )
        fix = None if alias else self._fix(node, loader, loader_name)
        self.report(node, message, fix)

    def _sampler_alias(self, name: cst.Name) -> cst.Attribute | None:
        """``s = L.sampler`` for the name ``s`` (other assignments may only be ``None``:
        ``s = None`` then ``if ...: s = L.sampler``)."""
        scope = self.context.enclosing_scope(name)
        values = self.context.assignments(scope).get(name.value, [])
        samplers = [
            v for v in values if isinstance(v, cst.Attribute) and v.attr.value == "sampler"
        ]
        others = [v for v in values if v not in samplers]
        if len(samplers) != 1 or any(dotted_name(v) != "None" for v in others):
            return None
        return samplers[0]

    # -- the fix ----------------------------------------------------------------------------------
    def _fix(
        self, call: cst.Call, loader: cst.BaseExpression, loader_name: str | None
    ) -> Fix | None:
        if loader_name is None or len(call.args) != 1 or call.args[0].keyword is not None:
            return None
        epoch = call.args[0].value
        if _has_call(epoch):
            return None  # the fix would evaluate the epoch expression twice
        statement = self.context.enclosing_statement(call)
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        scope = self.context.enclosing_function(call) or self.context.module
        scope_code = self.context.code_for(scope)
        names = ("_sampler", "_batch_sampler")
        if any(re.search(rf"\b{name}\b", scope_code) for name in names):
            return None
        target: cst.SimpleStatementLine | cst.If = statement
        predicate = 'hasattr(_sampler, "set_epoch")'
        applicability = Applicability.SAFE
        guard = self._sampler_guard(statement, loader_name)
        if guard is not None:
            target = guard
            try:  # one line, whatever the guard's layout: it goes one block deeper
                test = ast.unparse(ast.parse(self.context.code_for(guard.test), mode="eval"))
            except SyntaxError:
                return None
            predicate = _replace_sampler(test, loader_name)
            if isinstance(guard.test, (cst.IfExp, cst.Lambda, cst.NamedExpr)) or (
                isinstance(guard.test, cst.BooleanOperation)
                and isinstance(guard.test.operator, cst.Or)
            ):
                predicate = f"({predicate})"  # it is followed by `and ...`
            if _has_impure_call(guard.test):
                applicability = Applicability.UNSAFE
        epoch_code = self.context.code_for(epoch)
        code = (
            f'_batch_sampler = getattr({loader_name}, "batch_sampler", None)\n'
            f'for _sampler in (_batch_sampler, getattr(_batch_sampler, "sampler", None)):\n'
            f"    if {predicate} and _sampler is not {loader_name}.sampler:\n"
            f"        _sampler.set_epoch({epoch_code})\n"
        )
        config = self.context.module.config_for_parsing
        try:
            added = list(cst.parse_module(code, config=config).body)
        except cst.ParserSyntaxError:
            return None
        leading = target.leading_lines
        first = added[0].with_changes(leading_lines=leading)
        moved = target.with_changes(leading_lines=[])
        return Fix(
            replacements=[(target, cst.FlattenSentinel([first, *added[1:], moved]))],
            applicability=applicability,
            message="Also pass the epoch to `batch_sampler` and `batch_sampler.sampler`",
        )

    def _sampler_guard(self, statement: cst.CSTNode, loader_name: str) -> cst.If | None:
        """The ``if`` right around the call whose test reads ``<loader>.sampler``."""
        parent = self.context.parent(statement)
        if not isinstance(parent, cst.IndentedBlock):
            return None
        guard = self.context.parent(parent)
        if not isinstance(guard, cst.If) or guard.body is not parent:
            return None
        outer = self.context.parent(guard)
        if isinstance(outer, cst.If) and outer.orelse is guard:
            return None  # an `elif`: code cannot go before it; insert inside its body instead
        test = _compact(self.context.code_for(guard.test))
        if f"{loader_name}.sampler" not in test:
            return None
        return guard

    documentation = """
    `set_epoch` called on `loader.sampler` only: loaders built with `batch_sampler=` never get it.

    ## What it does
    Flags `L.sampler.set_epoch(E)` (also through `s = L.sampler; s.set_epoch(E)`, and under an
    `isinstance(L.sampler, ...)` guard) in code that never looks at `L.batch_sampler`, unless the
    project shows that every loader reaching `L` is built with `sampler=` and without
    `batch_sampler=`. It follows loaders through local assignments, function returns, constructor
    and function arguments and `self.<attr>` set in `__init__`, across the files of the project.
    Code that receives loaders from outside the project (a library's public method, a hook, a loop
    wrapper) cannot show that, and is flagged.

    ## Why is this bad
    With `DataLoader(dataset, batch_sampler=bs)`, `loader.sampler` is torch's default
    `SequentialSampler`: the object that shuffles is `loader.batch_sampler` (a custom batch
    sampler), or the `DistributedSampler` inside it (`loader.batch_sampler.sampler`). Calling
    `set_epoch` on `loader.sampler` alone leaves the shuffling sampler at epoch 0, so every epoch
    repeats the same order, silently. This was MosaicML Composer's bug (issue #3123, PR #3124).

    ## Example
    ```python
    def train_epoch(self, dataloader, epoch):
        if isinstance(dataloader.sampler, DistributedSampler):
            dataloader.sampler.set_epoch(epoch)
    ```

    ## Use instead
    ```python
    def train_epoch(self, dataloader, epoch):
        _batch_sampler = getattr(dataloader, "batch_sampler", None)
        for _sampler in (_batch_sampler, getattr(_batch_sampler, "sampler", None)):
            if isinstance(_sampler, DistributedSampler) and _sampler is not dataloader.sampler:
                _sampler.set_epoch(epoch)
        if isinstance(dataloader.sampler, DistributedSampler):
            dataloader.sampler.set_epoch(epoch)
    ```
    The reference forms do the same: Composer (after PR #3124) calls `set_epoch` on the batch
    sampler first, then on the sampler; Lightning 2.x (`_set_sampler_epoch`) on
    `dataloader.sampler` and `dataloader.batch_sampler.sampler`, each when it has `set_epoch`;
    accelerate's prepared loaders forward `set_epoch` to whichever of them shuffles.

    ## Fix safety
    The fix is additive: the original call and its guard stay. Inserted just before them, the
    epoch also reaches `L.batch_sampler` and `L.batch_sampler.sampler`, each once and only when
    present (read with `getattr(..., None)`, so a loader wrapper without `batch_sampler` still
    works), under the original guard's predicate with `L.sampler` replaced (or
    `hasattr(_sampler, "set_epoch")` with no guard). Safe when the guard is reused or absent;
    unsafe when the guard calls something other than `isinstance` / `hasattr` / `getattr`. Offered
    only when `L` is a name or attribute chain and `E` has no calls (it would be evaluated twice);
    the alias shape is reported without a fix.

    ## References
    - MosaicML Composer issue #3123 and PR #3124
    - torch `DistributedSampler.set_epoch` documentation
    - Lightning `lightning.fabric.utilities.data._set_sampler_epoch`
    """

    examples = (
        Example(
            "from torch.utils.data import DistributedSampler\n"
            "\n"
            "\n"
            "def train_epoch(dataloader, epoch):\n"
            "    if isinstance(dataloader.sampler, DistributedSampler):\n"
            "        dataloader.sampler.set_epoch(epoch)\n",
            lines=(6,),
            fixed=(
                "from torch.utils.data import DistributedSampler\n"
                "\n"
                "\n"
                "def train_epoch(dataloader, epoch):\n"
                '    _batch_sampler = getattr(dataloader, "batch_sampler", None)\n'
                '    for _sampler in (_batch_sampler, getattr(_batch_sampler, "sampler", None)):\n'
                "        if isinstance(_sampler, DistributedSampler) and _sampler is not "
                "dataloader.sampler:\n"
                "            _sampler.set_epoch(epoch)\n"
                "    if isinstance(dataloader.sampler, DistributedSampler):\n"
                "        dataloader.sampler.set_epoch(epoch)\n"
            ),
        ),
        Example(
            "from torch.utils.data import DataLoader, DistributedSampler\n"
            "\n"
            "\n"
            "def main(dataset, epochs):\n"
            "    loader = DataLoader(dataset, sampler=DistributedSampler(dataset))\n"
            "    for epoch in range(epochs):\n"
            "        loader.sampler.set_epoch(epoch)\n"
        ),
        Example(
            "def train(sampler, loader, epoch):\n"
            "    sampler.set_epoch(epoch)\n"
        ),
    )


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _replace_sampler(test: str, loader_name: str) -> str:
    pattern = re.escape(loader_name).replace(r"\.", r"\s*\.\s*") + r"\s*\.\s*sampler\b"
    return re.sub(pattern, "_sampler", test)


def _has_call(node: cst.CSTNode) -> bool:
    return bool(_calls(node))


def _has_impure_call(node: cst.CSTNode) -> bool:
    return any(dotted_name(call.func) not in _PURE_CALLS for call in _calls(node))


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Collector(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(call)

    node.visit(_Collector())
    return found
