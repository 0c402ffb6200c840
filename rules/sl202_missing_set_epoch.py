"""SL202 missing-set-epoch: a shuffling DistributedSampler whose epoch never changes."""

from __future__ import annotations

import ast
import re

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.frameworks import is_framework_name
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import ProjectIndex, dotted_expression, import_aliases
from sampler_lint.analysis.loader_calls import (
    DISTRIBUTED_SAMPLERS,
    EPOCH_AWARE_CALLS,
    assigned_loaders,
    constructed,
    is_distributed_sampler,
    is_epoch_loop,
    is_evaluation_name,
    loader_sampler_argument,
    loader_sampler_expression,
    shuffles,
)
from sampler_lint.analysis.loader_facts import (
    LOADER_COLLECTORS,
    EpochUse,
    is_epoch_loop_ast,
    is_loader_constructor,
    opened_alternatives,
    set_epoch_receivers,
)
from sampler_lint.analysis.loaders import project_epoch_uses
from sampler_lint.analysis.matching import get_arg
from sampler_lint.analysis.sampler_family import (
    CLASS_FACTS,
    is_distributed_sampler_class,
    spells_project_subclass,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary, argument, per_tree, walk
from sampler_lint.analysis.tree import bound_on_every_path, scope_body_statements
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity

# torch's samplers that never shuffle by epoch: an alternative to a DistributedSampler that
# leaves it the only one that needs `set_epoch` (`RandomSampler(d) if single else ...`).
_PLAIN_SAMPLERS = (
    "RandomSampler", "SequentialSampler", "SubsetRandomSampler", "WeightedRandomSampler",
)
# Calls that iterate the loader they are given, here and now.
_ITERATING = ("iter", "enumerate", "tqdm", "zip", "trange", "islice", "chain")
# Of those, the ones that return a one-pass iterator (not an alias of the loader).
_ONE_PASS = ("iter", "enumerate", "zip", "islice", "chain")
# Bases that give a wrapper class no `set_epoch` of their own.
_PLAIN_BASES = ("object", "IterableDataset", "Generic", "Sampler", "BatchSampler")
# Calls that read a loader without consuming or keeping it.
_INERT = (
    "len", "print", "isinstance", "hasattr", "getattr", "str", "repr", "type", "id", "range",
    "int", "float", "bool", "format", "info", "debug", "warning", "log",
)
# The calls `_uses` never counts as handing the loader on.
_NOT_HANDED_ON = frozenset(_ITERATING + _INERT)
# How far a loader is followed into the project functions it is handed to.
_CALLEE_DEPTH = 2


class MissingSetEpoch(Rule):
    code = "SL202"
    name = "missing-set-epoch"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE
    # A sampler (torch's, a known subclass or a project subclass of DistributedSampler), or a
    # `set_epoch` call (the dataset-level shape).
    requires = (("Sampler", "set_epoch"),)
    collectors = (*LOADER_COLLECTORS, CLASS_FACTS)
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # The start of each of the three shapes the visitor follows: an inner dataset's epoch
        # set in an epoch loop while the loader iterates a wrapper; a loader assigned to a name
        # and given a sampler that may be a DistributedSampler; or such a sampler kept on `self`
        # by a class that iterates and has no `set_epoch`. (No loop needed for the loader: the
        # epoch loop may live in the function the loader goes to.)
        if _sets_an_inner_dataset(summary):
            return True
        return bool(_reaches(summary))

    @classmethod
    def syntax_hints(cls, summary: SyntaxSummary) -> frozenset[Reach] | None:
        if _sets_an_inner_dataset(summary):
            return None
        reaches = _reaches(summary)
        if any(definite and callees is None for definite, _, callees in reaches):
            return None  # a shape the index cannot rule out
        return frozenset(reaches)

    @classmethod
    def may_match_index(
        cls, index: ProjectIndex, path: str, text: str, hints: frozenset[Reach] | None = None
    ) -> bool:
        if hints is not None:
            # Is one of a shape's `...Sampler` classes a DistributedSampler, and does one of
            # the imported functions its loader goes to have an epoch loop over a parameter
            # (what `_epoch_use` wants of `_project_use`)?
            return any(
                (definite or any(is_distributed_sampler_class(index, n, path) for n in names))
                and (callees is None or any(_goes_round(index, path, c) for c in callees))
                for definite, names, callees in hints
            )
        # The dataset shape calls `set_epoch`; the loader and wrapper shapes construct a
        # DistributedSampler, which the file names: torch's or a known subclass, or a project
        # subclass (``_is_distributed`` finds it by its last name).
        if "set_epoch" in text or any(name in text for name in DISTRIBUTED_SAMPLERS):
            return True
        return spells_project_subclass(index, text, "DistributedSampler")

    def visit_Call(self, node: cst.Call) -> None:
        if is_loader_constructor(dotted_name(node.func)):
            self._loader(node)
        elif self._is_distributed(node):
            self._owned_by_wrapper(node)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "set_epoch":
            self._inner_dataset(node)

    # -- the epoch set on a dataset the loader does not iterate -----------------------------------
    def _keeps_its_own_epoch(self, klass: cst.ClassDef) -> bool:
        """The class's ``set_epoch`` stores the epoch on ``self`` (it shuffles by it), rather
        than only passing it on to what it wraps."""
        for statement in klass.body.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == "set_epoch":
                code = self.context.code_for(statement.body)
                return re.search(r"\bself\.\w+\s*(=(?!=)|\+=)", code) is not None
        return False

    def _inner_dataset(self, node: cst.Call) -> None:
        """``inner.set_epoch(epoch)`` in an epoch loop whose loader iterates ``outer =
        Wrapper(inner, ...)``, where ``Wrapper`` is a class of this file with its own
        ``set_epoch`` that nothing calls: the object that shuffles by epoch is the wrapper."""
        receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
        if not isinstance(receiver, cst.Name):
            return
        inner = receiver.value
        scope = self.context.enclosing_scope(node)
        loop = next(
            (a for a in self.context.ancestors(node)
             if isinstance(a, cst.For) and is_epoch_loop(a)), None
        )
        if loop is None or not isinstance(scope, cst.FunctionDef):
            return
        classes = {
            s.name.value: s for s in self.context.module.body if isinstance(s, cst.ClassDef)
        }
        receivers = _set_epoch_receivers(scope)
        assignments = self.context.assignments(scope)
        for loader, values in assignments.items():
            if len(values) != 1 or not isinstance(values[0], cst.Call):
                continue
            call = values[0]
            if not is_loader_constructor(dotted_name(call.func)):
                continue
            dataset = get_arg(call, 0, "dataset")
            if dataset is None or not isinstance(dataset.value, cst.Name):
                continue
            outer = dataset.value.value
            if outer == inner or is_evaluation_name(loader):
                continue
            wrapped = assignments.get(outer, [])
            if len(wrapped) != 1 or not isinstance(wrapped[0], cst.Call):
                continue
            wrapper = wrapped[0]
            klass = classes.get(dotted_name(wrapper.func) or "")
            if klass is None or not _receives(wrapper, {inner}):
                continue
            if not self._keeps_its_own_epoch(klass) or _defines(klass, "__getattr__"):
                continue
            if outer in receivers or any(r.split(".", 1)[0] == loader for r in receivers):
                continue
            if not _uses(loop.body, self._loader_names(scope, loader)).iterated:
                continue
            message = (
                f"`{inner}.set_epoch` reaches the dataset inside `{outer}`, but the loader "
                f"`{loader}` iterates `{outer}`, a `{klass.name.value}` with its own "
                "`set_epoch` that nothing calls: it shuffles every epoch the same way; call "
                f"`{outer}.set_epoch(...)` (or have it forward the epoch)"
            )
            self.report(node, message, None)
            return

    # -- a loader built in a function ------------------------------------------------------------
    def _loader(self, node: cst.Call) -> None:
        statement = self.context.parent(node)
        if not (
            isinstance(statement, cst.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0].target, cst.Name)
        ):
            return
        loader = statement.targets[0].target.value
        sampler_expr = loader_sampler_argument(node)
        if sampler_expr is None:
            return
        scope = self.context.enclosing_scope(node)
        sampler_name, construction = self._sampler(scope, sampler_expr)
        if construction is None or not self._shuffles(construction):
            return
        if is_evaluation_name(loader) or (sampler_name and is_evaluation_name(sampler_name)):
            return
        names = self._loader_names(scope, loader)
        if self._handed_to_framework(scope, names):
            return
        found = self._epoch_use(scope, names, 0)
        if found is None:
            return
        loop, unresolved, shape, in_callee = found
        if self._epoch_is_set(scope, names, sampler_name, unresolved):
            return
        shown = sampler_name or self.context.code_for(construction)
        if in_callee:
            where = f"`{loader}` is handed to `{in_callee}` and iterated once per epoch from there"
        elif shape == "iterator":
            where = f"`iter({loader})` is created again when exhausted"
        else:
            where = f"`{loader}` is iterated once per epoch"
        message = (
            f"shuffling DistributedSampler `{shown}` never gets `set_epoch`: {where}, but every "
            "epoch draws the same permutation"
        )
        fix = None
        if (
            sampler_name is not None and loop is not None and not in_callee
            and self._bound_before(loop, sampler_name)
        ):
            if isinstance(loop, cst.For):
                fix = self._fix(loop, sampler_name)
            elif isinstance(loop, cst.While):
                fix = self._fix_iterator(loop, sampler_name, names)
        self.report(construction, message, fix)

    # -- samplers ---------------------------------------------------------------------------------
    def _is_distributed(self, call: cst.Call) -> bool:
        """A construction of a DistributedSampler: torch's or a known subclass, a project
        subclass (any depth, this file or another), or a class picked by a condition and
        called through a local (``cls = DistributedSampler if multi else RandomSampler``)."""
        name = constructed(call)
        if name is None:
            return False
        if self._distributed_class(name):
            return True
        if not isinstance(call.func, cst.Name):
            return False
        scope = self.context.enclosing_scope(call)
        values = _alternatives(self.context.assignments(scope).get(call.func.value, []))
        classes = [dotted_name(v) for v in values if not _is_none(v)]
        if not classes or any(c is None for c in classes):
            return False
        distributed = [c for c in classes if c and self._distributed_class(c)]
        return len(distributed) >= 1 and all(
            c in distributed or (c or "").rsplit(".", 1)[-1] in _PLAIN_SAMPLERS for c in classes
        )

    def _distributed_class(self, name: str) -> bool:
        if is_distributed_sampler(name):
            return True
        return name.rsplit(".", 1)[-1].endswith("Sampler") and is_distributed_sampler_class(
            self.context.index, name, str(self.context.path)
        )

    def _shuffles(self, call: cst.Call) -> bool:
        if is_distributed_sampler(constructed(call)):
            return shuffles(call)
        # A subclass or a picked class: its positional order is its own; `shuffle=False` only.
        arg = get_arg(call, None, "shuffle")
        return not (arg is not None and dotted_name(arg.value) == "False")

    def _sampler_kind(self, value: cst.BaseExpression) -> str:
        """``none``, ``plain`` (a torch sampler that never shuffles by epoch), ``distributed``
        or ``other``."""
        if _is_none(value):
            return "none"
        if isinstance(value, cst.Call):
            if self._is_distributed(value):
                return "distributed"
            if (constructed(value) or "").rsplit(".", 1)[-1] in _PLAIN_SAMPLERS:
                return "plain"
        return "other"

    def _sampler(
        self, scope: cst.CSTNode, expr: cst.BaseExpression
    ) -> tuple[str | None, cst.Call | None]:
        """The sampler's name (when it has one) and its DistributedSampler construction. ``None``
        and torch's samplers that never shuffle by epoch do not count as alternatives:
        ``s = DistributedSampler(d) if distributed else None``, ``if distributed: s = ...
        else: s = RandomSampler(d)``, ``sampler=s if distributed else None``."""
        alternatives = [a for a in _alternatives([expr]) if self._sampler_kind(a) != "none"]
        if len(alternatives) != 1:
            calls = [a for a in alternatives if self._sampler_kind(a) == "distributed"]
            if len(calls) == 1 and all(
                self._sampler_kind(a) in ("plain", "distributed") for a in alternatives
            ):
                assert isinstance(calls[0], cst.Call)
                return None, calls[0]
            return None, None
        expr = alternatives[0]
        if isinstance(expr, cst.Call):
            return (None, expr) if self._is_distributed(expr) else (None, None)
        if not isinstance(expr, cst.Name):
            return None, None
        values = _alternatives(self.context.assignments(scope).get(expr.value, []))
        kinds = [self._sampler_kind(v) for v in values]
        distributed = [v for v, k in zip(values, kinds, strict=True) if k == "distributed"]
        if len(distributed) != 1 or any(k == "other" for k in kinds):
            return expr.value, None
        value = distributed[0]
        assert isinstance(value, cst.Call)
        return expr.value, value

    # -- where the loader goes ------------------------------------------------------------------
    def _loader_names(self, scope: cst.CSTNode, loader: str) -> set[str]:
        """The loader's name and the names bound to what a call returned for it (``it =
        wrap(loader)``, ``model, batches = engine.wrap(model, x if c else loader)``): a call that
        is not a framework's, handed the loader as a name, in a conditional expression or in a
        tuple."""
        names = {loader}
        for _ in range(2):
            for targets, value in _assigned_calls(scope):
                if (
                    not targets <= names
                    and _receives(value, names)
                    and not self._is_framework_call(value)
                    and (dotted_name(value.func) or "").rsplit(".", 1)[-1] not in _ONE_PASS
                ):
                    names |= targets
        return names

    def _epoch_use(
        self, scope: cst.CSTNode, names: set[str], depth: int
    ) -> tuple[cst.For | cst.While | None, bool, str, str] | None:
        """The loop that goes over the loader once per epoch; whether it is also handed there
        to a call that cannot be followed (that callee may set the epoch); the shape
        (``epoch`` or ``iterator``); and the project function holding the loop when the loader
        is handed to one outside any loop (``""`` when the loop is here)."""
        for statement in scope_body_statements(scope):
            if isinstance(statement, cst.For) and is_epoch_loop(statement):
                uses = _uses(statement.body, names)
                if uses.iterated or uses.calls:
                    unresolved = False
                    for call in uses.calls:
                        if self._callee(call) is not None:
                            if self._callee_sets_epoch(call, names, depth):
                                return None  # handed each epoch to code that sets the epoch
                            # A method may be overridden in a subclass elsewhere: the
                            # project-wide check stays for it.
                            unresolved |= isinstance(call.func, cst.Attribute)
                            continue
                        elsewhere = self._project_use(call, names)
                        if elsewhere is None or elsewhere[2]:
                            unresolved = True  # the rule cannot follow it: it may set it
                        elif elsewhere[0]:
                            return None  # a project function that sets the epoch
                    return statement, unresolved, "epoch", ""
            if isinstance(statement, cst.While) and _recreates_iterator(statement, names):
                return statement, False, "iterator", ""
        if depth >= _CALLEE_DEPTH:
            return None
        # Handed once, outside any loop, to a project function that holds the epoch loop.
        for call in _uses(scope, names).calls:
            if any(isinstance(a, (cst.For, cst.While)) for a in self._ancestors_in(call, scope)):
                continue
            callee = self._callee(call)
            if callee is None:
                elsewhere = self._project_use(call, names)
                if elsewhere is not None and elsewhere == (False, True, False):
                    return None, False, "epoch", dotted_name(call.func) or ""
                continue
            parameter = _parameter_for(call, callee, names)
            if parameter is None:
                continue
            inner = self._epoch_use(callee, {parameter}, depth + 1)
            if inner is not None and not inner[1] and not self._epoch_is_set(
                callee, {parameter}, None, False
            ):
                loop, _, shape, _ = inner
                return loop, False, shape, callee.name.value
        return None

    def _project_use(self, call: cst.Call, names: set[str]) -> EpochUse | None:
        """How a function of another project file, that ``call`` runs, uses the loader it is
        handed (``(sets, loops, hands_on)``, see :func:`loader_facts.epoch_uses`); ``None`` when the
        call does not resolve to one by module path."""
        name = dotted_name(call.func)
        if name is None or self._is_framework_call(call):
            return None
        root = name.split(".", 1)[0]
        if root not in self.context.imports.aliases:
            return None  # a method of a local object, or a name of this file
        callee = name.rsplit(".", 1)[-1]
        rows = project_epoch_uses(self.context.index, str(self.context.path), callee)
        if rows is None:
            return None
        sets = any(use[0] for _, _, use in rows)
        position = 0
        for arg in call.args:
            if arg.star:
                return (sets, False, True)
            is_loader = isinstance(arg.value, cst.Name) and arg.value.value in names
            if arg.keyword is not None:
                if is_loader:
                    key = arg.keyword.value
                    found = [u for p, _, u in rows if p == key]
                    return found[0] if found else (sets, False, False)
                continue
            if is_loader:
                found = [u for _, i, u in rows if i == position]
                return found[0] if found else (sets, False, False)
            position += 1
        return (sets, False, True)  # handed inside an expression: not followed

    def _ancestors_in(self, node: cst.CSTNode, scope: cst.CSTNode) -> list[cst.CSTNode]:
        found = []
        for ancestor in self.context.ancestors(node):
            if ancestor is scope:
                break
            found.append(ancestor)
        return found

    def _callee(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function of this file a call runs: a module-level ``def`` the file does not
        rebind or import over, for a bare name; the method of the enclosing class, for
        ``self.name(...)``."""
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            klass = self.context.enclosing_class(call)
            if klass is None:
                return None
            methods = [
                s for s in klass.body.body
                if isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value
            ]
            return methods[0] if len(methods) == 1 else None
        if not isinstance(call.func, cst.Name):
            return None
        name = call.func.value
        if name in self.context.imports.aliases:
            return None
        found = [
            s for s in self.context.module.body
            if isinstance(s, cst.FunctionDef) and s.name.value == name
        ]
        return found[0] if len(found) == 1 else None

    def _callee_sets_epoch(self, call: cst.Call, names: set[str], depth: int) -> bool:
        """Whether the project function ``call`` runs may set the epoch of what it is handed:
        it calls ``set_epoch`` on anything, or hands the loader on to something that may."""
        callee = self._callee(call)
        if callee is None:
            return True
        if _set_epoch_receivers(callee):
            return True
        parameter = _parameter_for(call, callee, names)
        if parameter is None or depth >= _CALLEE_DEPTH:
            return True  # cannot follow it further: it may
        for inner in _uses(callee, {parameter}).calls:
            if self._is_framework_call(inner):
                return True
            if self._callee(inner) is None:
                if self._project_sets_epoch():
                    return True
            elif self._callee_sets_epoch(inner, {parameter}, depth + 1):
                return True
        return False

    def _is_framework_call(self, call: cst.Call) -> bool:
        """A call that hands the loader to a framework that sets the epoch itself: named like
        an entry point (``fit``, ``prepare``, ``Trainer``...) and resolving to a framework (a
        name imported from lightning, accelerate, mmengine, transformers..., or a method of an
        object one of them built). A function of the project or the file is never one; a method
        of an object the file cannot trace still counts (it may be a framework's)."""
        name = dotted_name(call.func)
        if name is None or name.rsplit(".", 1)[-1] not in EPOCH_AWARE_CALLS:
            return False
        func = call.func
        if isinstance(func, cst.Name):
            if func.value not in self.context.imports.aliases:
                return False  # defined in this file (or a builtin): an ordinary call
            return is_framework_name(self.context.qualified_name(func))
        root = name.split(".", 1)[0]
        if root in self.context.imports.aliases:
            return is_framework_name(self.context.qualified_name(func))
        scope = self.context.enclosing_scope(call)
        values = self.context.assignments(scope).get(root, [])
        built = [v for v in values if isinstance(v, cst.Call)]
        if built and len(built) == len(values):
            kinds = [self._construction_kind(v) for v in built]
            if all(k == "project" for k in kinds):
                return False  # `loop = TrainLoop(...)` from this project: an ordinary method
        return True

    def _construction_kind(self, call: cst.Call) -> str:
        """``project`` for a class or function of this file or imported from the project
        (relative import), ``framework``, or ``other``."""
        func = call.func
        if isinstance(func, cst.Name):
            qualified = self.context.qualified_name(func) or ""
            if func.value not in self.context.imports.aliases:
                return "project" if self._defined_here(func.value) else "other"
            if is_framework_name(qualified):
                return "framework"
            return "project" if qualified.startswith(".") else "other"
        return "framework" if is_framework_name(self.context.qualified_name(func)) else "other"

    def _defined_here(self, name: str) -> bool:
        return any(
            isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value == name
            for s in self.context.module.body
        )

    def _handed_to_framework(self, scope: cst.CSTNode, names: set[str]) -> bool:
        return any(self._is_framework_call(c) for c in _uses(scope, names).calls)

    def _project_sets_epoch(self) -> bool:
        receivers = set_epoch_receivers(self.context.index)
        receivers |= _set_epoch_receivers(self.context.module)
        return any(
            r.endswith((".sampler", ".batch_sampler")) or r == "<expression>" for r in receivers
        )

    def _epoch_is_set(
        self, scope: cst.CSTNode, names: set[str], sampler: str | None, unresolved: bool
    ) -> bool:
        """Any code that may set this sampler's epoch: in this scope, on the sampler or the
        loader; or, for a loader handed to a call the rule cannot follow, anywhere in the
        project on some loader's sampler."""
        for receiver in _set_epoch_receivers(scope):  # names are only this scope's
            if receiver == sampler or receiver.split(".", 1)[0] in names:
                return True
        return unresolved and self._project_sets_epoch()

    # -- a sampler kept by a wrapper class -------------------------------------------------------
    def _owned_by_wrapper(self, node: cst.Call) -> None:
        """``self.X = DistributedSampler(...)`` in ``__init__`` of a class whose ``__iter__``
        draws from ``self.X``, that has no ``set_epoch`` and whose sampler nothing in the project
        sets the epoch of: every pass draws the same permutation."""
        statement = self.context.parent(node)
        if not (
            isinstance(statement, cst.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0].target, cst.Attribute)
            and dotted_name(statement.targets[0].target.value) == "self"
        ):
            return
        attr = statement.targets[0].target.attr.value
        function = self.context.enclosing_function(node)
        klass = self.context.enclosing_class(node)
        if function is None or klass is None or function.name.value != "__init__":
            return
        if not self._shuffles(node) or is_evaluation_name(attr) or is_evaluation_name(
            klass.name.value
        ):
            return
        methods = {
            s.name.value: s for s in klass.body.body if isinstance(s, cst.FunctionDef)
        }
        iterate = methods.get("__iter__")
        if iterate is None or "set_epoch" in methods or not all(
            (dotted_name(b.value) or "").rsplit(".", 1)[-1] in _PLAIN_BASES for b in klass.bases
        ):
            return
        if f"self.{attr}" not in self.context.code_for(iterate):
            return
        receivers = set_epoch_receivers(self.context.index) | _set_epoch_receivers(
            self.context.module
        )
        if any(
            r == "<expression>" or r.rsplit(".", 1)[-1] in (attr, "sampler", "batch_sampler")
            for r in receivers
        ):
            return
        message = (
            f"shuffling DistributedSampler `self.{attr}` of `{klass.name.value}` never gets "
            "`set_epoch`: the class has no `set_epoch` and nothing sets it, so every pass draws "
            f"the same permutation; add a `set_epoch(epoch)` method that forwards the epoch to "
            f"`self.{attr}` and call it once per epoch"
        )
        self.report(node, message, None)

    # -- the fix ----------------------------------------------------------------------------------
    def _bound_before(self, loop: cst.CSTNode, name: str) -> bool:
        """``name`` is bound on every path into ``loop``: a parameter of the function around
        it, or bound surely before it (:func:`~sampler_lint.analysis.tree.bound_on_every_path`)."""
        ancestors = list(self.context.ancestors(loop))
        scope = next(
            (a for a in ancestors if isinstance(a, (cst.FunctionDef, cst.ClassDef))),
            self.context.module,
        )
        if isinstance(scope, cst.ClassDef):
            return False
        if isinstance(scope, cst.FunctionDef):
            params = scope.params
            every = [*params.posonly_params, *params.params, *params.kwonly_params]
            if any(p.name.value == name for p in every):
                return True
        return bound_on_every_path(ancestors, scope, name, loop)

    def _guarded_call(self, sampler: str, epoch: str) -> cst.BaseStatement:
        config = self.context.module.config_for_parsing
        return cst.parse_module(
            f'if hasattr({sampler}, "set_epoch"):\n    {sampler}.set_epoch({epoch})\n',
            config=config,
        ).body[0]

    def _fix(self, loop: cst.For, sampler: str) -> Fix | None:
        assert isinstance(loop.target, cst.Name)
        epoch = loop.target.value
        if _assigns(loop.body, sampler):
            return None  # rebound inside the loop: which sampler is meant is not clear
        body = loop.body
        if not isinstance(body, cst.IndentedBlock):
            return None
        new_body = body.with_changes(body=[self._guarded_call(sampler, epoch), *body.body])
        return Fix(
            replacements=[(body, new_body)],
            applicability=Applicability.SAFE,
            message=f"Call `{sampler}.set_epoch({epoch})` at the start of each epoch",
        )

    def _fix_iterator(self, loop: cst.While, sampler: str, names: set[str]) -> Fix | None:
        """Right before ``it = iter(loader)`` in the ``except StopIteration`` handler, when that
        handler counts epochs first (``epoch += 1``): the counter is then clear."""
        if _assigns(loop.body, sampler):
            return None
        for handler in _stop_iteration_handlers(loop):
            if not isinstance(handler.body, cst.IndentedBlock):
                continue
            statements = list(handler.body.body)
            for position, statement in enumerate(statements):
                if not _uses(statement, names).iterated:
                    continue
                counters = [c for c in map(_epoch_increment, statements[:position]) if c]
                if len(counters) != 1 or not isinstance(statement, cst.SimpleStatementLine):
                    return None
                added = self._guarded_call(sampler, counters[0])
                added = added.with_changes(leading_lines=statement.leading_lines)
                kept = statement.with_changes(leading_lines=[])
                return Fix(
                    replacements=[(statement, cst.FlattenSentinel([added, kept]))],
                    applicability=Applicability.SAFE,
                    message=f"Call `{sampler}.set_epoch({counters[0]})` before the new iterator",
                )
        return None

    documentation = """
    A shuffling `DistributedSampler` whose `set_epoch` is never called.

    ## What it does
    Flags a `DistributedSampler` built with `shuffle` not literally `False`, whose loader is
    iterated once per epoch, when no code sets the epoch. The sampler is torch's, a known
    subclass, a project subclass at any depth (this file or another), or a class picked by a
    condition and called through a local (`cls = DistributedSampler if multi else
    RandomSampler`); alternatives that are `None` or torch's samplers that never shuffle by
    epoch (`RandomSampler(d) if single else DistributedSampler(d)`, an `if` / `else`) leave it
    the one that matters. The loader is iterated once per epoch when an epoch loop (`for epoch
    in ...:` or `for i in range(args.start_epoch, args.epochs):`) goes over it, over what a call
    returned for it (`batches = wrap(loader)`, `wrap(x if c else loader)`), or hands it to a
    call; when `iter(loader)` is re-created once exhausted inside a `while` loop; or when the
    loader is handed, outside any loop, to a function of the file holding such a loop (two calls
    deep). The epoch counts as set when this scope calls `set_epoch` on the sampler or the loader;
    when a function of the file it is handed to calls `set_epoch` (or hands it on to something
    that may); or, for a call the rule cannot follow, when the project calls `set_epoch` on some
    loader's sampler. Evaluation loaders (named `val`, `test`, `eval`...) and loaders handed to a
    framework that calls `set_epoch` itself are not flagged: a call named like an entry point
    (`fit`, `prepare`, `Trainer`...) that resolves to Lightning, accelerate, mmengine,
    transformers, trl, Composer... (an imported name, or a method of an object the file cannot
    trace to the project); the project's own `train()` or `fit()` is an ordinary call.

    The loader is followed into the functions it is handed to: a function of this file (or
    `self.method` of the enclosing class, whose overrides elsewhere keep the project-wide check),
    and a module-level function of another project file, resolved by module path.

    Also flags a class that builds a shuffling `DistributedSampler` in `__init__`, keeps it on
    `self`, and draws from it in `__iter__`, when the class has no `set_epoch` (nor a base other
    than torch's that could give one) and nothing in the project calls `set_epoch` on that
    attribute or on a `.sampler`; and, at the dataset level, an epoch loop calling
    `inner.set_epoch(epoch)` while its loader iterates `outer = Wrapper(inner, ...)`, `Wrapper`
    a class of the file whose own `set_epoch` stores the epoch (it does not only forward it)
    and that nothing calls.

    ## Why is this bad
    `DistributedSampler` draws its permutation from `seed + epoch`. Without `set_epoch`, the epoch
    stays 0 and every epoch visits the samples in the same order on every rank, which torch's
    documentation warns about: training quietly loses the reshuffling it was configured for.

    ## Example
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            step(batch)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        for batch in loader:
            step(batch)
    ```

    ## Fix safety
    Safe: it inserts `if hasattr(s, "set_epoch"): s.set_epoch(epoch)`, which changes nothing but
    the epoch the sampler shuffles with (and does nothing when `s` is `None` or one of torch's
    samplers that do not shuffle by epoch), as the first statement of the epoch loop; in the
    infinite-iterator shape, right before the re-created `iter(loader)`, when the
    `except StopIteration` handler counts epochs before it (`epoch += 1`). Offered only when the
    sampler is a name bound on every path into the loop (a parameter, an assignment, an `if` /
    `else` binding it in both branches) and not rebound in it, and the epoch counter is clear;
    otherwise reported only: an inline sampler, a loop in the function the loader is handed to
    (the sampler is not a name there), and a wrapper class (where to count epochs is an API
    decision: add a `set_epoch(epoch)` method that forwards the epoch to the sampler).

    ## References
    - torch `DistributedSampler` documentation ("calling the set_epoch() method at the beginning
      of each epoch before creating the DataLoader iterator is necessary")
    - PyTorch's DDP examples (`train_sampler.set_epoch(epoch)`)
    """

    examples = (
        Example(
            "from torch.utils.data import DataLoader, DistributedSampler\n"
            "\n"
            "\n"
            "def main(dataset, epochs, step):\n"
            "    sampler = DistributedSampler(dataset)\n"
            "    loader = DataLoader(dataset, batch_size=64, sampler=sampler)\n"
            "    for epoch in range(epochs):\n"
            "        for batch in loader:\n"
            "            step(batch)\n",
            lines=(5,),
            fixed=(
                "from torch.utils.data import DataLoader, DistributedSampler\n"
                "\n"
                "\n"
                "def main(dataset, epochs, step):\n"
                "    sampler = DistributedSampler(dataset)\n"
                "    loader = DataLoader(dataset, batch_size=64, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                '        if hasattr(sampler, "set_epoch"):\n'
                "            sampler.set_epoch(epoch)\n"
                "        for batch in loader:\n"
                "            step(batch)\n"
            ),
        ),
        Example(
            "from torch.utils.data import DataLoader, DistributedSampler\n"
            "\n"
            "\n"
            "def main(dataset, epochs, step):\n"
            "    sampler = DistributedSampler(dataset, shuffle=False)\n"
            "    loader = DataLoader(dataset, sampler=sampler)\n"
            "    for epoch in range(epochs):\n"
            "        for batch in loader:\n"
            "            step(batch)\n"
        ),
    )


def _sets_an_inner_dataset(summary: SyntaxSummary) -> bool:
    """What ``_inner_dataset`` starts from: ``x.set_epoch(...)`` on a plain name in an epoch
    loop of a function, a module-level class defining ``set_epoch`` (the wrapper), and a
    loader of a plain name (the wrapper) assigned to a name not meant for evaluation."""
    called = any(
        type(c.func) is ast.Attribute and c.func.attr == "set_epoch"
        and type(c.func.value) is ast.Name and _in_an_epoch_loop_of_a_function(summary, c)
        for c in summary.nodes(ast.Call)
    )
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
        *summary.nodes(ast.FunctionDef), *summary.nodes(ast.AsyncFunctionDef)
    ]  # libcst's FunctionDef is async too
    return called and any(
        f.name == "set_epoch"
        and type(klass := summary.parent(f)) is ast.ClassDef
        and type(summary.parent(klass)) is ast.Module
        for f in functions
    ) and any(
        not is_evaluation_name(name) and type(argument(call, 0, "dataset")) is ast.Name
        for name, call in assigned_loaders(summary)
    )


