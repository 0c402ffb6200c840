"""SL402 remainder-of-quotient: ``q = A // B`` then ``q % B`` where ``A % B`` was meant."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import ProjectIndex, dotted_expression
from sampler_lint.analysis.matching import expression_key, is_repeatable
from sampler_lint.analysis.sampler_family import (
    CLASS_FACT_WORDS,
    CLASS_FACTS,
    chain_of,
    classes_at,
    find_class,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.analysis.text_shapes import may_floor_divide
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity

if TYPE_CHECKING:
    from sampler_lint.rule import FileContext


class RemainderOfQuotient(Rule):
    code = "SL402"
    name = "remainder-of-quotient"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    fix_risk = (
        "changes the value whenever (A // B) % B != A % B: right where the remainder of the "
        "dividend was meant, wrong where the parity of the quotient was"
    )
    # Only sampler-family code (RULES.md): the file holds a class the index knows, so it mentions
    # one of the words that class facts are collected for.
    requires = (("//",), ("%",), CLASS_FACT_WORDS)
    collectors = (CLASS_FACTS,)
    uses_index = True
    has_syntax_filter = True

    @classmethod
    def may_match_text(cls, text: str) -> bool:
        return may_floor_divide(text)  # a `//` that is no URL's

    @classmethod
    def may_match_index(cls, index: ProjectIndex, path: str, text: str) -> bool:
        # The remainder must sit in a sampler-family class of this file or in a function one
        # of them calls: the file must hold such a class.
        return any(chain_of(index, fact).is_sampler for fact in classes_at(index, path, text))

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # `N % B` after `N = A // B` (same N; the same B unless both are certainly different).
        quotients: dict[str, list[tuple[tuple[int, int], ast.BinOp]]] = {}
        for assign in summary.nodes(ast.Assign):
            value = assign.value
            if type(value) is ast.BinOp and type(value.op) is ast.FloorDiv:
                for target in assign.targets:
                    name = dotted_expression(target)
                    if name is not None:
                        quotients.setdefault(name, []).append((_start(assign), value))
        if not quotients:
            return False
        for modulo in summary.nodes(ast.BinOp):
            if type(modulo.op) is ast.Mod:
                name = dotted_expression(modulo.left)
                for start, quotient in quotients.get(name or "", ()):
                    if start <= _start(modulo) and not _other_divisor(quotient, modulo):
                        return True
        return False

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        # Per scope (function, or class for `self.` attributes): quotient name -> (A, B).
        self._quotients: dict[
            int, dict[str, tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]]
        ] = {}
        self._sampler_code: tuple[set[int], set[str]] | None = None

    # -- scope: sampler-family code only --------------------------------------------------------
    def _in_sampler_code(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` sits in a sampler-family class (RULES.md: torch's samplers and
        classes deriving from them through the project) or in a module-level function of this
        file that such a class calls by name. Elsewhere the parity of a quotient is usually meant
        (``half = (w - t) // 2; if half % 2:`` keeps halves even): no finding."""
        samplers, called = self._sampler_scopes()
        for ancestor in self.context.ancestors(node):
            if id(ancestor) in samplers:
                return True
            if isinstance(ancestor, cst.FunctionDef) and ancestor.name.value in called:
                if self.context.parent(ancestor) is self.context.module:
                    return True
        return False

    def _sampler_scopes(self) -> tuple[set[int], set[str]]:
        if self._sampler_code is None:
            samplers: set[int] = set()
            called: set[str] = set()
            path = str(self.context.path)
            for klass in _class_defs(self.context.module):
                fact = find_class(self.context.index, klass.name.value, path)
                if fact is None or not chain_of(self.context.index, fact).is_sampler:
                    continue
                samplers.add(id(klass))
                called |= _called_names(klass)
            self._sampler_code = (samplers, called)
        return self._sampler_code

    def _scope_for(self, name: str, node: cst.CSTNode) -> cst.CSTNode:
        if name.startswith("self."):
            klass = self.context.enclosing_class(node)
            if klass is not None:
                return klass
        return self.context.enclosing_function(node) or self.context.module

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        is_quotient = isinstance(value, cst.BinaryOperation) and isinstance(
            value.operator, cst.FloorDivide
        )
        statement = self.context.enclosing_statement(node)
        block = self.context.parent(statement) if statement is not None else None
        for target in node.targets:
            name = dotted_name(target.target)
            if name is None:
                self._forget(target.target, node)  # `n, c, h, w = x.size()` rebinds them all
                continue
            quotients = self._quotients.setdefault(id(self._scope_for(name, node)), {})
            if is_quotient and block is not None:
                assert isinstance(value, cst.BinaryOperation)
                quotients[name] = (value.left, value.right, block)
            else:
                quotients.pop(name, None)  # rebound to something else

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        name = dotted_name(node.target)
        if name is not None and not isinstance(node.operator, cst.AddAssign):
            # `q += 1` keeps q a quotient plus a share of the remainder; other operators don't.
            self._quotients.get(id(self._scope_for(name, node)), {}).pop(name, None)

    def visit_For(self, node: cst.For) -> None:
        self._forget(node.target, node)

    def _forget(self, target: cst.BaseExpression, node: cst.CSTNode) -> None:
        for element in _names_in_target(target):
            self._quotients.get(id(self._scope_for(element, node)), {}).pop(element, None)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Modulo):
            return
        name = dotted_name(node.left)
        if name is None:
            return
        found = self._quotients.get(id(self._scope_for(name, node)), {}).get(name)
        if found is None:
            return
        dividend, divisor, block = found
        if block not in set(self.context.ancestors(node)):
            return  # assigned in another branch: not on this path
        if expression_key(divisor) != expression_key(node.right):
            return  # a second, different divisor: the remainder of the quotient is meant
        if self._inside_own_assignment(node, name):
            return
        if not self._in_sampler_code(node):
            return
        a = self.context.code_for(dividend)
        b = self.context.code_for(node.right)
        message = (
            f"`{name} % {b}` takes the remainder of the quotient `{name} = {a} // {b}`: the "
            f"remainder of the dividend, `{a} % {b}`, is almost surely what is meant"
        )
        fix = None
        if is_repeatable(dividend):
            replacement = dividend
            if isinstance(dividend, cst.BinaryOperation) and not dividend.lpar:
                replacement = dividend.with_changes(
                    lpar=[cst.LeftParen()], rpar=[cst.RightParen()]
                )
            fix = Fix(
                replacements=[(node.left, replacement)],
                applicability=Applicability.UNSAFE,
                message=f"Use the dividend: `{a} % {b}`",
            )
        self.report(node, message, fix)

    def _inside_own_assignment(self, node: cst.CSTNode, name: str) -> bool:
        """``q = q % B`` right after the quotient is a deliberate two-step computation."""
        statement = self.context.enclosing_statement(node)
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Assign, cst.AugAssign)):
                    targets = (
                        [t.target for t in small.targets] if isinstance(small, cst.Assign)
                        else [small.target]
                    )
                    if any(dotted_name(t) == name for t in targets):
                        return True
        return False

    documentation = """
    The remainder of a quotient (`q % B` after `q = A // B`) where `A % B` was meant.

    ## What it does
    Flags `q % B` when `q` (a local or a `self.` attribute) was assigned `A // B` earlier on the
    same path in the same function (in a block that holds the modulo, so not in another branch),
    with the same `B`, and not rebound since. A modulo by a different divisor, a modulo before the
    quotient is assigned, and `q = q % B` are not flagged.

    Only sampler-family code is checked: methods of classes deriving from torch's samplers
    (directly or through project classes), and module-level functions of the same file that
    such a class calls by name. Elsewhere the parity of a quotient is usually meant: a rotary
    embedding's `half = (dim - t) // 2; if half % 2: ...` keeps both halves even on purpose.

    ## Why is this bad
    Splitting `A` items into `B` parts gives `A // B` each and hands the `A % B` left over to the
    first parts. Taking `(A // B) % B` instead hands out the wrong number, so a sampler's
    `__len__` disagrees with what `__iter__` yields (10 samples over 3 sub-epochs: 3, 3, 3
    instead of 4, 3, 3), and training loops that trust `len()` break or skip. EfficientViT's
    `SAMDistributedSampler.set_sub_num_samples` had this bug (fixed in commit c3da447).

    ## Example
    ```python
    self.sub_num_samples = self.num_samples // k
    if self.sub_num_samples % k > sub_epoch:
        self.sub_num_samples += 1
    ```

    ## Use instead
    ```python
    self.sub_num_samples = self.num_samples // k
    if self.num_samples % k > sub_epoch:
        self.sub_num_samples += 1
    ```

    ## Fix safety
    Unsafe: it replaces `(A // B) % B` by `A % B`, which changes the value by definition
    whenever the two differ. That is the point where the remainder of the dividend was meant
    (the sub-epoch sampler above), and a bug where the parity or the cycle of the quotient was
    meant. Read the surrounding code before accepting it. Offered when the dividend has no calls
    (it is evaluated again).

    ## References
    - EfficientViT issue #175 and commit c3da447
    """

    examples = (
        Example(
            "from torch.utils.data import DistributedSampler\n"
            "class SubEpochSampler(DistributedSampler):\n"
            "    def set_sub_num_samples(self, k, sub_epoch):\n"
            "        self.sub_num_samples = self.num_samples // k\n"
            "        if self.sub_num_samples % k > sub_epoch:\n"
            "            self.sub_num_samples += 1\n",
            lines=(5,),
            fixed=(
                "from torch.utils.data import DistributedSampler\n"
                "class SubEpochSampler(DistributedSampler):\n"
                "    def set_sub_num_samples(self, k, sub_epoch):\n"
                "        self.sub_num_samples = self.num_samples // k\n"
                "        if self.num_samples % k > sub_epoch:\n"
                "            self.sub_num_samples += 1\n"
            ),
        ),
        Example(
            "class Rotary:\n"
            "    def __init__(self, dim, t):\n"
            "        half = (dim - t) // 2\n"
            "        if half % 2:\n"
            "            t -= 2\n"
        ),
        Example(
            "def split(n, k, m):\n"
            "    per = n // k\n"
            "    return per % m\n"
        ),
        Example(
            "def digits(n, b):\n"
            "    low = n % b\n"
            "    n = n // b\n"
            "    return low\n"
        ),
    )


