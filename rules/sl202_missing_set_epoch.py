"""SL202 missing-set-epoch: a shuffling DistributedSampler whose epoch never changes."""

from __future__ import annotations

import ast

import libcst as cst

from sampler_lint.imports import dotted_name
from sampler_lint.index import dotted_expression
from sampler_lint.loaders import (
    DISTRIBUTED_SAMPLERS,
    EPOCH_AWARE_CALLS,
    FACT_SET_EPOCH,
    LOADER_FACTS,
    constructed,
    distributed_sampler_calls,
    is_distributed_sampler,
    is_epoch_loop,
    is_evaluation_name,
    is_loader_constructor,
    loader_sampler_argument,
    may_shuffle,
    shuffles,
)
from sampler_lint.matching import scope_body_statements
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity
from sampler_lint.syntax_summary import SyntaxSummary, argument


class MissingSetEpoch(Rule):
    code = "SL202"
    name = "missing-set-epoch"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE
    requires = (DISTRIBUTED_SAMPLERS, ("DataLoader",))
    collectors = (LOADER_FACTS,)
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # A loop, `L = DataLoader(...)` with a sampler argument, and a shuffling
        # DistributedSampler(...) built in the file.
        if not {"For", "AsyncFor", "While"} & summary.kinds:
            return False
        if not any(map(may_shuffle, distributed_sampler_calls(summary.nodes(ast.Call)))):
            return False
        return any(
            len(a.targets) == 1 and type(a.targets[0]) is ast.Name and type(a.value) is ast.Call
            and is_loader_constructor(dotted_expression(a.value.func))
            and (argument(a.value, 3, "sampler") is not None
                 or argument(a.value, 4, "batch_sampler") is not None)
            for a in summary.nodes(ast.Assign)
        )


    def visit_Call(self, node: cst.Call) -> None:
        if not is_loader_constructor(dotted_name(node.func)):
            return
        statement = self.context.parent(node)
        if not (
            isinstance(statement, cst.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0].target, cst.Name)
        ):
            return
        loader = statement.targets[0].target.value
        sampler_expr = loader_sampler_argument(node)
        if sampler_expr is None:
            return
        scope = self.context.enclosing_scope(node)
        sampler_name, construction = self._sampler(scope, sampler_expr)
        if construction is None or not shuffles(construction):
            return
        if is_evaluation_name(loader) or (sampler_name and is_evaluation_name(sampler_name)):
            return
        loop, passed_on, shape = self._epoch_use(scope, loader)
        if loop is None:
            return
        if self._epoch_is_set(scope, loader, sampler_name, passed_on):
            return
        shown = sampler_name or self.context.code_for(construction)
        if shape == "iterator":
            where = f"`iter({loader})` is created again when exhausted"
        else:
            where = f"`{loader}` is iterated once per epoch"
        message = (
            f"shuffling DistributedSampler `{shown}` never gets `set_epoch`: {where}, but every "
            "epoch draws the same permutation"
        )
        fix = None
        if sampler_name is not None and self._bound_before(loop, sampler_name):
            if isinstance(loop, cst.For):
                fix = self._fix(loop, sampler_name)
            elif isinstance(loop, cst.While):
                fix = self._fix_iterator(loop, sampler_name, loader)
        self.report(construction, message, fix)

    # -- matching ---------------------------------------------------------------------------------
    def _sampler(
        self, scope: cst.CSTNode, expr: cst.BaseExpression
    ) -> tuple[str | None, cst.Call | None]:
        """The sampler's name (when it has one) and its DistributedSampler construction. ``None``
        alternatives do not count: ``s = DistributedSampler(d) if distributed else None``,
        ``if distributed: s = DistributedSampler(d) else: s = None``,
        ``sampler=s if distributed else None``."""
        alternatives = [a for a in _alternatives([expr]) if not _is_none(a)]
        if len(alternatives) != 1:
            return None, None
        expr = alternatives[0]
        if isinstance(expr, cst.Call):
            return (None, expr) if is_distributed_sampler(constructed(expr)) else (None, None)
        if not isinstance(expr, cst.Name):
            return None, None
        values = self.context.assignments(scope).get(expr.value, [])
        constructions = [v for v in _alternatives(values) if not _is_none(v)]
        if len(constructions) != 1:
            return expr.value, None
        value = constructions[0]
        if isinstance(value, cst.Call) and is_distributed_sampler(constructed(value)):
            return expr.value, value
        return expr.value, None

    def _epoch_use(
        self, scope: cst.CSTNode, loader: str
    ) -> tuple[cst.For | cst.While | None, bool, str]:
        """The loop that goes over ``loader`` once per epoch, whether the loader is passed on to
        a call there (the callee may set the epoch), and the shape (``epoch`` or ``iterator``)."""
        for statement in scope_body_statements(scope):
            if isinstance(statement, cst.For) and is_epoch_loop(statement):
                uses = _uses(statement.body, loader)
                if uses.handed_to_framework:
                    return None, False, ""
                if uses.iterated or uses.passed:
                    return statement, uses.passed, "epoch"
            if isinstance(statement, cst.While) and _recreates_iterator(statement, loader):
                return statement, False, "iterator"
        return None, False, ""

    def _epoch_is_set(
        self, scope: cst.CSTNode, loader: str, sampler: str | None, passed_on: bool
    ) -> bool:
        """Any code that may set this sampler's epoch, in this file or (for a loader handed to
        a function) anywhere in the project; or the loader handed to something that does."""
        for receiver in _set_epoch_receivers(scope):  # names are only this scope's
            if receiver == sampler or receiver.split(".", 1)[0] == loader:
                return True
        if passed_on:
            # The callee, anywhere in the project, may set it through its own parameter name.
            receivers = set(self.context.index.get(FACT_SET_EPOCH))
            receivers |= _set_epoch_receivers(self.context.module)
            if any(r.endswith((".sampler", ".batch_sampler")) or r == "<expression>"
                   for r in receivers):
                return True
        return _handed_to_framework(scope, loader)

    # -- the fix ----------------------------------------------------------------------------------
    def _bound_before(self, loop: cst.CSTNode, name: str) -> bool:
        """``name`` is bound on every path into ``loop``: a parameter, or an earlier statement of
        an enclosing block that always binds it."""
        node = loop
        for ancestor in self.context.ancestors(loop):
            if isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
                siblings: list[cst.CSTNode] = list(ancestor.body)
                if node in siblings and any(
                    _binds_surely(s, name) for s in siblings[: siblings.index(node)]
                ):
                    return True
            if isinstance(ancestor, cst.FunctionDef):
                params = ancestor.params
                every = [*params.posonly_params, *params.params, *params.kwonly_params]
                return any(p.name.value == name for p in every)
            if isinstance(ancestor, cst.ClassDef):
                return False
            node = ancestor
        return False

    def _guarded_call(self, sampler: str, epoch: str) -> cst.BaseStatement:
        config = self.context.module.config_for_parsing
        return cst.parse_module(
            f'if hasattr({sampler}, "set_epoch"):\n    {sampler}.set_epoch({epoch})\n',
            config=config,
        ).body[0]

    def _fix(self, loop: cst.For, sampler: str) -> Fix | None:
        assert isinstance(loop.target, cst.Name)
        epoch = loop.target.value
        if _assigns(loop.body, sampler):
            return None  # rebound inside the loop: which sampler is meant is not clear
        body = loop.body
        if not isinstance(body, cst.IndentedBlock):
            return None
        new_body = body.with_changes(body=[self._guarded_call(sampler, epoch), *body.body])
        return Fix(
            replacements=[(body, new_body)],
            applicability=Applicability.SAFE,
            message=f"Call `{sampler}.set_epoch({epoch})` at the start of each epoch",
        )

    def _fix_iterator(self, loop: cst.While, sampler: str, loader: str) -> Fix | None:
        """Right before ``it = iter(loader)`` in the ``except StopIteration`` handler, when that
        handler counts epochs first (``epoch += 1``): the counter is then clear."""
        if _assigns(loop.body, sampler):
            return None
        for handler in _stop_iteration_handlers(loop):
            if not isinstance(handler.body, cst.IndentedBlock):
                continue
            statements = list(handler.body.body)
            for position, statement in enumerate(statements):
                if not _uses(statement, loader).iterated:
                    continue
                counters = [c for c in map(_epoch_increment, statements[:position]) if c]
                if len(counters) != 1 or not isinstance(statement, cst.SimpleStatementLine):
                    return None
                added = self._guarded_call(sampler, counters[0])
                added = added.with_changes(leading_lines=statement.leading_lines)
                kept = statement.with_changes(leading_lines=[])
                return Fix(
                    replacements=[(statement, cst.FlattenSentinel([added, kept]))],
                    applicability=Applicability.SAFE,
                    message=f"Call `{sampler}.set_epoch({counters[0]})` before the new iterator",
                )
        return None

    documentation = """
    A shuffling `DistributedSampler` whose `set_epoch` is never called.

    ## What it does
    Flags a `DistributedSampler` (or a known subclass) built with `shuffle` not literally
    `False`, whose loader is iterated once per epoch (an epoch loop, `for epoch in ...:` or
    `for i in range(args.start_epoch, args.epochs):`, around `for batch in loader` or a call
    taking the loader; or `iter(loader)` re-created when it is exhausted inside a `while` loop),
    when no code sets the epoch: neither this file nor, when the loader is handed to a function,
    the project calls `set_epoch` on that sampler or loader. A sampler that is `None` on some
    paths (`DistributedSampler(d) if distributed else None`, or an `if` / `else`) counts.
    Evaluation loaders (named `val`, `test`, `eval`...) and loaders handed to something that
    calls `set_epoch` itself (Lightning's `Trainer.fit` and Fabric's `setup_dataloaders`,
    `accelerator.prepare`, a transformers `Trainer`, an mmengine `Runner`) are not flagged.

    ## Why is this bad
    `DistributedSampler` draws its permutation from `seed + epoch`. Without `set_epoch`, the epoch
    stays 0 and every epoch visits the samples in the same order on every rank, which torch's
    documentation warns about: training quietly loses the reshuffling it was configured for.

    ## Example
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            step(batch)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        for batch in loader:
            step(batch)
    ```

    ## Fix safety
    Safe: it inserts `if hasattr(s, "set_epoch"): s.set_epoch(epoch)`, which changes nothing but
    the epoch the sampler shuffles with (and does nothing when `s` is `None`), as the first
    statement of the epoch loop; in the infinite-iterator shape, right before the re-created
    `iter(loader)`, when the `except StopIteration` handler counts epochs before it
    (`epoch += 1`). Offered only when the sampler is a name bound on every path into the loop
    (a parameter, an assignment, an `if` / `else` binding it in both branches) and not rebound
    in it, and the epoch counter is clear; otherwise (an inline sampler, no counter) reported
    only.

    ## References
    - torch `DistributedSampler` documentation ("calling the set_epoch() method at the beginning
      of each epoch before creating the DataLoader iterator is necessary")
    - PyTorch's DDP examples (`train_sampler.set_epoch(epoch)`)
    """

    examples = (
        Example(
            "from torch.utils.data import DataLoader, DistributedSampler\n"
            "\n"
            "\n"
            "def main(dataset, epochs, step):\n"
            "    sampler = DistributedSampler(dataset)\n"
            "    loader = DataLoader(dataset, batch_size=64, sampler=sampler)\n"
            "    for epoch in range(epochs):\n"
            "        for batch in loader:\n"
            "            step(batch)\n",
            lines=(5,),
            fixed=(
                "from torch.utils.data import DataLoader, DistributedSampler\n"
                "\n"
                "\n"
                "def main(dataset, epochs, step):\n"
                "    sampler = DistributedSampler(dataset)\n"
                "    loader = DataLoader(dataset, batch_size=64, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                '        if hasattr(sampler, "set_epoch"):\n'
                "            sampler.set_epoch(epoch)\n"
                "        for batch in loader:\n"
                "            step(batch)\n"
            ),
        ),
        Example(
            "from torch.utils.data import DataLoader, DistributedSampler\n"
            "\n"
            "\n"
            "def main(dataset, epochs, step):\n"
            "    sampler = DistributedSampler(dataset, shuffle=False)\n"
            "    loader = DataLoader(dataset, sampler=sampler)\n"
            "    for epoch in range(epochs):\n"
            "        for batch in loader:\n"
            "            step(batch)\n"
        ),
    )


