"""SL403 unused-sampler-generator: ``__iter__`` seeds a ``torch.Generator`` and then draws from the
global RNG (``torch.randperm(n)`` without ``generator=``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.appending import keyword, with_argument
from sampler_lint.analysis.matching import get_arg, has_star_args
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.analysis.tree import descendants
from sampler_lint.rule import Applicability, Example, FileContext, Fix, Rule, Severity

# torch's random functions that take `generator=` (every torch release since 1.x; the `*_like`
# ones only recently, so they are left out: the fix must run on the user's torch).
RANDOM_FUNCTIONS = (
    "randperm", "randint", "multinomial", "rand", "randn", "bernoulli", "normal", "poisson",
)
_QUALIFIED_RANDOM = frozenset(f"torch.{name}" for name in RANDOM_FUNCTIONS)
_GENERATORS = frozenset({"torch.Generator", "torch._C.Generator"})


@dataclass
class _Generator:
    name: str
    statement: cst.BaseStatement  # where it is created
    seeded: bool


class UnusedSamplerGenerator(Rule):
    code = "SL403"
    name = "unused-sampler-generator"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    requires = (("__iter__",), ("Generator",), ("manual_seed",), RANDOM_FUNCTIONS)
    has_syntax_filter = True

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # An `__iter__` method, a call of `...Generator(...)`, of `.manual_seed(...)` and of one
        # of torch's random functions (called or imported under that name).
        names = summary.names
        return (
            "Generator" in names
            and "manual_seed" in names
            and any(name in names for name in RANDOM_FUNCTIONS)
            and any(f.name == "__iter__" for f in summary.nodes(ast.FunctionDef))
        )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value != "__iter__" or self.context.enclosing_class(node) is None:
            return
        generators = _generators(self.context, node)
        for generator in generators:
            if generator.seeded and not _used(node, generator.name):
                self._report_draws(node, generator)

    def _report_draws(self, function: cst.FunctionDef, generator: _Generator) -> None:
        created = False
        block = self.context.parent(generator.statement)
        for child in descendants(function):
            if child is generator.statement:
                created = True
                continue
            if not created or not isinstance(child, cst.Call):
                continue
            called = self.context.qualified_name(child.func)
            if called not in _QUALIFIED_RANDOM or has_star_args(child):
                continue
            if get_arg(child, None, "generator") is not None:
                continue
            if block is None or block not in set(self.context.ancestors(child)):
                continue  # another branch: the generator may not exist there
            function_name = called.rsplit(".", 1)[-1]
            message = (
                f"`torch.{function_name}` draws from the global RNG although `{generator.name}`, a "
                f"seeded `torch.Generator`, was made for it: the seed and `set_epoch` do not "
                f"change the order, and ranks with different global seeds disagree"
            )
            self.report(child, message, _fix(child, generator.name))

    documentation = """
    A sampler's `__iter__` seeds a `torch.Generator` and then draws without it.

    ## What it does
    Flags `torch.randperm`, `torch.randint`, `torch.multinomial`, `torch.rand`, `torch.randn`,
    `torch.bernoulli`, `torch.normal` and `torch.poisson` calls without `generator=` in a class's
    `__iter__` that, earlier in the same block (or a block around the call), assigns a local
    `g = torch.Generator()` and seeds it (`g.manual_seed(...)`, or
    `torch.Generator().manual_seed(...)`), when the generator is used for nothing else. A
    generator passed anywhere (`generator=g`, `self.g = g`, returned, handed to a helper) is
    in use and nothing is flagged; so is a draw in a branch where the generator is not made, and
    `random.shuffle` / `np.random` (they cannot take a torch generator).

    ## Why is this bad
    The generator is the sampler's whole reproducibility story: seeded with `seed + epoch`, it
    makes every rank draw the same permutation (so `DistributedSampler`-style partitions stay
    disjoint) and a new one each epoch (`set_epoch`). Left out of the call, the permutation comes
    from the process's global RNG: `set_epoch` and the seed change nothing, two runs with the
    same seed differ, and with per-rank global seeds (`seed + rank`, common for augmentation)
    the ranks draw different permutations, so their shares overlap and some samples are never
    seen. Nothing fails; the loss curve just is not what the seed promises.

    ## Example
    ```python
    def __iter__(self):
        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        indices = torch.randperm(len(self.dataset)).tolist()
    ```

    ## Use instead
    ```python
    def __iter__(self):
        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        indices = torch.randperm(len(self.dataset), generator=g).tolist()
    ```

    ## Fix safety
    Safe: it passes `generator=<the generator>` to each flagged call, which is what the seeding
    was written for. The order changes (to the one the seed defines); calls with `*args` or
    `**kwargs` are reported without a fix.

    ## References
    - torch `DistributedSampler.__iter__` (the pattern: `g.manual_seed(self.seed + self.epoch)`,
      `torch.randperm(n, generator=g)`)
    - issue 21 of this project (evidence survey)
    """

    examples = (
        Example(
            "import torch\n"
            "\n"
            "\n"
            "class ShardSampler:\n"
            "    def __iter__(self):\n"
            "        g = torch.Generator()\n"
            "        g.manual_seed(self.seed + self.epoch)\n"
            "        order = torch.randperm(self.n).tolist()\n"
            "        return iter(order[self.rank :: self.num_replicas])\n",
            lines=(8,),
            fixed=(
                "import torch\n"
                "\n"
                "\n"
                "class ShardSampler:\n"
                "    def __iter__(self):\n"
                "        g = torch.Generator()\n"
                "        g.manual_seed(self.seed + self.epoch)\n"
                "        order = torch.randperm(self.n, generator=g).tolist()\n"
                "        return iter(order[self.rank :: self.num_replicas])\n"
            ),
        ),
        Example(
            "import torch\n"
            "\n"
            "\n"
            "class ShardSampler:\n"
            "    def __iter__(self):\n"
            "        g = torch.Generator()\n"
            "        g.manual_seed(self.seed + self.epoch)\n"
            "        order = torch.randperm(self.n, generator=g).tolist()\n"
            "        return iter(order[self.rank :: self.num_replicas])\n"
        ),
    )


def _generator_call(context: FileContext, value: cst.BaseExpression) -> tuple[bool, bool]:
    """``(is a new generator, already seeded)`` for ``torch.Generator(...)`` and
    ``torch.Generator(...).manual_seed(seed)``."""
    if not isinstance(value, cst.Call):
        return False, False
    func = value.func
    if (
        isinstance(func, cst.Attribute)
        and func.attr.value == "manual_seed"
        and isinstance(func.value, cst.Call)
        and context.qualified_name(func.value.func) in _GENERATORS
        and value.args
    ):
        return True, True
    return context.qualified_name(func) in _GENERATORS, False


def _generators(context: FileContext, function: cst.FunctionDef) -> list[_Generator]:
    """Plain names assigned a new generator exactly once in ``function`` (and nothing else)."""
    made: dict[str, list[_Generator]] = {}
    other: set[str] = set()
    seeds: set[str] = set()
    for child in descendants(function):
        if isinstance(child, cst.Assign):
            for target in child.targets:
                if not isinstance(target.target, cst.Name):
                    continue
                name = target.target.value
                is_new, seeded = _generator_call(context, child.value)
                statement = context.enclosing_statement(child)
                if is_new and statement is not None:
                    made.setdefault(name, []).append(_Generator(name, statement, seeded))
                else:
                    other.add(name)
        elif isinstance(child, (cst.AugAssign, cst.AnnAssign)) and isinstance(
            child.target, cst.Name
        ):
            other.add(child.target.value)
        elif isinstance(child, cst.Call):
            func = child.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "manual_seed"
                and isinstance(func.value, cst.Name)
                and child.args
            ):
                seeds.add(func.value.value)
    found = []
    for name, generators in made.items():
        if len(generators) == 1 and name not in other:
            generator = generators[0]
            generator.seeded = generator.seeded or name in seeds
            found.append(generator)
    return found


def _used(function: cst.FunctionDef, name: str) -> bool:
    """Whether ``name`` is read for anything but its own ``.manual_seed(...)`` (or rebound by a
    loop, ``with``, ``del`` or a parameter)."""
    for param in [*function.params.params, *function.params.kwonly_params]:
        if param.name.value == name:
            return True
    seeded_receivers: set[int] = set()
    targets: set[int] = set()
    for child in descendants(function):
        if isinstance(child, cst.Call) and isinstance(child.func, cst.Attribute):
            if child.func.attr.value == "manual_seed":
                seeded_receivers.add(id(child.func.value))
        elif isinstance(child, cst.AssignTarget):
            targets.add(id(child.target))
        elif isinstance(child, cst.Name) and child.value == name:
            if id(child) not in seeded_receivers and id(child) not in targets:
                return True
    return False


def _fix(call: cst.Call, generator: str) -> Fix | None:
    if has_star_args(call):
        return None
    fixed = with_argument(call, keyword("generator", cst.Name(generator)))
    return Fix(
        replacements=[(call, fixed)],
        applicability=Applicability.SAFE,
        message=f"Pass the seeded generator: `generator={generator}`",
    )
