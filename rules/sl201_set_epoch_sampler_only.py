"""SL201 set-epoch-sampler-only: ``loader.sampler.set_epoch(epoch)`` misses batch samplers."""

from __future__ import annotations

import ast
import re

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.analysis.loader_facts import LOADER_COLLECTORS, Origin, file_key
from sampler_lint.analysis.loaders import (
    at_path,
    can_carry_batch_sampler,
    origins_ast,
    origins_at,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.analysis.tree import children, leaves, scope_body_statements, target_names
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity

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
    collectors = LOADER_COLLECTORS
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # `L.sampler.set_epoch(...)` (L not `self`), or `s.set_epoch(...)` with `s = <...>.sampler`.
        return bool(_loaders_set(summary))

    @classmethod
    def syntax_hints(cls, summary: SyntaxSummary) -> frozenset[tuple[Origin, ...]] | None:
        # Where each loader comes from, as the visitor reads it in this file (`origins_at`), for
        # the index to tell whether one can carry a batch sampler; None when the file's side
        # cannot be read surely (an alias, a one-line suite).
        hints: set[tuple[Origin, ...]] = set()
        for loader in _loaders_set(summary):
            origins = origins_ast(summary, loader) if loader is not None else None
            if origins is None:
                return None
            if not _is_a_sampler(origins):
                hints.add(tuple(origins))
        return frozenset(hints)

    @classmethod
    def may_match_index(
        cls, index: ProjectIndex, path: str, text: str,
        hints: frozenset[tuple[Origin, ...]] | None = None,
    ) -> bool:
        if hints is None:
            return True
        here = file_key(path)
        return any(can_carry_batch_sampler(index, at_path(hint, here)) for hint in hints)


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
        if _is_a_sampler(origins):
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
        readers = [f"{loader_name}.sampler", *([alias] if alias else [])]
        quote = _quote_style(self.context.module)
        target: cst.SimpleStatementLine | cst.If = statement
        test: str | None = f"hasattr({{}}, {quote}set_epoch{quote})"
        applicability = Applicability.SAFE
        guard = self._sampler_guard(statement, readers)
        if guard is not None:
            target = guard
            test = self._guard_template(guard, loader_name, alias, quote)
            if _has_impure_call(guard.test):
                applicability = Applicability.UNSAFE
        if test is None:
            return None
        if self._sampler_decided_elsewhere(target, readers):
            return None  # inserted after a test of `L.sampler` it would not run when it matters
        if alias is not None and not self._alias_bound_before(target, alias, loader_name):
            return None
        batch = f"{loader_name}.batch_sampler"
        # A loader wrapper (a prefetcher) may have `sampler` and no `batch_sampler`: read it
        # with getattr unless the guard has already shown `L` is a DataLoader.
        read = batch
        if guard is None or not _proves_loader(self.context.code_for(guard.test), loader_name):
            read = f"getattr({loader_name}, {quote}batch_sampler{quote}, None)"
        inner = f"getattr({read}, {quote}sampler{quote}, None)"
        epoch_code = self.context.code_for(epoch)
        message = "Also pass the epoch to `batch_sampler` (or the sampler inside it)"
        # The reused guard ends the chain (`if G(L.batch_sampler): ... elif G(<its sampler>): ...
        # elif G(L.sampler): <as before>`) when it is the whole of its `if`: with torch's
        # DataLoader at most one of the three can take an epoch (a loader built with
        # `batch_sampler=` keeps the default `sampler`; built with `sampler=`, its batch sampler's
        # `sampler` is that very object). Otherwise the two tests go just before the original
        # code, which stays as it is, and skip the sampler it already reaches.
        chained = isinstance(target, cst.If) and target.orelse is None and (
            isinstance(target.body, cst.IndentedBlock) and len(target.body.body) == 1
        )
        skip = "" if chained else f" and {batch}.sampler is not {loader_name}.sampler"
        first, second = test.replace("{}", read), test.replace("{}", inner)
        code = (
            f"if {first}:\n    {batch}.set_epoch({epoch_code})\n"
            f"elif {second}{skip}:\n    {batch}.sampler.set_epoch({epoch_code})\n"
        )
        try:
            added = cst.parse_module(code, config=self.context.module.config_for_parsing).body[0]
        except cst.ParserSyntaxError:
            return None
        assert isinstance(added, cst.If) and isinstance(added.orelse, cst.If)
        if isinstance(target, cst.If) and self._is_elif(target):
            # Code cannot precede an `elif`, and inside its body it would run only when the
            # test on `L.sampler` passes, which is what fails with a batch sampler: the new
            # tests join the chain just before it. A chain going on after it (`else:`) would
            # be skipped more often: no fix.
            if not chained:
                return None
            chain = added.with_changes(orelse=added.orelse.with_changes(orelse=target))
            return Fix(replacements=[(target, chain)], applicability=applicability,
                       message=message)
        if chained:
            assert isinstance(target, cst.If)
            last = target.with_changes(leading_lines=[])
            chain = added.with_changes(
                leading_lines=target.leading_lines,
                orelse=added.orelse.with_changes(orelse=last),
            )
            return Fix(replacements=[(target, chain)], applicability=applicability,
                       message=message)
        added = added.with_changes(leading_lines=target.leading_lines)
        moved = target.with_changes(leading_lines=[])
        return Fix(
            replacements=[(target, cst.FlattenSentinel([added, moved]))],
            applicability=applicability,
            message=message,
        )

    def _guard_template(
        self, guard: cst.If, loader_name: str, alias: str | None, quote: str
    ) -> str | None:
        """The guard's test as a format string of the sampler it tests (``{}`` where it reads
        ``L.sampler`` or the alias), in the file's own spelling when it fits on one line. A test
        that does not itself ask whether the object can take an epoch (``isinstance``,
        ``hasattr(_, "set_epoch")``...) also gets ``hasattr({}, "set_epoch")``: the new branches
        call ``set_epoch`` on objects the original test never saw."""
        code = self.context.code_for(guard.test)
        if "\n" in code or "#" in code:
            try:  # one line, whatever the guard's layout
                code = _requoted(ast.unparse(ast.parse(code.strip(), mode="eval")), quote)
            except SyntaxError:
                return None
        if "{" in code or "}" in code:
            return None  # a dict, a set or an f-string: not a format string
        template = _replace_readers(code, loader_name, alias, "{}")
        if isinstance(guard.test, (cst.IfExp, cst.Lambda, cst.NamedExpr)) or (
            isinstance(guard.test, cst.BooleanOperation)
            and isinstance(guard.test.operator, cst.Or)
        ):
            template = f"({template})"  # it is followed by `and ...`
        if not re.search(r"\bisinstance\b|set_epoch", template):
            template = f"{template} and hasattr({{}}, {quote}set_epoch{quote})"
        return template

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
                            and leaves(earlier.body)
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
    neither, when torch's default batch sampler draws from `L.sampler` itself. A `**` spread
    beside a `sampler=` the call passes itself holds no batch sampler (torch refuses the two
    together); a spread alone may. Loaders are
    followed through local assignments (tuple unpacking included; where a name is rebound in
    straight-line code, as in `loader = Wrapper(loader)`, only the value that reaches the use)
    and a script's module-level
    ones (its `if __name__ == "__main__":` block), function returns (tuples
    included, an element such as `DataLoader(...) if d is not None else None` taken as either
    value; every `return` must be a tuple of that length; a list the function only appends to
    and returns, as BLIP's `loaders.append(DataLoader(...))`, each element any of the values
    appended; a dict under string keys, as `loaders["train"]` or `loaders.get("train")`
    (or its default), what the literal puts there
    and what is stored there later, `loaders["train"] = ...`, `loaders.update(train=...)` or
    `loaders.setdefault("train", ...)`, by the function that builds it,
    the function that reads it, or a method of the class that keeps it on `self`, unless one
    of them changes the dict some other way; keys stored over the dict a call returned,
    `loaders = build(); loaders["x"] = ...; return loaders`, count too; a dict comprehension
    holds its value under every key, and so does a store under a computed key,
    `loaders[name] = ...`; read under the variable of a loop over string constants, as
    `for phase in ["train", "val"]: loaders[phase]`, the values under those keys; under
    another key that is no constant, any of the dict's values, or any element of a tuple or
    list), constructor and
    function arguments (an element of a tuple passed included),
    `self.<attr>` and `self.method()` (assigned or defined in the class, its project bases and
    its project subclasses, in whichever files), `super().method()` (defined in a project
    base: an override that extends its base's dict of loaders, as USB's `set_data_loader`),
    methods of instances of project classes (`x = ProjectClass(...)`, or `x = factory()` whose
    every return builds one, in a file that may name no loader at all, as OpenRLHF's
    `get_strategy`, then `x.method(...)` in that class or its project bases), project
    wrappers whose `__getattr__` hands every attribute they lack to the wrapped loader
    (`return getattr(self.loader, name)`, as LAVIS's `PrefetchLoader`) and that define no
    `sampler` / `batch_sampler` of their own (a project class with neither, and no
    `__getattr__`, holds no batch sampler: `x.sampler` fails there; one whose `sampler`
    property returns the wrapped loader's `batch_sampler`, as NVIDIA's Efficientdet
    `PrefetchLoader`, hands `set_epoch` to that batch sampler), import
    aliases and package re-exports (an `__init__.py` that names no loader included, and
    `from .build import *` there), across
    the files of the project. Code that
    receives loaders from outside the project (a library's public method, a hook, a loop
    wrapper) cannot show that, and is flagged, but for library factories whose loaders are
    known (timm's `create_loader` builds with `sampler=` unless given `scheduled_batching`).

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
        if isinstance(getattr(dataloader, "batch_sampler", None), DistributedSampler):
            dataloader.batch_sampler.set_epoch(epoch)
        elif isinstance(
            getattr(getattr(dataloader, "batch_sampler", None), "sampler", None),
            DistributedSampler,
        ):
            dataloader.batch_sampler.sampler.set_epoch(epoch)
        elif isinstance(dataloader.sampler, DistributedSampler):
            dataloader.sampler.set_epoch(epoch)
    ```
    (the fix reads `batch_sampler` with `getattr` unless the guard shows `dataloader` is a
    `DataLoader`, so that a loader wrapper without it keeps working).
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
    The fix reuses the original guard: the epoch also reaches `L.batch_sampler` or, failing
    that, the sampler inside it (`L.batch_sampler.sampler`), under the guard's predicate with
    `L.sampler` replaced (`hasattr(_, "set_epoch")` with no guard; a guard that asks neither
    `isinstance` nor `set_epoch` gets `hasattr(_, "set_epoch")` added). When the guard is the
    whole of its `if` (one statement, no `else`), the two new tests come first and the guard
    ends the chain: `if G(L.batch_sampler): ... elif G(L.batch_sampler.sampler): ... elif
    G(L.sampler): <as before>`. With torch's DataLoader at most one of the three takes an
    epoch (built with `batch_sampler=`, `L.sampler` is the default sampler; built with
    `sampler=`, `L.batch_sampler.sampler` is that very sampler), so the loader built with
    `sampler=` behaves exactly as before. An `elif` guard gets the two tests just before it in
    its chain (code inside its body would run only when the failing test passes). Otherwise (a
    guard with more statements or an `else`, or no guard) the two tests go just before the
    original code, which stays as it is, and skip the sampler it already reaches
    (`... is not L.sampler`). `batch_sampler` is read with `getattr(L, "batch_sampler", None)`
    unless the guard shows `isinstance(L, DataLoader)`, so a loader wrapper without it still
    works. The file's quote style is kept. Safe when the guard is reused or absent; unsafe when
    the guard calls something other than `isinstance` / `hasattr` / `getattr` (it may run up to
    three times). Offered only when `L` is a name or attribute chain and `E` has no calls (it
    would be evaluated more than once). The alias shape (`s = L.sampler`) is fixed only when
    the alias serves nothing but its guard and `set_epoch`. No fix where another test of
    `L.sampler` (an enclosing `if`, an earlier `if not ...: return`) decides whether the new
    code runs, nor for an `elif` guard followed by an `else`.

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
                '    if isinstance(getattr(dataloader, "batch_sampler", None), '
                "DistributedSampler):\n"
                "        dataloader.batch_sampler.set_epoch(epoch)\n"
                '    elif isinstance(getattr(getattr(dataloader, "batch_sampler", None), '
                '"sampler", None), DistributedSampler):\n'
                "        dataloader.batch_sampler.sampler.set_epoch(epoch)\n"
                "    elif isinstance(dataloader.sampler, DistributedSampler):\n"
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


def _replace_readers(test: str, loader_name: str, alias: str | None, replacement: str) -> str:
    for reader in [f"{loader_name}.sampler", *([alias] if alias else [])]:
        test = re.sub(_reader_pattern(reader), lambda _: replacement, test)
    return test


def _proves_loader(test: str, loader_name: str) -> bool:
    """Whether a guard's test shows ``loader_name`` is a DataLoader (``isinstance(L,
    DataLoader)`` among what it requires), so that it has a ``batch_sampler``."""
    pattern = r"^\s*isinstance\(\s*" + re.escape(loader_name) + r"\s*,\s*[\w.]*DataLoader\s*\)"
    return any(re.search(pattern, part) for part in re.split(r"\band\b", test)) and not re.search(
        r"\bor\b|\bnot\b", test
    )


def _quote_style(module: cst.Module) -> str:
    """The quote the file writes strings with: the one most of its plain strings use."""
    counts = {'"': 0, "'": 0}
    # The tree's nodes read directly: libcst's visitor machinery took four times as long, most of
    # a large training script's lint when it has a finding to fix.
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if type(node) is cst.SimpleString:
            body = node.value.lstrip("rbuRBU")
            if body[:1] in counts and body[:3] != body[:1] * 3:
                counts[body[:1]] += 1
        else:
            stack.extend(children(node))
    return "'" if counts["'"] > counts['"'] else '"'


def _requoted(code: str, quote: str) -> str:
    """``code`` (one expression, as ``ast.unparse`` writes it) with its plain strings in
    ``quote`` where their text allows."""
    try:
        expression = cst.parse_expression(code)
    except cst.ParserSyntaxError:
        return code

    class _Requote(cst.CSTTransformer):
        def leave_SimpleString(
            self, original: cst.SimpleString, updated: cst.SimpleString
        ) -> cst.SimpleString:
            value = updated.value
            if value[:1] in ("'", '"') and value[:3] != value[:1] * 3:
                text = value[1:-1]
                if quote not in text and "\\" not in text:
                    return updated.with_changes(value=f"{quote}{text}{quote}")
            return updated

    rewritten = expression.visit(_Requote())
    assert isinstance(rewritten, cst.CSTNode)
    return cst.Module(body=[]).code_for_node(rewritten)


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
            found |= name in target_names(target.target)

        def visit_AugAssign(self, assign: cst.AugAssign) -> None:
            nonlocal found
            found |= name in target_names(assign.target)

        def visit_For(self, loop: cst.For) -> None:
            nonlocal found
            found |= name in target_names(loop.target)

        def visit_AsName(self, asname: cst.AsName) -> None:
            nonlocal found
            found |= name in target_names(asname.name)

    node.visit(_Collector())
    return found


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


def _is_a_sampler(origins: list[Origin]) -> bool:
    """Every origin of the receiver is a call of a class named like a sampler (``b =
    BatchSampler(DistributedSampler(ds), 8, False)``): its ``.sampler`` is what it draws from."""
    return bool(origins) and all(o[0] == "call" and o[2].endswith("Sampler") for o in origins)


def _loaders_set(summary: SyntaxSummary) -> list[ast.expr | None]:
    """The loader of each `L.sampler.set_epoch(...)` (L not `self`); ``None`` for each
    `s.set_epoch(...)` with `s = <...>.sampler` (the visitor reads that alias in its scope).
    Not where the function around the call (or the module, outside any) spells
    ``batch_sampler``: the visitor leaves that code alone, and the code read here is a part of
    what it reads (``SyntaxSummary.code_between``)."""
    aliases = {
        t.id for t, value in summary.assignments()
        if type(t) is ast.Name and type(value) is ast.Attribute and value.attr == "sampler"
    }
    found: list[ast.expr | None] = []
    for call in summary.nodes(ast.Call):
        func = call.func
        if type(func) is ast.Attribute and func.attr == "set_epoch" and not _looks_at_batches(
            summary, call
        ):
            receiver = func.value
            if type(receiver) is ast.Name and receiver.id in aliases:
                found.append(None)
            elif type(receiver) is ast.Attribute and receiver.attr == "sampler" and not (
                type(receiver.value) is ast.Name and receiver.value.id == "self"
            ):
                found.append(receiver.value)
    return found


def _looks_at_batches(summary: SyntaxSummary, call: ast.Call) -> bool:
    """The function around ``call`` (or the module) spells ``batch_sampler`` (unknown code:
    never)."""
    return "batch_sampler" in summary.code_of(summary.enclosing_function(call))
