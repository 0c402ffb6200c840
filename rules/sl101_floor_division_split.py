"""SL101 floor-division-split: ``x.split(x.size(0) // world_size)[rank]`` drops the tail."""

from __future__ import annotations

import ast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.matching import is_repeatable
from sampler_lint.analysis.sharding import (
    SHARD_SIZE_RISK,
    Shard,
    division_made_exact,
    find_shard,
    floor_division,
    gathered_in_scope,
    indexed_shards,
    is_length_of,
    one_line,
    tensor_split_fix,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary, names_world_size
from sampler_lint.analysis.text_shapes import may_floor_divide
from sampler_lint.rule import Applicability, Example, Fix, Option, Rule, Severity


def ceil_split_fix(
    shard: Shard, dividend: cst.BaseExpression, world_size: cst.BaseExpression
) -> Fix:
    """``X.split(math.ceil(A / W), dim=d)``: the form PyTorch Geometric merged."""
    ceil = cst.Call(
        func=cst.Attribute(value=cst.Name("math"), attr=cst.Name("ceil")),
        args=[cst.Arg(cst.BinaryOperation(
            left=(
                dividend.with_changes(lpar=[], rpar=[])
                if isinstance(dividend, cst.Name)
                else dividend
            ),
            operator=cst.Divide(
                whitespace_before=cst.SimpleWhitespace(" "),
                whitespace_after=cst.SimpleWhitespace(" "),
            ),
            right=world_size,
        ))],
    )
    new_args = [
        arg.with_changes(value=ceil) if arg.value is shard.size else arg for arg in shard.call.args
    ]
    new_call = shard.call.with_changes(args=new_args)
    return Fix(
        replacements=[(shard.call, new_call)],
        applicability=Applicability.UNSAFE,
        message=f"Use a ceil-sized split: `{one_line(cst.Module([]).code_for_node(new_call))}`",
        imports=[("math", None)],
    )


class FloorDivisionSplit(Rule):
    code = "SL101"
    name = "floor-division-split"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    fix_risk = SHARD_SIZE_RISK
    requires = (("split",), ("//",), ("{world_size}",), ("{rank}",))
    has_syntax_filter = True

    @classmethod
    def may_match_text(cls, text: str) -> bool:
        return may_floor_divide(text)  # a `//` that is no URL's

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # `x.split(S)` / `torch.split(x, S)` indexed (directly or through a name) by what may be
        # a rank, with S an `A // W` whose W may be a world size, or a name assigned one
        # somewhere in the file (the visitor follows one plain or annotated assignment of S, and
        # one of W).
        if "FloorDiv" not in summary.kinds:
            return False
        vocabulary = summary.vocabulary
        values: dict[str, list[ast.expr | None]] = {}
        for target, value in summary.assignments():
            if type(target) is ast.Name:
                values.setdefault(target.id, []).append(value)

        def world_size(node: ast.expr) -> bool:
            return names_world_size(node, vocabulary) or (
                type(node) is ast.Name
                and any(v is not None and names_world_size(v, vocabulary)
                        for v in values.get(node.id, ()))
            )

        def per_rank(node: ast.expr | None) -> bool:
            return type(node) is ast.BinOp and type(node.op) is ast.FloorDiv and world_size(
                node.right
            )

        return any(
            per_rank(size)
            or (type(size) is ast.Name and any(per_rank(v) for v in values.get(size.id, ())))
            for _, sizes in indexed_shards(summary, ("split",)) for size in sizes
        )
    options = (
        Option(
            "split-fix",
            str,
            "tensor_split",
            "the form SL101's fix writes: `tensor_split` or PyG's `ceil`-sized split",
            choices=("tensor_split", "ceil"),
        ),
    )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        shard = find_shard(self.context, node, ("split",))
        if shard is None:
            return
        division = floor_division(self.context, shard.size)
        if division is None:
            return
        if division_made_exact(self.context, node, division.dividend, division.divisor):
            return
        if gathered_in_scope(self.context, node):
            return  # all-gathered from W equal parts: the length is a multiple of W
        receiver = self.context.code_for(shard.receiver)
        world = self.context.code_for(division.divisor)
        message = (
            f"floor-sized split of `{receiver}` across `{world}` ranks: when `{world}` does not "
            "divide its length the last items go to no rank (and fewer items than ranks raises)"
        )
        self.report(node, message, self._fix(shard, division.dividend, division.divisor,
                                              division.through_name))

    def _fix(self, shard: Shard, dividend: cst.BaseExpression, world_size: cst.BaseExpression,
             through_name: bool) -> Fix | None:
        dim = 0
        if shard.dim is not None:
            value = shard.dim.value
            if not isinstance(value, cst.Integer):
                return None
            dim = int(value.value, 0)
        if not is_length_of(self.context, dividend, shard.receiver, dim):
            return None
        ceil = self.context.options.get("split-fix") == "ceil"
        if through_name:
            # The fix would repeat expressions written in the assignment: only plain ones.
            if not is_repeatable(world_size) or (ceil and not is_repeatable(dividend)):
                return None
        if ceil:
            return ceil_split_fix(shard, dividend, world_size)
        return tensor_split_fix(self.context, shard, world_size)

    documentation = """
    Sharding with a floor-divided split size drops samples.

    ## What it does
    Flags `X.split(A // W)[R]` and `torch.split(X, A // W)[R]` where `W` is a world size and `R` a
    rank (directly, or through one assignment of the size or of the split result), unless the scope
    makes the division exact (`assert A % W == 0`, padding `A` to a multiple of `W`, handing out
    the remainder, or all-gathering the tensor from `W` equal parts in the same function).

    ## Why is this bad
    `split(k)` makes chunks of `k` items and a smaller last chunk. With `k = n // w` that is `w`
    chunks only when `w` divides `n`; otherwise there are more than `w` chunks, rank `r` takes
    chunk `r`, and the tail (up to `w - 1` items) is silently never used by any rank. With `n < w`,
    `k` is 0 and `split` raises. PyTorch Geometric's multi-GPU examples had this bug (issue #9744,
    PR #9753).

    | n | w | split(n // w) chunks | dropped | tensor_split(w) part sizes | ceil split chunks |
    |---|---|---|---|---|---|
    | 9 | 4 | 5 (2,2,2,2,1) | 1 | 3,2,2,2 | 3 (3,3,3): rank 3 gets nothing |
    | 10 | 4 | 5 (2,2,2,2,2) | 2 | 3,3,2,2 | 4 (3,3,3,1) |
    | 4,097 | 4 | 5 | 1 | 1,025,1,024,1,024,1,024 | 4 |
    | 3 | 4 | raises (split size 0) | all | 1,1,1,0 | 3: rank 3 raises IndexError |
    | 50,000 | 1,024 | 1,025 | 848 | 49 or 48 each | 1,021: ranks 1,021+ raise |

    ## Example
    ```python
    train_idx = train_idx.split(train_idx.size(0) // world_size)[rank]
    ```

    ## Use instead
    ```python
    train_idx = train_idx.tensor_split(world_size)[rank]
    ```
    `tensor_split(w)` always yields exactly `w` parts whose sizes differ by at most one, and drops
    nothing. That is why it is the default fix. The ceil-sized split PyG merged
    (`split(math.ceil(n / w))`, option `split-fix = "ceil"`) also drops nothing, but it yields
    fewer than `w` chunks whenever `ceil(n / ceil(n / w)) < w` (roughly `n < w * (w - 1)`), so the
    last ranks get no chunk and `[rank]` raises (see SL102).

    ## Fix safety
    Unsafe. Per-rank sizes become unequal by one. Under DDP every rank must run the same number of
    steps: a rank with one more batch than the others waits forever in the gradient all-reduce
    (4,097 items, 4 ranks, batch 1,024: 2 batches on rank 0, 1 on the others). `drop_last=True`
    on the per-rank loader does NOT keep the ranks in step: 4,095 items on 4 ranks give parts of
    1,024, 1,024, 1,024 and 1,023, hence 1, 1, 1 and 0 batches, and three ranks wait forever.
    What does guard:

    - DDP's `join()` context (`with model.join(): ...`), which shadows the collectives of the
      ranks that ran out;
    - agreeing on a common step count: all-reduce the per-rank batch counts with `MIN` and stop
      every rank there;
    - padding every rank to the same size, as `DistributedSampler` does (`drop_last=False`), or
      trimming to `n - n % w` items first if dropping is what you want (then say so with
      `assert`).

    The fix is offered only when `A` is the length of `X` along the split dimension; otherwise
    the finding is reported without a fix. The size local and the `ceil` import the old split
    used are removed when nothing else reads them.

    ## References
    - PyTorch Geometric issue #9744 and PR #9753
    - `torch.tensor_split` documentation
    - DDP `join()`: torch.distributed.algorithms.Join
    """

    examples = (
        Example(
            "train_idx = train_idx.split(train_idx.size(0) // world_size)[rank]\n",
            lines=(1,),
            fixed="train_idx = train_idx.tensor_split(world_size)[rank]\n",
        ),
        Example(
            "edges = edges.split(edges.size(1) // num_devices, dim=1)[rank]\n",
            lines=(1,),
            fixed="edges = edges.tensor_split(num_devices, dim=1)[rank]\n",
        ),
        Example(
            "idx = idx.split(idx.size(0) // world_size)[rank]\n",
            lines=(1,),
            fixed="import math\n\nidx = idx.split(math.ceil(idx.size(0) / world_size))[rank]\n",
            options={"split-fix": "ceil"},
        ),
        Example("mine = idx.tensor_split(world_size)[rank]\n"),
        Example("mine = idx[rank::world_size]\n"),
        Example("for chunk in x.split(n // 4):\n    print(chunk)\n"),
        Example(
            "def shard(x, world_size, rank):\n"
            "    assert x.size(0) % world_size == 0\n"
            "    return x.split(x.size(0) // world_size)[rank]\n"
        ),
    )
