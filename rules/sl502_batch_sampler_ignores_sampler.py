"""SL502 batch-sampler-ignores-sampler: a BatchSampler whose ``__iter__`` never draws from
``self.sampler``."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.batch_samplers import lightning_injects
from sampler_lint.analysis.frameworks import (
    FRAMEWORK_FACTS,
    LIGHTNING_FILES,
    LIGHTNING_IMPORTS,
    TRAINERS,
    project_may_use_lightning,
)
from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.analysis.sampler_family import (
    CLASS_FACT_WORDS,
    CLASS_FACTS,
    chain_of,
    classes_at,
    find_class,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary, per_tree
from sampler_lint.rule import Example, Rule, Severity

_SELF_CALL = re.compile(r"self\.(\w+)\(")
# Reading any sampler attribute (self.sampler, self.batch_sampler, self.base_sampler...) or
# sharding by rank means the class does not ignore what it was given.
_DRAWS = re.compile(
    r"self\.\w*sampler\b|super\(\)\.__iter__|\b(rank|num_replicas|world_size|get_rank)\b"
)


def _draws(body_code: Callable[[str], str | None]) -> bool:
    """``__iter__`` or a method it calls (``self.helper()``, transitively) reads a sampler,
    delegates to ``super().__iter__()`` or shards by rank. ``body_code(name)``: the code of the
    class's method ``name`` (``None``: the class defines none)."""
    seen: set[str] = set()
    pending = ["__iter__"]
    while pending:
        name = pending.pop()
        code = None if name in seen else body_code(name)
        seen.add(name)
        if code is None:
            continue
        if _DRAWS.search(code):
            return True
        pending.extend(_SELF_CALL.findall(code))
    return False


def _ignoring_classes(summary: SyntaxSummary) -> frozenset[str]:
    """The classes with bases defining ``__iter__`` that may ignore their sampler: the ``ast``
    side of ``visit_ClassDef``."""
    return per_tree(summary.tree, "SL502 candidates", lambda: frozenset(
        klass.name for klass in summary.nodes(ast.ClassDef)
        if klass.bases and _may_ignore(summary, klass)
    ))


