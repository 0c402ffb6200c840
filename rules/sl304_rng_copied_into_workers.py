"""SL304 rng-copied-into-workers: a Dataset makes an RNG object in ``__init__`` and draws from it
in ``__getitem__`` / ``__iter__``: every worker gets a copy in the same state."""

from __future__ import annotations

import ast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import dotted_expression
from sampler_lint.analysis.syntax_summary import SyntaxSummary, walk
from sampler_lint.analysis.text_shapes import names_a_word
from sampler_lint.analysis.tree import descendants
from sampler_lint.rule import Example, Rule, Severity

# Constructors of RNG objects that carry their own state (qualified through the imports).
RNG_CONSTRUCTORS = frozenset({
    "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
    "random.Random", "torch.Generator",
})
_CONSTRUCTOR_NAMES = ("default_rng", "RandomState", "Random", "Generator")
_DRAWING_METHODS = ("__getitem__", "__getitems__", "__iter__")
# A class or file mentioning these reseeds per worker (or may, from a worker_init_fn).
# Methods that put an RNG object in a new state (random.Random, RandomState, torch.Generator).
_RESEEDS = frozenset({"seed", "manual_seed", "set_state", "setstate"})
_PER_WORKER = ("get_worker_info", "worker_init", "worker_id", "initial_seed", "worker_info")


