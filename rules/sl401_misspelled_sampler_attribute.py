"""SL401 misspelled-sampler-attribute: ``self.subnum_samples`` where ``sub_num_samples`` exists."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.attribute_facts import OUTSIDE_WRITES, assigned_from_outside
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.analysis.matching import expression_key
from sampler_lint.analysis.must_assign import assigned_in_init, may_be_unassigned
from sampler_lint.analysis.sampler_family import (
    CLASS_FACT_WORDS,
    CLASS_FACTS,
    TORCH_ATTRIBUTES,
    Chain,
    ClassAttributes,
    chain_of,
    classes_at,
    find_class,
    lineage,
    near_miss,
    subclasses_of,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary, per_tree, walk, within
from sampler_lint.analysis.tree import descendants
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity

# Methods of torch's samplers a subclass may call without defining them.
_TORCH_METHODS = {"DistributedSampler": frozenset({"set_epoch"})}


class MisspelledSamplerAttribute(Rule):
    code = "SL401"
    name = "misspelled-sampler-attribute"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    fix_risk = (
        "the one-word rename of a stale name may pick the wrong attribute: read the new name's "
        "meaning before accepting it"
    )
    # The class needs a fact of the index; `self .x` is an attribute too.
    requires = (CLASS_FACT_WORDS, ("self",))
    collectors = (CLASS_FACTS, OUTSIDE_WRITES)
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        return bool(_suspects(summary))

    @classmethod
    def syntax_hints(cls, summary: SyntaxSummary) -> frozenset[_Suspect]:
        return _suspect_attributes(summary)

    @classmethod
    def may_match_index(
        cls, index: ProjectIndex, path: str, text: str,
        hints: frozenset[_Suspect] | None = None,
    ) -> bool:
        # A class of this file that the index shows is a sampler, with every base visible; when
        # the syntax stage says which classes and attributes, one whose attributes the chain
        # leaves something to report on (what visit_ClassDef reads, from the ast side).
        if hints is None:
            return any(_judged(chain_of(index, fact)) for fact in classes_at(index, path, text))
        for name, reads, writes, may_leave_unassigned in sorted(hints):
            fact = find_class(index, name, path)
            if fact is None:
                continue
            chain = chain_of(index, fact)
            if not _judged(chain):
                continue
            if may_leave_unassigned or _unknown_reads(chain, reads):
                return True
            if any(candidates for _, candidates in _shadowing_writes(chain, writes)):
                return True
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not node.bases:
            return  # no sampler; the facts found by its name would be another class's
        fact = find_class(self.context.index, node.name.value, str(self.context.path))
        if fact is None:
            return
        chain = chain_of(self.context.index, fact)
        if not _judged(chain):
            return
        reads, writes = _self_attributes(node)
        known = chain.known
        provided = self._provided_elsewhere(fact, node)
        for attr in _unknown_reads(chain, reads):
            nodes = reads[attr]
            candidates = sorted(k for k in known if near_miss(attr, k))
            candidates = self._prefer(candidates, nodes, node)
            if candidates:
                self._report(nodes, attr, candidates, "read", "is never assigned")
            elif attr not in provided:
                self._stale(node, nodes, attr, known)
        self._unassigned_on_some_paths(node, fact, chain, provided)
        for attr, candidates in _shadowing_writes(chain, writes):
            self._report(writes[attr], attr, candidates, "assigned", "is never read")

    # -- reads nothing assigns ------------------------------------------------------------------
    def _provided_elsewhere(self, fact: ClassAttributes, klass: cst.ClassDef) -> set[str]:
        """Names something other than the class's own code may provide: a project subclass, a
        write from outside (``sampler.x = 3``), a string naming it (``hasattr(self, "x")``,
        ``getattr(self, "x", None)``)."""
        index = self.context.index
        provided = {a for sub in subclasses_of(index, fact) for a in sub.assigned}
        for node in descendants(klass):
            if isinstance(node, cst.SimpleString):
                value = node.evaluated_value
                if isinstance(value, str) and value.isidentifier():
                    provided.add(value)
        return provided

    def _stale(
        self, klass: cst.ClassDef, nodes: list[cst.Attribute], attr: str, known: set[str]
    ) -> None:
        """A read no path can satisfy (a name left behind by a rename): report it; offer the
        rename, unsafe, when exactly one known attribute differs from it by one word."""
        if _abstract(klass) or assigned_from_outside(self.context.index, attr):
            return
        nodes = [n for n in nodes if not self._guarded(n)]
        if not nodes:
            return
        renames = sorted(k for k in known if _one_word_apart(attr, k))
        message = (
            f"`self.{attr}` is read but nothing assigns it in `{klass.name.value}`, its bases or "
            "the project: this line can only raise AttributeError"
        )
        fix = None
        if len(renames) == 1:
            message += f" (was `self.{renames[0]}` meant?)"
            fix = Fix(
                replacements=[(n.attr, n.attr.with_changes(value=renames[0])) for n in nodes],
                applicability=Applicability.UNSAFE,
                message=f"Rename to `self.{renames[0]}`",
            )
        self.report(nodes[0], message, fix)

    def _guarded(self, node: cst.Attribute) -> bool:
        """Inside ``try:`` with a handler for ``AttributeError`` (or a broader one)."""
        child: cst.CSTNode = node
        for ancestor in self.context.ancestors(node):
            if isinstance(ancestor, cst.Try) and child is ancestor.body:
                for handler in ancestor.handlers:
                    caught = self.context.code_for(handler.type) if handler.type else ""
                    if not caught or any(
                        word in caught for word in ("AttributeError", "Exception")
                    ):
                        return True
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                return False
            child = ancestor
        return False

    # -- attributes __init__ assigns on some paths only -----------------------------------------
    def _unassigned_on_some_paths(
        self, klass: cst.ClassDef, fact: ClassAttributes, chain: Chain, provided: set[str]
    ) -> None:
        index = self.context.index
        torch = {a for base in chain.torch_bases for a in TORCH_ATTRIBUTES[base]}
        from_bases = {a for base in lineage(index, fact)[1:] for a in base.assigned}
        class_level = _class_level_names(klass)
        candidates = {
            a for a in assigned_in_init(klass)
            if a not in torch | from_bases | class_level | provided
            and not assigned_from_outside(index, a)
        }
        reported: set[str] = set()
        project_bases = len(lineage(index, fact)) > 1
        for read in may_be_unassigned(klass, candidates, project_bases=project_bases):
            if read.attr in reported:
                continue
            reported.add(read.attr)
            through = (
                f" (through `{'`, `'.join(read.helpers)}`)" if read.helpers else ""
            )
            self.report(
                read.node,
                f"`self.{read.attr}` may be unassigned here: `__init__`{through} assigns it on "
                "some paths only, so this read raises AttributeError on the others",
            )

    def _prefer(
        self, candidates: list[str], nodes: list[cst.Attribute], klass: cst.ClassDef
    ) -> list[str]:
        """With several candidates, drop the ones that would make a read the remainder of a
        quotient (``self.q % k`` where ``self.q = A // k`` in the class): RULES.md's tie-break."""
        if len(candidates) < 2:
            return candidates
        quotients = _quotients(klass)
        kept = []
        for candidate in candidates:
            divisors = quotients.get(candidate)
            if divisors and any(self._modulo_by(n, divisors) for n in nodes):
                continue
            kept.append(candidate)
        return kept or candidates

    def _modulo_by(self, node: cst.Attribute, divisors: set[str]) -> bool:
        parent = self.context.parent(node)
        return (
            isinstance(parent, cst.BinaryOperation)
            and isinstance(parent.operator, cst.Modulo)
            and parent.left is node
            and expression_key(parent.right) in divisors
        )

    def _report(
        self, nodes: list[cst.Attribute], attr: str, candidates: list[str], side: str, why: str
    ) -> None:
        if not candidates:
            return
        if len(candidates) == 1:
            message = (
                f"`self.{attr}` is {side} but {why}; it is one letter away from "
                f"`self.{candidates[0]}`, which the sampler uses"
            )
            fix = Fix(
                replacements=[
                    (n.attr, n.attr.with_changes(value=candidates[0])) for n in nodes
                ],
                applicability=Applicability.SAFE,
                message=f"Rename to `self.{candidates[0]}`",
            )
            self.report(nodes[0], message, fix)
        else:
            names = ", ".join(f"`self.{c}`" for c in candidates)
            self.report(
                nodes[0],
                f"`self.{attr}` is {side} but {why}; it is a near miss of {names}",
            )

    documentation = """
    A sampler attribute that is a misspelling of one the sampler really has.

    ## What it does
    In a sampler-family class (its bases reach torch's `Sampler`, `BatchSampler`,
    `RandomSampler`, `DistributedSampler`... through any chain of classes of the project), flags
    1. a read of `self.X` where `X` is assigned nowhere in the chain and is a near miss of exactly
       one known attribute (the same letters ignoring underscores, or at most two edits for names
       of six or more characters); and the write-side twin: `self.X` assigned, never read, a near
       miss of an attribute a base class reads, so the override does nothing;
    2. a read of `self.X` that nothing can satisfy and that is no near miss (a name left behind by
       a rename): no path of the class, its bases, a project subclass or code outside
       (`sampler.X = ...`) assigns it, no string names it (`hasattr(self, "X")`), the read is not
       under `try: ... except AttributeError`, and the class is no abstract base (`raise
       NotImplementedError`, `@abstractmethod`);
    3. a read in `__init__`, on every path through it, of an attribute that `__init__` (or a
       method it calls as `self.m(...)`) assigns on some paths only: a must-assign analysis where
       an `if` keeps what both branches assign (a branch that raises or returns drops out), loops
       add nothing, `try` keeps what its body and every falling-through handler assign, and
       `self` handed to another function stops the analysis. Attributes torch's or project bases
       provide, class attributes, properties and methods are never reported.
    torch's attributes are known per base (`DistributedSampler`: `dataset, num_replicas, rank,
    epoch, num_samples, total_size, shuffle, seed, drop_last`, and its method `set_epoch`;
    `BatchSampler`: `sampler, batch_size, drop_last`...). A class with a base the tool cannot see
    into (third-party, unresolved), `setattr` with a computed name, `self.__dict__` or
    `__getattr__` is opaque and never flagged.

    ## Why is this bad
    A misspelled read raises `AttributeError` only when that line runs, which for a sub-epoch or
    a resumption branch may be hours into training; a misspelled write silently leaves the value
    torch uses unchanged. EfficientViT's `SAMDistributedSampler` report (issue #175) shows
    `self.subnum_samples` where `self.sub_num_samples` was meant.

    ## Example
    ```python
    class SubEpochSampler(DistributedSampler):
        def set_sub_num_samples(self, k, sub_epoch):
            self.sub_num_samples = self.num_samples // k
            if self.subnum_samples % k > sub_epoch:
                self.sub_num_samples += 1
    ```

    ## Use instead
    ```python
    class SubEpochSampler(DistributedSampler):
        def set_sub_num_samples(self, k, sub_epoch):
            self.sub_num_samples = self.num_samples // k
            if self.num_samples % k > sub_epoch:
                self.sub_num_samples += 1
    ```
    The rename gives `self.sub_num_samples % k`, the remainder of a quotient, which SL402 then
    corrects: one `--fix` run ends at the form above.

    ## Fix safety
    Case 1 is safe when there is exactly one candidate: the name as written cannot work (read:
    it was never assigned; written: nothing reads it). With several candidates the one that would
    not produce the remainder of a quotient is preferred; otherwise the candidates are listed and
    no fix is offered. Case 2 offers a rename only when exactly one known attribute differs by
    one word (`_max_weight_per_batch` -> `_max_cost_per_batch`), and it is unsafe: a rename that
    far is a guess a person must confirm. Case 3 is reported without a fix (where to assign the
    attribute, and to what, is the author's decision).

    ## References
    - EfficientViT issue #175
    - torch `torch/utils/data/sampler.py` and `distributed.py` (the attributes per class)
    """

    examples = (
        Example(
            "from torch.utils.data import DistributedSampler\n"
            "\n"
            "\n"
            "class SubEpochSampler(DistributedSampler):\n"
            "    def __len__(self):\n"
            "        return self.num_sample\n",
            lines=(6,),
            fixed=(
                "from torch.utils.data import DistributedSampler\n"
                "\n"
                "\n"
                "class SubEpochSampler(DistributedSampler):\n"
                "    def __len__(self):\n"
                "        return self.num_samples\n"
            ),
        ),
        Example(
            "from some_library import FancySampler\n"
            "\n"
            "\n"
            "class Mine(FancySampler):\n"
            "    def __len__(self):\n"
            "        return self.num_sample\n"
        ),
    )


def _judged(chain: Chain) -> bool:
    """A sampler-family class whose every base the tool sees into."""
    return chain.is_sampler and not chain.opaque


def _unknown_reads(chain: Chain, reads: Iterable[str]) -> list[str]:
    """The attributes read (sorted) that nothing in the chain assigns: neither the class, its
    project bases, torch's attributes of its torch bases nor their methods; dunders aside.
    Each is a near miss of a known one, or stale."""
    known = chain.known
    methods = {m for base in chain.torch_bases for m in _TORCH_METHODS.get(base, ())}
    return sorted(
        attr for attr in set(reads)
        if attr not in known and attr not in methods and not attr.startswith("__")
    )


def _shadowing_writes(chain: Chain, writes: Iterable[str]) -> list[tuple[str, list[str]]]:
    """The public attributes assigned (sorted) that nothing in the chain reads, each with the
    attributes its bases read that it is a near miss of (the override torch never sees)."""
    written = set(writes)
    known_elsewhere = chain.known - written
    return [
        (attr, sorted(k for k in chain.base_reads if near_miss(attr, k)))
        for attr in sorted(written)
        if attr not in chain.read and attr not in known_elsewhere and not attr.startswith("_")
    ]


#: What the syntax stage tells the index stage about a suspect class: its name, every
#: attribute it spells on ``self`` (reads as libcst counts them are among them), the ones it
#: assigns, and whether ``__init__`` may read one before assigning it.
_Suspect = tuple[str, tuple[str, ...], tuple[str, ...], bool]


def _suspect_attributes(summary: SyntaxSummary) -> frozenset[_Suspect]:
    """:func:`_suspects`, with what the index stage needs to judge each as ``visit_ClassDef``
    would. Classes without bases are never judged; the classes that share a name are judged
    against one class's facts, so their attributes are pooled."""
    suspects = _suspects(summary)
    attributes = [
        a for a in summary.nodes(ast.Attribute)
        if type(a.value) is ast.Name and a.value.id == "self"
    ]
    pooled: dict[str, tuple[set[str], set[str], list[bool]]] = {}
    for klass in summary.nodes(ast.ClassDef):
        if klass.name not in suspects or not klass.bases:
            continue
        spelled, assigned, unassigned = pooled.setdefault(klass.name, (set(), set(), []))
        for attribute in attributes:
            if within(attribute, klass):
                spelled.add(attribute.attr)
                if type(attribute.ctx) is ast.Store:
                    assigned.add(attribute.attr)
        unassigned.append(_may_leave_unassigned(klass))
    return frozenset(
        (name, tuple(sorted(spelled)), tuple(sorted(assigned)), any(unassigned))
        for name, (spelled, assigned, unassigned) in pooled.items()
    )


def _suspects(summary: SyntaxSummary) -> frozenset[str]:
    """The classes with bases that may misspell an attribute or leave one unassigned, and every
    name the file gives more than one class: the index stage asks only whether these are
    samplers. (``visit_ClassDef`` looks a class's facts up by name, so a second class of the
    same name, with or without bases, is judged against the first one's facts.)"""
    def make() -> frozenset[str]:
        attributes = [
            a for a in summary.nodes(ast.Attribute)
            if type(a.value) is ast.Name and a.value.id == "self"
        ]
        classes = summary.nodes(ast.ClassDef)
        names = Counter(klass.name for klass in classes)
        return frozenset(
            klass.name for klass in classes
            if names[klass.name] > 1 or (klass.bases and (
                _may_misspell(klass, [a for a in attributes if within(a, klass)])
                or _may_leave_unassigned(klass)
            ))
        )

    return per_tree(summary.tree, "SL401 suspects", make)


# Statements whose reads `may_be_unassigned` does not judge (it judges simple statements only).
_COMPOUND = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, *(
        (ast.TryStar,) if hasattr(ast, "TryStar") else ()
    ),
)


