"""SL501 batch-sampler-not-injectable: a custom batch sampler Lightning cannot re-create under
DDP."""

from __future__ import annotations

import ast
from collections.abc import Callable

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.batch_samplers import (
    SHAPES,
    Breakage,
    breakage,
    broken_subclass,
    lightning_injects,
    names_sampler_directly,
    shape_of,
    subclasses_of,
)
from sampler_lint.analysis.frameworks import (
    FRAMEWORK_FACTS,
    LIGHTNING_FILES,
    LIGHTNING_IMPORTS,
    TRAINERS,
    project_may_use_lightning,
    sampler_arguments,
)
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.analysis.loader_facts import is_package_init
from sampler_lint.analysis.sampler_family import (
    CLASS_FACT_WORDS,
    CLASS_FACTS,
    ClassAttributes,
    chain_of,
    classes_at,
    find_class,
    torch_sampler,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.analysis.tree import children
from sampler_lint.rule import Applicability, Example, FileContext, Fix, Replacement, Rule, Severity

_HOW = (
    "subclass `torch.utils.data.BatchSampler`, take `sampler, batch_size, drop_last` in "
    "`__init__` (Lightning 1.x: keep `self.batch_size` and `self.drop_last`), draw the indices "
    "from `self.sampler`, and build it inside the `*_dataloader` hook; or shard it yourself and "
    "turn the injection off (`Trainer(use_distributed_sampler=False)`, "
    "`replace_sampler_ddp=False` before 2.0)"
)


class BatchSamplerNotInjectable(Rule):
    code = "SL501"
    name = "batch-sampler-not-injectable"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    # A class of the index passed as `batch_sampler=` elsewhere is judged even when it defines
    # no method of its own.
    requires = (CLASS_FACT_WORDS,)
    collectors = (
        FRAMEWORK_FACTS, TRAINERS, CLASS_FACTS, SHAPES, LIGHTNING_IMPORTS, LIGHTNING_FILES
    )
    uses_index = True
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # A class with bases (only those are in the index); whether it is a batch sampler and
        # the project uses Lightning, only the index can tell.
        return any(klass.bases for klass in summary.nodes(ast.ClassDef))

    @classmethod
    def may_match_index(cls, index: ProjectIndex, path: str, text: str) -> bool:
        # The index answers everything but whether the file changed since it was built (which
        # only ever removes a finding): a class here that breaks where Lightning injects, or
        # that names `Sampler` while such a subclass derives from it.
        if not project_may_use_lightning(index):
            return False
        return any(
            _own_breakage(index, fact) is not None or broken_subclass(index, fact) is not None
            for fact in classes_at(index, path, text)
        )

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        index = self.context.index
        fact = find_class(index, node.name.value, str(self.context.path))
        if fact is None:
            return
        if names_sampler_directly(fact) and not any(
            _is_torch_sampler(self.context, arg.value) for arg in node.bases
        ):
            return  # the index was built before a fix changed the base: it speaks of old code
        own = _own_breakage(index, fact)
        if own is not None:
            message = (
                f"batch sampler `{node.name.value}` breaks under DDP with Lightning: "
                f"{own.problem}. To fix it, {_HOW}"
            )
            fix = None
            if own.lossy_fallback and names_sampler_directly(fact):
                fix = base_swap(self.context, node, fact)
            self.report(node.name, message, fix)
            return
        found = broken_subclass(index, fact)
        if found is None:
            return
        subclass, why = found
        chain = chain_of(index, fact)
        if chain.opaque:
            return
        message = (
            f"`{node.name.value}` derives from `Sampler`, and its subclass `{subclass.name}` is "
            f"used as a batch sampler that breaks under DDP with Lightning: {why.problem}. "
            f"Derive `{node.name.value}` from `torch.utils.data.BatchSampler` instead; {_HOW}"
        )
        self.report(node.name, message)

    documentation = """
    A custom batch sampler that Lightning cannot re-create under DDP.

    ## What it does
    Flags a batch sampler that Lightning's (or Fabric's) DDP re-instantiation rejects or re-creates
    wrongly. A class is a batch sampler when it subclasses torch's `BatchSampler` (through any
    chain of project classes), reaches `batch_sampler=` anywhere in the project (directly, through
    a name, an attribute such as `self.train_batch_sampler`, an annotation, a dict of loader
    options `opts["batch_sampler"] = C(...)` / `{"batch_sampler": C(...)}`, a parameter's
    annotation or an `isinstance` branch), or is a plain `Sampler` subclass whose `__iter__`
    yields lists (`[...]`, `list(...)`, a slice `xs[a:b]`). Flagged:
    - a `BatchSampler` subclass whose `__init__` has no `sampler` argument;
    - a class that does not subclass `BatchSampler` and lacks `batch_size` / `drop_last` (set
      by the class, its project bases or a torch base: `DistributedSampler` sets `drop_last`),
      or cannot be called as `cls(sampler, batch_size=..., drop_last=...)`;
    - a class Lightning can only re-create that way while it takes other arguments (they go back
      to their defaults) or reads `sampler.X` that a `DistributedSampler` lacks;
    - the project class that names `Sampler` as its base when one of its subclasses is flagged
      (that is where `BatchSampler` belongs).
    An inherited `__init__` counts as the class's own; standard-library mixins (`abc.ABC`,
    `Generic[...]`, `Protocol`, `Iterator`...) do not hide a class.

    Only where Lightning injects: a file that imports Lightning / Fabric sits in the package (the
    outermost folder reached through `__init__.py` files) or folder of the class or of a
    `batch_sampler=` site, or above or below it (an unrelated example folder is no reason), and
    injection is on for the Trainer that receives the loader. A file that
    builds its own Trainers is judged by them; otherwise injection is off only when every
    non-test `Trainer(...)` / `setup_dataloaders(...)` of the project passes
    `use_distributed_sampler=False` (`replace_sampler_ddp=False` before 2.0), literally or
    through a `**options` dict that sets it. Test files count neither way.
    Deviations from RULES.md, to stay precise: a class whose unresolved base may be a
    `BatchSampler` is left alone; a `Sampler` subclass that takes exactly `sampler, batch_size,
    drop_last` and reads nothing a `DistributedSampler` lacks is re-created faithfully by
    Lightning's fallback and is not flagged; a `DistributedSampler` (or other torch sampler)
    subclass that groups its indices, or a class passed as `sampler=`, is not a batch sampler.

    ## Why is this bad
    Under DDP, Lightning (and Fabric's `setup_dataloaders`) re-creates each loader's batch sampler
    to inject a `DistributedSampler`. A batch sampler it cannot re-create makes the job fail as
    soon as it runs on more than one GPU, after working on one (Lightning issue #19371):
    `'TwoStreamBatchSampler' object has no attribute 'batch_size'`, then `__init__() got an
    unexpected keyword argument 'batch_size'`, then in 2.1+ `Lightning can't inject a
    (distributed) sampler into your batch sampler, because it doesn't subclass PyTorch's
    BatchSampler`. A class that does not subclass `BatchSampler` but has `batch_size` and
    `drop_last` is re-created as `cls(sampler, batch_size=..., drop_last=...)`: every other
    argument silently returns to its default (`shuffle=True` becomes `False`), and reading
    `sampler.data_source` raises on the injected `DistributedSampler`.

    ## Example
    ```python
    class TwoStreamBatchSampler(Sampler):
        def __init__(self, primary, secondary, batch_size, secondary_batch_size):
            ...
    ```

    ## Use instead
    ```python
    class TwoStreamBatchSampler(BatchSampler):
        def __init__(self, sampler, batch_size, drop_last, secondary, secondary_batch_size=2):
            super().__init__(sampler, batch_size, drop_last)
            ...
        def __iter__(self):
            ...  # draw the primary indices from self.sampler
    ```
    Or shard the indices per rank yourself and pass `use_distributed_sampler=False` to the
    `Trainer` (`replace_sampler_ddp=False` before 2.0).

    ## Fix safety
    Safe, and offered on one shape only: a class that names `Sampler` as its base (other bases
    only standard-library mixins) and already takes `sampler, batch_size, drop_last` (first
    `sampler`, any other argument defaulted), keeps all three as attributes, draws from
    `self.sampler` in `__iter__`, defines `__len__`, reads nothing a `DistributedSampler` lacks,
    has no project subclass and is never passed as `sampler=`. The fix changes the base to
    `BatchSampler`, imports it the way the file imports `Sampler` (dropping `Sampler` when that
    was its last use; `data.Sampler` becomes `data.BatchSampler`), and removes a bare
    `super().__init__()` (torch's `Sampler.__init__` does nothing; `BatchSampler.__init__` would
    need arguments). Plain torch iterates, sizes and collates the class exactly as before;
    Lightning then re-creates it with all its saved arguments instead of the fallback that drops
    them. No other fix is offered: accepting the arguments Lightning passes would let it
    re-create the class without its data, and every rank would silently get nothing.

    ## References
    - Lightning issue #19371
    - Lightning `lightning.fabric.utilities.data._dataloader_init_kwargs_resolve_sampler`
    """

    examples = (
        Example(
            "import lightning as L\n"
            "from torch.utils.data import DataLoader, Sampler\n"
            "\n"
            "\n"
            "class TwoStreamBatchSampler(Sampler):\n"
            "    def __init__(self, primary, secondary, batch_size, secondary_batch_size):\n"
            "        self.primary = primary\n"
            "\n"
            "    def __iter__(self):\n"
            "        yield [0]\n"
            "\n"
            "\n"
            "def loader(data):\n"
            "    return DataLoader(data, batch_sampler=TwoStreamBatchSampler([0], [1], 2, 1))\n",
            lines=(5,),
        ),
        Example(
            "import lightning as L\n"
            "from torch.utils.data import BatchSampler\n"
            "\n"
            "\n"
            "class Fine(BatchSampler):\n"
            "    def __init__(self, sampler, batch_size, drop_last, extra=1):\n"
            "        super().__init__(sampler, batch_size, drop_last)\n"
        ),
    )



def _own_breakage(index: ProjectIndex, fact: ClassAttributes) -> Breakage | None:
    found = breakage(index, fact)
    return found if found is not None and lightning_injects(index, fact) else None


# ------------------------------------------------------------------------------------------------
# The fix: `Sampler` -> `BatchSampler` as the base, on the one shape where it is provably right

_TORCH_DATA = ("torch.utils.data", "torch.utils.data.sampler")


def _swappable(context: FileContext, fact: ClassAttributes) -> bool:
    """RULES.md SL501: the class takes ``sampler, batch_size, drop_last`` (the rest defaulted),
    keeps them, draws from ``self.sampler`` in ``__iter__``, defines ``__len__``, reads nothing a
    DistributedSampler lacks, and nothing else would see the new base (no project subclass, no
    use as ``sampler=``, where accelerate would take it for a batch sampler)."""
    index = context.index
    shape = shape_of(index, fact)
    chain = chain_of(index, fact)
    if shape is None or shape.init is None or chain.opaque or chain.torch_bases != {"Sampler"}:
        return False
    return (
        shape.init.takes_the_batch_sampler_triple()
        and shape.super_init in ("none", "bare")
        and shape.has_iter and shape.has_len and shape.iter_reads_sampler
        and not shape.foreign_reads
        and {"sampler", "batch_size", "drop_last"} <= set(fact.assigned)
        # Lightning records a BatchSampler's arguments on the instance: no room under __slots__
        and "__slots__" not in fact.assigned
        and not sampler_arguments(index, fact.name)
        and not subclasses_of(index, fact)
    )


def base_swap(context: FileContext, node: cst.ClassDef, fact: ClassAttributes) -> Fix | None:
    if not _swappable(context, fact):
        return None
    bases = [arg for arg in node.bases if _is_torch_sampler(context, arg.value)]
    if len(bases) != 1:
        return None
    base = bases[0].value
    replacements: list[Replacement] = []
    for statement in _bare_super_inits(node):
        replacements.append((statement, cst.RemovalSentinel.REMOVE))
    if isinstance(base, cst.Attribute):  # data.Sampler -> data.BatchSampler: no import to edit
        replacements.append((base.attr, base.attr.with_changes(value="BatchSampler")))
    elif isinstance(base, cst.Name):
        edit = _import_edit(context, base)
        if edit is None:
            return None
        replacements.append((base, base.with_changes(value="BatchSampler")))
        replacements.extend(edit)
    else:
        return None  # `Sampler[list[int]]`: BatchSampler is no generic class, `[...]` would raise
    return Fix(
        replacements,
        Applicability.SAFE,
        "Derive from `BatchSampler` (Lightning then re-creates it with its own arguments)",
    )


def _is_torch_sampler(context: FileContext, expression: cst.BaseExpression) -> bool:
    if isinstance(expression, cst.Subscript):  # Sampler[list[int]]
        expression = expression.value
    qualified = context.qualified_name(expression)
    return qualified is not None and torch_sampler(qualified) == "Sampler"


def _bare_super_inits(node: cst.ClassDef) -> list[cst.SimpleStatementLine]:
    """``super().__init__()`` lines of ``__init__``: torch's ``Sampler.__init__`` does nothing
    without arguments, and ``BatchSampler.__init__`` requires them."""
    found = []
    for item in node.body.body:
        if not (isinstance(item, cst.FunctionDef) and item.name.value == "__init__"):
            continue
        for statement in item.body.body if isinstance(item.body, cst.IndentedBlock) else []:
            if (
                isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(statement.body[0], cst.Expr)
                and _is_bare_super_init(statement.body[0].value)
            ):
                found.append(statement)
    return found


def _is_bare_super_init(value: cst.BaseExpression) -> bool:
    return (
        isinstance(value, cst.Call) and not value.args
        and isinstance(value.func, cst.Attribute) and value.func.attr.value == "__init__"
        and isinstance(value.func.value, cst.Call)
        and isinstance(value.func.value.func, cst.Name)
        and value.func.value.func.value == "super"
    )


def _sampler_names(module: cst.Module) -> list[cst.Name]:
    """Every use of the bare name ``Sampler`` (not an attribute's name, not a from-import's)."""
    found: list[cst.Name] = []
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            if node.value == "Sampler":
                found.append(node)
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)
        elif not isinstance(node, cst.ImportFrom):
            stack.extend(reversed(children(node)))
    return found