def _may_ignore(summary: SyntaxSummary, klass: ast.ClassDef) -> bool:
    """``klass`` defines ``__iter__`` and, as far as the code shows, it draws from no sampler.
    Each method is read from its first statement (a part of the body libcst prints: what the
    visitor finds drawing here, it finds too). With the code unknown: whenever it defines one."""
    methods = {
        item.name: item for item in klass.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    if "__iter__" not in methods:
        return False
    if not summary.source:
        return True

    def body_code(name: str) -> str | None:
        method = methods.get(name)
        return None if method is None else summary.code_between(method.body[0], method)

    return not _draws(body_code)


class BatchSamplerIgnoresSampler(Rule):
    code = "SL502"
    name = "batch-sampler-ignores-sampler"
    severity = Severity.ERROR
    # BatchSampler may be a base of a base elsewhere; the class needs a fact of the index.
    requires = (CLASS_FACT_WORDS, ("__iter__",))
    collectors = (CLASS_FACTS, FRAMEWORK_FACTS, TRAINERS, LIGHTNING_IMPORTS, LIGHTNING_FILES)
    uses_index = True
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        return bool(_ignoring_classes(summary))

    @classmethod
    def syntax_hints(cls, summary: SyntaxSummary) -> frozenset[str]:
        return _ignoring_classes(summary)

    @classmethod
    def may_match_index(
        cls, index: ProjectIndex, path: str, text: str, hints: frozenset[str] | None = None
    ) -> bool:
        # A BatchSampler subclass in this file (one whose `__iter__` may ignore its sampler,
        # when the syntax stage says), in a project that uses Lightning.
        if not project_may_use_lightning(index):
            return False
        if hints is None:
            facts = classes_at(index, path, text)
        else:
            found = (find_class(index, name, path) for name in sorted(hints))
            facts = [fact for fact in found if fact is not None]
        return any(
            "BatchSampler" in chain_of(index, fact).torch_bases and lightning_injects(index, fact)
            for fact in facts
        )

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        fact = find_class(self.context.index, node.name.value, str(self.context.path))
        if fact is None:
            return
        chain = chain_of(self.context.index, fact)
        if "BatchSampler" not in chain.torch_bases:
            return
        methods = {
            item.name.value: item for item in node.body.body if isinstance(item, cst.FunctionDef)
        }
        iterate = methods.get("__iter__")
        if iterate is None:
            return  # BatchSampler.__iter__ draws from self.sampler
        if not lightning_injects(self.context.index, fact):
            # Only Lightning and Fabric inject a sampler into a batch sampler (accelerate shards
            # whole batches): without them, ignoring the sampler is harmless.
            return
        code = self.context.code_for
        if _draws(lambda name: code(methods[name].body) if name in methods else None):
            return
        message = (
            f"`{node.name.value}.__iter__` never reads `self.sampler`: a DistributedSampler "
            "injected under DDP by Lightning or Fabric is ignored, so every rank "
            "gets the same batches"
        )
        self.report(iterate.name, message)

    documentation = """
    A `BatchSampler` subclass whose `__iter__` never draws from `self.sampler`.

    ## What it does
    Flags a class deriving from torch's `BatchSampler` (through any chain of project classes)
    that defines `__iter__` without reading `self.sampler`, directly or through a method it
    calls, where Lightning or Fabric injects (scoped as SL501: a file importing Lightning / Fabric
    in the folder of the class or of its `batch_sampler=` site, and injection left on for the
    Trainer that receives the loader). accelerate is no reason: it never re-creates a batch
    sampler, it hands each process every N-th whole batch of the one it is given. Not flagged:
    batch samplers that read any sampler attribute (wrappers delegating to an inner batch
    sampler), call `super().__iter__()`, or shard themselves (they read `rank`, `num_replicas`
    or `world_size`).

    ## Why is this bad
    Lightning and Fabric make a loader distributed by re-creating its batch sampler
    with a `DistributedSampler` as `sampler`. A batch sampler that builds its batches from
    something else (its own index list, a dataset attribute) ignores that sampler: nothing
    fails, and every rank trains on the same batches, which is one GPU's worth of data N times.

    ## Example
    ```python
    class BucketBatchSampler(BatchSampler):
        def __iter__(self):
            for bucket in self.buckets:
                yield bucket
    ```

    ## Use instead
    ```python
    class BucketBatchSampler(BatchSampler):
        def __iter__(self):
            batch = []
            for index in self.sampler:
                batch.append(index)
                if len(batch) == self.batch_size:
                    yield batch
                    batch = []
            if batch and not self.drop_last:
                yield batch
    ```
    Or shard the indices by rank yourself and turn the injection off
    (`Trainer(use_distributed_sampler=False)`).

    ## Fix safety
    No fix: how the batches should be drawn from the sampler depends on what the class does.

    ## References
    - Lightning issue #19371; Lightning `_dataloader_init_kwargs_resolve_sampler`
    - torch `BatchSampler.__iter__`
    """

    examples = (
        Example(
            "import lightning as L\n"
            "from torch.utils.data import BatchSampler\n"
            "\n"
            "\n"
            "class Buckets(BatchSampler):\n"
            "    def __iter__(self):\n"
            "        yield from self.buckets\n",
            lines=(6,),
        ),
        Example(
            "import lightning as L\n"
            "from torch.utils.data import BatchSampler\n"
            "\n"
            "\n"
            "class Buckets(BatchSampler):\n"
            "    def __iter__(self):\n"
            "        return self._batches()\n"
            "\n"
            "    def _batches(self):\n"
            "        for index in self.sampler:\n"
            "            yield [index]\n"
        ),
    )
