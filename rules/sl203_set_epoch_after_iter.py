"""SL203 set-epoch-after-iter: ``set_epoch`` after the epoch's iterator exists changes nothing."""

from __future__ import annotations

import ast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import dotted_expression
from sampler_lint.analysis.loader_calls import (
    assigned_loaders,
    loader_sampler_argument,
    loader_sampler_expression,
)
from sampler_lint.analysis.loader_facts import is_loader_constructor
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity

_ITERATING = ("enumerate", "tqdm", "iter")


class SetEpochAfterIter(Rule):
    code = "SL203"
    name = "set-epoch-after-iter"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE
    requires = (("set_epoch",),)
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # `X.set_epoch(...)` on a loader's sampler (`L.sampler`, `L.batch_sampler`) or on a
        # sampler a loader assigned in the file is given, with an iterator over that loader
        # where the visitor looks for one: an enclosing `for` over it, or `it = iter(L)` (or
        # `enumerate`, `zip`) in the same block.
        given: dict[str, set[str]] = {}  # sampler -> the loaders given it
        for loader, call in assigned_loaders(summary):
            given_sampler = loader_sampler_expression(call)
            sampler = dotted_expression(given_sampler) if given_sampler is not None else None
            if sampler is not None:
                given.setdefault(sampler, set()).add(loader)
        for call in summary.nodes(ast.Call):
            func = call.func
            if type(func) is not ast.Attribute or func.attr != "set_epoch":
                continue
            receiver = dotted_expression(func.value)
            if receiver is None:
                continue
            loaders = next(
                ({receiver[: -len(suffix)]} for suffix in _RECEIVERS if receiver.endswith(suffix)),
                given.get(receiver, set()),
            )
            if loaders and (
                _iterated_around(summary, call, loaders) or _made_beside(summary, call, loaders)
            ):
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "set_epoch"):
            return
        loaders = self._loaders_of(func.value)
        if not loaders:
            return
        statement = self.context.enclosing_statement(node)
        if statement is None:
            return
        # An enclosing `for batch in loader:`: this epoch's iterator is already running.
        for ancestor in self.context.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                break
            if isinstance(ancestor, cst.For) and _iterates(ancestor.iter, loaders):
                self.report(node, self._message(ancestor.iter), None)
                return
        # `it = iter(loader)` earlier in the same block, consumed after the call.
        block = self.context.parent(statement)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return
        body = list(block.body)
        position = body.index(statement)
        for earlier in reversed(body[:position]):
            iterator = _iterator_created(earlier, loaders)
            if iterator is None:
                if _assigns_name_of(earlier, loaders):
                    return  # the loader itself was rebound: a new iterator is not ours to judge
                continue
            after = body[position + 1:]
            between = body[body.index(earlier) + 1:position]
            if any(_assigns(s, iterator) for s in between) or not _consumed(after, iterator):
                return
            fix = self._fix(node, statement, earlier, between)
            self.report(node, self._message(None, iterator), fix)
            return
        # The loop's way back: `it = iter(loader)` later in the loop body, `it` read between the
        # call and that line. From the second pass on, the iterator read there was created in
        # the previous pass, before this call.
        loop = self.context.parent(block)
        if isinstance(loop, (cst.For, cst.While)) and loop.body is block:
            after = body[position + 1:]
            for later_position, later in enumerate(after):
                iterator = _iterator_created(later, loaders)
                if iterator is None:
                    continue
                if any(_reads(s, iterator) for s in after[:later_position]) and not any(
                    _assigns(s, iterator) for s in after[:later_position]
                ):
                    where = (
                        f"`{iterator}` is created again later in the loop, so from the second "
                        "pass on the iterator read after this call was made before it"
                    )
                    self.report(node, self._message(None, iterator, where), None)
                return

    def _loaders_of(self, receiver: cst.BaseExpression) -> set[str]:
        """The loaders whose sampler ``receiver`` is: ``L.sampler``, ``L.batch_sampler``,
        ``L.batch_sampler.sampler``, or a sampler variable passed as ``sampler=`` to a loader
        built in this scope."""
        name = dotted_name(receiver)
        if name is None:
            return set()
        for suffix in (".batch_sampler.sampler", ".batch_sampler", ".sampler"):
            if name.endswith(suffix):
                return {name[: -len(suffix)]}
        scope = self.context.enclosing_scope(receiver)
        found = set()
        for target, values in self.context.assignments(scope).items():
            for value in values:
                if isinstance(value, cst.Call) and is_loader_constructor(dotted_name(value.func)):
                    sampler = loader_sampler_argument(value)
                    if sampler is not None and dotted_name(sampler) == name:
                        found.add(target)
        return found

    def _message(
        self,
        loop_iter: cst.BaseExpression | None,
        iterator: str | None = None,
        where: str | None = None,
    ) -> str:
        if where is None and iterator is not None:
            where = f"`{iterator}` was created before it"
        elif where is None:
            assert loop_iter is not None
            loop = self.context.code_for(loop_iter)
            where = f"the enclosing `for ... in {loop}` started before it"
        return (
            f"`set_epoch` comes too late: {where}, and the permutation is drawn when the iterator "
            "is created, so this epoch keeps the previous order"
        )

    def _fix(
        self,
        call: cst.Call,
        statement: cst.BaseStatement,
        creation: cst.BaseStatement,
        between: list[cst.BaseStatement],
    ) -> Fix | None:
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        if not isinstance(creation, cst.SimpleStatementLine):
            return None
        names = _names_in(call)
        if any(_assigns(s, name) for s in [creation, *between] for name in names):
            return None  # the epoch expression would read other values before the iterator
        moved = statement.with_changes(leading_lines=creation.leading_lines)
        kept = creation.with_changes(leading_lines=[])
        return Fix(
            replacements=[
                (creation, cst.FlattenSentinel([moved, kept])),
                (statement, cst.RemovalSentinel.REMOVE),
            ],
            applicability=Applicability.SAFE,
            message="Move `set_epoch` before the iterator is created",
        )

    documentation = """
    `set_epoch` called after the epoch's iterator over the loader was created.

    ## What it does
    Flags `set_epoch(E)` on a loader's sampler (`L.sampler`, `L.batch_sampler`, or a sampler
    passed as `sampler=` to a loader built here) when an iterator over that loader created before
    the call is consumed after it: the call sits inside `for batch in L:`; or `it = iter(L)`
    (also `enumerate(L)`, `zip(L, ...)`, which take the iterator at once) comes earlier in the
    same block and `it` is read after the call before being made again; or, along the loop's way
    back, `it = iter(L)` comes later in the same loop body and `it` is read between the call and
    it (from the second pass on, that iterator was made before the call).

    ## Why is this bad
    A `DataLoader` iterator asks its sampler for the whole epoch's order when it is created
    (with worker processes it prefetches batches right away; without automatic batching it
    takes the sampler's iterator right away), and in any case by its first batch. An epoch set
    afterwards only affects the next iterator, so this epoch repeats the previous epoch's order
    (the first two epochs are identical). A single-process loader with a batch sampler happens
    to draw the order only at the first batch, so the call "works" there until `num_workers`
    is raised.

    ## Example
    ```python
    for epoch in range(epochs):
        it = iter(loader)
        loader.sampler.set_epoch(epoch)
        for _ in range(steps):
            step(next(it))
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        it = iter(loader)
        for _ in range(steps):
            step(next(it))
    ```

    ## Fix safety
    Safe: it moves the call just before the iterator's creation, when both statements are in the
    same block, the call is a statement of its own (unconditional there) and the names of the
    epoch expression are not assigned in between. A call inside `for batch in L:`, or one whose
    iterator is made again at the end of the loop body, is reported only: where the epoch
    should be set depends on the loop around it (moving it would set the next epoch's order
    with this epoch's number).

    ## References
    - torch `DistributedSampler` documentation: "calling the set_epoch() method at the beginning
      of each epoch before creating the DataLoader iterator is necessary"
    """

    examples = (
        Example(
            "def train(loader, epochs, steps, step):\n"
            "    for epoch in range(epochs):\n"
            "        it = iter(loader)\n"
            "        loader.sampler.set_epoch(epoch)\n"
            "        for _ in range(steps):\n"
            "            step(next(it))\n",
            lines=(4,),
            fixed=(
                "def train(loader, epochs, steps, step):\n"
                "    for epoch in range(epochs):\n"
                "        loader.sampler.set_epoch(epoch)\n"
                "        it = iter(loader)\n"
                "        for _ in range(steps):\n"
                "            step(next(it))\n"
            ),
        ),
        Example(
            "def train(loader, epochs, step):\n"
            "    for epoch in range(epochs):\n"
            "        loader.sampler.set_epoch(epoch)\n"
            "        for batch in loader:\n"
            "            step(batch)\n"
        ),
    )


