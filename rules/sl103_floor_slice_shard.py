"""SL103 floor-slice-shard: ``x[rank * per:(rank + 1) * per]`` with ``per = len(x) // world_size``
drops the last ``len(x) % world_size`` items."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.matching import (
    expression_key,
    get_arg,
    is_rank_like,
    same_expression,
    single_assignment,
)
from sampler_lint.analysis.sharding import (
    SHARD_SIZE_RISK,
    Division,
    floor_division,
    is_length_of,
    modulos_in_scope,
)
from sampler_lint.analysis.syntax_summary import (
    SyntaxSummary,
    argument,
    names_rank,
    names_world_size,
)
from sampler_lint.analysis.text_shapes import may_floor_divide
from sampler_lint.analysis.vocabulary import Vocabulary
from sampler_lint.rule import Applicability, Example, FileContext, Fix, Rule, Severity


@dataclass
class Bounds:
    rank: cst.BaseExpression
    division: Division
    lower: cst.BaseExpression  # as written at the slice or call
    upper: cst.BaseExpression


def _resolve(context: FileContext, node: cst.BaseExpression) -> cst.BaseExpression:
    """A name through its one assignment in scope, else the node itself."""
    if isinstance(node, cst.Name):
        value = single_assignment(context, node)
        if value is not None:
            return value
    return node


def _is_rank_plus_one(node: cst.BaseExpression, rank: cst.BaseExpression) -> bool:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        for a, b in ((node.left, node.right), (node.right, node.left)):
            if same_expression(a, rank) and expression_key(b) == "1":
                return True
    return False


def _expression(text: str) -> cst.BaseExpression:
    """``text`` parsed as one expression. The pieces come from inside brackets, where a line
    break is allowed (``idx\\n.size(0)``): parsed within parentheses, then taken out of them."""
    parsed = cst.parse_expression(f"({text})")
    return parsed.with_changes(lpar=[], rpar=[])


def _text(node: cst.BaseExpression) -> str:
    code = cst.Module(body=[]).code_for_node(node).strip()
    atomic = cst.Name | cst.Attribute | cst.Call | cst.Subscript | cst.Integer
    if isinstance(node, atomic) or (getattr(node, "lpar", None)):
        return code
    return f"({code})"


def _is_pure(node: cst.BaseExpression) -> bool:
    """Safe to write twice: references, literals, arithmetic of those, and the side-effect-free
    length forms ``len(ref)``, ``ref.size(k)``, ``ref.shape[k]``, ``ref.numel()``."""
    if dotted_name(node) is not None or isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.BinaryOperation):
        return _is_pure(node.left) and _is_pure(node.right)
    if isinstance(node, cst.UnaryOperation):
        return _is_pure(node.expression)
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Name) and func.value == "len" and len(node.args) == 1:
            return dotted_name(node.args[0].value) is not None
        if isinstance(func, cst.Attribute) and func.attr.value in ("size", "numel"):
            return dotted_name(func.value) is not None and all(
                isinstance(a.value, cst.Integer) for a in node.args
            )
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute):
        return node.value.attr.value == "shape" and dotted_name(node.value.value) is not None
    return False


@dataclass(frozen=True)
class _Assigned:
    """What the file assigns to plain names anywhere (the rule follows a name through its one
    assignment in scope, which is one of these)."""

    #: The ``BinOp`` values each name is assigned.
    operations: dict[str, list[ast.BinOp]]
    #: The names assigned a rank (``r = dist.get_rank()``).
    ranks: frozenset[str]
    #: The names assigned a world size (``w = dist.get_world_size()``).
    world_sizes: frozenset[str] = frozenset()


def _may_bound(
    lower: ast.expr | None, upper: ast.expr | None, assigned: _Assigned, vocabulary: Vocabulary
) -> bool:
    """The ``ast`` side of ``_bounds``: ``rank * per`` below, directly or as a name assigned
    that product, and a product or a sum above (the upper bound may be a name assigned its
    shape). A rank is one as ``is_rank_like`` sees it, or a name assigned one; ``per`` is
    ``A // W`` with ``W`` a world size as ``is_world_size_like`` sees it (or a name assigned
    one), directly or through a name assigned that division."""

    def binary(node: ast.expr | None, operator: type[ast.operator]) -> list[ast.expr]:
        if type(node) is ast.BinOp and type(node.op) is operator:
            return [node.left, node.right]
        return []

    def values(node: ast.expr | None, *operators: type[ast.operator]) -> list[ast.BinOp]:
        if type(node) is not ast.Name:
            return []
        return [
            value for value in assigned.operations.get(node.id, [])
            if type(value.op) in operators
        ]

    def world_size(node: ast.expr) -> bool:
        return names_world_size(node, vocabulary) or (
            type(node) is ast.Name and node.id in assigned.world_sizes
        )

    def per(node: ast.expr) -> bool:
        # `A // W` with W a world size (``floor_division``), directly or through a name.
        divisions = [*values(node, ast.FloorDiv)]
        if type(node) is ast.BinOp and type(node.op) is ast.FloorDiv:
            divisions.append(node)
        return any(world_size(division.right) for division in divisions)

    def rank(node: ast.expr) -> bool:
        return names_rank(node, vocabulary) or (
            type(node) is ast.Name and node.id in assigned.ranks
        )

    def product(node: ast.expr | None) -> bool:
        low = binary(node, ast.Mult)
        return bool(low) and any(rank(a) and per(b) for a, b in (low, low[::-1]))

    if not (product(lower) or any(product(value) for value in values(lower, ast.Mult))):
        return False
    # Above: `(rank + 1) * per` or `lower + per` (the text comparisons are the rule's).
    times = binary(upper, ast.Mult)
    return (
        bool(values(upper, ast.Mult, ast.Add))
        or any(binary(side, ast.Add) for side in times)
        or bool(binary(upper, ast.Add))
    )


def _assigned(summary: SyntaxSummary) -> _Assigned:
    operations: dict[str, list[ast.BinOp]] = {}
    ranks: set[str] = set()
    world_sizes: set[str] = set()
    for target, value in summary.assignments():
        if type(target) is not ast.Name or value is None:
            continue
        if type(value) is ast.BinOp:
            operations.setdefault(target.id, []).append(value)
        elif names_rank(value, summary.vocabulary):
            ranks.add(target.id)
        if names_world_size(value, summary.vocabulary):
            world_sizes.add(target.id)
    return _Assigned(operations, frozenset(ranks), frozenset(world_sizes))


_PAD = re.compile(r"pad|ceil\(", re.IGNORECASE)
_GATHER = re.compile(r"all_gather|gather\(|\bcat\(")


def _padded_or_gathered(summary: SyntaxSummary, candidate: ast.AST) -> bool:
    """The visitor's word test of ``_exempt``, read before libcst: the function or the class
    around the candidate (or the module, outside both) spells a pad, a ``ceil(`` or a gather.
    The code read runs from the scope's ``def`` / ``class`` to its last line, a part of the
    code the visitor reads (its decorators and leading comments are left out), so a word found
    here is one the visitor finds. Unknown source (``""``): never."""
    if not summary.source:
        return False
    around = (summary.enclosing_function(candidate), summary.enclosing_class(candidate))
    scopes: list[ast.AST | None] = [scope for scope in around if scope is not None] or [None]
    return any(
        _PAD.search(code) or _GATHER.search(code) for code in map(summary.code_of, scopes)
    )


class FloorSliceShard(Rule):
    code = "SL103"
    name = "floor-slice-shard"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_risk = SHARD_SIZE_RISK
    requires = (("//",), ("{world_size}",), ("{rank}",))
    has_syntax_filter = True

    @classmethod
    def may_match_text(cls, text: str) -> bool:
        return may_floor_divide(text)  # a `//` that is no URL's

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # A `//`, and bounds shaped `rank * per` and `(rank + 1) * per` or `start + per`
        # (or names, which may be assigned them) in a `[lo:hi]` slice, `range` or `islice`.
        if "FloorDiv" not in summary.kinds:
            return False
        assigned, vocabulary = _assigned(summary), summary.vocabulary
        if any(
            piece.step is None and _may_bound(piece.lower, piece.upper, assigned, vocabulary)
            and not _padded_or_gathered(summary, piece)
            for piece in summary.nodes(ast.Slice)
        ):
            return True
        # `range` is the builtin or `import range as r`; `islice` is imported from itertools.
        ranges = {"range"} | {
            alias.asname for i in summary.nodes(ast.Import) for alias in i.names
            if alias.name == "range" and alias.asname
        }
        for call in summary.nodes(ast.Call):
            count = len(call.args) + len(call.keywords)
            func = call.func
            if count == 2 and type(func) is ast.Name and func.id in ranges:
                if _may_bound(argument(call, 0), argument(call, 1), assigned, vocabulary) and (
                    not _padded_or_gathered(summary, call)
                ):
                    return True
            islice = (type(func) is ast.Name and "islice" in summary.names) or (
                type(func) is ast.Attribute and func.attr == "islice"
            )
            if count == 3 and islice:
                if _may_bound(argument(call, 1), argument(call, 2), assigned, vocabulary) and (
                    not _padded_or_gathered(summary, call)
                ):
                    return True
        return False

    # -- the three shapes ------------------------------------------------------------------------
    def visit_Subscript(self, node: cst.Subscript) -> None:
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Slice):
            return
        piece = node.slice[0].slice
        if piece.lower is None or piece.upper is None or piece.step is not None:
            return
        bounds = self._bounds(piece.lower, piece.upper)
        if bounds is None:
            return
        if not is_length_of(self.context, bounds.division.dividend, node.value, 0):
            return
        self._check(node, bounds, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        called = self.context.qualified_name(node.func) or ""
        if called == "range":
            start, stop = get_arg(node, 0), get_arg(node, 1)
            if len(node.args) != 2 or start is None or stop is None:
                return
        elif called.rsplit(".", 1)[-1] == "islice" and "itertools" in called:
            start, stop = get_arg(node, 1), get_arg(node, 2)
            if len(node.args) != 3 or start is None or stop is None:
                return
        else:
            return
        bounds = self._bounds(start.value, stop.value)
        if bounds is None:
            return
        self._check(node, bounds, None)

    # -- matching ---------------------------------------------------------------------------------
    def _bounds(self, lower: cst.BaseExpression, upper: cst.BaseExpression) -> Bounds | None:
        low = _resolve(self.context, lower)
        if not (isinstance(low, cst.BinaryOperation) and isinstance(low.operator, cst.Multiply)):
            return None
        for rank, per in ((low.left, low.right), (low.right, low.left)):
            if not is_rank_like(self.context, rank):
                continue
            division = floor_division(self.context, per)
            if division is None:
                continue
            high = _resolve(self.context, upper)
            if not isinstance(high, cst.BinaryOperation):
                return None
            ok = False
            if isinstance(high.operator, cst.Multiply):
                for a, b in ((high.left, high.right), (high.right, high.left)):
                    if _is_rank_plus_one(a, rank) and same_expression(b, per):
                        ok = True
            elif isinstance(high.operator, cst.Add):
                for a, b in ((high.left, high.right), (high.right, high.left)):
                    if same_expression(b, per) and (
                        same_expression(a, lower) or same_expression(a, low)
                    ):
                        ok = True
            if ok:
                return Bounds(rank, division, lower, upper)
            return None
        return None

    def _exempt(self, node: cst.CSTNode, bounds: Bounds, target: cst.BaseExpression | None) -> bool:
        division = bounds.division
        divisor = expression_key(division.divisor)
        dividends = {expression_key(division.dividend)}
        resolved = _resolve(self.context, division.dividend)
        dividends.add(expression_key(resolved))
        if target is not None:
            for form in (f"len({expression_key(target)})", f"{expression_key(target)}.size(0)",
                         f"{expression_key(target)}.shape[0]"):
                dividends.add(form)
        function = self.context.enclosing_function(node)
        klass = self.context.enclosing_class(node)
        scopes: list[cst.CSTNode] = [s for s in (function, klass) if s is not None]
        if not scopes:
            scopes = [self.context.module]
        # A % W anywhere in the function or its class: the remainder is handled or asserted away.
        for modulo in modulos_in_scope(self.context, node):
            if expression_key(modulo.right) == divisor and expression_key(modulo.left) in dividends:
                return True
        rank_key = expression_key(bounds.rank)
        for scope in scopes:
            text = self.context.code_for(scope)
            compact = re.sub(r"\s+", "", text)
            if klass is not None and scope is klass:
                # In a class, `% W` on the same dividend in another method counts too.
                if any(f"{d}%{divisor}" in compact for d in dividends):
                    return True
            # The last rank gets the rest: `if rank == world_size - 1: ...`.
            if f"{rank_key}=={divisor}-1" in compact or f"{divisor}-1=={rank_key}" in compact:
                return True
            if f"{rank_key}+1=={divisor}" in compact or f"{rank_key}<{divisor}-1" in compact:
                return True
            if _PAD.search(text) or _GATHER.search(text):
                return True
        if function is not None and function.name.value == "backward" and klass is not None:
            bases = " ".join(self.context.code_for(arg.value) for arg in klass.bases)
            if "Function" in bases:
                return True
        return False

    # -- reporting --------------------------------------------------------------------------------
    def _check(self, node: cst.CSTNode, bounds: Bounds, target: cst.BaseExpression | None) -> None:
        if self._exempt(node, bounds, target):
            return
        world = self.context.code_for(bounds.division.divisor)
        message = (
            f"contiguous shard of floor(n / {world}) items per rank: the last n % {world} items "
            "go to no rank, every epoch"
        )
        self.report(node, message, self._fix(bounds))

    def _fix(self, bounds: Bounds) -> Fix | None:
        # Only bounds written at the slice are rewritten; bounds held in names are reported only.
        if not isinstance(bounds.lower, cst.BinaryOperation):
            return None
        if not isinstance(bounds.upper, cst.BinaryOperation):
            return None
        dividend = _resolve(self.context, bounds.division.dividend)
        if not _is_pure(dividend):
            dividend = bounds.division.dividend
        world, rank = bounds.division.divisor, bounds.rank
        if not (_is_pure(dividend) and _is_pure(world) and _is_pure(rank)):
            return None
        r, a, w = _text(rank), _text(dividend), _text(world)
        lower = _expression(f"{r} * {a} // {w}")
        upper = _expression(f"({cst.Module(body=[]).code_for_node(rank).strip()} + 1)"
                            f" * {a} // {w}")
        return Fix(
            replacements=[(bounds.lower, lower), (bounds.upper, upper)],
            applicability=Applicability.UNSAFE,
            message=f"Use proportional bounds `{r} * n // {w}` to `({r} + 1) * n // {w}`",
        )

    documentation = """
    A contiguous shard of `n // world_size` items per rank drops the tail.

    ## What it does
    Flags `x[R * per:(R + 1) * per]`, `x[off:off + per]` with `off = R * per`, and the
    `range(...)` / `itertools.islice(...)` equivalents (operands in any order), where
    `per = A // W`, `A` is the length of `x`, `W` a world size and `R` a rank.

    Not flagged when the function or its class uses `A % W` (including `assert A % W == 0`),
    gives the last rank the rest, pads `A` to a multiple of `W` first, obtained `x` by gathering
    `W` equal parts (`all_gather`, `cat`), is the `backward` of an `autograd.Function`, or already
    uses proportional bounds.

    ## Why is this bad
    Every rank takes `n // W` items, so the last `n % W` items are never used by any rank, on
    every epoch: 10 items on 4 ranks train on 8.

    ## Example
    ```python
    per = len(indices) // world_size
    local = indices[rank * per:(rank + 1) * per]
    ```

    ## Use instead
    ```python
    local = indices[rank * len(indices) // world_size:(rank + 1) * len(indices) // world_size]
    ```
    Proportional bounds cover every item exactly once, stay contiguous and work on any
    sliceable (lists, tensors, arrays, ranges).

    ## Fix safety
    Unsafe: part sizes then differ by one, so under DDP a rank with one more batch waits in the
    all-reduce; `drop_last=True` does not prevent it (see SL101 for what does: DDP's `join()`,
    an all-reduced `MIN` of the step count, or padding). The fix is offered only when
    the bounds are written at the slice and repeating the length and world size has no side
    effects.

    ## References
    - `torch.utils.data.DistributedSampler` pads instead of dropping (`drop_last=False`)
    - SL101, SL102
    """

    examples = (
        Example(
            "per = len(indices) // world_size\nlocal = indices[rank * per:(rank + 1) * per]\n",
            lines=(2,),
            fixed=(
                "per = len(indices) // world_size\n"
                "local = indices[rank * len(indices) // world_size:(rank + 1) * len(indices)"
                " // world_size]\n"
            ),
        ),
        Example(
            "local = indices[rank * len(indices) // world_size:"
            "(rank + 1) * len(indices) // world_size]\n"
        ),
        Example(
            "assert len(indices) % world_size == 0\nper = len(indices) // world_size\n"
            "local = indices[rank * per:(rank + 1) * per]\n"
        ),
    )

