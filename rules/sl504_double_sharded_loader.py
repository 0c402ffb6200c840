"""SL504 double-sharded-loader: a loader whose sampler already shards by rank, handed to
``accelerator.prepare``, which shards it again."""

from __future__ import annotations

import ast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import ProjectIndex, dotted_expression
from sampler_lint.analysis.leftovers import leaves_unused_names
from sampler_lint.analysis.loader_calls import constructed, is_distributed_sampler
from sampler_lint.analysis.loader_facts import is_loader_constructor
from sampler_lint.analysis.matching import get_arg, int_value, is_literal, is_repeatable
from sampler_lint.analysis.sampler_family import CLASS_FACTS, shards_by_rank
from sampler_lint.analysis.syntax_summary import SyntaxSummary, argument, per_tree
from sampler_lint.analysis.text_shapes import LOADER_CALL, calls_in, names_a_word
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
_SHUFFLE, _SAMPLER, _BATCH_SAMPLER = 2, 3, 4
_PREPARE_METHODS = ("prepare", "prepare_data_loader")


class DoubleShardedLoader(Rule):
    code = "SL504"
    name = "double-sharded-loader"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    fix_risk = (
        "accelerate then shards whole batches: each rank's share and order differ from the "
        "sampler's, and the sampler's seed and drop_last no longer apply"
    )
    requires = (("prepare",), ("DataLoader",))
    has_syntax_filter = True
    collectors = (CLASS_FACTS,)
    uses_index = True

    @classmethod
    def may_match_text(cls, text: str) -> bool:
        # The syntax stage wants `prepare` or `prepare_data_loader` called or imported: a whole
        # word, not the `prepare_data` hook of every Lightning module (Lightning: 19 files pass
        # the tokens, 6 the word); and a loader given a sampler by keyword (`sampler=`,
        # `batch_sampler=`) or fourth by position or later (diffusers' training scripts prepare
        # loaders built with `shuffle=True`: 92 passed the word, 17 parsed for this alone).
        return names_a_word(text, _PREPARE_METHODS) and any(
            call is None or len(call.positional) > _SAMPLER or "sampler" in call.arguments
            for call in calls_in(text, LOADER_CALL)
        )

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # A `.prepare(...)` / `prepare_data_loader(...)` call, and a DataLoader given a sampler
        # (or a batch sampler built from one) that is a call: of a DistributedSampler, or of a
        # class the index may show shards by rank.
        definite, names = _sampler_calls(summary)
        return definite or bool(names)

    @classmethod
    def syntax_hints(cls, summary: SyntaxSummary) -> frozenset[str] | None:
        definite, names = _sampler_calls(summary)
        return None if definite else names

    @classmethod
    def may_match_index(
        cls, index: ProjectIndex, path: str, text: str, hints: frozenset[str] | None = None
    ) -> bool:
        # Without hints, a DistributedSampler is built: nothing for the index to judge.
        return hints is None or any(shards_by_rank(index, name) for name in hints)

    def visit_Call(self, node: cst.Call) -> None:
        if "already_sharded" in self.context.source:
            return  # accelerate's proposed opt-out (PR #4087 / #4201): trust it when present
        for loader_expr in self._prepared_loaders(node):
            loader = self._value(loader_expr, node)
            if not isinstance(loader, cst.Call):
                continue
            if not is_loader_constructor(dotted_name(loader.func)):
                continue
            sampler_arg, through_batch_sampler = self._sampler_of(loader)
            if sampler_arg is None:
                continue
            sampler = self._value(sampler_arg.value, loader)
            if not isinstance(sampler, cst.Call) or not self._shards(sampler):
                continue
            what = self.context.code_for(sampler.func)
            message = (
                f"this loader's sampler (`{what}`) already gives each process its share, and "
                "`prepare` shards the loader again: every process trains on 1/W of its share, "
                "1/W^2 of the data, and nothing warns"
            )
            fix = None
            if not through_batch_sampler:
                fix = self._fix(loader, sampler_arg, sampler)
            self.report(loader_expr, message, fix)

    # -- what is prepared ----------------------------------------------------------------------
    def _prepared_loaders(self, call: cst.Call) -> list[cst.BaseExpression]:
        func = call.func
        positional = [arg.value for arg in call.args if not arg.star and arg.keyword is None]
        if isinstance(func, cst.Attribute) and func.attr.value in _PREPARE_METHODS:
            if not self._is_accelerator(func.value):
                return []
            return positional if func.attr.value == "prepare" else positional[:1]
        qualified = self.context.qualified_name(func) or ""
        if qualified.startswith("accelerate.") and qualified.endswith(".prepare_data_loader"):
            return positional[:1]
        return []

    def _is_accelerator(self, receiver: cst.BaseExpression) -> bool:
        """``accelerator``, ``self.accelerator``, ``trainer.accelerator``, or a name assigned
        ``Accelerator(...)`` in the same function or module."""
        name = dotted_name(receiver)
        if name is not None and name.rsplit(".", 1)[-1].lower().endswith("accelerator"):
            return True
        value = self._value(receiver, receiver)
        return isinstance(value, cst.Call) and (
            self.context.qualified_name(value.func) or ""
        ).startswith("accelerate.")

    def _value(self, node: cst.BaseExpression, at: cst.CSTNode) -> cst.BaseExpression:
        """``node`` itself, or the one value a name (or ``self.x``) is assigned in the function
        around ``at`` (else the module)."""
        name = dotted_name(node)
        if name is None or isinstance(node, cst.Call):
            return node
        function = self.context.enclosing_function(at)
        scope: cst.CSTNode = function if function is not None else self.context.module
        values = self.context.assignments(scope).get(name, [])
        if not values and function is not None and "." not in name:
            values = self.context.assignments(self.context.module).get(name, [])
        return values[0] if len(values) == 1 else node

    def _shards(self, sampler: cst.Call) -> bool:
        name = constructed(sampler)
        if name is None:
            return False
        if is_distributed_sampler(name):
            replicas = get_arg(sampler, 1 if _torch_signature(name) else None, "num_replicas")
            return replicas is None or int_value(replicas.value) != 1
        return shards_by_rank(self.context.index, name)

    def _sampler_of(self, loader: cst.Call) -> tuple[cst.Arg | None, bool]:
        """The loader's ``sampler`` argument, or the sampler argument of the
        ``BatchSampler(<sampler>, ...)`` passed as its ``batch_sampler`` (inline or through one
        assignment); ``True`` for the latter."""
        arg = get_arg(loader, _SAMPLER, "sampler")
        if arg is not None:
            return arg, False
        batch = get_arg(loader, _BATCH_SAMPLER, "batch_sampler")
        if batch is None:
            return None, False
        value = self._value(batch.value, loader)
        if isinstance(value, cst.Call) and (constructed(value) or "").endswith("BatchSampler"):
            return get_arg(value, 0, "sampler"), True
        return None, False

    # -- the fix -------------------------------------------------------------------------------
    def _fix(self, loader: cst.Call, sampler_arg: cst.Arg, sampler: cst.Call) -> Fix | None:
        """Drop ``sampler=`` and pass its ``shuffle`` to the loader (``DistributedSampler``
        only: its ``shuffle`` defaults to ``True``)."""
        name = constructed(sampler) or ""
        if not _torch_signature(name) or sampler_arg.keyword is None:
            return None
        if any(arg.star for arg in loader.args):
            return None
        shuffle_arg = get_arg(sampler, 3, "shuffle")
        shuffle: cst.BaseExpression = cst.Name("True")
        if shuffle_arg is not None:
            if not (is_literal(shuffle_arg.value) or is_repeatable(shuffle_arg.value)):
                return None
            shuffle = shuffle_arg.value
        loader_shuffle = get_arg(loader, _SHUFFLE, "shuffle")
        if loader_shuffle is not None and not (
            loader_shuffle.keyword is not None
            and isinstance(loader_shuffle.value, cst.Name)
            and loader_shuffle.value.value in ("False", "None")
        ):
            return None  # a shuffle the fix cannot simply replace
        removed: list[cst.CSTNode] = [sampler_arg.value]
        if loader_shuffle is not None:
            removed.append(loader_shuffle.value)
        added: list[cst.CSTNode] = [shuffle] if sampler_arg.value is sampler else []
        if leaves_unused_names(self.context, removed, added, at=loader):
            return None
        keyword = cst.Arg(
            value=shuffle,
            keyword=cst.Name("shuffle"),
            equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""),
                whitespace_after=cst.SimpleWhitespace(""),
            ),
            comma=sampler_arg.comma,
        )
        args = list(loader.args)
        position = args.index(sampler_arg)
        if loader_shuffle is None:
            args[position] = keyword  # in place: the commas and line breaks stay as they were
        else:
            args[args.index(loader_shuffle)] = loader_shuffle.with_changes(value=shuffle)
            del args[position]
            if position == len(args) and args:  # the last argument went: so does its comma
                args[-1] = args[-1].with_changes(comma=sampler_arg.comma)
        return Fix(
            replacements=[(loader, loader.with_changes(args=args))],
            applicability=Applicability.UNSAFE,
            message=f"Let `prepare` shard: drop `sampler=`, pass `shuffle={_code(shuffle)}`",
        )

    documentation = """
    A loader whose sampler already shards by rank, handed to `accelerator.prepare`.

    ## What it does
    Flags a `DataLoader` passed to `accelerator.prepare(...)` / `accelerator.prepare_data_loader(
    ...)` / `accelerate.data_loader.prepare_data_loader(...)` (directly, or through a name
    assigned once in the same function) whose `sampler=` (or the sampler inside its
    `batch_sampler=BatchSampler(...)`) shards by rank: a `DistributedSampler`-family
    construction not built with `num_replicas=1`, or a project sampler class that derives from
    `DistributedSampler` or reads `self.rank` / `self.num_replicas` / `self.world_size` /
    `self.process_index` (itself or through its bases). The receiver is named `...accelerator` or
    assigned `accelerate.Accelerator(...)`. Files that mention `already_sharded` (accelerate's
    proposed opt-out) are left alone. An HF `Trainer` subclass whose `get_train_dataloader`
    returns `self.accelerator.prepare(DataLoader(..., sampler=DistributedSampler(...)))` is
    this shape; one that returns a DataLoader *without* `prepare` is not flagged: `Trainer`
    does not prepare what `get_train_dataloader` returns (its own implementation calls
    `prepare` inside).

    ## Why is this bad
    accelerate never looks at the sampler's type. In `prepare_data_loader` (accelerate 1.15),
    whenever the job has more than one process (or uses Megatron-LM) and batches are not
    dispatched, a map-style loader's batch sampler is wrapped in `BatchSamplerShard`, which
    keeps every W-th batch of what the loader yields (with `split_batches=True`, 1/W of every
    batch); with `dispatch_batches=True`, process 0 iterates its own loader (its 1/W share)
    and splits every batch between all processes. Either way a `DistributedSampler` that
    already gave each process 1/W of the data leaves each with 1/W^2: 4 GPUs train on a
    quarter of the dataset per epoch, the loss curve looks normal, and nothing warns
    (accelerate issues #3520, #4062, #4075, #4199; transformers #34365, where a maintainer
    answers "You should not be doing this because Accelerate's dataloaders do this"). With one
    process there is no harm; the finding is about the multi-GPU run.

    ## Example
    ```python
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    ```
    accelerate shards the loader and keeps the processes' shuffles in step (pass
    `use_seedable_sampler=True` in `DataLoaderConfiguration` for a seeded order). A sampler
    that must stay (weighted, grouped by length) should be a global, rank-free sampler:
    accelerate shards its batches.

    ## Fix safety
    Unsafe: the samples each process sees, their order and the epoch length all change (to
    the intended ones), and the sampler's `seed` and `drop_last` no longer apply. Offered for a
    `DistributedSampler` passed as `sampler=` (inline, or a local also used elsewhere) when the
    loader has no `shuffle` or `shuffle=False` / `None`: it drops `sampler=` and passes the
    sampler's `shuffle` (`True` when it had none). Custom samplers and batch samplers are
    reported without a fix.

    ## References
    - accelerate `data_loader.prepare_data_loader` and `BatchSamplerShard`
    - accelerate issues #3520, #4062, #4075, #4199 (PRs #4087, #4201 propose `already_sharded`);
      transformers issue #34365
    """

    examples = (
        Example(
            "from accelerate import Accelerator\n"
            "from torch.utils.data import DataLoader, DistributedSampler\n"
            "\n"
            "\n"
            "def main(model, dataset):\n"
            "    accelerator = Accelerator()\n"
            "    loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))\n"
            "    model, loader = accelerator.prepare(model, loader)\n"
            "    return DistributedSampler\n",
            lines=(8,),
            fixed=(
                "from accelerate import Accelerator\n"
                "from torch.utils.data import DataLoader, DistributedSampler\n"
                "\n"
                "\n"
                "def main(model, dataset):\n"
                "    accelerator = Accelerator()\n"
                "    loader = DataLoader(dataset, batch_size=32, shuffle=True)\n"
                "    model, loader = accelerator.prepare(model, loader)\n"
                "    return DistributedSampler\n"
            ),
        ),
        Example(
            "from accelerate import Accelerator\n"
            "from torch.utils.data import DataLoader\n"
            "\n"
            "\n"
            "def main(model, dataset):\n"
            "    accelerator = Accelerator()\n"
            "    loader = DataLoader(dataset, batch_size=32, shuffle=True)\n"
            "    return accelerator.prepare(model, loader)\n"
        ),
    )