def _in_an_epoch_loop_of_a_function(summary: SyntaxSummary, node: ast.AST) -> bool:
    around = summary.ancestors(node)
    return any(
        isinstance(a, (ast.For, ast.AsyncFor)) and is_epoch_loop_ast(a) for a in around
    ) and any(isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)) for a in around)


def _loaders_assigned(summary: SyntaxSummary) -> list[ast.Call]:
    """``name = DataLoader(...)``: one plain-name target, not named for evaluation (as
    ``_loader``'s are)."""
    return [
        assign.value for assign in summary.nodes(ast.Assign)
        if len(assign.targets) == 1 and type(target := assign.targets[0]) is ast.Name
        and not is_evaluation_name(target.id) and type(assign.value) is ast.Call
        and is_loader_constructor(dotted_expression(assign.value.func))
    ]


#: What may reach one of the visitor's loader or wrapper shapes: whether a sampler that is a
#: DistributedSampler by name (or a class picked through a local) may, the dotted names of the
#: other ``...Sampler`` classes that may (the visitor asks the index whether they derive from
#: DistributedSampler), and, for a loader whose epoch loop may only be in an imported function,
#: the dotted names of those functions (``None``: the epoch loop may be elsewhere).
Reach = tuple[bool, tuple[str, ...], tuple[str, ...] | None]


