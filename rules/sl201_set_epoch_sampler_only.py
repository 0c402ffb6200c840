"""SL201 set-epoch-sampler-only: ``loader.sampler.set_epoch(epoch)`` misses batch samplers."""

from __future__ import annotations

import ast
import re

import libcst as cst

from sampler_lint.imports import dotted_name
from sampler_lint.loaders import (
    LOADER_FACTS,
    can_carry_batch_sampler,
    origins_at,
)
from sampler_lint.matching import scope_body_statements
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity
from sampler_lint.syntax_summary import SyntaxSummary

# Calls a reused guard may keep: they read, they do not act.
_PURE_CALLS = {"isinstance", "hasattr", "getattr", "callable", "type"}


class SetEpochSamplerOnly(Rule):
    code = "SL201"
    name = "set-epoch-sampler-only"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    fix_risk = (
        "an unusual guard (a call other than isinstance / hasattr / getattr) is evaluated again "
        "for the batch sampler"
    )
    requires = (("set_epoch",), ("sampler",))  # `loader. sampler` is an attribute too
    collectors = (LOADER_FACTS,)
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # `L.sampler.set_epoch(...)` (L not `self`), or `s.set_epoch(...)` with `s = <...>.sampler`.
        pairs = summary.assignments()
        aliases = {
            t.id for t, value in pairs
            if type(t) is ast.Name and type(value) is ast.Attribute and value.attr == "sampler"
        }
        for call in summary.nodes(ast.Call):
            func = call.func
            if type(func) is ast.Attribute and func.attr == "set_epoch":
                receiver = func.value
                if type(receiver) is ast.Name and receiver.id in aliases:
                    return True
                if type(receiver) is ast.Attribute and receiver.attr == "sampler" and not (
                    type(receiver.value) is ast.Name and receiver.value.id == "self"
                ):
                    return True
        return False


    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "set_epoch"):
            return
        receiver = func.value
        alias: str | None = None
        if isinstance(receiver, cst.Name):
            assigned = self._sampler_alias(receiver)
            if assigned is None:
                return
            alias = receiver.value
            receiver = assigned
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
        fix = None
        if loader_name is not None and (alias is None or self._alias_serves_only(node, alias)):
            fix = self._fix(node, loader_name, alias)
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

    def _alias_serves_only(self, call: cst.Call, alias: str) -> bool:
        """Whether the alias is read nowhere but as the receiver of ``set_epoch`` and in the
        tests of ``if`` statements (its guards): then the fix leaves its other uses alone."""
        scope = self.context.enclosing_function(call) or self.context.module
        tests = [s.test for s in scope_body_statements(scope) if isinstance(s, cst.If)]
        allowed = {id(n) for test in tests for n in _names(test, alias)}
        for name in _names(scope, alias):
            parent = self.context.parent(name)
            if id(name) in allowed:
                continue
            if isinstance(parent, cst.AssignTarget):
                continue  # `s = ...`
            if (
                isinstance(parent, cst.Attribute)
                and parent.value is name
                and parent.attr.value == "set_epoch"
            ):
                continue
            return False
        return True

    # -- the fix ----------------------------------------------------------------------------------
    def _fix(self, call: cst.Call, loader_name: str, alias: str | None) -> Fix | None:
        if len(call.args) != 1 or call.args[0].keyword is not None:
            return None
        epoch = call.args[0].value
        if _has_call(epoch):
            return None  # the fix would evaluate the epoch expression twice
        statement = self.context.enclosing_statement(call)
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        scope = self.context.enclosing_function(call) or self.context.module
        scope_code = self.context.code_for(scope)
        if any(re.search(rf"\b{name}\b", scope_code) for name in ("_sampler", "_batch_sampler")):
            return None
        readers = [f"{loader_name}.sampler", *([alias] if alias else [])]
        target: cst.SimpleStatementLine | cst.If = statement
        predicate = 'hasattr(_sampler, "set_epoch")'
        applicability = Applicability.SAFE
        guard = self._sampler_guard(statement, readers)
        if guard is not None:
            target = guard
            try:  # one line, whatever the guard's layout: it goes one block deeper
                test = ast.unparse(ast.parse(self.context.code_for(guard.test), mode="eval"))
            except SyntaxError:
                return None
            predicate = _replace_readers(test, loader_name, alias)
            if isinstance(guard.test, (cst.IfExp, cst.Lambda, cst.NamedExpr)) or (
                isinstance(guard.test, cst.BooleanOperation)
                and isinstance(guard.test.operator, cst.Or)
            ):
                predicate = f"({predicate})"  # it is followed by `and ...`
            if _has_impure_call(guard.test):
                applicability = Applicability.UNSAFE
        if self._sampler_decided_elsewhere(target, readers):
            return None  # inserted after a test of `L.sampler` it would not run when it matters
        if alias is not None and not self._alias_bound_before(target, alias, loader_name):
            return None
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
        message = "Also pass the epoch to `batch_sampler` and `batch_sampler.sampler`"
        if isinstance(target, cst.If) and self._is_elif(target):
            # Code cannot precede an `elif`, and inside its body it would run only when the
            # test on `L.sampler` passes, which is exactly what fails with a batch sampler:
            # `elif G: ...` becomes `else:` holding the inserted code, then `if G: ...`.
            block = cst.IndentedBlock(body=[*added, target.with_changes(leading_lines=[])])
            otherwise = cst.Else(body=block, leading_lines=target.leading_lines)
            return Fix(replacements=[(target, otherwise)], applicability=applicability,
                       message=message)
        first = added[0].with_changes(leading_lines=target.leading_lines)
        moved = target.with_changes(leading_lines=[])
        return Fix(
            replacements=[(target, cst.FlattenSentinel([first, *added[1:], moved]))],
            applicability=applicability,
            message=message,
        )

    def _is_elif(self, node: cst.If) -> bool:
        outer = self.context.parent(node)
        return isinstance(outer, cst.If) and outer.orelse is node

    def _sampler_guard(self, statement: cst.CSTNode, readers: list[str]) -> cst.If | None:
        """The ``if`` right around the call whose test reads ``<loader>.sampler`` (or the
        alias)."""
        parent = self.context.parent(statement)
        if not isinstance(parent, cst.IndentedBlock):
            return None
        guard = self.context.parent(parent)
        if not isinstance(guard, cst.If) or guard.body is not parent:
            return None
        if not _reads_any(self.context.code_for(guard.test), readers):
            return None
        return guard

    def _sampler_decided_elsewhere(self, target: cst.CSTNode, readers: list[str]) -> bool:
        """A test of ``L.sampler`` outside the reused guard that decides whether the inserted
        code runs: an enclosing ``if`` / ``while`` (an earlier ``if`` of an ``elif`` chain
        included), or an earlier ``if`` that leaves the function or loop
        (``if not isinstance(L.sampler, ...): return``)."""
        node: cst.CSTNode = target
        for ancestor in self.context.ancestors(target):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                break
            if isinstance(ancestor, (cst.If, cst.While)) and _reads_any(
                self.context.code_for(ancestor.test), readers
            ):
                return True
            if isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
                siblings: list[cst.CSTNode] = list(ancestor.body)
                if node in siblings:
                    for earlier in siblings[: siblings.index(node)]:
                        if (
                            isinstance(earlier, cst.If)
                            and _reads_any(self.context.code_for(earlier.test), readers)
                            and _exits(earlier)
                        ):
                            return True
            node = ancestor
        return False

    def _alias_bound_before(
        self, target: cst.SimpleStatementLine | cst.If, alias: str, loader: str
    ) -> bool:
        """The alias ``s = L.sampler`` is an earlier statement of the block holding the
        insertion point, with ``L`` not rebound in between, or it sits inside the reused guard
        (then the inserted code reads ``L`` itself)."""
        block = self.context.parent(target)
        if isinstance(target, cst.If) and _binds(target.body, alias):
            return True
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return False
        siblings: list[cst.CSTNode] = list(block.body)
        before = siblings[: siblings.index(target)]
        for position in range(len(before) - 1, -1, -1):
            if _binds(before[position], alias):
                root = loader.split(".", 1)[0]
                return not any(_binds(s, root) for s in before[position + 1:])
        return False


    documentation = """
    `set_epoch` called on `loader.sampler` only: loaders built with `batch_sampler=` never get it.

    ## What it does
    Flags `L.sampler.set_epoch(E)` (also through `s = L.sampler; s.set_epoch(E)`, and under an
    `isinstance(L.sampler, ...)` guard) in code that never looks at `L.batch_sampler`, unless the
    project shows that every loader reaching `L` is built without `batch_sampler=` (and without
    `**kwargs` that could hold one): with `sampler=`, as in the PyTorch DDP tutorials, or with
    neither, when torch's default batch sampler draws from `L.sampler` itself. Loaders are
    followed through local assignments (tuple unpacking included), function returns (tuples
    included), constructor and function arguments, `self.<attr>`, `self.method()` (its
    definitions in the class, its bases and subclasses), methods of instances of project
    classes, import aliases and package re-exports, across the files of the project. Code that
    receives loaders from outside the project (a library's public method, a hook, a loop
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
    The reference forms reach the same objects. Composer after PR #3124 looks at the batch
    sampler first, then the sampler:
    ```python
    def _get_distributed_sampler(dataloader):
        if isinstance(dataloader.batch_sampler, DistributedSampler):
            return dataloader.batch_sampler
        if isinstance(dataloader.sampler, DistributedSampler):
            return dataloader.sampler
        return None
    ```
    Lightning 2.x (`lightning.fabric.utilities.data._set_sampler_epoch`) calls `set_epoch` once
    on each distinct object among `dataloader.sampler` and `dataloader.batch_sampler.sampler`:
    ```python
    objects = {}
    if (sampler := getattr(dataloader, "sampler", None)) is not None:
        objects[id(sampler)] = sampler
    if (batch_sampler := getattr(dataloader, "batch_sampler", None)) is not None and (
        sampler := getattr(batch_sampler, "sampler", None)
    ) is not None:
        objects[id(sampler)] = sampler
    for obj in objects.values():
        if callable(set_epoch := getattr(obj, "set_epoch", None)):
            set_epoch(epoch)
    ```
    accelerate's prepared loaders (`DataLoaderShard.set_epoch`) forward it to the batch sampler
    and to the sampler inside it:
    ```python
    if hasattr(self.batch_sampler, "set_epoch"):
        self.batch_sampler.set_epoch(epoch)
    if hasattr(self.batch_sampler, "sampler") and hasattr(self.batch_sampler.sampler, "set_epoch"):
        self.batch_sampler.sampler.set_epoch(epoch)
    ```

    ## Fix safety
    The fix is additive: the original call and its guard stay. Inserted just before them, the
    epoch also reaches `L.batch_sampler` and `L.batch_sampler.sampler`, each once and only when
    present (read with `getattr(..., None)`, so a loader wrapper without `batch_sampler` still
    works), under the original guard's predicate with `L.sampler` replaced (or
    `hasattr(_sampler, "set_epoch")` with no guard). Safe when the guard is reused or absent;
    unsafe when the guard calls something other than `isinstance` / `hasattr` / `getattr`. Offered
    only when `L` is a name or attribute chain and `E` has no calls (it would be evaluated twice).
    A guard that is an `elif` becomes `else:` holding the inserted code and then `if <guard>:`
    (inside the `elif` body the code would run only when the test on `L.sampler` passes, which
    is what fails with a batch sampler). The alias shape (`s = L.sampler`) is fixed only when the
    alias serves nothing but its guard and `set_epoch`. No fix where another test of `L.sampler`
    (an enclosing `if`, an earlier `if not ...: return`) decides whether the inserted code runs.

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


def _reader_pattern(reader: str) -> str:
    """``L.sampler`` however it is spaced, not as the tail of a longer chain; a bare alias name
    not as an attribute."""
    return r"(?<![\w.])" + re.escape(reader).replace(r"\.", r"\s*\.\s*") + r"\b"


def _reads_any(code: str, readers: list[str]) -> bool:
    return any(re.search(_reader_pattern(reader), code) for reader in readers)


def _replace_readers(test: str, loader_name: str, alias: str | None) -> str:
    for reader in [f"{loader_name}.sampler", *([alias] if alias else [])]:
        test = re.sub(_reader_pattern(reader), "_sampler", test)
    return test


def _names(node: cst.CSTNode, value: str) -> list[cst.Name]:
    found: list[cst.Name] = []

    class _Collector(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            if name.value == value:
                found.append(name)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)  # `x.value` is not a read of the name `value`
            return False

    node.visit(_Collector())
    return found


def _binds(node: cst.CSTNode, name: str) -> bool:
    """Whether ``node`` assigns the plain name ``name`` anywhere (``name = ...``, ``for name``,
    ``with ... as name``, an augmented assignment)."""
    found = False

    class _Collector(cst.CSTVisitor):
        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            nonlocal found
            found |= any(n.value == name for n in _target_names(target.target))

        def visit_AugAssign(self, assign: cst.AugAssign) -> None:
            nonlocal found
            found |= any(n.value == name for n in _target_names(assign.target))

        def visit_For(self, loop: cst.For) -> None:
            nonlocal found
            found |= any(n.value == name for n in _target_names(loop.target))

        def visit_AsName(self, asname: cst.AsName) -> None:
            nonlocal found
            found |= any(n.value == name for n in _target_names(asname.name))

    node.visit(_Collector())
    return found


def _target_names(target: cst.CSTNode) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _target_names(element.value)]
    return []


def _exits(statement: cst.If) -> bool:
    """An ``if`` whose body ends by leaving the block (``return``, ``continue``, ``break``,
    ``raise``)."""
    body = statement.body
    last = body.body[-1] if isinstance(body, cst.IndentedBlock) else body
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], (cst.Return, cst.Continue, cst.Break, cst.Raise))
    if isinstance(last, cst.SimpleStatementSuite):
        return isinstance(last.body[-1], (cst.Return, cst.Continue, cst.Break, cst.Raise))
    return False


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