def _iterates(expr: cst.BaseExpression, loaders: set[str]) -> bool:
    if dotted_name(expr) in loaders:
        return True
    if isinstance(expr, cst.Call) and expr.args:
        called = (dotted_name(expr.func) or "").rsplit(".", 1)[-1]
        return called in _ITERATING and dotted_name(expr.args[0].value) in loaders
    return False


def _consumed(after: list[cst.BaseStatement], iterator: str) -> bool:
    """Whether ``iterator`` is read in ``after`` before it is assigned again."""
    for statement in after:
        if isinstance(statement, cst.SimpleStatementLine) and _assigns(statement, iterator):
            return _reads_value(statement, iterator)  # `it = iter(L)`: made again, not read
        if _reads(statement, iterator):
            return True
    return False


def _reads_value(statement: cst.CSTNode, name: str) -> bool:
    """A read of ``name`` on the right of an assignment (``it = wrap(it)``)."""
    if isinstance(statement, cst.SimpleStatementLine):
        return any(
            isinstance(small, cst.Assign) and _reads(small.value, name) for small in statement.body
        )
    return False


# Calls that take the iterator of their argument at once (``tqdm`` waits for its own __iter__).
_CREATING = ("iter", "enumerate", "zip")


def _iterator_created(statement: cst.BaseStatement, loaders: set[str]) -> str | None:
    """``it = iter(L)`` (or ``enumerate(L)``, ``zip(L, ...)``) -> ``"it"``."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    for small in statement.body:
        if (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and isinstance(small.value, cst.Call)
            and dotted_name(small.value.func) in _CREATING
            and any(dotted_name(arg.value) in loaders for arg in small.value.args)
        ):
            return small.targets[0].target.value
    return None


def _assigns_name_of(statement: cst.BaseStatement, loaders: set[str]) -> bool:
    return any(_assigns(statement, loader) for loader in loaders)


def _assigns(statement: cst.CSTNode, name: str) -> bool:
    found = False

    class _Finder(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            nonlocal found
            found = found or dotted_name(node.target) == name

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            nonlocal found
            found = found or dotted_name(node.target) == name

        def visit_For(self, node: cst.For) -> None:
            nonlocal found
            found = found or dotted_name(node.target) == name

    statement.visit(_Finder())
    return found


def _reads(statement: cst.CSTNode, name: str) -> bool:
    found = False

    class _Finder(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            found = found or node.value == name

    statement.visit(_Finder())
    return found


def _names_in(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class _Finder(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            names.add(name.value)

    node.visit(_Finder())
    return names


# What ``_loaders_of`` strips from a receiver to find the loader.
_RECEIVERS = (".batch_sampler.sampler", ".batch_sampler", ".sampler")


def _dotted_in(node: ast.expr | None, loaders: set[str]) -> bool:
    if isinstance(node, ast.Starred):
        node = node.value  # libcst keeps the star on the argument, not the value
    return node is not None and dotted_expression(node) in loaders


def _iterated_around(summary: SyntaxSummary, call: ast.Call, loaders: set[str]) -> bool:
    """An enclosing ``for`` of the same function iterates a loader (the ``ast`` side of
    ``_iterates``, any argument counted)."""
    for ancestor in summary.ancestors(call):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        if isinstance(ancestor, (ast.For, ast.AsyncFor)):
            iterable = ancestor.iter
            if _dotted_in(iterable, loaders):
                return True
            if isinstance(iterable, ast.Call) and (
                dotted_expression(iterable.func) or ""
            ).rsplit(".", 1)[-1] in _ITERATING and any(
                _dotted_in(a, loaders)
                for a in [*iterable.args, *(k.value for k in iterable.keywords)]
            ):
                return True
    return False


def _made_beside(summary: SyntaxSummary, call: ast.Call, loaders: set[str]) -> bool:
    """``it = iter(L)`` (``enumerate``, ``zip``) among the statements of a block holding the
    call, in its function. Every enclosing block counts: ``ast`` spells a one-line suite
    (``if c: L.sampler.set_epoch(e)``) as a block of its own, where libcst's statement is the
    whole ``if`` in the block around it."""
    node: ast.AST = call
    for parent in summary.ancestors(call):
        if isinstance(node, ast.stmt):
            block = next(
                (value for _, value in ast.iter_fields(parent)
                 if isinstance(value, list) and any(s is node for s in value)),
                [],
            )
            if any(_makes_an_iterator(s, loaders) for s in block):
                return True
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and isinstance(node, ast.stmt) and node in parent.body:
            # The function's own body was the last block; `def g(e): L.sampler.set_epoch(e)`
            # on one line is a statement of the block around it too.
            if not _one_line(parent):
                return False
        node = parent
    return False


def _one_line(definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    return definition.body[0].lineno == definition.lineno


def _makes_an_iterator(statement: ast.stmt, loaders: set[str]) -> bool:
    return (
        isinstance(statement, ast.Assign) and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Call)
        and dotted_expression(statement.value.func) in _CREATING
        and any(
            _dotted_in(a, loaders)
            for a in [*statement.value.args, *(k.value for k in statement.value.keywords)]
        )
    )
