"""SL301 hardcoded-sampler-seed: a shuffling DistributedSampler whose seed is 0 whatever the user
sets."""

from __future__ import annotations

import ast
import re

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.appending import keyword, with_argument, with_keyword_only
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.analysis.loader_calls import (
    chosen_sampler_cst,
    distributed_sampler_calls,
    is_evaluation_name,
    shuffles,
)
from sampler_lint.analysis.matching import get_arg, has_star_args
from sampler_lint.analysis.sampler_family import (
    calls_project_subclass,
    project_subclass_names,
)
from sampler_lint.analysis.seed_facts import (
    NAMED_SAMPLER_FACTS,
    NAMED_SAMPLER_WORDS,
    SEED_KEY_COLLECTORS,
    builds_named_sampler,
    import_stems,
    imported_modules,
    may_fix_the_seed,
    parameter_names,
    seed_keys,
)
from sampler_lint.analysis.seeds import (
    CONSTRUCTION_COLLECTORS,
    class_like,
    defaults_to_none,
    is_distributed_construction,
    may_be_none,
    rank_dependent_part,
    seed_argument,
    seed_reaches_set_epoch,
    visible_shared_seed,
)
from sampler_lint.analysis.syntax_summary import (
    SyntaxSummary,
    argument,
    dotted_expression,
    per_tree,
    walk,
)
from sampler_lint.analysis.tree import descendants
from sampler_lint.rule import Applicability, Example, Fix, Option, Rule, Severity

# Lightning's global seed, and a seed defaulted into the kwargs: where either is, the seed a
# sampler is built with comes from the run.
_GLOBAL_SEED = "PL_GLOBAL_SEED"
_SEED_DEFAULTED = re.compile(r"setdefault\(\s*['\"]seed['\"]")


#: SL301's hint when the file spells no seed, per callee: its last name, whether it is named
#: like one of torch's distributed samplers, whether one of its calls is in a class or may be
#: in a factory, the namespaces the functions around its other calls hold, and the modules the
#: file imports.
_Candidate = tuple[str, bool, bool, tuple[str, ...], tuple[str, ...]]


def _candidates(summary: SyntaxSummary) -> list[ast.Call]:
    """A DistributedSampler(...) without **kwargs, not `shuffle=False`, seeded by no argument
    or by an integer literal. A project subclass may have any class-like name (the index, not
    visible here, tells). Listed once per tree (the syntax stage and its hints both ask)."""
    return _calls(summary)[0]


def _calls(summary: SyntaxSummary) -> tuple[list[ast.Call], frozenset[int]]:
    """:func:`_candidates`, and the ids of the calls named like torch's distributed samplers."""
    def make() -> tuple[list[ast.Call], frozenset[int]]:
        calls = summary.nodes(ast.Call)
        named = distributed_sampler_calls(calls, summary)
        candidates = named + [c for c in calls if class_like(c.func)]
        return [c for c in candidates if may_fix_the_seed(c)], frozenset(map(id, named))

    return per_tree(summary.tree, "SL301 candidates", make)


def _may_be_factory(summary: SyntaxSummary, call: ast.Call) -> bool:
    """The ``ast`` side of ``_factory``, looser: the innermost function around the call is not
    ``main`` and the sampler's dataset is one of its parameters (or an element of one), or a
    name some loop or comprehension of the function binds."""
    function = summary.enclosing_function(call)
    if function is None or function.name == "main":
        return False
    dataset = argument(call, 0, "dataset")
    if dataset is None:
        return False
    if isinstance(dataset, ast.Subscript):
        dataset = dataset.value
    if dotted_expression(dataset) in parameter_names(function):
        return True
    if not isinstance(dataset, ast.Name):
        return False
    return dataset.id in _bound_names(summary, function)[1]


def _held_namespaces(summary: SyntaxSummary, ancestors: list[ast.AST]) -> set[str]:
    """Every parameter and every name bound in the functions around a node (a superset of
    what ``_project_key`` asks about: parameters and locals bound before it)."""
    held: set[str] = set()
    for function in ancestors:
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            held.update(parameter_names(function))
            held.update(_bound_names(summary, function)[0])
    return held - {"self", "cls"}


