"""SL302 rank-dependent-sampler-seed: a partitioning sampler seeded differently on each rank."""

from __future__ import annotations

import ast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.index import ProjectIndex, dotted_expression
from sampler_lint.analysis.loader_calls import is_distributed_sampler
from sampler_lint.analysis.matching import get_arg
from sampler_lint.analysis.sampler_family import (
    calls_project_subclass,
    torch_bases_of,
)
from sampler_lint.analysis.seed_facts import (
    NAMED_SAMPLER_FACTS,
    NAMED_SAMPLER_WORDS,
    SEED_KEY_COLLECTORS,
    SEED_POSITION,
    builds_named_sampler,
)
from sampler_lint.analysis.seeds import (
    CONSTRUCTION_COLLECTORS,
    is_distributed_construction,
    may_differ_between_ranks,
    rank_dependent_part,
    seed_argument,
    visible_shared_seed,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary, argument, is_constant, per_tree
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity

# Literals that are the same on every rank (`None`, `True`, `False` are names to libcst).
_LITERALS = (int, float, complex, str, bytes)


class RankDependentSamplerSeed(Rule):
    code = "SL302"
    name = "rank-dependent-sampler-seed"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    fix_risk = (
        "changes which samples each rank sees (to the intended partition): runs are not "
        "comparable with earlier ones"
    )
    # The seed may be the fifth positional argument; "sampler": a project subclass of any name,
    # handed to a loader as `sampler=`.
    requires = (("Sampler", "sampler"),)
    # Project subclasses of DistributedSampler and the project's own classes named like torch's
    # (sampler_family, and their `__init__`), and the project's seed keys.
    collectors = (*CONSTRUCTION_COLLECTORS, *SEED_KEY_COLLECTORS, NAMED_SAMPLER_FACTS)
    uses_index = True
    has_syntax_filter = True
    # A file that names no distributed sampler can only build a project subclass: the index
    # stage reads that from its text, and the file is not parsed for this rule alone.
    parse_for = NAMED_SAMPLER_WORDS

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # A call given a seed that may differ between ranks: of a DistributedSampler by name, or
        # of what the index may show is a project subclass of it (any name).
        definite, names = _seeded_calls(summary)
        return definite or bool(names)

    @classmethod
    def syntax_hints(cls, summary: SyntaxSummary) -> frozenset[str] | None:
        definite, names = _seeded_calls(summary)
        return None if definite else names

    @classmethod
    def may_match_index(
        cls, index: ProjectIndex, path: str, text: str, hints: frozenset[str] | None = None
    ) -> bool:
        if hints is not None:  # only the callees given a rank-dependent seed
            return any("DistributedSampler" in torch_bases_of(index, name, path) for name in hints)
        # A DistributedSampler built by name here, or a project subclass, at any depth, that this
        # file may call by name.
        return builds_named_sampler(index, path) or calls_project_subclass(
            index, text, "DistributedSampler"
        )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_distributed_construction(self.context, node):
            return
        replicas = get_arg(node, 1, "num_replicas")
        replicas_value = replicas.value if replicas is not None else None
        if isinstance(replicas_value, cst.Integer) and replicas_value.value == "1":
            return  # one replica: data already sharded per rank, nothing to partition
        arg = seed_argument(node)
        if arg is None:
            return
        culprit = rank_dependent_part(self.context, arg.value)
        if culprit is None:
            return
        seed = self.context.code_for(arg.value)
        message = (
            f"sampler seed `{seed}` differs between ranks (`{self.context.code_for(culprit)}`): "
            "each rank shuffles into a different permutation before taking its share, so ranks "
            "overlap and some samples are never seen"
        )
        self.report(arg.value, message, self._fix(arg.value))

    def _fix(self, seed: cst.BaseExpression) -> Fix | None:
        replacement: cst.BaseExpression | None = None
        if isinstance(seed, cst.BinaryOperation) and isinstance(
            seed.operator, (cst.Add, cst.Subtract, cst.Multiply)
        ):
            left = rank_dependent_part(self.context, seed.left)
            right = rank_dependent_part(self.context, seed.right)
            if left is None and right is not None:
                replacement = seed.left
            elif right is None and left is not None and not isinstance(seed.operator, cst.Subtract):
                replacement = seed.right
        if replacement is None:
            shared = visible_shared_seed(self.context, seed)
            if shared is None:
                return None
            replacement = cst.parse_expression(shared)
        return Fix(
            replacements=[(seed, replacement.with_changes(lpar=[], rpar=[]))],
            applicability=Applicability.UNSAFE,
            message=f"Use the shared seed `{cst.Module([]).code_for_node(replacement)}`",
        )

    documentation = """
    A partitioning sampler whose seed differs between ranks.

    ## What it does
    Flags the `seed` of a `DistributedSampler` (a known third-party subclass, a project
    subclass at any depth, or the project's own class of that name whose `__init__` takes a
    seed) that differs between ranks: a rank-like term (`seed + rank`,
    `seed * dist.get_rank()`, also through a local name: every assignment that may reach the
    sampler counts, so `seed = cfg.seed` followed on some path by `seed = seed + rank` is flagged,
    while a per-rank value overwritten before the sampler is not),
    `time.time()`, `os.getpid()`, `uuid`, or `random.*` / `np.random.*` unless the module
    seeds that same module earlier with a rank-free value (`random.seed(args.seed)` before
    `random.randint(...)`; `np.random.seed(...)` does not seed `random`). A sampler built
    with `num_replicas=1` (data already sharded per rank) is not flagged, nor is a name that
    only labels something: a keyword
    (`seed=derive(cfg.seed, rank=0)`) or a lambda's parameter is no rank.

    ## Why is this bad
    Every rank shuffles the whole dataset with the sampler's seed and then takes every
    `world_size`-th index. That partition is only disjoint if all ranks draw the same
    permutation: with per-rank seeds, ranks overlap, some samples are seen twice per epoch and
    others never (NVlabs/LongLive issue #71, mlcommons/training PR #625).

    ## Example
    ```python
    sampler = DistributedSampler(dataset, seed=args.seed + rank)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset, seed=args.seed)
    ```
    torch: the same `seed` on every rank (its default, 0, is the same everywhere); Lightning:
    `PL_GLOBAL_SEED`, set once by `seed_everything`; transformers: `args.seed`; mmengine and
    detectron2 synchronise a random seed across ranks (`sync_random_seed`) before building the
    sampler. Seed data augmentation per rank or worker, never the partitioning sampler.

    ## Fix safety
    Unsafe: it changes which samples each rank sees (to the partition that was intended). It
    drops the rank-dependent term where the rest is a shared seed (`seed + rank` -> `seed`),
    else passes a visible shared seed; otherwise it reports only.

    ## References
    - torch `DistributedSampler` documentation ("seed ... should be identical across all
      processes in the distributed group")
    - NVlabs/LongLive issue #71; mlcommons/training PR #625
    """

    examples = (
        Example(
            "from torch.utils.data import DistributedSampler\n"
            "\n"
            "\n"
            "def build(dataset, args, rank):\n"
            "    return DistributedSampler(dataset, seed=args.seed + rank)\n",
            lines=(5,),
            fixed=(
                "from torch.utils.data import DistributedSampler\n"
                "\n"
                "\n"
                "def build(dataset, args, rank):\n"
                "    return DistributedSampler(dataset, seed=args.seed)\n"
            ),
        ),
        Example(
            "from torch.utils.data import DistributedSampler\n"
            "\n"
            "\n"
            "def build(dataset, args):\n"
            "    return DistributedSampler(dataset, seed=args.seed)\n"
        ),
    )


def _seeded_calls(summary: SyntaxSummary) -> tuple[bool, frozenset[str]]:
    """The ``ast`` side of ``visit_Call``, looser: whether a DistributedSampler (by name) is given
    a seed that may differ between ranks, and the dotted names of the other calls given one
    (the visitor asks the index whether they build a project subclass)."""
    def make() -> tuple[bool, frozenset[str]]:
        definite = False
        names: set[str] = set()
        for call in summary.nodes(ast.Call):
            seed = argument(call, SEED_POSITION, "seed")
            if seed is None or is_constant(seed, *_LITERALS):
                continue
            built = dotted_expression(call.func)
            if built is None or not may_differ_between_ranks(seed, summary):
                continue
            if is_distributed_sampler(built):  # `self.DistributedSampler(...)` too
                definite = True
            elif built.split(".", 1)[0] != "self":  # the visitor's `self.` rule, after that
                names.add(built)
        return definite, frozenset(names)

    return per_tree(summary.tree, "SL302 seeded calls", make)
