"""SL501 batch-sampler-not-injectable: a custom batch sampler Lightning cannot re-create under
DDP."""

from __future__ import annotations

import ast
import re

import libcst as cst

from sampler_lint.frameworks import (
    FACT_BATCH_SAMPLERS,
    FACT_INJECTION_OFF,
    FRAMEWORK_FACTS,
    LIGHTNING_IMPORTS,
    batch_sampler_classes,
    injection_disabled,
    project_may_use_lightning,
    uses_lightning,
)
from sampler_lint.index import ProjectIndex
from sampler_lint.rule import Example, Rule, Severity
from sampler_lint.sampler_family import (
    CLASS_FACT_WORDS,
    CLASS_FACTS,
    chain_of,
    classes_at,
    find_class,
)
from sampler_lint.syntax_summary import SyntaxSummary

_HOW = (
    "subclass `torch.utils.data.BatchSampler`, take `sampler, batch_size, drop_last` in "
    "`__init__` (Lightning 1.x: keep `self.batch_size` and `self.drop_last`), draw the indices "
    "from `self.sampler`, and build it inside the `*_dataloader` hook; or shard it yourself and "
    "turn the injection off (`Trainer(use_distributed_sampler=False)`, "
    "`replace_sampler_ddp=False` before 2.0)"
)


