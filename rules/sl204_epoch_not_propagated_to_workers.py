"""SL204 epoch-not-propagated-to-workers: an epoch set in the main process that the code which
reads it never sees (persistent DataLoader workers; a batch sampler's own ``set_epoch`` under
Lightning 2.x)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.frameworks import (
    FRAMEWORK_FACTS,
    LIGHTNING_FILES,
    LIGHTNING_IMPORTS,
    TRAINERS,
    batch_sampler_sites,
    lightning_near,
    project_may_use_lightning,
    sampler_arguments,
)
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.analysis.loader_calls import constructed, constructor
from sampler_lint.analysis.loader_facts import file_key
from sampler_lint.analysis.matching import get_arg, int_value, strip_parens
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.analysis.tree import descendants
from sampler_lint.analysis.worker_epochs import (
    BATCH_EPOCH_CALLERS,
    EPOCH_CLASSES,
    LIGHTNING_1X,
    EpochClass,
    batch_sampler_epoch_called,
    find_epoch_class,
    lineage_of,
    may_run_lightning_1x,
    set_epoch_rebinds,
    stale_in_workers,
)
from sampler_lint.rule import Example, FileContext, Rule, Severity


@dataclass(frozen=True)
class _Loader:
    """A persistent-worker candidate: the DataLoader construction and where things are."""

    call: cst.Call  # DataLoader(...)
    holder: str  # what the loop refers to it by
    built_in: cst.FunctionDef | cst.Module  # the scope of the construction
    binding: cst.CSTNode  # the value bound to the holder (the construction, or a builder call)
    bound_in: cst.FunctionDef | cst.Module  # the scope of that binding
    dataset: cst.BaseExpression  # the dataset, as seen from `dataset_scope`
    dataset_scope: cst.FunctionDef | cst.Module
class EpochNotPropagatedToWorkers(Rule):
    code = "SL204"
    name = "epoch-not-propagated-to-workers"
    severity = Severity.ERROR
    # Persistent workers and an epoch written in the loop, or a class with its own set_epoch.
    requires = (("epoch",), ("persistent_workers", "set_epoch"))
    collectors = (
        EPOCH_CLASSES, BATCH_EPOCH_CALLERS, LIGHTNING_1X, FRAMEWORK_FACTS, TRAINERS,
        LIGHTNING_IMPORTS, LIGHTNING_FILES,
    )
    uses_index = True
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # Shape 2: a class that defines `set_epoch`.
        if any(
            isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "set_epoch"
            for klass in summary.nodes(ast.ClassDef) for item in klass.body
        ):
            return True
        # Shape 1: a loader's `persistent_workers=` that is not `False`, and, in a loop, a
        # `.set_epoch(...)` call or a write to an attribute named ...epoch...
        if not any(
            k.arg == "persistent_workers"
            and not (isinstance(k.value, ast.Constant) and k.value.value is False)
            for k in summary.nodes(ast.keyword)
        ):
            return False
        writes: list[ast.AST] = [
            call for call in summary.nodes(ast.Call)
            if isinstance(call.func, ast.Attribute) and call.func.attr == "set_epoch"
        ]
        writes += [
            target for assign in summary.nodes(ast.Assign) for target in assign.targets
            if isinstance(target, ast.Attribute) and "epoch" in target.attr.lower()
        ]
        return any(_in_loop(summary, write) for write in writes)

    @classmethod
    def may_match_index(cls, index: ProjectIndex, path: str, text: str) -> bool:
        # Shape 1 reads `persistent_workers` in the file; shape 2 needs a file that imports
        # Lightning (lightning_near: one is enough to know, and the question stops there) and
        # no sign of Lightning 1.x.
        if "persistent_workers" in text:
            return True
        return project_may_use_lightning(index) and not may_run_lightning_1x(index)

    # -- shape 1: persistent workers keep the epoch of their first iteration -------------------

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "set_epoch":
            self._check_epoch_write(node, func.value, None)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            written = target.target
            if isinstance(written, cst.Attribute) and "epoch" in written.attr.value.lower():
                self._check_epoch_write(written, written.value, written.attr.value)

    def _check_epoch_write(
        self, node: cst.CSTNode, receiver: cst.BaseExpression, attribute: str | None
    ) -> None:
        if "persistent_workers" not in self.context.source:
            return
        loop = self._enclosing_loop(node)
        if loop is None:
            return
        function = self.context.enclosing_function(node)
        statement = self.context.enclosing_statement(node)
        for loader in self._loaders_for(receiver, function):
            if not _persistent_when_workers(self.context, loader.call, loader.built_in):
                continue
            if _within(loader.binding, loop) or not self._loop_uses(loop, loader.holder, statement):
                continue  # a loader built in the loop starts fresh workers every epoch
            here = function if function is not None else self.context.module
            if loader.bound_in is not here and self._loop_rebuilds(loop, loader.bound_in):
                continue
            found = self._dataset_class(loader.dataset, loader.dataset_scope)
            if found is None:
                continue
            index = self.context.index
            if attribute is None:
                rebound = set_epoch_rebinds(index, found)
                if not rebound:
                    continue
                stale = stale_in_workers(index, found, rebound, need_known=False)
                written = f"`{self.context.code_for(receiver)}.set_epoch(...)`"
            else:
                stale = stale_in_workers(index, found, {attribute}, need_known=True)
                written = f"`{self.context.code_for(receiver)}.{attribute} = ...`"
            if stale is None:
                continue
            attributes = ", ".join(f"`self.{a}`" for a in stale.attributes)
            self.report(
                node,
                f"{written} only changes the main process's copy of the dataset: "
                f"`{loader.holder}` keeps its workers (`persistent_workers=True`), and their "
                f"copies of `{found.name}` keep the value of the first epoch, which "
                f"`{stale.entry}` reads through {attributes}",
            )
            return

    def _enclosing_loop(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        for ancestor in self.context.ancestors(node):
            if isinstance(ancestor, cst.For | cst.While):
                return ancestor
            if isinstance(ancestor, cst.FunctionDef | cst.ClassDef | cst.Module | cst.Lambda):
                return None
        return None

    def _loaders_for(
        self, receiver: cst.BaseExpression, function: cst.FunctionDef | None
    ) -> list[_Loader]:
        """The loaders whose dataset the receiver is: ``loader.dataset`` itself, or a name /
        ``self`` attribute passed as a loader's dataset (directly, or to a builder function of
        this file that returns the loader)."""
        receiver = strip_parens(receiver)
        if isinstance(receiver, cst.Attribute) and receiver.attr.value == "dataset":
            holder = dotted_name(receiver.value)
            if holder is None:
                return []
            bound = self._bindings_of(holder, function)
            if len(bound) != 1:
                return []
            value, position, where = bound[0]
            found = self._loader_made_by(value, position, holder, where)
            return [found] if found is not None else []
        held = dotted_name(receiver)
        if held is None:
            return []
        loaders = []
        for where in self._scopes_holding(held, function):
            for child in descendants(where):
                if not isinstance(child, cst.Assign) or len(child.targets) != 1:
                    continue
                target = child.targets[0].target
                targets = target.elements if isinstance(target, cst.Tuple) else None
                for position, element in enumerate(targets or [None]):
                    holder = dotted_name(element.value if element is not None else target)
                    if holder is None or len(self._bindings_of(holder, function)) != 1:
                        continue
                    found = self._loader_made_by(
                        child.value, position if targets else None, holder, where
                    )
                    if found is not None and dotted_name(found.dataset) == held and (
                        found.dataset_scope is where
                    ):
                        loaders.append(found)
        return loaders

    def _bindings_of(
        self, name: str, function: cst.FunctionDef | None
    ) -> list[tuple[cst.BaseExpression, int | None, cst.FunctionDef | cst.Module]]:
        """``(value, position in a tuple target or None, scope)`` for every assignment to
        ``name`` seen from ``function``: ``name = value`` and ``..., name, ... = value``."""
        found: list[tuple[cst.BaseExpression, int | None, cst.FunctionDef | cst.Module]] = [
            (value, None, where) for value, where in self._values_of(name, function)
        ]
        for where in self._scopes_holding(name, function):
            for child in descendants(where):
                if not isinstance(child, cst.Assign):
                    continue
                for target in child.targets:
                    if isinstance(target.target, cst.Tuple):
                        for position, element in enumerate(target.target.elements):
                            if dotted_name(element.value) == name:
                                found.append((child.value, position, where))
        return found

    def _loader_made_by(
        self,
        value: cst.BaseExpression,
        position: int | None,
        holder: str,
        where: cst.FunctionDef | cst.Module,
    ) -> _Loader | None:
        """The DataLoader construction ``value`` (item ``position`` of it) is: the construction
        itself, or the one returned by a builder function / method of this file."""
        value = strip_parens(value)
        if not isinstance(value, cst.Call):
            return None
        if position is None and self._is_loader(value):
            dataset = get_arg(value, 0, "dataset")
            if dataset is None:
                return None
            return _Loader(value, holder, where, value, where, dataset.value, where)
        builder = self._builder(value, where)
        if builder is None:
            return None
        returned = _returned(builder, position)
        if isinstance(returned, cst.Name):
            values = self.context.assignments(builder).get(returned.value, [])
            returned = values[0] if len(values) == 1 else None
        if not (
            isinstance(returned, cst.Call) and self._is_loader(returned)
        ):
            return None
        dataset = get_arg(returned, 0, "dataset")
        if dataset is None:
            return None
        expression = dataset.value
        scope: cst.FunctionDef | cst.Module = builder
        if isinstance(expression, cst.Name):
            passed = _passed_for(builder, value, expression.value)
            if passed is not None:
                expression, scope = passed, where
        return _Loader(returned, holder, builder, value, where, expression, scope)

    def _is_loader(self, call: cst.Call) -> bool:
        """A construction of torch's ``DataLoader`` (or a library class of that name, like
        PyG's, or torchdata's ``StatefulDataLoader``), by name or through an alias. Other
        ``...DataLoader`` classes may restart their workers themselves (a project subclass that
        drops its iterator every epoch), so they are left alone."""
        names = {constructed(call) or "", self.context.qualified_name(constructor(call)) or ""}
        last = {name.rsplit(".", 1)[-1] for name in names if name}
        if "StatefulDataLoader" in last:
            return True
        if "DataLoader" not in last:
            return False
        # A project class called DataLoader (here or in a file the index read) is not torch's.
        index = self.context.index
        return find_epoch_class(index, "DataLoader", str(self.context.path)) is None

    def _builder(
        self, call: cst.Call, where: cst.FunctionDef | cst.Module
    ) -> cst.FunctionDef | None:
        """The function of this file ``call`` runs: a module-level ``f(...)``, or
        ``self.m(...)`` of the enclosing class."""
        name = dotted_name(call.func) or ""
        if name.startswith("self.") and name.count(".") == 1:
            klass = None if isinstance(where, cst.Module) else self.context.enclosing_class(where)
            body = klass.body.body if klass is not None else ()
            name = name[5:]
        elif "." not in name:
            body = self.context.module.body
        else:
            return None
        found = [
            item for item in body if isinstance(item, cst.FunctionDef) and item.name.value == name
        ]
        return found[0] if len(found) == 1 else None

    def _scopes_holding(
        self, name: str, function: cst.FunctionDef | None
    ) -> list[cst.FunctionDef | cst.Module]:
        """Where the value of ``name`` seen from ``function`` is set: the function itself (the
        module at top level), or every method of the class for a ``self`` attribute."""
        if name.startswith("self.") and function is not None:
            klass = self.context.enclosing_class(function)
            if klass is None:
                return []
            return [m for m in klass.body.body if isinstance(m, cst.FunctionDef)]
        return [function if function is not None else self.context.module]

    def _values_of(
        self, name: str, function: cst.FunctionDef | None
    ) -> list[tuple[cst.BaseExpression, cst.FunctionDef | cst.Module]]:
        values: list[tuple[cst.BaseExpression, cst.FunctionDef | cst.Module]] = []
        for where in self._scopes_holding(name, function):
            table = self.context.assignments(where)
            values.extend((value, where) for value in table.get(name, []))
        return values

    def _loop_uses(
        self, loop: cst.For | cst.While, holder: str, statement: cst.CSTNode | None
    ) -> bool:
        """Whether the loop reads the loader outside the statement that writes the epoch."""
        for child in descendants(loop):
            if child is statement:
                continue
            if isinstance(child, (cst.Name, cst.Attribute)) and dotted_name(child) == holder:
                if statement is None or not _within(child, statement):
                    return True
        return False

    def _loop_rebuilds(
        self, loop: cst.For | cst.While, where: cst.FunctionDef | cst.Module
    ) -> bool:
        """For a loader built in another method: whether the loop calls that method."""
        if not isinstance(where, cst.FunctionDef):
            return True
        code = self.context.code_for(loop)
        return f".{where.name.value}(" in code or where.name.value == "__iter__"

    def _dataset_class(
        self, dataset: cst.BaseExpression, where: cst.FunctionDef | cst.Module
    ) -> EpochClass | None:
        """The project class the dataset expression is built from (a construction, or a name
        / ``self`` attribute bound once to one)."""
        dataset = strip_parens(dataset)
        if not isinstance(dataset, cst.Call):
            name = dotted_name(dataset)
            if name is None:
                return None
            values = self._values_of(name, where if isinstance(where, cst.FunctionDef) else None)
            if len(values) != 1:
                return None
            dataset = strip_parens(values[0][0])
            if not isinstance(dataset, cst.Call):
                return None
        built = constructed(dataset)
        if built is None:
            return None
        return find_epoch_class(self.context.index, built, str(self.context.path))

    # -- shape 2: a batch sampler's own set_epoch, which Lightning 2.x never calls -----------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        method = next(
            (
                item for item in node.body.body
                if isinstance(item, cst.FunctionDef) and item.name.value == "set_epoch"
            ),
            None,
        )
        if method is None:
            return
        index = self.context.index
        path = str(self.context.path)
        found = find_epoch_class(index, node.name.value, path)
        if found is None or found.path != file_key(path):
            return
        sites = batch_sampler_sites(index, found.name)
        lineage = lineage_of(index, found)
        subclasses_batch_sampler = any(
            base.rsplit(".", 1)[-1] == "BatchSampler" and base.startswith("torch.")
            for cls in lineage.classes for base in cls.bases
        )
        if not (sites or subclasses_batch_sampler):
            return
        if sampler_arguments(index, found.name):
            return  # passed as `sampler=`: Lightning calls its set_epoch
        if not lightning_near(index, sites | {found.path}) or may_run_lightning_1x(index):
            return
        if batch_sampler_epoch_called(index, found.name):
            return
        rebound = set_epoch_rebinds(index, found)
        if not rebound:
            return
        stale = stale_in_workers(index, found, rebound, need_known=False)
        if stale is None or stale.entry != "__iter__":
            return
        attributes = ", ".join(f"`self.{a}`" for a in stale.attributes)
        self.report(
            method.name,
            f"Lightning 2.x calls `set_epoch` on `loader.sampler` and "
            f"`loader.batch_sampler.sampler`, never on the batch sampler itself: "
            f"`{found.name}.set_epoch` is never called, so `__iter__` reads the same "
            f"{attributes} every epoch",
        )

    documentation = """
    An epoch set in the main process that the code reading it never sees.

    ## What it does
    Flags two shapes.

    **Persistent workers.** In a loop, `ds.set_epoch(epoch)`, `loader.dataset.set_epoch(epoch)`
    or `ds.epoch = epoch` (any attribute named `...epoch...`), where `ds` is the dataset of a
    DataLoader built before that loop (in the same function, in another method of the same class
    for `self.loader`, or by a function or method of the same file that returns it, alone or in
    a tuple) with `persistent_workers=True` (or `persistent_workers=n_workers > 0`,
    `True if n_workers > 0 else False`), the loop goes on using that loader,
    and the dataset's class (in this file or another file of the project) reads the attribute
    that the write rebinds (`self.epoch = epoch` in its `set_epoch`) from `__getitem__`,
    `__getitems__`, `__iter__` or `__next__`, or from a method of the class they call, and never
    rebinds it there itself. Not flagged: a `set_epoch` that writes *into* shared memory
    (`self.epoch.value = e` on a `multiprocessing.Value`, `self.epoch.fill_(e)` or
    `self.epoch[0] = e` on a tensor after `.share_memory_()`); a dataset whose class the project
    does not define (Hugging Face `datasets.IterableDataset.set_epoch` keeps its epoch in a
    shared tensor since huggingface/datasets PR #6710, merged in July 2024); a loader built
    inside the loop, or of a class other than `DataLoader` / `StatefulDataLoader` (a project
    loader class may restart its workers); `persistent_workers` from configuration; an `epoch`
    that is a property, or a class with `__setattr__`; worker code that advances its own
    counter (`self.epoch += 1` in `__iter__`).

    **A batch sampler's own `set_epoch` under Lightning.** A class passed as `batch_sampler=`
    (or subclassing torch's `BatchSampler`), in a project that trains with Lightning or Fabric
    (a file importing it sits in the same package or folder), whose own `set_epoch` rebinds an
    attribute its `__iter__` reads, when no project code calls `set_epoch` on a batch sampler
    itself (a callback doing `trainer.train_dataloader.batch_sampler.set_epoch(...)`) and the
    project shows no Lightning 1.x API (`replace_sampler_ddp`, `training_epoch_end`).

    ## Why is this bad
    A DataLoader with workers gives each worker its own copy of the dataset, made when the loader
    is iterated. Without persistent workers that happens every epoch, so a new epoch set in the
    main process reaches the new copies. With `persistent_workers=True` the copies are made once,
    at the first epoch, and a later `set_epoch` changes only the main process's object: the
    workers keep reading the epoch of the first iteration, and every epoch replays the same
    shuffle, crops or sampling (huggingface/datasets issue #6673, pytorch/pytorch issue #97326).
    Nothing fails and nothing warns; the loss curve just looks like fewer data.

    Lightning 2.0 calls `set_epoch` on `dataloader.sampler` and `dataloader.batch_sampler.sampler`
    only (`lightning.fabric.utilities.data._set_sampler_epoch`, since PR #16826); Lightning 1.6.5
    to 1.9 also called it on the batch sampler (PR #13396). A batch sampler that shuffles with
    its own epoch therefore yields the same batches every epoch after the upgrade.

    ## Example
    ```python
    class Augmented(Dataset):
        def set_epoch(self, epoch):
            self.epoch = epoch

        def __getitem__(self, index):
            rng = random.Random(self.epoch * 100_003 + index)
            return augment(self.items[index], rng)


    loader = DataLoader(dataset, num_workers=4, persistent_workers=True)
    for epoch in range(epochs):
        dataset.set_epoch(epoch)   # the workers never see it
        train(loader)
    ```

    ## Use instead
    Any one of three ways out:

    1. Keep the epoch in memory the workers share, and write into it:
       ```python
       def __init__(self, ...):
           self._epoch = torch.zeros((), dtype=torch.long).share_memory_()
           # or: self._epoch = multiprocessing.Value("i", 0)

       def set_epoch(self, epoch):
           self._epoch.fill_(epoch)   # (a Value: self._epoch.value = epoch)
       ```
    2. Drop `persistent_workers=True` (the workers, and their copies, are then made anew every
       epoch), or build the loader inside the epoch loop, after `set_epoch`.
    3. Move the epoch out of the dataset: put it into the sampler (its `__iter__` runs in the
       main process) and derive the randomness from the indices it yields, or give each worker
       the epoch through `torch.utils.data.get_worker_info()` and a shared counter.

    For the batch sampler under Lightning: let its `sampler` carry the epoch (Lightning calls
    `batch_sampler.sampler.set_epoch`), or call `batch_sampler.set_epoch` yourself from
    `on_train_epoch_start` of a callback or the LightningModule.

    ## Fix safety
    No fix: which way out fits depends on the dataset and on the cost of restarting workers.

    ## References
    - huggingface/datasets issue #6673 and PR #6710 (the epoch moved to a shared tensor)
    - pytorch/pytorch issue #97326 (a dataset attribute under persistent workers)
    - Lightning-AI/pytorch-lightning PR #16826 (2.0: `batch_sampler.sampler.set_epoch`),
      PR #13396 (1.6.5: `batch_sampler.set_epoch`)
    """

    examples = (
        Example(
            "from torch.utils.data import DataLoader, Dataset\n"
            "\n"
            "\n"
            "class Shifted(Dataset):\n"
            "    def __init__(self, items):\n"
            "        self.items = items\n"
            "        self.epoch = 0\n"
            "\n"
            "    def set_epoch(self, epoch):\n"
            "        self.epoch = epoch\n"
            "\n"
            "    def __len__(self):\n"
            "        return len(self.items)\n"
            "\n"
            "    def __getitem__(self, index):\n"
            "        return self.items[(index + self.epoch) % len(self.items)]\n"
            "\n"
            "\n"
            "def train(items, epochs):\n"
            "    dataset = Shifted(items)\n"
            "    loader = DataLoader(dataset, num_workers=2, persistent_workers=True)\n"
            "    for epoch in range(epochs):\n"
            "        dataset.set_epoch(epoch)\n"
            "        for batch in loader:\n"
            "            pass\n",
            lines=(23,),
        ),
        Example(
            "import torch\n"
            "from torch.utils.data import DataLoader, Dataset\n"
            "\n"
            "\n"
            "class Shifted(Dataset):\n"
            "    def __init__(self, items):\n"
            "        self.items = items\n"
            "        self.epoch = torch.zeros((), dtype=torch.long).share_memory_()\n"
            "\n"
            "    def set_epoch(self, epoch):\n"
            "        self.epoch.fill_(epoch)\n"
            "\n"
            "    def __len__(self):\n"
            "        return len(self.items)\n"
            "\n"
            "    def __getitem__(self, index):\n"
            "        return self.items[(index + int(self.epoch)) % len(self.items)]\n"
            "\n"
            "\n"
            "def train(items, epochs):\n"
            "    dataset = Shifted(items)\n"
            "    loader = DataLoader(dataset, num_workers=2, persistent_workers=True)\n"
            "    for epoch in range(epochs):\n"
            "        dataset.set_epoch(epoch)\n"
            "        for batch in loader:\n"
            "            pass\n",
        ),
    )


def _within(node: cst.CSTNode, outer: cst.CSTNode) -> bool:
    return any(child is node for child in descendants(outer))


# The ``ast`` twins of the loops and scopes `_in_loop` stops at, for the syntax pre-filter.
_AST_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_AST_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module, ast.Lambda)


def _in_loop(summary: SyntaxSummary, node: ast.AST) -> bool:
    """Whether a loop encloses ``node`` within its scope (as ``_enclosing_loop`` finds it)."""
    for ancestor in summary.ancestors(node):
        if isinstance(ancestor, _AST_LOOPS):
            return True
        if isinstance(ancestor, _AST_SCOPES):
            return False
    return False


def _persistent_when_workers(
    context: FileContext, loader: cst.Call, where: cst.FunctionDef | cst.Module, depth: int = 0
) -> bool:
    """``persistent_workers=`` is true whenever the loader has workers: ``True``, ``n > 0``,
    ``True if n > 0 else False``, ``bool(n)``, or a local name bound once to one of those."""
    arg = get_arg(loader, None, "persistent_workers")
    if arg is None:
        return False
    return _always_on(arg.value, context, where, depth)


def _always_on(
    value: cst.BaseExpression, context: FileContext, where: cst.FunctionDef | cst.Module, depth: int
) -> bool:
    value = strip_parens(value)
    if isinstance(value, cst.Name):
        if value.value == "True":
            return True
        if depth > 2:
            return False
        values = context.assignments(where).get(value.value, [])
        return len(values) == 1 and _always_on(values[0], context, where, depth + 1)
    if isinstance(value, cst.IfExp):
        body = strip_parens(value.body)
        orelse = strip_parens(value.orelse)
        return (
            isinstance(body, cst.Name) and body.value == "True"
            and isinstance(orelse, cst.Name) and orelse.value == "False"
            and _counts_workers(value.test)
        )
    if isinstance(value, cst.Call) and dotted_name(value.func) == "bool" and value.args:
        return _mentions_workers(value.args[0].value)
    return _counts_workers(value)


def _counts_workers(test: cst.BaseExpression) -> bool:
    """``<workers> > 0``, ``<workers> >= 1``, ``<workers> != 0``, ``0 < <workers>``: true
    exactly when the loader has workers (the only case where persistence is allowed)."""
    test = strip_parens(test)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    operator, right = target.operator, target.comparator
    bound = int_value(right)
    if isinstance(operator, cst.GreaterThan) and bound == 0:
        return _mentions_workers(test.left)
    if isinstance(operator, cst.GreaterThanEqual) and bound == 1:
        return _mentions_workers(test.left)
    if isinstance(operator, cst.NotEqual) and bound == 0:
        return _mentions_workers(test.left)
    if isinstance(operator, cst.LessThan) and int_value(test.left) == 0:
        return _mentions_workers(right)
    return False


def _mentions_workers(node: cst.BaseExpression) -> bool:
    name = dotted_name(node) or ""
    return "worker" in name.lower()


def _returned(builder: cst.FunctionDef, position: int | None) -> cst.BaseExpression | None:
    """What the builder's only ``return`` gives (item ``position`` of a returned tuple)."""
    returns = [
        child for child in descendants(builder.body)
        if isinstance(child, cst.Return) and child.value is not None
    ]
    if len(returns) != 1 or returns[0].value is None:
        return None
    value = strip_parens(returns[0].value)
    if position is None:
        return value
    if isinstance(value, cst.Tuple) and position < len(value.elements):
        element = value.elements[position]
        return None if isinstance(element, cst.StarredElement) else element.value
    return None


def _passed_for(
    builder: cst.FunctionDef, call: cst.Call, parameter: str
) -> cst.BaseExpression | None:
    """The argument ``call`` binds to the builder's ``parameter`` (``self`` skipped)."""
    params = [p.name.value for p in builder.params.params]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    if parameter not in params and parameter not in (
        p.name.value for p in builder.params.kwonly_params
    ):
        return None
    position = params.index(parameter) if parameter in params else None
    arg = get_arg(call, position, parameter)
    return arg.value if arg is not None else None