def _reaches(summary: SyntaxSummary) -> tuple[Reach, ...]:
    """The ``ast`` side of ``_loader`` and ``_owned_by_wrapper``, looser: for each loader
    assigned to a plain name that may be iterated once per epoch (``_epoch_callees``), and each
    call kept on ``self`` in ``__init__`` of a class with plain bases, an ``__iter__`` and no
    ``set_epoch``, the samplers that may reach it (a loader's sampler through ``if``-expressions
    and any assignment of a name in the file). Shapes no sampler may reach are left out."""
    def make() -> tuple[Reach, ...]:
        values = summary.values_by_target()
        reaches: set[Reach] = set()
        for loader in _loaders_assigned(summary):
            sampler = loader_sampler_expression(loader)
            calls: list[ast.expr] = []
            for option in opened_alternatives([sampler] if sampler is not None else []):
                if type(option) is ast.Name:
                    calls += opened_alternatives(values.get(option.id, []))
                else:
                    calls.append(option)
            definite, names = _samplers_among(calls, values)
            if not (definite or names):
                continue  # no sampler may reach it: how it is iterated does not matter
            # Asked only now: most loaders take no sampler, and this looks at their whole scope.
            callees = _epoch_callees(summary, loader)
            if callees != ():  # () : never iterated once per epoch
                reaches.add((definite, names, callees))
        for call in _kept_on_self(summary):
            definite, names = _samplers_among([call], values)
            if definite or names:
                reaches.add((definite, names, None))
        return tuple(sorted(reaches, key=repr))

    return per_tree(summary.tree, "SL202 reaches", make)