class _Uses:
    def __init__(self) -> None:
        self.iterated = False
        self.passed = False
        self.handed_to_framework = False


def _uses(body: cst.CSTNode, loader: str) -> _Uses:
    uses = _Uses()

    class _Finder(cst.CSTVisitor):
        def visit_For(self, node: cst.For) -> None:
            if isinstance(node.iter, cst.Name) and node.iter.value == loader:
                uses.iterated = True

        def visit_CompFor(self, node: cst.CompFor) -> None:
            if isinstance(node.iter, cst.Name) and node.iter.value == loader:
                uses.iterated = True

        def visit_Call(self, node: cst.Call) -> None:
            if not any(isinstance(a.value, cst.Name) and a.value.value == loader
                       for a in node.args):
                return
            name = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
            if name in ("iter", "enumerate", "tqdm", "zip"):
                uses.iterated = True
            elif name in EPOCH_AWARE_CALLS:
                uses.handed_to_framework = True
            else:
                uses.passed = True

    body.visit(_Finder())
    return uses


def _handed_to_framework(scope: cst.CSTNode, loader: str) -> bool:
    return _uses(scope, loader).handed_to_framework


def _stop_iteration_handlers(loop: cst.While) -> list[cst.ExceptHandler]:
    found: list[cst.ExceptHandler] = []

    class _Finder(cst.CSTVisitor):
        def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
            if node.type is not None and "StopIteration" in (dotted_name(node.type) or ""):
                found.append(node)

    loop.visit(_Finder())
    return found


