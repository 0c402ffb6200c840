"""SL303 constant-worker-seed: a ``worker_init_fn`` that reseeds every RNG from values that are
the same every epoch, on a loader whose workers are started again every epoch."""

from __future__ import annotations

import ast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import dotted_expression
from sampler_lint.analysis.leftovers import leaves_unused_names
from sampler_lint.analysis.loader_calls import is_evaluation_name
from sampler_lint.analysis.loader_facts import is_loader_constructor
from sampler_lint.analysis.matching import get_arg, int_value
from sampler_lint.analysis.seeds import SEEDING_CALLS
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.analysis.tree import descendants
from sampler_lint.rule import Applicability, Example, Fix, Rule, Severity

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
#            pin_memory, drop_last, timeout, worker_init_fn, ...)
_NUM_WORKERS, _WORKER_INIT_FN = 5, 10
_MODULE_SEEDS = (
    "random.seed", "numpy.random.seed", "torch.manual_seed", "torch.random.manual_seed",
    "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
)
# Helpers that seed random, numpy and torch at once (besides seeds.SEEDING_CALLS).
_SEED_ALL = ("fix_random_seed", "seed_all_rng", "setup_seed", "set_seeds", "seed_all")
# What a seed that changes every epoch (or reads what torch already varied) mentions.
_VARYING = (
    "initial_seed", "get_worker_info", "epoch", "get_state", "getstate", "randint", "rand(",
    "random(", "randn", "urandom", "time", "SeedSequence", "entropy", "uuid", "getpid",
    "base_seed", "counter", "iteration", "step",
)
# Calls a seed may go through and stay the same: int(seed + worker_id), hash(name).
_PURE_CALLS = ("int", "abs", "hash", "str", "len")