def _goes_round(index: ProjectIndex, path: str, callee: str) -> bool:
    rows = project_epoch_uses(index, path, callee.rsplit(".", 1)[-1])
    return rows is not None and any(loops for _, _, (_, loops, _) in rows)


def _samplers_among(
    calls: list[ast.expr], values: dict[str, list[ast.expr]]
) -> tuple[bool, tuple[str, ...]]:
    """Whether one of ``calls`` builds a DistributedSampler by name (or a class picked through a
    local), and the dotted names of the other ``...Sampler`` classes they build."""
    definite = False
    names: set[str] = set()
    for call in calls:
        if type(call) is not ast.Call:
            continue
        built = dotted_expression(call.func)
        picked = [built] if built is not None else []
        if type(call.func) is ast.Name:  # a class picked by a condition, through a local
            picked += [
                dotted_expression(option) or ""
                for option in opened_alternatives(values.get(call.func.id, []))
            ]
        for name in picked:
            if is_distributed_sampler(name):
                definite = True
            elif name.rsplit(".", 1)[-1].endswith("Sampler"):
                names.add(name)
    return definite, tuple(sorted(names))


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _epoch_callees(summary: SyntaxSummary, loader: ast.Call) -> tuple[str, ...] | None:
    """What ``_epoch_use`` needs in the scope of the loader that ``loader`` builds, looser:
    ``None`` when there is an epoch loop or any ``while`` loop there (nested code included), or
    a call there, outside any loop, handed the loader (or what a call made of it), of a function
    of the file's top level or of a method of ``self``; else the dotted names of the imported
    functions such a call runs (the visitor asks the index whether one goes round the epochs:
    ``_project_use``); ``()`` for none."""
    scope = next((a for a in summary.ancestors(loader) if isinstance(a, _SCOPES)), summary.tree)
    assign = summary.parent(loader)
    assert isinstance(assign, ast.Assign) and isinstance(assign.targets[0], ast.Name)

    def loops() -> bool:
        return any(
            type(node) is ast.While
            or (isinstance(node, (ast.For, ast.AsyncFor)) and is_epoch_loop_ast(node))
            for node in walk(scope)
        )

    if per_tree(summary.tree, f"SL202 loops in {id(scope)}", loops):
        return None
    names = _loader_names(scope, assign.targets[0].id)
    imported: set[str] = set()
    for node in walk(scope):
        if not isinstance(node, ast.Call) or not _hands(node, names):
            continue
        followed = _followed(node, summary)
        if followed is None or _in_a_loop(summary, node, scope):
            continue
        callee, here = followed
        if here:
            return None  # the visitor follows it in this file
        imported.add(callee)
    return tuple(sorted(imported))


