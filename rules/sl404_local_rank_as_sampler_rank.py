"""SL404 local-rank-as-sampler-rank: ``DistributedSampler(..., rank=local_rank)``."""

from __future__ import annotations

import ast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.leftovers import leaves_unused_names
from sampler_lint.analysis.loader_calls import (
    constructed,
    distributed_sampler_calls,
    is_distributed_sampler,
)
from sampler_lint.analysis.matching import get_arg
from sampler_lint.analysis.ranks import (
    get_rank_call,
    is_global_world_size,
    is_local_rank,
    may_be_local_rank,
    needs_default_group,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary, argument
from sampler_lint.analysis.vocabulary import LOCAL_RANK_TOKENS
from sampler_lint.rule import Applicability, Example, FileContext, Fix, Rule, Severity

# Samplers whose signature starts (dataset or sampler, num_replicas, rank, ...) as torch's does;
# the others in the family are matched by keyword only.
_TORCH_SIGNATURE = ("DistributedSampler", "StatefulDistributedSampler", "DistributedSamplerWrapper")


def _positions(name: str | None) -> tuple[int | None, int | None]:
    """The positions of ``num_replicas`` and ``rank`` in a family member's signature."""
    if name is not None and name.rsplit(".", 1)[-1] in _TORCH_SIGNATURE:
        return 1, 2
    return None, None


class LocalRankAsSamplerRank(Rule):
    code = "SL404"
    name = "local-rank-as-sampler-rank"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    fix_risk = (
        "dist.get_rank() raises before init_process_group: the sampler must be built after the "
        "process group"
    )
    requires = (("Sampler",), LOCAL_RANK_TOKENS)
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # A DistributedSampler-family call given a rank that may be a local rank.
        for call in distributed_sampler_calls(summary.nodes(ast.Call)):
            func = call.func.value if type(call.func) is ast.Subscript else call.func
            name = func.attr if type(func) is ast.Attribute else getattr(func, "id", None)
            rank = argument(call, _positions(name)[1], "rank")
            if rank is not None and may_be_local_rank(rank, summary):
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        name = constructed(node)
        if not is_distributed_sampler(name):
            return
        replicas_position, rank_position = _positions(name)
        rank = get_arg(node, rank_position, "rank")
        if rank is None or not is_local_rank(self.context, rank.value):
            return
        replicas = get_arg(node, replicas_position, "num_replicas")
        if replicas is None and any(arg.star for arg in node.args):
            return  # num_replicas may be in *args / **kwargs
        replicas_value = replicas.value if replicas is not None else None
        if replicas_value is not None and not is_global_world_size(self.context, replicas_value):
            return  # sized by one machine (or unknown): a per-machine shard may be meant
        code = self.context.code_for(rank.value)
        message = (
            f"`rank={code}` is the process's rank on its own machine, but the sampler shards over "
            "the whole job: on more than one machine every machine reads machine 0's shards and "
            "the others' are never read"
        )
        self.report(rank.value, message, self._fix(node, rank.value, replicas_value))

    def _fix(
        self, call: cst.Call, rank: cst.BaseExpression, replicas: cst.BaseExpression | None
    ) -> Fix | None:
        if leaves_unused_names(self.context, [rank], at=rank):
            return None
        horovod = _horovod_rank(self.context, rank)
        if horovod is not None:  # hvd.local_rank() -> hvd.rank(): horovod has no process group
            return Fix(
                replacements=[(rank, horovod)],
                applicability=Applicability.SAFE,
                message=f"Use the global rank: `rank={self.context.code_for(horovod)}`",
            )
        if _is_horovod(self.context, replicas):
            return None
        global_rank = get_rank_call(self.context, call)
        if global_rank is None:
            return None
        safe = needs_default_group(self.context, replicas)
        return Fix(
            replacements=[(rank, cst.parse_expression(global_rank))],
            applicability=Applicability.SAFE if safe else Applicability.UNSAFE,
            message=f"Use the global rank: `rank={global_rank}`",
        )

    documentation = """
    A `DistributedSampler` given the local rank (the process's index on its machine).

    ## What it does
    Flags the `rank` of a `DistributedSampler`-family construction when it is a local rank:
    `local_rank`, `args.local_rank`, `accelerator.local_process_index`, `hvd.local_rank()`,
    `comm.get_local_rank()`, `int(os.environ["LOCAL_RANK"])` (and `SLURM_LOCALID`,
    `OMPI_COMM_WORLD_LOCAL_RANK`, `MPI_LOCALRANKID`, `MV2_COMM_WORLD_LOCAL_RANK`), or a name or
    attribute assigned only such values in the same function or module (`gpu =
    int(os.environ["LOCAL_RANK"])`). `rank=args.rank`, `rank=dist.get_rank()` and a local-rank
    name reassigned a global rank are not flagged. Only when `num_replicas` is the whole job's
    size: left out (torch asks `dist.get_world_size()`), `dist.get_world_size()`, `world_size`,
    `args.world_size`, `accelerator.num_processes`, `int(os.environ["WORLD_SIZE"])`; a sampler
    sized by one machine (`torch.cuda.device_count()`, `nprocs`, `local_world_size`) or by an
    unknown value shards per machine on purpose and is left alone.

    ## Why is this bad
    The sampler gives shard `rank` of `num_replicas` to the process. Local ranks run from 0 to
    the number of GPUs of one machine, so on two machines of 8 GPUs both machines read shards
    0-7 of 16: every sample of shards 0-7 is trained on twice per epoch, shards 8-15 never. On
    one machine the local rank equals the global one, so the bug waits for the first multi-node
    run, where it only shows as a worse model (the epoch is not even shorter).

    ## Example
    ```python
    local_rank = int(os.environ["LOCAL_RANK"])
    sampler = DistributedSampler(dataset, rank=local_rank)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset, rank=dist.get_rank())
    ```
    (or leave `rank` out: torch then asks `dist.get_rank()` itself). Keep the local rank for
    `torch.cuda.set_device` and `device_ids`.

    ## Fix safety
    Offered where the file imports `torch.distributed` (at module level or in the function
    around the sampler), spelled with the file's alias (`dist.get_rank()`). Safe when
    `num_replicas` is left out or is `dist.get_world_size()`: the sampler already needs the
    default process group, and on one machine the global rank equals the local one, so nothing
    changes there. Unsafe otherwise (`num_replicas=world_size`): `dist.get_rank()` raises when
    the sampler is built before, or without, `init_process_group`.

    ## References
    - torch `DistributedSampler` documentation (`rank`: "Rank of the current process within
      `num_replicas`"); torchrun's `LOCAL_RANK` / `RANK` environment variables
    - issue 21 of this project (evidence survey)
    """

    examples = (
        Example(
            "import os\n"
            "\n"
            "import torch\n"
            "import torch.distributed as dist\n"
            "from torch.utils.data import DistributedSampler\n"
            "\n"
            "\n"
            "def build(dataset):\n"
            "    local_rank = int(os.environ['LOCAL_RANK'])\n"
            "    torch.cuda.set_device(local_rank)\n"
            "    return DistributedSampler(dataset, rank=local_rank)\n",
            lines=(11,),
            fixed=(
                "import os\n"
                "\n"
                "import torch\n"
                "import torch.distributed as dist\n"
                "from torch.utils.data import DistributedSampler\n"
                "\n"
                "\n"
                "def build(dataset):\n"
                "    local_rank = int(os.environ['LOCAL_RANK'])\n"
                "    torch.cuda.set_device(local_rank)\n"
                "    return DistributedSampler(dataset, rank=dist.get_rank())\n"
            ),
        ),
        Example(
            "from torch.utils.data import DistributedSampler\n"
            "\n"
            "\n"
            "def build(dataset, args):\n"
            "    return DistributedSampler(dataset, num_replicas=args.world_size, rank=args.rank)\n"
        ),
    )


def _is_horovod(context: FileContext, node: cst.BaseExpression | None) -> bool:
    if not isinstance(node, cst.Call):
        return False
    return (context.qualified_name(node.func) or "").startswith("horovod.")


def _horovod_rank(context: FileContext, rank: cst.BaseExpression) -> cst.Call | None:
    """``hvd.rank()`` for ``hvd.local_rank()``."""
    if _is_horovod(context, rank):
        assert isinstance(rank, cst.Call)
        func = rank.func
        if isinstance(func, cst.Attribute) and func.attr.value == "local_rank" and not rank.args:
            return rank.with_changes(func=func.with_changes(attr=cst.Name("rank")))
    return None