def _import_edit(context: FileContext, base: cst.Name) -> list[Replacement] | None:
    """Replacements that import ``BatchSampler`` the way the file imports ``Sampler``, dropping
    ``Sampler`` when the swapped base was its last use; ``None`` when the imports are not the
    plain ``from torch.utils.data import ..., Sampler, ...`` form."""
    module = context.module
    imports = [
        small for line in module.body if isinstance(line, cst.SimpleStatementLine)
        for small in line.body if isinstance(small, cst.ImportFrom)
    ]
    holder = next((i for i in imports if _imports_plain(i, "Sampler")), None)
    if holder is None:
        return None
    batch_qualified = context.imports.aliases.get("BatchSampler")
    if batch_qualified is not None and torch_sampler(batch_qualified) != "BatchSampler":
        return None  # the name means something else here
    if any(isinstance(s, cst.ClassDef) and s.name.value == "BatchSampler" for s in module.body):
        return None
    # A package's __init__ or a module listing it in __all__ may re-export `Sampler`: keep it.
    still_used = any(name is not base for name in _sampler_names(module)) or _may_reexport(context)
    names = [_alias_name(a) for a in holder.names]  # type: ignore[union-attr]
    wanted = list(names)
    if not still_used:
        wanted.remove("Sampler")
    if batch_qualified is None:
        if _is_sorted(names):
            wanted.append("BatchSampler")
            wanted.sort(key=_sort_key(names))
        else:
            at = names.index("Sampler") + (1 if still_used else 0)
            wanted.insert(at, "BatchSampler")
    if wanted == names:
        return []
    if not wanted:
        line = next(
            line for line in module.body
            if isinstance(line, cst.SimpleStatementLine) and holder in line.body
        )
        if len(line.body) != 1:
            return None
        return [(line, cst.RemovalSentinel.REMOVE)]
    return [(holder, holder.with_changes(names=_relist(holder, wanted)))]


