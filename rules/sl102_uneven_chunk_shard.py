"""SL102 uneven-chunk-shard: ``x.chunk(world_size)[rank]`` and ceil-sized splits can yield fewer
chunks than ranks."""

from __future__ import annotations

import ast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.matching import is_repeatable, is_world_size_like
from sampler_lint.analysis.sharding import (
    SHARD_SIZE_RISK,
    Shard,
    ceil_division,
    chunk_count_guarded,
    constant_length,
    find_shard,
    gathered_in_scope,
    in_autograd_backward,
    indexed_shards,
    is_length_of,
    padded_in_scope,
    passed_to_collective,
    remainder_by_multiple_of,
    tensor_split_fix,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.rule import Applicability, Example, FileContext, Fix, Rule, Severity

# What a world size (a chunk count) can be written as, to ast.
_WORLD_SIZES = (ast.Name, ast.Attribute, ast.Call)


def _may_be_ceil(size: ast.expr) -> bool:
    """The ``ast`` side of ``ceil_division``: ``ceil(A / W)`` (``ceil`` under any name),
    ``-(-A // W)``, ``(A + W - 1) // W``, or a name (which may be assigned one)."""
    if type(size) is ast.Call:
        func, values = size.func, [*size.args, *(k.value for k in size.keywords)]
        if len(values) != 1:
            return False
        inner = values[0].value if type(values[0]) is ast.Starred else values[0]
        ceil = type(func) is ast.Name or (type(func) is ast.Attribute and func.attr == "ceil")
        return ceil and type(inner) is ast.BinOp and type(inner.op) is ast.Div
    if type(size) is ast.UnaryOp:
        return type(size.op) is ast.USub
    if type(size) is ast.BinOp and type(size.op) is ast.FloorDiv:
        return type(size.left) is ast.BinOp and type(size.left.op) is ast.Sub
    return type(size) is ast.Name


class UnevenChunkShard(Rule):
    code = "SL102"
    name = "uneven-chunk-shard"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_risk = SHARD_SIZE_RISK
    # Off by default (RULES.md, 2026-11-23): on ten large public trees none of its findings was a
    # real bug. `--select SL102` / `extend-select` turn it on.
    default_enabled = False
    requires = (("chunk", "split"), ("{world_size}",), ("{rank}",))
    has_syntax_filter = True

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        # One finding per statement: `return a[rank], b[rank]` over two chunk lists is one place
        # to look at, and one fix round handles both.
        self._reported: set[int] = set()

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # `x.chunk(W)` or `x.split(S)` indexed by what may be a rank, with W a world size (a
        # name, attribute or call) and S a ceil division (`ceil(A / W)`, `-(-A // W)`,
        # `(A + W - 1) // W`) or a name.
        for method, sizes in indexed_shards(summary, ("chunk", "split")):
            if method == "chunk" and any(type(size) in _WORLD_SIZES for size in sizes):
                return True
            if method == "split" and any(_may_be_ceil(size) for size in sizes):
                return True
        return False

    def visit_Subscript(self, node: cst.Subscript) -> None:
        shard = find_shard(self.context, node, ("chunk", "split"))
        if shard is None:
            return
        if shard.method == "chunk":
            world_size = shard.size
            if not is_world_size_like(self.context, world_size):
                return
            form = "chunk"
        else:
            if self.context.options.get("split-fix") == "ceil":
                return  # the form SL101 writes under this option: the two rules never fight
            division = ceil_division(self.context, shard.size)
            if division is None:
                return
            world_size = division.divisor
            form = "ceil-sized split"
        if self._made_exact(shard, world_size):
            return
        statement = self.context.enclosing_statement(node)
        key = id(statement if statement is not None else node)
        if key in self._reported:
            return
        self._reported.add(key)
        world = self.context.code_for(world_size)
        message = (
            f"{form} of `{self.context.code_for(shard.receiver)}` across `{world}` ranks yields "
            f"fewer than `{world}` chunks when the length is small (about n < {world} * ({world}"
            " - 1)): the last ranks get nothing or raise IndexError"
        )
        self.report(node, message, self._fix(shard, world_size, form))

    def _made_exact(self, shard: Shard, world_size: cst.BaseExpression) -> bool:
        """The chunks come out even, the length is large by construction, or the short list is
        handled: ``n % W`` (or ``n % (k * W)``) checked, padded or handed out; a tensor
        all-gathered from ``W`` equal parts, or the gradient in the ``backward`` of an
        ``autograd.Function`` (SL103's exemptions); a communication buffer (passed to a
        collective in the function) or a receiver of constant length; or the chunk read under
        ``if len(chunks) > rank``."""
        node = shard.subscript
        return (
            remainder_by_multiple_of(self.context, node, world_size)
            or gathered_in_scope(self.context, node)
            or in_autograd_backward(self.context, node)
            or padded_in_scope(self.context, node)
            or passed_to_collective(self.context, node, shard.receiver)
            or constant_length(self.context, shard.receiver)
            or chunk_count_guarded(self.context, shard)
        )

    def _fix(self, shard: Shard, world_size: cst.BaseExpression, form: str) -> Fix | None:
        if form == "chunk":
            return tensor_split_fix(self.context, shard, world_size)
        dim = 0
        if shard.dim is not None:
            if not isinstance(shard.dim.value, cst.Integer):
                return None
            dim = int(shard.dim.value.value, 0)
        division = ceil_division(self.context, shard.size)
        assert division is not None
        if not is_length_of(self.context, division.dividend, shard.receiver, dim):
            return None
        if division.through_name and not is_repeatable(world_size):
            return None
        return tensor_split_fix(self.context, shard, world_size)

    documentation = """
    Sharding with `chunk(world_size)` or a ceil-sized split can leave ranks without data.

    ## What it does
    Flags `X.chunk(W)[R]`, `torch.chunk(X, W)[R]` and ceil-sized splits
    (`X.split(math.ceil(A / W))[R]`, `X.split(-(-A // W))[R]`, `X.split((A + W - 1) // W)[R]`,
    also through one assignment) where `W` is a world size and `R` a rank.

    Not flagged when the chunks come out even or the short list is handled: the function or the
    module's own statements take a remainder by `W` or a multiple of it (`assert n % W == 0`,
    padding with `n % (8 * W)`), the function all-gathers (a tensor gathered from `W` equal parts
    splits back evenly), or the chunk is read under a length test
    (`if len(chunks) > rank: ... else: <empty>`).

    ## Why is this bad
    Both make chunks of `ceil(n / W)` items, so there are only `ceil(n / ceil(n / W))` chunks,
    which is fewer than `W` whenever n is small against W (roughly `n < W * (W - 1)`). The last
    ranks then get no chunk and `[rank]` raises `IndexError`, or, where the code guards the
    index, train on nothing:

    | n | W | chunks | what happens |
    |---|---|---|---|
    | 9 | 4 | 3 (3, 3, 3) | rank 3 raises IndexError |
    | 10 | 4 | 4 (3, 3, 3, 1) | ranks differ by a factor of 3 |
    | 50,000 | 1,024 | 1,021 | ranks 1,021 to 1,023 raise |

    ## Example
    ```python
    local = samples.chunk(world_size)[rank]
    ```

    ## Use instead
    ```python
    local = samples.tensor_split(world_size)[rank]
    ```
    `tensor_split(W)` always yields exactly W parts whose sizes differ by at most one.

    With `split-fix = "ceil"`, SL101 writes ceil-sized splits on purpose (PyTorch Geometric's
    form), so SL102 does not report them then: the two rules never undo each other.

    ## Fix safety
    Unsafe, for the reason SL101 gives: part sizes then differ by one, so under DDP a rank with
    one more batch waits in the all-reduce. `drop_last=True` on the per-rank loader is no guard
    (4,095 items on 4 ranks, batch 1,024: 1, 1, 1 and 0 batches); DDP's `join()` context, an
    all-reduced `MIN` of the step count, or padding every rank as `DistributedSampler` does are.
    A ceil-sized split is fixed only when its dividend is the length of the split tensor along
    the split dimension; the size local and the `ceil` import it used go with it when nothing
    else reads them.

    ## References
    - `torch.chunk` documentation: "may return fewer than the specified number of chunks"
    - PyTorch Geometric PR #9753 (the ceil form) and SL101
    """

    examples = (
        Example(
            "local = samples.chunk(world_size)[rank]\n",
            lines=(1,),
            fixed="local = samples.tensor_split(world_size)[rank]\n",
        ),
        Example(
            "import math\nidx = idx.split(math.ceil(len(idx) / world_size))[rank]\n",
            lines=(2,),
            # The import only the old split used goes with it (no F401 left behind).
            fixed="idx = idx.tensor_split(world_size)[rank]\n",
        ),
        Example("local = samples.tensor_split(world_size)[rank]\n"),
        Example("heads = q.chunk(3, dim=-1)[0]\n"),
    )