def _in_a_loop(summary: SyntaxSummary, node: ast.AST, scope: ast.AST) -> bool:
    for ancestor in summary.ancestors(node):
        if ancestor is scope:
            return False
        if isinstance(ancestor, _LOOPS):
            return True
    return False


def _loader_names(scope: ast.AST, loader: str) -> set[str]:
    """The ``ast`` side of ``_loader_names``, looser: the loader's name and the names bound to
    what any call handed one of them returned, until no name is added (the visitor looks twice,
    in source order; ``walk`` goes breadth-first, so two looks could miss a chain that goes in
    and out of blocks)."""
    names = {loader}
    grown = True
    while grown:
        grown = False
        for node in walk(scope):
            if type(node) is ast.Assign and isinstance(node.value, ast.Call) \
                    and _hands(node.value, names):
                for target in node.targets:
                    items = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                    for item in items:
                        if isinstance(item, ast.Starred):
                            item = item.value
                        if isinstance(item, ast.Name) and item.id not in names:
                            names.add(item.id)
                            grown = True
    return names


def _hands(call: ast.Call, names: set[str]) -> bool:
    """The ``ast`` side of ``_receives``: one of ``names`` as an argument (starred, keyword or
    ``**`` included), an alternative of a conditional expression or an element of a tuple or
    list."""
    def holds(value: ast.expr) -> bool:
        if isinstance(value, ast.Starred):
            return holds(value.value)
        if isinstance(value, ast.Name):
            return value.id in names
        if isinstance(value, ast.IfExp):
            return holds(value.body) or holds(value.orelse)
        if isinstance(value, (ast.Tuple, ast.List)):
            return any(holds(item) for item in value.elts)
        return False

    return any(holds(a) for a in call.args) or any(holds(k.value) for k in call.keywords)


