"""Positions of a few nodes without generating the whole file's code.

libcst computes positions by generating the code of the whole module while it counts lines and
columns: for a training script whose ``main()`` runs 2,000 lines that is more than the parse, and
an editor pays it on every keystroke. A finding needs the positions inside one line-level
statement only (the statement holding it). Python's ``ast`` knows the line each statement starts
on; generating the code of that statement alone, from that line and under its block's
indentation, gives exactly the positions the whole generation would, and the generated text must
equal the source there, character for character, or the answer is ``None`` and the caller falls
back to the whole generation. So the shortcut can be slower than needed, never wrong.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.syntax_summary import parsed
from sampler_lint.rule import FileContext

if TYPE_CHECKING:
    from libcst.metadata import CodeRange, PositionProvider

_Parent = Callable[["cst.CSTNode"], "cst.CSTNode | None"]


def positions_of(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """The position of every node: libcst's PositionProvider run on its own. Through a
    ``MetadataWrapper`` the same positions cost a whole extra traversal of the tree besides the
    code generation that computes them (almost half the time of locating a file's findings)."""
    provider = cst.metadata.PositionProvider()
    try:
        provider._gen_impl(module)
        return cast("Mapping[cst.CSTNode, CodeRange]", provider._computed)
    except AttributeError:  # another libcst's internals: the public way
        wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
        return wrapper.resolve(cst.metadata.PositionProvider)


def positions_around(
    context: FileContext, nodes: Sequence[cst.CSTNode]
) -> Mapping[cst.CSTNode, CodeRange]:
    """Positions of ``nodes``, of everything inside the line-level statements holding them, and
    of the statements that enclose them (``FileContext.enclosing_statement``): from those
    statements alone when they can be vouched for (:func:`positions_near`), else every node's."""
    near = positions_near(context.module, context.source, nodes, context.parent)
    if near is not None and all(node in near for node in nodes):
        statements = (context.enclosing_statement(node) for node in nodes)
        if all(statement is None or statement in near for statement in statements):
            return near
    return positions_of(context.module)


def positions_near(
    module: cst.Module, source: str, nodes: Iterable[cst.CSTNode], parent: _Parent
) -> Mapping[cst.CSTNode, CodeRange] | None:
    """The positions of every node inside the line-level statements holding ``nodes`` (the
    statements included), or ``None`` when they cannot be vouched for."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    starts = _line_starts(source)
    provider = cst.metadata.PositionProvider()
    done: set[int] = set()
    for node in nodes:
        chain = _chain(node, parent, module)
        if chain is None:
            return None
        statement = _line_level(chain)
        if statement is None:
            return None
        if id(statement) in done:
            continue
        done.add(id(statement))
        if not _generate(module, source, starts, tree, chain, statement, provider):
            return None
    computed = getattr(provider, "_computed", None)  # None: another libcst's internals
    return cast("Mapping[cst.CSTNode, CodeRange] | None", computed)


def _chain(node: cst.CSTNode, parent: _Parent, module: cst.Module) -> list[cst.CSTNode] | None:
    """``node`` and its ancestors up to the module, innermost first."""
    chain = [node]
    while chain[-1] is not module:
        above = parent(chain[-1])
        if above is None:
            return None
        chain.append(above)
    return chain


def _line_level(chain: list[cst.CSTNode]) -> cst.BaseStatement | None:
    for below, above in itertools.pairwise(chain):
        if isinstance(below, cst.SimpleStatementLine | cst.BaseCompoundStatement) and isinstance(
            above, cst.IndentedBlock | cst.Module
        ):
            return below
    return None


def _line_starts(source: str) -> list[int]:
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _generate(
    module: cst.Module, source: str, starts: list[int], tree: ast.Module,
    chain: list[cst.CSTNode], statement: cst.BaseStatement, provider: PositionProvider,
) -> bool:
    from libcst.metadata.position_provider import PositionProvidingCodegenState

    twin = _ast_twin(tree, chain, statement)
    if twin is None:
        return False
    first = twin.lineno
    leading = len(getattr(statement, "leading_lines", ()))
    if isinstance(statement, cst.FunctionDef | cst.ClassDef) and statement.decorators:
        decorators = getattr(twin, "decorator_list", [])
        if not decorators:
            return False
        first = decorators[0].lineno
        leading += len(statement.decorators[0].leading_lines)
    line = first - leading
    if not 0 < line < len(starts):
        return False
    # The blocks above the statement set its indentation.
    depth = chain.index(statement)
    indents = [
        block.indent if block.indent is not None else module.default_indent
        for block in reversed(chain[depth + 1:]) if isinstance(block, cst.IndentedBlock)
    ]
    state = PositionProvidingCodegenState(
        default_indent=module.default_indent, default_newline=module.default_newline,
        provider=provider, indent_tokens=indents, line=line, column=0,
    )
    statement._codegen(state)
    generated = "".join(state.tokens)
    offset = starts[line - 1]
    return source[offset: offset + len(generated)] == generated


def _ast_twin(
    tree: ast.Module, chain: list[cst.CSTNode], statement: cst.BaseStatement
) -> ast.stmt | None:
    """The ``ast`` statement where ``statement`` starts (its first small statement for a line of
    them), found by walking both trees down the same blocks; ``None`` for a shape it does not
    know."""
    path = list(reversed(chain[chain.index(statement):]))  # module ... statement
    block: list[ast.stmt] = tree.body
    twin: ast.AST | None = None
    position = 0
    while position < len(path) - 1:
        holder, child = path[position], path[position + 1]
        if isinstance(holder, cst.Module | cst.IndentedBlock):
            found = _in_block(holder.body, block, child)
            if found is None:
                return None
            twin = found
            position += 1
            continue
        if twin is None:
            return None
        # ``holder`` is a compound statement whose twin is known; ``child`` is one of its parts.
        next_block = _part(holder, twin, child)
        if isinstance(next_block, ast.AST):  # an elif: the same walk one `If` down
            twin = next_block
            position += 1
            continue
        if next_block is None:
            return None
        block = next_block
        position += 1
        # ``child`` (an IndentedBlock, an Else, a handler...) leads to the block's statements.
        while position < len(path) - 1 and not isinstance(path[position], cst.IndentedBlock):
            position += 1
    return twin if isinstance(twin, ast.stmt) else None


def _in_block(
    statements: Iterable[cst.BaseStatement], block: list[ast.stmt], child: cst.CSTNode
) -> ast.stmt | None:
    index = 0
    for statement in statements:
        if statement is child:
            return block[index] if index < len(block) else None
        index += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return None


def _part(
    holder: cst.CSTNode, twin: ast.AST, child: cst.CSTNode
) -> list[ast.stmt] | ast.AST | None:
    """The ``ast`` block that ``child`` (a part of the compound statement ``holder``) opens."""
    if child is getattr(holder, "body", None):
        return _block(twin, "body")
    orelse = getattr(holder, "orelse", None)
    if orelse is not None and child is orelse:
        if isinstance(child, cst.If):
            branch = getattr(twin, "orelse", [])
            return branch[0] if len(branch) == 1 and isinstance(branch[0], ast.If) else None
        return _block(twin, "orelse")
    if child is getattr(holder, "finalbody", None):
        return _block(twin, "finalbody")
    for field, ast_field in (("handlers", "handlers"), ("cases", "cases")):
        parts = getattr(holder, field, ())
        for number, part in enumerate(parts):
            if part is child:
                ast_parts = getattr(twin, ast_field, [])
                if number >= len(ast_parts) or len(ast_parts) != len(parts):
                    return None
                return _block(ast_parts[number], "body")
    return None


def _block(node: ast.AST, name: str) -> list[ast.stmt] | None:
    value = getattr(node, name, None)
    return value if isinstance(value, list) and value else None