class BatchSamplerNotInjectable(Rule):
    code = "SL501"
    name = "batch-sampler-not-injectable"
    severity = Severity.ERROR
    # A class of the index passed as `batch_sampler=` elsewhere is judged even when it defines
    # no method of its own.
    requires = (CLASS_FACT_WORDS,)
    collectors = (FRAMEWORK_FACTS, CLASS_FACTS, LIGHTNING_IMPORTS)
    uses_index = True
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # A class with bases (only those are in the index); whether it is a batch sampler and
        # the project uses Lightning, only the index can tell.
        return any(klass.bases for klass in summary.nodes(ast.ClassDef))


    @classmethod
    def may_match_index(cls, index: ProjectIndex, path: str) -> bool:
        # Lightning somewhere, injection left on, and a class here that is or may be used as a
        # batch sampler (any class whose bases are all visible may yield lists of indices).
        if not project_may_use_lightning(index) or index.get(FACT_INJECTION_OFF):
            return False
        passed = set(index.get(FACT_BATCH_SAMPLERS))
        for fact in classes_at(index, path):
            chain = chain_of(index, fact)
            if "BatchSampler" in chain.torch_bases or fact.name in passed or not chain.opaque:
                return True
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        fact = find_class(self.context.index, node.name.value, str(self.context.path))
        if fact is None:
            return
        chain = chain_of(self.context.index, fact)
        subclasses = "BatchSampler" in chain.torch_bases
        used_as_batch_sampler = node.name.value in batch_sampler_classes(self.context)
        if not (subclasses or used_as_batch_sampler or self._yields_lists(node)):
            return
        if chain.opaque and not subclasses:
            return  # a base the tool cannot see may well be a BatchSampler
        if not uses_lightning(self.context) or injection_disabled(self.context):
            return
        init = _own_init(node)
        if subclasses:
            if init is None or _accepts(init, "sampler"):
                return
            problem = (
                "its `__init__` has no `sampler` argument, so Lightning cannot re-create it with "
                "a DistributedSampler (`TypeError: ... does not have an argument called sampler`)"
            )
        else:
            has_attributes = {"batch_size", "drop_last"} <= chain.assigned
            if has_attributes and init is not None and _takes_sampler_first(init):
                return  # Lightning's fallback cls(sampler, batch_size=..., drop_last=...) works
            if not has_attributes:
                problem = (
                    "it does not subclass BatchSampler and has no `batch_size` / `drop_last`: "
                    "Lightning 2.x raises `can't inject a (distributed) sampler into your batch "
                    "sampler`; 1.x fails with `object has no attribute 'batch_size'`"
                )
            else:
                problem = (
                    "it does not subclass BatchSampler and `__init__` cannot be called as "
                    "`cls(sampler, batch_size=..., drop_last=...)`: Lightning raises `can't inject "
                    "a (distributed) sampler` (1.x: `unexpected keyword argument 'batch_size'`)"
                )
        message = (
            f"batch sampler `{node.name.value}` breaks under DDP with Lightning: {problem}. "
            f"To fix it, {_HOW}"
        )
        self.report(node.name, message)

    def _yields_lists(self, node: cst.ClassDef) -> bool:
        """A sampler-family class whose ``__iter__`` yields lists (``yield [i, j]``,
        ``yield list(...)``, or ``yield batch`` after ``batch = []``): a batch sampler."""
        iterate = next((item for item in node.body.body
                        if isinstance(item, cst.FunctionDef) and item.name.value == "__iter__"),
                       None)
        if iterate is None:
            return False
        code = self.context.code_for(iterate)
        if re.search(r"\byield\s+(\[|list\()", code):
            return True
        return any(
            re.search(rf"\b{re.escape(name)}\s*=\s*\[", code)
            for name in re.findall(r"\byield\s+(\w+)\s*$", code, re.MULTILINE)
        )

    documentation = """
    A custom batch sampler that Lightning cannot re-create under DDP.

    ## What it does
    In a project that uses Lightning or Fabric without turning sampler injection off, flags a
    batch sampler (a class passed as `batch_sampler=` anywhere in the project, or a subclass of
    torch's `BatchSampler` through any chain of project classes) that Lightning's DDP
    re-instantiation rejects (a sampler-family class whose `__iter__` yields lists counts as a
    batch sampler too): a `BatchSampler` subclass whose `__init__` has no `sampler`
    argument, or a class that does not subclass `BatchSampler` and either lacks `batch_size` /
    `drop_last` or cannot be called as `cls(sampler, batch_size=..., drop_last=...)`.
    Deviations from RULES.md, to stay precise: a class whose unresolved base may be a
    `BatchSampler` is left alone.

    ## Why is this bad
    Under DDP, Lightning (and Fabric's `setup_dataloaders`) re-creates each loader's batch sampler
    to inject a `DistributedSampler`. A batch sampler it cannot re-create makes the job fail as
    soon as it runs on more than one GPU, after working on one (Lightning issue #19371):
    `'TwoStreamBatchSampler' object has no attribute 'batch_size'`, then `__init__() got an
    unexpected keyword argument 'batch_size'`, then in 2.1+ `Lightning can't inject a
    (distributed) sampler into your batch sampler, because it doesn't subclass PyTorch's
    BatchSampler`.

    ## Example
    ```python
    class TwoStreamBatchSampler(Sampler):
        def __init__(self, primary, secondary, batch_size, secondary_batch_size):
            ...
    ```

    ## Use instead
    ```python
    class TwoStreamBatchSampler(BatchSampler):
        def __init__(self, sampler, batch_size, drop_last, secondary, secondary_batch_size=2):
            super().__init__(sampler, batch_size, drop_last)
            ...
        def __iter__(self):
            ...  # draw the primary indices from self.sampler
    ```
    Or shard the indices per rank yourself and pass `use_distributed_sampler=False` to the
    `Trainer` (`replace_sampler_ddp=False` before 2.0).

    ## Fix safety
    No fix is offered: the new `__init__` signature and how `__iter__` should draw from
    `self.sampler` depend on what the class does.

    ## References
    - Lightning issue #19371
    - Lightning `lightning.fabric.utilities.data._dataloader_init_kwargs_resolve_sampler`
    """

    examples = (
        Example(
            "import lightning as L\n"
            "from torch.utils.data import DataLoader, Sampler\n"
            "\n"
            "\n"
            "class TwoStreamBatchSampler(Sampler):\n"
            "    def __init__(self, primary, secondary, batch_size, secondary_batch_size):\n"
            "        self.primary = primary\n"
            "\n"
            "    def __iter__(self):\n"
            "        yield [0]\n"
            "\n"
            "\n"
            "def loader(data):\n"
            "    return DataLoader(data, batch_sampler=TwoStreamBatchSampler([0], [1], 2, 1))\n",
            lines=(5,),
        ),
        Example(
            "import lightning as L\n"
            "from torch.utils.data import BatchSampler\n"
            "\n"
            "\n"
            "class Fine(BatchSampler):\n"
            "    def __init__(self, sampler, batch_size, drop_last, extra=1):\n"
            "        super().__init__(sampler, batch_size, drop_last)\n"
        ),
    )


def _own_init(klass: cst.ClassDef) -> cst.FunctionDef | None:
    for item in klass.body.body:
        if isinstance(item, cst.FunctionDef) and item.name.value == "__init__":
            return item
    return None


def _accepts(init: cst.FunctionDef, name: str) -> bool:
    params = init.params
    if params.star_kwarg is not None:
        return True
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    return name in names


def _takes_sampler_first(init: cst.FunctionDef) -> bool:
    """Callable as ``cls(sampler, batch_size=..., drop_last=...)``."""
    params = init.params
    positional = [p for p in (*params.posonly_params, *params.params)][1:]  # without self
    if not positional and isinstance(params.star_arg, cst.Param):
        return _keywords_ok(init)
    if not positional:
        return False
    rest = positional[1:]
    for param in rest:
        if param.default is None and param.name.value not in ("batch_size", "drop_last"):
            return False  # another required argument
    if any(p.default is None and p.name.value not in ("batch_size", "drop_last")
           for p in params.kwonly_params):
        return False
    return _keywords_ok(init)


def _keywords_ok(init: cst.FunctionDef) -> bool:
    return _accepts(init, "batch_size") and _accepts(init, "drop_last")