def _bound_names(
    summary: SyntaxSummary, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> tuple[frozenset[str], frozenset[str]]:
    """The names ``function`` binds anywhere (nested functions included), and those bound by a
    loop's or a comprehension's target: once per function (a test file builds dozens of
    candidates in one function)."""
    memo: dict[int, tuple[frozenset[str], frozenset[str]]] = per_tree(
        summary.tree, "SL301 bound names", dict
    )
    found = memo.get(id(function))
    if found is None:
        stored: set[str] = set()
        looped: set[str] = set()
        for node in walk(function):
            if type(node) is ast.Name and type(node.ctx) is ast.Store:
                stored.add(node.id)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                looped.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        found = memo[id(function)] = (frozenset(stored), frozenset(looped))
    return found


class HardcodedSamplerSeed(Rule):
    code = "SL301"
    name = "hardcoded-sampler-seed"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE
    fix_risk = (
        "a seed that may be None fails in DistributedSampler, a sampler class the caller "
        "chooses may take no `seed`, and the factory fix adds a `seed` keyword to its signature"
    )
    # "sampler": a project subclass of any name, handed to a loader as `sampler=`.
    requires = (("Sampler", "sampler"),)
    # Project subclasses of DistributedSampler and the project's own classes named like torch's
    # (sampler_family, and their `__init__`), the project's seed keys and the seeds that reach a
    # sampler through set_epoch (seed_facts).
    collectors = (*CONSTRUCTION_COLLECTORS, *SEED_KEY_COLLECTORS, NAMED_SAMPLER_FACTS)
    uses_index = True
    has_syntax_filter = True
    # A file that names no distributed sampler can only build a project subclass: the index
    # stage reads that from its text, and the file is not parsed for this rule alone.
    parse_for = NAMED_SAMPLER_WORDS
    options = (
        Option(
            key="strict-seed",
            kind=bool,
            default=False,
            help="Also report scripts with no shared seed anywhere, and evaluation samplers.",
        ),
    )

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        return bool(_candidates(summary))

    @classmethod
    def syntax_hints(cls, summary: SyntaxSummary) -> frozenset[_Candidate] | None:
        # Where the file spells no seed at all, a sampler's seed can only come from another
        # file: a seed key of a namespace a function around it holds (`args.seed` declared
        # elsewhere), unless it is built in a class (a project base may assign `self.seed`) or
        # in what may be a factory. Each candidate is handed on with what the index stage needs
        # to judge it (the index tells which callees are samplers). None (no narrowing) when
        # the file spells a seed, in strict mode, or with the options unknown.
        options = summary.options
        if options is None or options.get("strict-seed", False) or not summary.source:
            return None
        lowered = summary.source.lower()
        if "seed" in lowered or any(n.lower() in lowered for n in summary.vocabulary.seed_names):
            return None
        candidates, torch_named = _calls(summary)
        held: dict[tuple[str, bool, bool], set[str]] = {}
        for call in candidates:
            local = summary.enclosing_class(call) is not None or _may_be_factory(summary, call)
            name = (dotted_expression(call.func) or "").rsplit(".", 1)[-1]
            namespaces = held.setdefault((name, id(call) in torch_named, local), set())
            if not local:
                namespaces.update(_held_namespaces(summary, summary.ancestors(call)))
        modules = tuple(sorted(imported_modules(summary.tree)))
        return frozenset(
            (name, named, local, tuple(sorted(namespaces)), modules)
            for (name, named, local), namespaces in held.items()
        )

    @classmethod
    def may_match_index(
        cls, index: ProjectIndex, path: str, text: str,
        hints: frozenset[_Candidate] | None = None,
    ) -> bool:
        # A DistributedSampler built by name here with a seed that may be fixed, or a project
        # subclass, at any depth, that this file may call by name (a class-like call the syntax
        # stage let through builds it; an import or an isinstance test builds nothing); never
        # where the visitor trusts a global seed. With hints: a candidate that builds one, in
        # a class or a factory, or holding a namespace with a seed key in a file related to
        # this one (what `_project_key` reads).
        if _GLOBAL_SEED in text or _SEED_DEFAULTED.search(text):
            return False
        if not builds_named_sampler(index, path, fixed_seed=True) and not calls_project_subclass(
            index, text, "DistributedSampler"
        ):
            return False
        if hints is None:
            return True
        subclasses = project_subclass_names(index, "DistributedSampler")
        for name, torch_named, local, namespaces, modules in sorted(hints):
            if not torch_named and name not in subclasses:
                continue  # no sampler of torch's or the project's
            if local:
                return True
            imported = import_stems(set(modules), path)
            if any(seed_keys(index, namespace, path, imported) for namespace in namespaces):
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if not shuffles(node) or not is_distributed_construction(self.context, node):
            return
        if any(arg.star == "**" for arg in node.args):
            return  # the seed may arrive through **kwargs
        code = self.context.source
        if _GLOBAL_SEED in code or _SEED_DEFAULTED.search(code):
            return  # Lightning's global seed, or a seed defaulted into the kwargs
        seed = seed_argument(node)
        if seed is not None and not isinstance(seed.value, cst.Integer):
            return  # an explicit, non-literal seed (SL302 judges rank-dependent ones)
        if has_star_args(node) and seed is None:
            return
        strict = bool(self.context.options.get("strict-seed", False))
        if self._evaluation(node) and not strict:
            return
        what = "a literal seed" if seed is not None else "no seed (torch's default is 0)"
        factory = self._factory(node)
        if seed_reaches_set_epoch(self.context, node, factory):
            return  # `set_epoch(seed + epoch)`: the run's seed does reach the order
        shared = visible_shared_seed(self.context, node)
        if shared is not None:
            message = (
                f"shuffling DistributedSampler with {what} while the shared seed `{shared}` is "
                "right here: the data order stays the same whatever seed the run is given"
            )
            self.report(node, message, self._pass_seed(node, seed, shared))
            return
        if factory is not None:
            message = (
                f"sampler factory `{factory.name.value}` builds a shuffling DistributedSampler "
                f"with {what}: its callers cannot change the data order; accept a `seed` and pass "
                "it on"
            )
            self.report(node, message, self._add_parameter(factory, node, seed))
            return
        if strict:
            self.report(node, f"shuffling DistributedSampler with {what} (strict-seed)")

    # -- cases --------------------------------------------------------------------------------
    def _evaluation(self, node: cst.Call) -> bool:
        dataset = get_arg(node, 0, "dataset")
        if dataset is not None and is_evaluation_name(dotted_name(dataset.value) or ""):
            return True
        parent = self.context.parent(node)
        if isinstance(parent, cst.Assign):
            return any(
                is_evaluation_name(dotted_name(t.target) or "") for t in parent.targets
            )
        return False

    def _factory(self, node: cst.Call) -> cst.FunctionDef | None:
        """A function (not ``main``) whose sampler's dataset is one of its parameters and which
        returns something (the sampler or a loader built from it)."""
        function = self.context.enclosing_function(node)
        if function is None or function.name.value == "main":
            return None
        dataset = get_arg(node, 0, "dataset")
        params = function.params
        names = {p.name.value for p in (*params.posonly_params, *params.params,
                                        *params.kwonly_params)}
        if dataset is None or not self._from_parameters(dataset.value, names, function):
            return None
        if "return" not in self.context.code_for(function):
            return None
        return function

    def _from_parameters(
        self, dataset: cst.BaseExpression, names: set[str], function: cst.FunctionDef
    ) -> bool:
        """The dataset is a parameter, an element of one (``datasets[i]``), or a ``for`` target
        over one (``for ds in datasets``, ``for ds, flag in zip(datasets, flags)``,
        ``for i, ds in enumerate(datasets)``)."""
        if isinstance(dataset, cst.Subscript):
            dataset = dataset.value
        name = dotted_name(dataset)
        if name in names:
            return True
        if not isinstance(dataset, cst.Name):
            return False
        for ancestor in self.context.ancestors(dataset):
            if ancestor is function:
                return False
            if isinstance(ancestor, (cst.For, cst.CompFor)) and any(
                isinstance(n, cst.Name) and n.value == name for n in descendants(ancestor.target)
            ):
                return _iterates_parameters(ancestor.iter, names)
        return False

    # -- fixes --------------------------------------------------------------------------------
    def _pass_seed(self, node: cst.Call, seed: cst.Arg | None, shared: str) -> Fix | None:
        if rank_dependent_part(self.context, cst.parse_expression(shared)) is not None:
            return None
        # A seed left `None` by default (`add_argument("--seed", default=None)`) would make the
        # sampler fail in every run that does not set it: those keep torch's default, 0.
        code = f"{shared} or 0" if defaults_to_none(self.context, node, shared) else shared
        value = cst.parse_expression(code)
        if seed is not None:
            new = node.with_changes(args=[
                a.with_changes(value=value) if a is seed else a for a in node.args
            ])
        else:
            new = with_argument(node, keyword("seed", value))
        # A seed that may be None (`args.seed` defaulting to None) would make the sampler fail;
        # a class the caller chooses (`sampler_cls or DistributedSampler`) may take no seed.
        safe = not may_be_none(self.context, node, shared) and not chosen_sampler_cst(
            self.context, node
        )
        return Fix(
            replacements=[(node, new)],
            applicability=Applicability.SAFE if safe else Applicability.UNSAFE,
            message=f"Pass the shared seed: `seed={code}`",
        )

    def _add_parameter(
        self, function: cst.FunctionDef, node: cst.Call, seed: cst.Arg | None
    ) -> Fix | None:
        if _uses_name(function, "seed"):
            return None  # `seed` is already bound or read in the function
        if function.params.star_kwarg is not None:
            return None
        seed_value = cst.Name("seed")
        if seed is not None:
            new_call = node.with_changes(args=[
                a.with_changes(value=seed_value) if a is seed else a for a in node.args
            ])
        else:
            new_call = with_argument(node, keyword("seed", seed_value))
        param = cst.Param(
            name=cst.Name("seed"),
            annotation=cst.Annotation(cst.Name("int")),
            default=cst.Integer("0"),
        )
        new_function = with_keyword_only(function, param)
        # Apply both changes in one replacement of the function.
        replaced = new_function.deep_replace(node, new_call)
        assert isinstance(replaced, cst.FunctionDef)
        return Fix(
            replacements=[(function, replaced)],
            applicability=Applicability.UNSAFE,
            message=f"Add a keyword-only `seed: int = 0` to `{function.name.value}` and pass it on",
        )

    documentation = """
    A shuffling `DistributedSampler` whose seed is missing or a literal.

    ## What it does
    Flags a `DistributedSampler` (a known third-party subclass, a project subclass at any
    depth, in the same file or another module of the project, or a class the function chooses
    at run time with one as the default: `sampler_cls = sampler_cls or DistributedSampler`,
    `def build(ds, sampler_cls=DistributedSampler)`, as ColossalAI's plugins) with `shuffle`
    not literally `False` and a seed that is missing (torch's default is 0) or an integer
    literal, when
    1. a shared seed is visible at the construction: a parameter, a global, or a local bound
       on every path to it (earlier in a block around it, or in each branch of an `if`; not
       in another branch or in a loop, where passing it could raise UnboundLocalError), named
       like a seed; `self.<seed>` assigned in the class body, in `__init__` or
       by a project base class; an `args.seed`-style attribute the code reads (its namespace
       bound before the construction, unpacking included: `args, _ = p.parse_known_args()`); a
       seed key the project defines or reads on a namespace the function holds (`config.SEED`,
       `cfg.TRAIN.SEED`, `args.seed` from `add_argument("--seed")`; a name for a parser, as in
       `parser = parse_args(parser)`, is never that namespace), even when this module never
       reads it (the key is read in this module, in a module it imports, or in one that imports
       it, directly or through the packages whose `__init__.py` re-exports it: `from data import
       build_loader`); or the value given to `torch.manual_seed` / `seed_everything` / `set_seed` in
       the module, and the same on every rank (never a generator's own: `g.manual_seed(epoch)`
       seeds that generator, and `g.manual_seed` itself is no seed). A seed that the function
       (or, for an attribute such as `args.seed`, the module) also makes differ between ranks
       (`seed += rank`, `args.seed = args.seed + dist.get_rank()`, or a draw from a `random`
       or `numpy.random` the module has not seeded before it the same way on every rank:
       `if args.rand: args.seed = random.randint(0, 10**6)`) is not shared: passing it
       would give each rank its own permutation, so the ranks' shares overlap; or
    2. the construction is in a sampler factory: a function (not `main`) whose sampler's dataset
       is one of its parameters, an element of one, or a `for` target over one (`for ds, flag in
       zip(datasets, flags)`), and which returns something.
    Not flagged: `shuffle=False`, evaluation samplers (named `val`, `test`, `eval`...), a seed
    passed through `**kwargs`, `kwargs.setdefault("seed", ...)` or Lightning's `PL_GLOBAL_SEED`,
    a sampler (or a loader built from it, or what a factory returned) whose `set_epoch` is given
    a seed (`loader.sampler.set_epoch(args.seed + epoch)`: torch shuffles with `seed + epoch`), a
    project subclass whose own `__init__` takes neither `seed` nor `**kwargs` (or that is given
    more than the dataset positionally), the project's own class named like torch's (a
    `DistributedSampler` the file defines or imports from the project, such as a copy deriving
    from `Sampler`), judged the same way by its own `__init__`, a library class known to take
    no seed (catalyst's `DistributedSamplerWrapper`: `seed=` is a `TypeError` there), and
    scripts with no shared seed anywhere and no factory. `strict-seed = true` reports those
    scripts and evaluation samplers too, without a fix.

    ## Why is this bad
    `DistributedSampler` shuffles with its own `seed`, not with torch's global RNG. Left at 0, the
    data order is the same in every run whatever seed the user chooses, so runs that should
    differ (seed sweeps, restarts with a new seed) see identical data orders. MosaicML Composer's
    `dist.get_sampler` had this bug (issue #3723, PR #3724).

    ## Example
    ```python
    torch.manual_seed(args.seed)
    sampler = DistributedSampler(train_set, shuffle=True)
    ```

    ## Use instead
    ```python
    torch.manual_seed(args.seed)
    sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)
    ```
    Reference forms: torch passes `seed=`; Lightning injects `seed=int(os.environ.get(
    "PL_GLOBAL_SEED", 0))` into the samplers it builds; transformers uses `seed=args.seed`;
    mmengine and detectron2 draw one seed and synchronise it across ranks
    (`sync_random_seed()`) before passing it.

    ## Fix safety
    Case 1 is safe when the seed is a local or a parameter with a value: passing the run's seed
    changes the order only when the user changes their seed, which is what they asked for. It
    is unsafe when the seed may be `None` (an `args.seed`-style attribute, a parameter defaulting
    to `None`): `DistributedSampler` needs an integer, so check the default first. Where the
    code shows that it is `None` unless the run sets it (a parameter defaulting to `None`, or
    the file's `add_argument("--seed", type=int)` with no default or `default=None`, as in
    MoCo's and SimSiam's scripts), the fix passes `seed=args.seed or 0`: runs that set no seed
    keep torch's default. It is unsafe too for a class chosen at run time: the caller's class
    may take no `seed`. Case 2 is unsafe because it changes the factory's signature: it adds
    a keyword-only `seed: int = 0` and forwards it (Composer's fix), refused when the name
    `seed` is already bound or read in the function (a keyword label such as `MixUp(seed=None)`
    or an attribute `cfg.seed` does not count). Call sites of a factory that already takes
    `seed` are not yet followed.

    ## References
    - MosaicML Composer issue #3723 and PR #3724
    - torch `DistributedSampler` documentation (`seed`)
    """

    examples = (
        Example(
            "import torch\n"
            "from torch.utils.data import DistributedSampler\n"
            "\n"
            "\n"
            "def main(args, train_set):\n"
            "    torch.manual_seed(args.seed)\n"
            "    sampler = DistributedSampler(train_set, shuffle=True)\n"
            "    return sampler\n",
            lines=(7,),
            fixed=(
                "import torch\n"
                "from torch.utils.data import DistributedSampler\n"
                "\n"
                "\n"
                "def main(args, train_set):\n"
                "    torch.manual_seed(args.seed)\n"
                "    sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)\n"
                "    return sampler\n"
            ),
        ),
        Example(
            "from torch.utils.data import DistributedSampler\n"
            "\n"
            "\n"
            "def get_sampler(dataset, *, shuffle=True, drop_last=False):\n"
            "    return DistributedSampler(dataset, shuffle=shuffle, drop_last=drop_last)\n",
            lines=(5,),
            fixed=(
                "from torch.utils.data import DistributedSampler\n"
                "\n"
                "\n"
                "def get_sampler(dataset, *, shuffle=True, drop_last=False, seed: int = 0):\n"
                "    return DistributedSampler(dataset, shuffle=shuffle, drop_last=drop_last, "
                "seed=seed)\n"
            ),
        ),
        Example(
            "from torch.utils.data import DistributedSampler\n"
            "\n"
            "\n"
            "def main(dataset):\n"
            "    return DistributedSampler(dataset, shuffle=False)\n"
        ),
    )


def _iterates_parameters(iterable: cst.BaseExpression, names: set[str]) -> bool:
    """``datasets``, ``zip(datasets, flags)``, ``enumerate(datasets)`` over parameters."""
    if isinstance(iterable, cst.Call) and dotted_name(iterable.func) in ("zip", "enumerate"):
        return any(_iterates_parameters(a.value, names) for a in iterable.args)
    return dotted_name(iterable) in names


def _uses_name(function: cst.FunctionDef, name: str) -> bool:
    """``name`` is bound or read in ``function`` as a name: a parameter, an assignment, a read.
    Keyword labels (``MixUp(seed=None)``), attributes (``args.seed``), strings and comments do
    not count."""
    labels: set[int] = set()
    for node in descendants(function):
        if isinstance(node, cst.Arg) and node.keyword is not None:
            labels.add(id(node.keyword))
        elif isinstance(node, cst.Attribute):
            labels.add(id(node.attr))
    return any(
        isinstance(node, cst.Name) and node.value == name and id(node) not in labels
        for node in descendants(function)
    )