def _recreates_iterator(loop: cst.While, loader: str) -> bool:
    """``while ...: try: next(it) except StopIteration: it = iter(loader)``."""
    return any(_uses(h.body, loader).iterated for h in _stop_iteration_handlers(loop))


def _epoch_increment(statement: cst.CSTNode) -> str | None:
    """``epoch += 1`` (or ``epoch = epoch + 1``): the counter's name."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign):
        target = small.target
    elif (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.value, cst.BinaryOperation)
        and isinstance(small.value.operator, cst.Add)
        and isinstance(small.value.left, cst.Name)
        and isinstance(small.targets[0].target, cst.Name)
        and small.value.left.value == small.targets[0].target.value
    ):
        target = small.targets[0].target
    else:
        return None
    if isinstance(target, cst.Name) and "epoch" in target.value.lower():
        return target.value
    return None


def _alternatives(values: list[cst.BaseExpression]) -> list[cst.BaseExpression]:
    opened: list[cst.BaseExpression] = []
    for value in values:
        if isinstance(value, cst.IfExp):
            opened.extend(_alternatives([value.body, value.orelse]))
        else:
            opened.append(value)
    return opened


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _binds_surely(statement: cst.CSTNode, name: str) -> bool:
    """Whether running ``statement`` always binds ``name``: an assignment, a ``with`` body that
    does, an ``if`` whose every branch (``else`` included) does."""
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                targets = [small.target]
            else:
                continue
            if any(isinstance(t, cst.Name) and t.value == name for t in targets):
                return True
        return False
    if isinstance(statement, cst.With) and isinstance(statement.body, cst.IndentedBlock):
        return any(_binds_surely(s, name) for s in statement.body.body)
    if isinstance(statement, cst.If):
        body = statement.body
        if not isinstance(body, cst.IndentedBlock) or statement.orelse is None:
            return False
        if not any(_binds_surely(s, name) for s in body.body):
            return False
        other = statement.orelse
        if isinstance(other, cst.If):
            return _binds_surely(other, name)
        return isinstance(other.body, cst.IndentedBlock) and any(
            _binds_surely(s, name) for s in other.body.body
        )
    return False


def _assigns(body: cst.CSTNode, name: str) -> bool:
    for statement in scope_body_statements(body):
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and any(
                    dotted_name(t.target) == name for t in small.targets
                ):
                    return True
    return False


def _set_epoch_receivers(module: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class _Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "set_epoch":
                found.add(dotted_name(node.func.value) or "<expression>")

    module.visit(_Finder())
    return found