def _may_leave_unassigned(klass: ast.ClassDef) -> bool:
    """The ``ast`` side of ``may_be_unassigned``, looser: a top-level simple statement of
    ``__init__`` reads a ``self.X`` that some method of the class assigns and that no earlier
    top-level statement of ``__init__`` assigned (what ``__init__`` has surely assigned only
    grows as its statements run)."""
    methods = [
        item for item in klass.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    inits = [method for method in methods if method.name == "__init__"]
    if not inits:
        return False
    stored = {
        node.attr for method in methods for node in walk(method)
        if type(node) is ast.Attribute and type(node.ctx) is ast.Store and _on_self(node)
    }
    assigned: set[str] = set()
    for statement in inits[-1].body:  # the last definition is the one that runs
        if isinstance(statement, _COMPOUND):
            continue
        leaves = _assignment_leaves(statement)
        if any(
            type(node) is ast.Attribute and _on_self(node) and node.attr in stored
            and node.attr not in assigned and node not in leaves
            for node in walk(statement)
        ):
            return True
        assigned.update(leaf.attr for leaf in leaves if _on_self(leaf))
    return False


def _on_self(node: ast.Attribute) -> bool:
    return type(node.value) is ast.Name and node.value.id == "self"


def _assignment_leaves(statement: ast.stmt) -> list[ast.Attribute]:
    """The attributes a plain or annotated assignment with a value stores into."""
    targets: list[ast.expr] = []
    if type(statement) is ast.Assign:
        targets = list(statement.targets)
    elif type(statement) is ast.AnnAssign and statement.value is not None:
        targets = [statement.target]
    leaves: list[ast.Attribute] = []
    while targets:
        target = targets.pop()
        if type(target) is ast.Attribute:
            leaves.append(target)
        elif type(target) in (ast.Tuple, ast.List):
            targets.extend(target.elts)  # type: ignore[attr-defined]
        elif type(target) is ast.Starred:
            targets.append(target.value)
    return leaves


def _abstract(klass: cst.ClassDef) -> bool:
    """A base meant for subclasses (``raise NotImplementedError``, ``@abstractmethod``): they
    provide what it reads."""
    for node in descendants(klass):
        if isinstance(node, cst.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, cst.Call) else node.exc
            if dotted_name(exc) == "NotImplementedError":
                return True
        if isinstance(node, cst.Decorator) and "abstract" in (
            dotted_name(node.decorator) or ""
        ):
            return True
    return False


def _one_word_apart(a: str, b: str) -> bool:
    """``_max_weight_per_batch`` and ``_max_cost_per_batch``: the same words but one."""
    left, right = a.strip("_").split("_"), b.strip("_").split("_")
    if len(left) != len(right) or len(left) < 2 or a == b:
        return False
    if len(a) - len(a.lstrip("_")) != len(b) - len(b.lstrip("_")):
        return False
    return sum(x != y for x, y in zip(left, right, strict=True)) == 1


def _class_level_names(klass: cst.ClassDef) -> set[str]:
    """Methods, properties, class attributes and annotations of the class body."""
    names: set[str] = set()
    for statement in klass.body.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    names.update(
                        t.target.value for t in small.targets if isinstance(t.target, cst.Name)
                    )
                elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                    names.add(small.target.value)
    return names


def _may_misspell(klass: ast.ClassDef, attributes: list[ast.Attribute]) -> bool:
    """The ``ast`` side of ``visit_ClassDef`` for the ``self.X`` nodes inside ``klass`` (nested
    classes too): what the class itself assigns is always known, what it reads is always read."""
    stored = {a.attr for a in attributes if type(a.ctx) is ast.Store}
    loaded = {a.attr for a in attributes if type(a.ctx) is ast.Load}
    for item in klass.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stored.add(item.name)
        elif isinstance(item, ast.Assign):
            stored.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            stored.add(item.target.id)
    reads = {a.attr for a in attributes if type(a.ctx) is not ast.Store} - stored
    writes = {a.attr for a in attributes if type(a.ctx) is ast.Store} - loaded
    return any(not attr.startswith("__") for attr in reads) or any(
        not attr.startswith("_") for attr in writes
    )


def _self_attributes(
    klass: cst.ClassDef,
) -> tuple[dict[str, list[cst.Attribute]], dict[str, list[cst.Attribute]]]:
    """``self.X`` nodes of the class (nested classes aside), split into reads and writes."""
    reads: dict[str, list[cst.Attribute]] = {}
    writes: dict[str, list[cst.Attribute]] = {}
    targets: set[int] = set()

    class _Collector(cst.CSTVisitor):
        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return node is klass

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            targets.add(id(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            targets.add(id(node.target))

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Name) and node.value.value == "self":
                side = writes if id(node) in targets else reads
                side.setdefault(node.attr.value, []).append(node)

    klass.visit(_Collector())
    # An attribute written somewhere and read elsewhere is fine on both sides.
    for attr in set(reads) & set(writes):
        reads.pop(attr)
        writes.pop(attr)
    return reads, writes


def _quotients(klass: cst.ClassDef) -> dict[str, set[str]]:
    """``self.q = A // B`` in the class -> ``{"q": {"B"}}``."""
    found: dict[str, set[str]] = {}

    class _Collector(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            value = node.value
            if not (
                isinstance(value, cst.BinaryOperation)
                and isinstance(value.operator, cst.FloorDivide)
            ):
                return
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name):
                    if t.value.value == "self":
                        found.setdefault(t.attr.value, set()).add(expression_key(value.right))

    klass.visit(_Collector())
    return found