def _may_reexport(context: FileContext) -> bool:
    return is_package_init(context.path) or any(
        target == "__all__" and "Sampler" in context.code_for(value)
        for target, value in _module_assignments(context.module)
    )


def _module_assignments(module: cst.Module) -> list[tuple[str, cst.BaseExpression]]:
    found: list[tuple[str, cst.BaseExpression]] = []
    for line in module.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if isinstance(small, cst.Assign):
                found.extend(
                    (t.target.value, small.value) for t in small.targets
                    if isinstance(t.target, cst.Name)
                )
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)) and isinstance(
                small.target, cst.Name
            ) and small.value is not None:
                found.append((small.target.value, small.value))
    return found


def _imports_plain(statement: cst.ImportFrom, name: str) -> bool:
    if statement.relative or statement.module is None:
        return False
    if isinstance(statement.names, cst.ImportStar):
        return False
    if dotted_name(statement.module) not in _TORCH_DATA:
        return False
    return any(_alias_name(a) == name and a.asname is None for a in statement.names)


def _alias_name(alias: cst.ImportAlias) -> str:
    return dotted_name(alias.name) or ""


def _sort_key(names: list[str]) -> Callable[[str], str]:
    return (lambda n: n) if names == sorted(names) else str.lower


def _is_sorted(names: list[str]) -> bool:
    return names == sorted(names) or names == sorted(names, key=str.lower)


def _relist(holder: cst.ImportFrom, wanted: list[str]) -> list[cst.ImportAlias]:
    """The new names in the old slots: each position keeps its comma and line breaks."""
    old = list(holder.names)  # type: ignore[arg-type]
    by_name = {_alias_name(a): a for a in old}
    commas = [a.comma for a in old]
    while len(commas) < len(wanted):  # one more name: repeat a separator before the last slot
        separator = commas[-2] if len(commas) > 1 else cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" ")
        )
        commas.insert(len(commas) - 1, separator)
    while len(commas) > len(wanted):
        del commas[-2]
    return [
        (by_name.get(name) or cst.ImportAlias(name=cst.Name(name))).with_changes(comma=comma)
        for name, comma in zip(wanted, commas, strict=True)
    ]