def _followed(call: ast.Call, summary: SyntaxSummary) -> tuple[str, bool] | None:
    """For a call ``_uses`` counts and ``_callee`` or ``_project_use`` may follow, its dotted
    name and whether it runs code of this file (``None`` for another call): not one that only
    iterates or reads the loader (``iter``, ``len``...); of a function of the file's top level
    (this file's, even if a name imported too) or of a method of ``self``; or of an imported
    name, or a dotted name rooted at one."""
    dotted = dotted_expression(call.func)
    if dotted is None or dotted.rsplit(".", 1)[-1] in _NOT_HANDED_ON:
        return None
    root = dotted.split(".", 1)[0]
    if root == "self" or (type(call.func) is ast.Name and root in _top_level_functions(summary)):
        return dotted, True
    if root in _imported_names(summary):
        return dotted, False
    return None


def _top_level_functions(summary: SyntaxSummary) -> frozenset[str]:
    return per_tree(summary.tree, "SL202 top-level functions", lambda: frozenset(
        s.name for s in summary.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
    ))


def _imported_names(summary: SyntaxSummary) -> frozenset[str]:
    """Every name an import binds anywhere in the file (``import a.b`` binds ``a``)."""
    return per_tree(
        summary.tree, "SL202 imported names", lambda: frozenset(import_aliases(summary.tree))
    )