class RngCopiedIntoWorkers(Rule):
    code = "SL304"
    name = "rng-copied-into-workers"
    severity = Severity.WARNING
    # A method the workers run must be defined (`_in_workers` starts from one): a module that
    # only splits data with `generator=torch.Generator()` is not parsed for SL304 (Lightning:
    # 4 of the 6 files parsed for it alone).
    requires = (("Dataset",), _CONSTRUCTOR_NAMES, ("__init__",), _DRAWING_METHODS)
    has_syntax_filter = True

    @classmethod
    def may_match_text(cls, text: str) -> bool:
        # A constructor's name as a word, not inside `RandomSampler` or `DataGenerator`.
        return names_a_word(text, _CONSTRUCTOR_NAMES)

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # What visit_ClassDef needs before it reads the code: a class with a base named
        # ...Dataset that defines a method the workers run, and whose `__init__` assigns
        # `self.<x> = <RNG constructor>(...)` (the constructor by its last name, or by the
        # alias it was imported under).
        if not any(name in summary.names for name in _CONSTRUCTOR_NAMES):
            return False
        constructors = set(_CONSTRUCTOR_NAMES) | {
            alias.asname for node in summary.nodes(ast.ImportFrom) for alias in node.names
            if alias.asname and alias.name in _CONSTRUCTOR_NAMES
        }
        for klass in summary.nodes(ast.ClassDef):
            if not any(_last_name(base).endswith("Dataset") for base in klass.bases):
                continue
            methods = {
                item.name: item for item in klass.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
            init = methods.get("__init__")
            if init is None or not any(name in methods for name in _DRAWING_METHODS):
                continue
            if any(
                isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and _last_name(node.value.func) in constructors
                and any(_is_self_attribute(dotted_expression(target)) for target in node.targets)
                for statement in init.body for node in walk(statement)
            ):
                return True
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not any(
            (dotted_name(base.value) or "").rsplit(".", 1)[-1].endswith("Dataset")
            for base in node.bases
        ):
            return
        if "worker_init" in self.context.source:
            return  # a worker_init_fn in this file may reseed `dataset.<rng>`
        methods = {
            item.name.value: item for item in node.body.body if isinstance(item, cst.FunctionDef)
        }
        init = methods.get("__init__")
        if init is None:
            return
        created = self._rngs_made_in(init)
        if not created:
            return
        # Last: regenerating the class's code costs more than all the checks above.
        if any(word in self.context.code_for(node) for word in _PER_WORKER):
            return
        assigned_elsewhere = _self_attributes_assigned(node, skip=init)
        if "*" in assigned_elsewhere:
            return  # setattr(self, ...) with any name: the RNG may be replaced
        for method_name in _in_workers(methods):
            method = methods[method_name]
            for attribute, use in _self_attribute_uses(method):
                if attribute in created and attribute not in assigned_elsewhere:
                    message = (
                        f"`self.{attribute}` is made once in `__init__` and drawn from in "
                        f"`{method_name}`: each DataLoader worker gets a copy in the same state, "
                        "so all workers draw the same numbers (and again every epoch, unless the "
                        "loader keeps its workers: `persistent_workers=True`)"
                    )
                    self.report(use, message)
                    created.discard(attribute)  # one finding per attribute

    def _rngs_made_in(self, init: cst.FunctionDef) -> set[str]:
        made: set[str] = set()
        for child in descendants(init.body):
            if isinstance(child, cst.Assign) and isinstance(child.value, cst.Call):
                called = self.context.qualified_name(child.value.func) or ""
                if called not in RNG_CONSTRUCTORS:
                    continue
                for target in child.targets:
                    name = dotted_name(target.target) or ""
                    if name.startswith("self.") and name.count(".") == 1:
                        made.add(name[5:])
        return made

    documentation = """
    A Dataset that makes an RNG object in `__init__` and draws from it per item.

    ## What it does
    Flags, in a class whose base is named `...Dataset`, the first use in `__getitem__` /
    `__iter__` (or a method of the class they call, transitively) of `self.<rng>`
    (`self.rng.random()`, `generator=self.rng`) when `__init__` assigned it
    `np.random.default_rng(...)`, `np.random.RandomState(...)`, `random.Random(...)` or
    `torch.Generator()`, no other method assigns or reseeds it (`self.rng.seed(...)`, `manual_seed`,
    `set_state`; nor `setattr`), the class mentions nothing
    of a per-worker reseed (`get_worker_info`, `worker_init...`, `worker_id`, `initial_seed`)
    and the file defines no `worker_init...` (which may reseed `dataset.<rng>`). Draws in
    methods the workers never run (a `set_epoch` that reshuffles in the main process) are not
    flagged.

    ## Why is this bad
    A DataLoader with workers copies the dataset into every worker process, RNG state
    included. torch reseeds the global `random`, `numpy` and `torch` RNGs in each worker, but
    not RNG objects the dataset owns: every worker starts from the same state and draws the
    same sequence, so with 8 workers the "random" crops, noise or masks repeat 8 times per
    epoch, and with non-persistent workers the next epoch starts from the same state again
    (pytorch-3dunet issue #32, MONAI issue #2020). Plain `np.random.*` / `random.*` calls in
    `__getitem__` are fine on torch >= 1.9; the owned RNG object is the trap.

    ## Example
    ```python
    class Noisy(Dataset):
        def __init__(self, items, seed=0):
            self.items = items
            self.rng = np.random.default_rng(seed)

        def __getitem__(self, i):
            return self.items[i] + self.rng.normal()
    ```

    ## Use instead
    ```python
    class Noisy(Dataset):
        def __init__(self, items, seed=0):
            self.items = items
            self.seed = seed
            self.rng = None

        def __getitem__(self, i):
            if self.rng is None:  # first use in this process: seed from torch's per-worker seed
                self.rng = np.random.default_rng(torch.initial_seed() % 2**32)
            return self.items[i] + self.rng.normal()
    ```
    (or draw from the global `np.random`, which torch seeds per worker, or reseed
    `dataset.rng` from `get_worker_info().seed` in a `worker_init_fn`).

    ## Fix safety
    No fix: where and how to make the RNG per worker is a design choice.

    ## References
    - torch `torch.utils.data` "Randomness in multi-process data loading"
    - wolny/pytorch-3dunet issue #32; Project-MONAI/MONAI issue #2020
    """

    examples = (
        Example(
            "import numpy as np\n"
            "from torch.utils.data import Dataset\n"
            "\n"
            "\n"
            "class Noisy(Dataset):\n"
            "    def __init__(self, items, seed=0):\n"
            "        self.items = items\n"
            "        self.rng = np.random.default_rng(seed)\n"
            "\n"
            "    def __getitem__(self, i):\n"
            "        return self.items[i] + self.rng.normal()\n",
            lines=(11,),
        ),
        Example(
            "import numpy as np\n"
            "from torch.utils.data import Dataset\n"
            "\n"
            "\n"
            "class Noisy(Dataset):\n"
            "    def __init__(self, items):\n"
            "        self.items = items\n"
            "\n"
            "    def __getitem__(self, i):\n"
            "        return self.items[i] + np.random.normal()\n"
        ),
    )


def _last_name(node: ast.expr) -> str:
    """The ``ast`` twin of ``(dotted_name(node) or "").rsplit(".", 1)[-1]``."""
    return (dotted_expression(node) or "").rsplit(".", 1)[-1]


def _is_self_attribute(dotted: str | None) -> bool:
    """``self.<name>``, as ``_rngs_made_in`` reads an assignment target."""
    return dotted is not None and dotted.startswith("self.") and dotted.count(".") == 1


def _self_attribute_uses(method: cst.FunctionDef) -> list[tuple[str, cst.Attribute]]:
    """``self.<name>`` reads in ``method``, in source order."""
    uses = []
    for child in descendants(method.body):
        if (
            isinstance(child, cst.Attribute)
            and isinstance(child.value, cst.Name)
            and child.value.value == "self"
        ):
            uses.append((child.attr.value, child))
    return uses


def _self_attributes_assigned(klass: cst.ClassDef, skip: cst.FunctionDef) -> set[str]:
    """``self.<name>`` assigned (or passed to ``setattr``) anywhere in the class but ``skip``."""
    assigned: set[str] = set()
    for item in klass.body.body:
        if item is skip or not isinstance(item, cst.FunctionDef):
            continue
        for child in descendants(item.body):
            if isinstance(child, (cst.AssignTarget, cst.AugAssign)):
                target = child.target
                name = dotted_name(target) or ""
                if name.startswith("self."):
                    assigned.add(name.split(".")[1])
            elif isinstance(child, cst.Call):
                called = dotted_name(child.func) or ""
                if called == "setattr":
                    assigned.add("*")
                parts = called.split(".")
                # `self.rng.seed(...)` in the drawing code reseeds the copy in each worker (a
                # per-worker or per-epoch seed): as good as a new RNG.
                if len(parts) == 3 and parts[0] == "self" and parts[2] in _RESEEDS:
                    assigned.add(parts[1])
    return assigned


def _in_workers(methods: dict[str, cst.FunctionDef]) -> list[str]:
    """``__getitem__`` / ``__iter__`` and the methods of the class they call (``self.m(...)``),
    transitively: what runs in the workers."""
    found = [name for name in _DRAWING_METHODS if name in methods]
    for name in found:  # grows while it is walked
        for child in descendants(methods[name].body):
            if isinstance(child, cst.Call):
                called = dotted_name(child.func) or ""
                head, _, rest = called.partition(".")
                if head == "self" and rest in methods and rest not in found and rest != "__init__":
                    found.append(rest)
    return found