def _torch_signature(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in ("DistributedSampler", "StatefulDistributedSampler")


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _sampler_calls(summary: SyntaxSummary) -> tuple[bool, frozenset[str]]:
    """The ``ast`` side of ``visit_Call``, looser: whether a loader is given a DistributedSampler
    call, and the last names of the other calls a loader's sampler may be, directly or through
    any assignment in the file (the visitor follows the one in the function, else the module),
    or the sampler of a ``...BatchSampler(...)`` passed as ``batch_sampler``."""
    def make() -> tuple[bool, frozenset[str]]:
        if not any(name in summary.names for name in _PREPARE_METHODS):
            return False, frozenset()
        values = summary.values_by_target()

        def resolved(node: ast.expr) -> list[ast.expr]:
            name = None if type(node) is ast.Call else dotted_expression(node)
            return [node, *values.get(name, ())] if name is not None else [node]

        definite = False
        names: set[str] = set()
        for call in summary.nodes(ast.Call):
            if not is_loader_constructor(dotted_expression(call.func)):
                continue
            samplers: list[ast.expr] = []
            sampler = argument(call, _SAMPLER, "sampler")
            if sampler is not None:
                samplers += resolved(sampler)
            batch = argument(call, _BATCH_SAMPLER, "batch_sampler")
            for value in resolved(batch) if batch is not None else ():
                if type(value) is ast.Call and (
                    dotted_expression(value.func) or ""
                ).endswith("BatchSampler"):
                    inner = argument(value, 0, "sampler")
                    samplers += resolved(inner) if inner is not None else []
            for candidate in samplers:
                built = dotted_expression(candidate.func) if type(candidate) is ast.Call else None
                if built is None:
                    continue
                if is_distributed_sampler(built):
                    definite = True
                else:
                    names.add(built.rsplit(".", 1)[-1])
        return definite, frozenset(names)

    return per_tree(summary.tree, "SL504 sampler calls", make)