def _kept_on_self(summary: SyntaxSummary) -> list[ast.expr]:
    """What ``_owned_by_wrapper`` starts from: ``self.x = <call>`` in a function named
    ``__init__`` anywhere inside a class (the visitor asks for the enclosing function and class)
    with plain bases, an ``__iter__`` method and no ``set_epoch`` one, neither named for
    evaluation."""
    found: list[ast.expr] = []
    for klass in summary.nodes(ast.ClassDef):
        methods = {
            s.name for s in klass.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        if "__iter__" not in methods or "set_epoch" in methods or is_evaluation_name(klass.name):
            continue
        if not all(
            (dotted_expression(base) or "").rsplit(".", 1)[-1] in _PLAIN_BASES
            for base in klass.bases
        ):
            continue
        for init in walk(klass):
            if not isinstance(init, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    or init.name != "__init__":
                continue
            for node in walk(init):
                if type(node) is ast.Assign and len(node.targets) == 1 \
                        and type(target := node.targets[0]) is ast.Attribute \
                        and type(target.value) is ast.Name and target.value.id == "self" \
                        and type(node.value) is ast.Call and not is_evaluation_name(target.attr):
                    found.append(node.value)
    return found


def _defines(klass: cst.ClassDef, method: str) -> bool:
    return any(
        isinstance(s, cst.FunctionDef) and s.name.value == method for s in klass.body.body
    )


class _Uses:
    def __init__(self) -> None:
        self.iterated = False
        #: Calls handed the loader that do not just iterate it (``iter``, ``enumerate``...).
        self.calls: list[cst.Call] = []


def _uses(body: cst.CSTNode, names: set[str]) -> _Uses:
    uses = _Uses()

    class _Finder(cst.CSTVisitor):
        def visit_For(self, node: cst.For) -> None:
            if isinstance(node.iter, cst.Name) and node.iter.value in names:
                uses.iterated = True

        def visit_CompFor(self, node: cst.CompFor) -> None:
            if isinstance(node.iter, cst.Name) and node.iter.value in names:
                uses.iterated = True

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is body  # a nested function is not this code's

        def visit_Call(self, node: cst.Call) -> None:
            if not _receives(node, names):
                return
            name = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
            if name in _ITERATING:
                uses.iterated = True
            elif name not in _INERT:
                uses.calls.append(node)

    body.visit(_Finder())
    return uses


def _receives(call: cst.Call, names: set[str]) -> bool:
    """Whether ``call`` is handed one of ``names``: as an argument, an alternative of a
    conditional expression or an element of a tuple."""
    def holds(value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Name):
            return value.value in names
        if isinstance(value, cst.IfExp):
            return holds(value.body) or holds(value.orelse)
        if isinstance(value, (cst.Tuple, cst.List)):
            return any(holds(e.value) for e in value.elements)
        return False

    return any(holds(arg.value) for arg in call.args)


def _assigned_calls(scope: cst.CSTNode) -> list[tuple[set[str], cst.Call]]:
    """``(names bound, call)`` for each ``a = f(...)`` / ``a, b = f(...)`` of the scope."""
    found = []
    for statement in scope_body_statements(scope):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
                targets: set[str] = set()
                for target in small.targets:
                    inner = target.target
                    if isinstance(inner, cst.Name):
                        targets.add(inner.value)
                    elif isinstance(inner, (cst.Tuple, cst.List)):
                        targets |= {
                            e.value.value for e in inner.elements if isinstance(e.value, cst.Name)
                        }
                if targets:
                    found.append((targets, small.value))
    return found


def _parameter_for(call: cst.Call, callee: cst.FunctionDef, names: set[str]) -> str | None:
    """The parameter of ``callee`` that ``call`` binds to the loader (one of ``names``)."""
    params = callee.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if isinstance(call.func, cst.Attribute) and positional[:1] in (["self"], ["cls"]):
        positional = positional[1:]  # `self.method(loader)`: bound
    keyword_names = {*positional, *(p.name.value for p in params.kwonly_params)}
    position = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if isinstance(arg.value, cst.Name) and arg.value.value in names:
                return arg.keyword.value if arg.keyword.value in keyword_names else None
            continue
        if isinstance(arg.value, cst.Name) and arg.value.value in names:
            return positional[position] if position < len(positional) else None
        position += 1
    return None


def _stop_iteration_handlers(loop: cst.While) -> list[cst.ExceptHandler]:
    found: list[cst.ExceptHandler] = []

    class _Finder(cst.CSTVisitor):
        def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
            if node.type is not None and "StopIteration" in (dotted_name(node.type) or ""):
                found.append(node)

    loop.visit(_Finder())
    return found


def _recreates_iterator(loop: cst.While, names: set[str]) -> bool:
    """``while ...: try: next(it) except StopIteration: it = iter(loader)``."""
    return any(_uses(h.body, names).iterated for h in _stop_iteration_handlers(loop))


def _epoch_increment(statement: cst.CSTNode) -> str | None:
    """``epoch += 1`` (or ``epoch = epoch + 1``): the counter's name."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign):
        target = small.target
    elif (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.value, cst.BinaryOperation)
        and isinstance(small.value.operator, cst.Add)
        and isinstance(small.value.left, cst.Name)
        and isinstance(small.targets[0].target, cst.Name)
        and small.value.left.value == small.targets[0].target.value
    ):
        target = small.targets[0].target
    else:
        return None
    if isinstance(target, cst.Name) and "epoch" in target.value.lower():
        return target.value
    return None


def _alternatives(values: list[cst.BaseExpression]) -> list[cst.BaseExpression]:
    opened: list[cst.BaseExpression] = []
    for value in values:
        if isinstance(value, cst.IfExp):
            opened.extend(_alternatives([value.body, value.orelse]))
        else:
            opened.append(value)
    return opened


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _assigns(body: cst.CSTNode, name: str) -> bool:
    for statement in scope_body_statements(body):
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and any(
                    dotted_name(t.target) == name for t in small.targets
                ):
                    return True
    return False


def _set_epoch_receivers(module: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class _Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "set_epoch":
                found.add(dotted_name(node.func.value) or "<expression>")

    module.visit(_Finder())
    return found