def _class_defs(module: cst.Module) -> list[cst.ClassDef]:
    """Every class of the module, nested ones included (the index names them too)."""
    found: list[cst.ClassDef] = []
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.ClassDef):
            found.append(node)
        if isinstance(node, (cst.Module, cst.ClassDef, cst.FunctionDef, cst.BaseSuite,
                             cst.BaseCompoundStatement)):
            stack.extend(node.children)
    return found


def _called_names(klass: cst.ClassDef) -> set[str]:
    """The plain names a class calls (``helper(self.n, k)``): candidates for module-level helpers
    of the sampler. Only this file's functions are followed; a helper imported from elsewhere is
    not (a person reads it with the sampler)."""
    names: set[str] = set()
    stack: list[cst.CSTNode] = [klass]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            names.add(node.func.value)
        stack.extend(node.children)
    return names


def _names_in_target(target: cst.BaseExpression) -> list[str]:
    name = dotted_name(target)
    if name is not None:
        return [name]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _names_in_target(element.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in_target(target.value)
    return []


def _start(node: ast.stmt | ast.expr) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _other_divisor(a: ast.BinOp, b: ast.BinOp) -> bool:
    """The right operands certainly differ in text (what :func:`expression_key` compares): two
    different dotted names or two different integers, within one line each (no comment there)."""
    if a.lineno != a.end_lineno or b.lineno != b.end_lineno:
        return False
    x, y = a.right, b.right
    if type(x) is ast.Constant and type(y) is ast.Constant:
        ints = type(x.value) is int and type(y.value) is int
        return ints and x.value != y.value
    dotted_x, dotted_y = dotted_expression(x), dotted_expression(y)
    return dotted_x is not None and dotted_y is not None and dotted_x != dotted_y
