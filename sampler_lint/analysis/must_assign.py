"""Which ``self`` attributes ``__init__`` has surely assigned at each point (SL401).

A must-assign analysis over ``__init__``'s statements: an ``if`` adds what both branches assign (a
branch that raises or returns drops out), loops add nothing, a ``try`` adds what its body and
every handler that falls through assign, and ``self.m(...)`` of a method of the same class adds
what ``m`` assigns on every path that returns. Anything the analysis cannot see (a method it
does not have, ``self`` handed to another function, ``setattr`` with a computed name) makes every
attribute possibly assigned, so nothing after it is reported.

Only reads that run on every path through ``__init__`` are judged (top-level statements, not
inside a condition, loop, ``try`` or short-circuit): a read under the same condition as the
assignment is a correlation a path-insensitive analysis cannot see.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.tree import descendants


class _Everything:
    """The state after something the analysis cannot see: any attribute may be assigned."""


EVERYTHING = _Everything()
State = frozenset[str] | _Everything


def _meet(states: Iterable[State | None]) -> State | None:
    """What every path assigns; ``None`` (no path falls through) is left out."""
    result: State | None = None
    for state in states:
        if state is None:
            continue
        if result is None or isinstance(result, _Everything):
            result = state
        elif not isinstance(state, _Everything):
            result = result & state
    return result


def _add(state: State, names: Iterable[str] | State) -> State:
    if isinstance(state, _Everything) or isinstance(names, _Everything):
        return EVERYTHING
    return state | frozenset(names)


@dataclass
class Unassigned:
    """A read of ``self.<attr>`` that runs before every path has assigned it."""

    node: cst.Attribute
    attr: str
    helpers: tuple[str, ...]  # the methods whose assignments were followed


@dataclass
class _Method:
    falls: State | None
    returns: list[State] = field(default_factory=list)


def may_be_unassigned(
    klass: cst.ClassDef, candidates: set[str], *, project_bases: bool = False
) -> list[Unassigned]:
    """Reads in ``klass.__init__`` of an attribute in ``candidates`` that run on every path
    through ``__init__`` while some path there has not assigned it. With ``project_bases``, a
    ``super()`` call may run methods of this class the analysis does not follow (a base's
    ``__init__`` calling an overridden hook), so it stops the analysis."""
    methods = {
        item.name.value: item for item in klass.body.body if isinstance(item, cst.FunctionDef)
    }
    init = methods.get("__init__")
    if init is None or not candidates:
        return []
    flow = _Flow(methods, project_bases)
    found: list[Unassigned] = []
    state: State | None = frozenset()
    for statement in _body(init):
        if state is None or isinstance(state, _Everything):
            break
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                assert not isinstance(state, _Everything) and state is not None
                for node in _unconditional_reads(small):
                    attr = node.attr.value
                    if attr in candidates and attr not in state:
                        found.append(Unassigned(node, attr, tuple(flow.followed)))
                state = flow.small(small, state, [])
                if state is None or isinstance(state, _Everything):
                    break
        else:
            state = flow.statement(statement, state, [])
    return found


def assigned_in_init(klass: cst.ClassDef) -> set[str]:
    """Attributes ``__init__`` or a method it calls assigns on some path."""
    methods = {
        item.name.value: item for item in klass.body.body if isinstance(item, cst.FunctionDef)
    }
    seen: set[str] = set()
    names: set[str] = set()
    pending = ["__init__"]
    while pending:
        name = pending.pop()
        if name in seen or name not in methods:
            continue
        seen.add(name)
        for node in descendants(methods[name]):
            if isinstance(node, cst.Call) and _self_method(node.func):
                pending.append(_self_method(node.func) or "")
        names |= _stored(methods[name])
    return names


def _stored(function: cst.FunctionDef) -> set[str]:
    names: set[str] = set()
    for node in descendants(function):
        targets: Sequence[cst.BaseExpression] = ()
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor)):
            targets = [node.target]
        for target in targets:
            names.update(_targets(target))
    return names


def _targets(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Attribute) and dotted_name(target.value) == "self":
        yield target.attr.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _targets(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _targets(target.value)


def _self_method(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute) and dotted_name(func.value) == "self":
        return func.attr.value
    return None


def _calls_super(func: cst.BaseExpression) -> bool:
    """``super().__init__`` and the like."""
    return (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Call)
        and dotted_name(func.value.func) == "super"
    )


def _body(node: cst.CSTNode) -> Sequence[cst.BaseStatement]:
    body = getattr(node, "body", None)
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    if isinstance(body, cst.SimpleStatementSuite):  # `if x: self.a = 1` on one line
        return [cst.SimpleStatementLine(body=list(body.body))]
    return []


def _unconditional_reads(node: cst.CSTNode) -> Iterator[cst.Attribute]:
    """``self.X`` reads in a small statement that run whenever it runs (not in a lambda, a
    conditional expression, a short-circuit operand or a comprehension)."""
    deferred = (cst.Lambda, cst.IfExp, cst.BooleanOperation, cst.ListComp, cst.SetComp,
                cst.DictComp, cst.GeneratorExp, cst.FunctionDef, cst.ClassDef)
    stores: set[int] = set()
    if isinstance(node, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [
            node.target
        ]
        for target in targets:
            for element in descendants(target):
                if isinstance(element, cst.Attribute) and element in _target_leaves(target):
                    stores.add(id(element))
    for child in descendants(node, prune=lambda n: isinstance(n, deferred)):
        if isinstance(child, deferred):
            continue
        if (
            isinstance(child, cst.Attribute)
            and isinstance(child.value, cst.Name)
            and child.value.value == "self"
            and id(child) not in stores
        ):
            yield child


def _target_leaves(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [leaf for e in target.elements for leaf in _target_leaves(e.value)]
    if isinstance(target, cst.StarredElement):
        return _target_leaves(target.value)
    return [target]


class _Flow:
    def __init__(self, methods: dict[str, cst.FunctionDef], opaque_super: bool) -> None:
        self.methods = methods
        self.opaque_super = opaque_super
        self.followed: list[str] = []
        self._active: set[str] = set()
        self._summaries: dict[str, State | None] = {}

    # A block: the state at its end (None: no path falls through); `returns` collects the state
    # at each `return`.
    def block(
        self, statements: Sequence[cst.BaseStatement], state: State | None, returns: list[State]
    ) -> State | None:
        for statement in statements:
            if state is None:
                return None
            state = self.statement(statement, state, returns)
        return state

    def statement(
        self, statement: cst.BaseStatement, state: State, returns: list[State]
    ) -> State | None:
        if isinstance(statement, cst.SimpleStatementLine):
            current: State | None = state
            for small in statement.body:
                if current is None:
                    return None
                current = self.small(small, current, returns)
            return current
        if isinstance(statement, cst.If):
            then = self.block(_body(statement), self._effects(statement.test, state), returns)
            orelse = statement.orelse
            if orelse is None:
                other: State | None = self._effects(statement.test, state)
            elif isinstance(orelse, cst.If):
                other = self.statement(orelse, state, returns)
            else:
                other = self.block(_body(orelse), state, returns)
            return _meet([then, other])
        if isinstance(statement, (cst.For, cst.While)):
            self.block(_body(statement), state, returns)  # its returns are exits
            if statement.orelse is not None:
                self.block(_body(statement.orelse), state, returns)
            return state
        if isinstance(statement, cst.With):
            return self.block(_body(statement), state, returns)
        if isinstance(statement, cst.Try):
            body = self.block(_body(statement), state, returns)
            if statement.orelse is not None and body is not None:
                body = self.block(_body(statement.orelse), body, returns)
            handlers = [self.block(_body(h), state, returns) for h in statement.handlers]
            after = _meet([body, *handlers])
            if statement.finalbody is not None:
                after = self.block(_body(statement.finalbody), after or state, returns) if (
                    after is not None
                ) else None
            return after
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return state
        return EVERYTHING  # match, and whatever else: not followed

    def small(
        self, small: cst.BaseSmallStatement, state: State, returns: list[State]
    ) -> State | None:
        if isinstance(small, cst.Return):
            if small.value is not None:
                state = self._effects(small.value, state)
            returns.append(state)
            return None
        if isinstance(small, cst.Raise):
            return None
        state = self._effects(small, state)
        if isinstance(small, cst.Assign):
            for target in small.targets:
                state = _add(state, _targets(target.target))
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)) and (
            not isinstance(small, cst.AnnAssign) or small.value is not None
        ):
            state = _add(state, _targets(small.target))
        return state

    def _effects(self, node: cst.CSTNode, state: State) -> State:
        """What the calls in ``node`` assign: a method of the class, ``setattr(self, "x", v)``;
        ``self`` handed anywhere else, or ``self.__dict__``, may assign anything."""
        for child in descendants(node, prune=lambda n: isinstance(n, cst.Lambda)):
            if isinstance(child, cst.Attribute) and dotted_name(child) == "self.__dict__":
                return EVERYTHING
            if not isinstance(child, cst.Call):
                continue
            if self.opaque_super and _calls_super(child.func):
                return EVERYTHING
            method = _self_method(child.func)
            if method is not None:
                state = _add(state, self._method(method))
            elif dotted_name(child.func) == "setattr" and child.args and dotted_name(
                child.args[0].value
            ) == "self":
                name = child.args[1].value if len(child.args) > 1 else None
                if isinstance(name, cst.SimpleString):
                    state = _add(state, [name.evaluated_value])  # type: ignore[list-item]
                else:
                    return EVERYTHING
            elif any(dotted_name(a.value) == "self" for a in child.args):
                return EVERYTHING
        return state

    def _method(self, name: str) -> State:
        """What ``self.name(...)`` assigns on every path that returns from it."""
        if name in self._summaries:
            return self._summaries[name] or EVERYTHING
        function = self.methods.get(name)
        if function is None or name in self._active or name == "__init__":
            return EVERYTHING  # inherited or recursive: unknown
        self._active.add(name)
        self.followed.append(name)
        returns: list[State] = []
        falls = self.block(_body(function), frozenset(), returns)
        self._active.discard(name)
        summary = _meet([falls, *returns])
        self._summaries[name] = summary
        # A method that never returns normally (always raises) assigns nothing that matters.
        return summary if summary is not None else EVERYTHING