class ConstantWorkerSeed(Rule):
    code = "SL303"
    name = "constant-worker-seed"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_risk = (
        "augmentations are no longer reproducible from the config seed alone: they follow "
        "torch's per-epoch base seed (itself set by torch.manual_seed)"
    )
    # Off by default: on the public trees its findings are true to the letter but of low impact
    # (see the documentation's last paragraph of "Why is this bad").
    default_enabled = False
    requires = (("DataLoader",), ("seed",))  # worker_init_fn may come positionally
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # A loader construction given a worker_init_fn, workers and no **kwargs.
        for call in summary.nodes(ast.Call):
            if not is_loader_constructor(dotted_expression(call.func)):
                continue
            keywords = {k.arg for k in call.keywords}
            if None in keywords:
                continue
            if ("worker_init_fn" in keywords or len(call.args) > _WORKER_INIT_FN) and (
                "num_workers" in keywords or len(call.args) > _NUM_WORKERS
            ):
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if not is_loader_constructor(dotted_name(node.func)):
            return
        if any(arg.star for arg in node.args):
            return  # persistent_workers / num_workers may hide in **kwargs
        init = get_arg(node, _WORKER_INIT_FN, "worker_init_fn")
        workers = get_arg(node, _NUM_WORKERS, "num_workers")
        if init is None or workers is None or int_value(workers.value) == 0:
            return  # without workers the function never runs
        persistent = get_arg(node, None, "persistent_workers")
        if persistent is not None and not (
            isinstance(persistent.value, cst.Name) and persistent.value.value == "False"
        ):
            return  # persistent (or maybe): the workers keep their RNG streams across epochs
        if self._for_evaluation(node):
            return
        function = self._worker_function(init.value)
        if function is None:
            return
        seeding = self._constant_seeding(function)
        if not seeding:
            return
        name = function.name.value
        if name == "__call__":
            klass = self.context.enclosing_class(function)
            name = f"{klass.name.value}.__call__" if klass is not None else name
        message = (
            f"`{name}` reseeds the workers' RNGs from values that are the same every epoch, and "
            "this loader starts new workers every epoch: each epoch replays the same random "
            "augmentations (torch already gives every worker a new seed per epoch)"
        )
        self.report(init.value, message, self._fix(seeding))

    # -- which loader, which function -------------------------------------------------------
    def _for_evaluation(self, loader: cst.Call) -> bool:
        """Built for evaluation: assigned to, or built in a function, named for it."""
        statement = self.context.enclosing_statement(loader)
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        name = dotted_name(target.target)
                        if name is not None and is_evaluation_name(name):
                            return True
        function = self.context.enclosing_function(loader)
        return function is not None and is_evaluation_name(function.name.value)

    def _worker_function(self, value: cst.BaseExpression) -> cst.FunctionDef | None:
        """The function the loader calls in each worker: a module-level function, the function
        of ``partial(f, ...)``, or the ``__call__`` of a class built here (``_Seed(seed)``),
        through one assignment in the same function."""
        if isinstance(value, cst.Name):
            function = self.context.enclosing_function(value)
            scope: cst.CSTNode = function if function is not None else self.context.module
            values = self.context.assignments(scope).get(value.value, [])
            if len(values) == 1:
                return self._worker_function(values[0])
            if values:
                return None
            return self._module_definition(value.value, cst.FunctionDef)  # type: ignore[return-value]
        if isinstance(value, cst.Call):
            called = self.context.qualified_name(value.func) or ""
            if called in ("functools.partial", "partial") and value.args:
                target = value.args[0].value
                if isinstance(target, cst.Name):
                    return self._module_definition(target.value, cst.FunctionDef)  # type: ignore[return-value]
                return None
            if isinstance(value.func, cst.Name):
                klass = self._module_definition(value.func.value, cst.ClassDef)
                if isinstance(klass, cst.ClassDef):
                    for item in klass.body.body:
                        if isinstance(item, cst.FunctionDef) and item.name.value == "__call__":
                            return item
        return None

    def _module_definition(
        self, name: str, kind: type[cst.FunctionDef] | type[cst.ClassDef]
    ) -> cst.FunctionDef | cst.ClassDef | None:
        found = [
            statement for statement in self.context.module.body
            if isinstance(statement, kind) and statement.name.value == name
        ]
        if len(found) != 1:
            return None
        definition = found[0]
        return definition if not definition.decorators else None

    def _constant_seeding(self, function: cst.FunctionDef) -> list[cst.Call]:
        """The seeding calls of ``function`` when all of them take a seed that is the same
        every epoch and nothing in it varies; ``[]`` otherwise."""
        code = self.context.code_for(function.body)
        if any(word in code for word in _VARYING):
            return []
        seeding: list[cst.Call] = []
        for child in descendants(function.body):
            if not isinstance(child, cst.Call):
                continue
            called = self.context.qualified_name(child.func) or ""
            last = called.rsplit(".", 1)[-1]
            if called in _MODULE_SEEDS or last in SEEDING_CALLS or last in _SEED_ALL:
                if last == "manual_seed" and called not in _MODULE_SEEDS:
                    return []  # `generator.manual_seed(...)`: not the global RNGs
                if len(child.args) != 1 or child.args[0].star or not _same_every_epoch(
                    child.args[0].value
                ):
                    return []
                seeding.append(child)
        return seeding

    # -- the fix -------------------------------------------------------------------------------
    def _fix(self, seeding: list[cst.Call]) -> Fix | None:
        """Seed from ``torch.initial_seed() % 2**32`` (what torch gave this worker this epoch)
        where every seed is written inline and the file imports torch at module level."""
        if "torch" not in _module_imports(self.context.module):
            return None
        new_seed = cst.parse_expression("torch.initial_seed() % 2**32")
        seeds = [call.args[0].value for call in seeding]
        if leaves_unused_names(self.context, seeds, [new_seed] * len(seeds), at=seeding[0]):
            return None  # a local or import kept only for the seed would be left unused
        replacements = [(seed, new_seed) for seed in seeds]
        return Fix(
            replacements=replacements,  # type: ignore[arg-type]
            applicability=Applicability.UNSAFE,
            message="Seed from the worker's per-epoch torch seed: `torch.initial_seed() % 2**32`",
        )

    documentation = """
    A `worker_init_fn` that reseeds the RNGs with the same seed every epoch.

    ## What it does
    Flags the `worker_init_fn` of a `DataLoader(...)` (no `**kwargs`, `num_workers` given and
    not `0`, `persistent_workers` left out or `False`, not built for evaluation) when that
    function (a module-level function, `partial(f, ...)` of one, or the `__call__` of a class
    built there) reseeds `random`, `numpy`, `torch` (`random.seed`, `np.random.seed`,
    `torch.manual_seed`, `seed_everything`, `fix_random_seed`...) from constants, configuration
    and `worker_id` only: the function mentions no `torch.initial_seed()`,
    `get_worker_info()`, epoch, step, time or RNG state, and every seed is arithmetic over
    names and literals.

    ## Why is this bad
    Since torch 1.9 every worker is already seeded by torch: `random`, `torch` and `numpy`
    get `base_seed + worker_id`, with a new `base_seed` drawn each time the loader is iterated,
    so each epoch's workers draw new random numbers. Without persistent workers the loader
    starts new workers every epoch and calls `worker_init_fn` again, which puts back the same
    seeds: every epoch replays the same random crops, flips, noise and masks (only the order of
    the samples differs), which quietly weakens augmentation; when the rank is not mixed in,
    every rank draws the same stream too. (Plain `np.random` inside a `Dataset` is fine on
    torch >= 1.9: torch seeds numpy per worker; older lint advice that flags it is out of date.)

    Off by default (`--select SL303` / `extend-select`): with a shuffling sampler the replayed
    draws land on different samples each epoch, so the harm is a smaller variety of
    augmentations rather than identical epochs; only an unshuffled order replays epochs
    exactly. On 24 public trees its 42 findings (one copied pattern in icefall's data modules,
    `_SeedWorkers(torch.randint(...).item())` with `persistent_workers=False`) are all of the
    first kind.

    ## Example
    ```python
    def seed_worker(worker_id):
        np.random.seed(args.seed + worker_id)
        random.seed(args.seed + worker_id)

    loader = DataLoader(dataset, num_workers=4, worker_init_fn=seed_worker)
    ```

    ## Use instead
    ```python
    def seed_worker(worker_id):
        np.random.seed(torch.initial_seed() % 2**32)
        random.seed(torch.initial_seed() % 2**32)
    ```
    (the recipe of torch's reproducibility notes; or drop a function that only repeats
    torch's own seeding, or pass `persistent_workers=True`). Reproducibility is kept: the
    loader's base seed comes from the main process's seeded RNG (or `generator=`).

    ## Fix safety
    Unsafe: the random stream of every worker changes (to one that changes every epoch, as
    torch intends). Offered when every seed is written inline in the seeding calls and the
    file imports `torch`; a seed kept in a local is reported only.

    ## References
    - torch "Reproducibility" notes (`seed_worker` with `torch.initial_seed() % 2**32`) and
      `torch.utils.data` "Randomness in multi-process data loading" (torch 1.9 seeds numpy)
    - issue 21 of this project (evidence survey)
    """

    examples = (
        Example(
            "import random\n"
            "\n"
            "import numpy as np\n"
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "\n"
            "\n"
            "def seed_worker(worker_id):\n"
            "    np.random.seed(SEED + worker_id)\n"
            "    random.seed(SEED + worker_id)\n"
            "\n"
            "\n"
            "def build(dataset):\n"
            "    return DataLoader(dataset, num_workers=4, worker_init_fn=seed_worker)\n",
            lines=(14,),
            fixed=(
                "import random\n"
                "\n"
                "import numpy as np\n"
                "import torch\n"
                "from torch.utils.data import DataLoader\n"
                "\n"
                "\n"
                "def seed_worker(worker_id):\n"
                "    np.random.seed(torch.initial_seed() % 2**32)\n"
                "    random.seed(torch.initial_seed() % 2**32)\n"
                "\n"
                "\n"
                "def build(dataset):\n"
                "    return DataLoader(dataset, num_workers=4, worker_init_fn=seed_worker)\n"
            ),
        ),
        Example(
            "import numpy as np\n"
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "\n"
            "\n"
            "def seed_worker(worker_id):\n"
            "    np.random.seed(torch.initial_seed() % 2**32)\n"
            "\n"
            "\n"
            "def build(dataset):\n"
            "    return DataLoader(dataset, num_workers=4, worker_init_fn=seed_worker)\n"
        ),
    )


def _same_every_epoch(node: cst.BaseExpression) -> bool:
    """Arithmetic over names, attributes, subscripts and literals, through ``int()`` and the
    like: nothing that can differ from one epoch's workers to the next."""
    for child in descendants(node):
        if isinstance(child, cst.Call):
            if dotted_name(child.func) not in _PURE_CALLS:
                return False
        elif isinstance(child, (cst.Await, cst.Yield, cst.NamedExpr)):
            return False
    return True


def _module_imports(module: cst.Module) -> set[str]:
    """The names module-level imports bind (``import torch`` -> ``torch``)."""
    bound: set[str] = set()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if alias.asname is None:
                            bound.add((dotted_name(alias.name) or "").split(".")[0])
    return bound
