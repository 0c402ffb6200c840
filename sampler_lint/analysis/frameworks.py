"""What a project trains with (SL5xx): Lightning, Fabric, accelerate, plain DDP, and whether a
Lightning ``Trainer`` / Fabric turns sampler injection off.

Answers combine the file being linted (its imports) and the project index (the modules every
file imports, and the facts of :func:`collect_framework_facts`)."""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sampler_lint.analysis.index import (
    FactCollector,
    ProjectIndex,
    dotted_expression,
    facts_in_file,
    import_aliases,
    qualify,
    statements,
)
from sampler_lint.analysis.loader_facts import file_key
from sampler_lint.analysis.syntax_summary import SyntaxSummary, per_tree
from sampler_lint.analysis.text_shapes import may_import
from sampler_lint.rule import FileContext

LIGHTNING = ("lightning", "pytorch_lightning", "lightning_fabric", "lightning.fabric")
DISTRIBUTED = (*LIGHTNING, "torch.distributed", "accelerate", "deepspeed", "torch.nn.parallel")
# Trainer(use_distributed_sampler=False) (2.x) / Trainer(replace_sampler_ddp=False) (1.x), and
# Fabric(...).setup_dataloaders(..., use_distributed_sampler=False).
_INJECTION_SWITCHES = ("use_distributed_sampler", "replace_sampler_ddp")

FACT_SITES = "sl5_batch_sampler_sites"  # Site: a class that reaches batch_sampler=, and where
FACT_SAMPLER_ARGS = "sl5_sampler_args"  # Site: a class passed as sampler=
FACT_INJECTION = "sl5_injection_points"  # InjectionPoint: a Trainer / setup_dataloaders call
# The same points, from a collector that stops at the first non-test one that injects: whether
# the project as a whole turns injection off (``_project_turns_injection_off``).
FACT_TRAINERS = "sl5_project_injection_points"
FACT_LIGHTNING_FILES = "sl5_lightning_files"  # paths of the files that import Lightning / Fabric
FACT_MODULES = "sl5_modules"  # the modules of DISTRIBUTED that some project file imports
INDEX_REQUIRES: tuple[tuple[str, ...], ...] = (
    ("batch_sampler", "use_distributed_sampler", "replace_sampler_ddp"),
)
# Every spelling of an import of one of DISTRIBUTED holds one of these words (`from torch import
# distributed`, `from torch.nn import parallel`): files without them import none of those modules.
MODULE_TOKENS = ("lightning", "accelerate", "deepspeed", "distributed", "parallel")


def _uses(context: FileContext, prefixes: tuple[str, ...]) -> bool:
    return context.imports.imports_any(prefixes) or _project_imports(context.index, prefixes)


def _project_imports(index: ProjectIndex, prefixes: tuple[str, ...]) -> bool:
    return any(
        module == prefix or module.startswith(prefix + ".")
        for module in index.get(FACT_MODULES)
        for prefix in prefixes
    )


def uses_lightning(context: FileContext) -> bool:
    return _uses(context, LIGHTNING)


def uses_distributed_training(context: FileContext) -> bool:
    return _uses(context, DISTRIBUTED)


# For a rule's index stage (``Rule.may_match_index``): a project file that imports one of these
# modules passes the question's text pre-filter and so its import is in the index, unless the
# question was settled by another file; either way, ``False`` here means no file imports one.


def project_may_use_lightning(index: ProjectIndex) -> bool:
    return _project_imports(index, LIGHTNING)


def project_may_use_distributed_training(index: ProjectIndex) -> bool:
    return _project_imports(index, DISTRIBUTED)


def collect_module_facts(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    """The modules of DISTRIBUTED this file imports (``from torch import distributed`` counts as
    ``torch.distributed``)."""
    modules = {module.lstrip(".") for module in import_aliases(tree).values()}
    modules |= {
        node.module or "" for node in statements(tree) if isinstance(node, ast.ImportFrom)
    }
    wanted = sorted(
        module for module in modules
        if any(module == prefix or module.startswith(prefix + ".") for prefix in DISTRIBUTED)
    )
    return {FACT_MODULES: wanted}


# Whether the project imports Lightning / any distributed framework: one file is enough to know,
# so these read the files parsed anyway and parse more only while the answer is no.
LIGHTNING_IMPORTS = FactCollector(
    "lightning imports", (("lightning",),), collect_module_facts,
    settled=lambda index: _project_imports(index, LIGHTNING), kinds=(FACT_MODULES,),
    shape=lambda text: may_import(text, ("lightning",)),
)
DISTRIBUTED_IMPORTS = FactCollector(
    "distributed imports", (MODULE_TOKENS,), collect_module_facts,
    settled=lambda index: _project_imports(index, DISTRIBUTED), kinds=(FACT_MODULES,),
    shape=lambda text: may_import(text, MODULE_TOKENS),
)


# ------------------------------------------------------------------------------------------------
# Framework calls by what they resolve to (SL2xx)

# Libraries whose trainers / runners / prepared loaders call `set_epoch` on the loaders they are
# handed (Lightning's Trainer and Fabric, accelerate, mmengine and mmcv runners, transformers and
# trl trainers, Composer, catalyst, ignite, DeepSpeed, detectron2, speechbrain's Brain).
EPOCH_FRAMEWORKS = (
    *LIGHTNING, "accelerate", "mmengine", "mmcv", "transformers", "trl", "composer", "catalyst",
    "ignite", "deepspeed", "detectron2", "speechbrain",
)


def is_framework_name(qualified: str | None) -> bool:
    """Whether a qualified name (``lightning.Trainer``, ``accelerate.Accelerator.prepare``) comes
    from one of :data:`EPOCH_FRAMEWORKS`: what a call resolves to, not its last name."""
    if not qualified:
        return False
    return any(
        qualified == prefix or qualified.startswith(prefix + ".") for prefix in EPOCH_FRAMEWORKS
    )


# ------------------------------------------------------------------------------------------------
# Where batch samplers go, and which Trainer receives them (SL501 / SL502)


@dataclass(frozen=True)
class Site:
    """A project class (by its simple name) that reaches ``batch_sampler=`` (or ``sampler=``) in
    the file at ``path``."""

    name: str
    path: str


@dataclass(frozen=True)
class InjectionPoint:
    """A Lightning ``Trainer(...)`` or a ``setup_dataloaders(...)`` call: each one re-creates the
    batch samplers of the loaders it receives, unless it turns injection off."""

    path: str
    disabled: bool
    in_test: bool


_BATCH_SAMPLER_KEY = "batch_sampler"


def _called(node: ast.expr) -> Iterator[str]:
    """The simple names of the classes a value is built from: ``C(...)``, ``A(...) if c else
    B(...)``."""
    if isinstance(node, ast.Call):
        dotted = dotted_expression(node.func)
        if dotted:
            yield dotted.rsplit(".", 1)[-1]
    elif isinstance(node, ast.IfExp):
        yield from _called(node.body)
        yield from _called(node.orelse)


def _annotated(node: ast.expr | None) -> Iterator[str]:
    """The class names of an annotation: ``C``, ``mod.C``, ``C | None``, ``Optional[C]``."""
    if node is None:
        return
    if isinstance(node, (ast.Name, ast.Attribute)):
        dotted = dotted_expression(node)
        if dotted:
            yield dotted.rsplit(".", 1)[-1]
    elif isinstance(node, ast.BinOp):
        yield from _annotated(node.left)
        yield from _annotated(node.right)
    elif isinstance(node, ast.Subscript):  # Optional[C], Union[A, B]
        inner = node.slice
        for item in inner.elts if isinstance(inner, ast.Tuple) else [inner]:
            yield from _annotated(item)


def _is_test_file(path: str) -> bool:
    """By its name or its own folder's (the path is absolute: a folder higher up may hold the
    whole project)."""
    name = os.path.basename(path)
    folder = os.path.basename(os.path.dirname(path))
    return (
        name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
        or folder in ("tests", "test")
    )


def _switch_off(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def collect_framework_facts(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    """Where project classes reach ``batch_sampler=`` / ``sampler=``, and the Trainer /
    ``setup_dataloaders`` calls with whether each turns injection off (read once per parse:
    :data:`TRAINERS` reads them too)."""
    return per_tree(tree, "framework facts " + path, lambda: _framework_facts(tree, path))


def _framework_facts(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    key_path = file_key(path)
    summary = SyntaxSummary.of(tree)
    aliases = import_aliases(tree)
    held: dict[str, set[str]] = {}  # name (in its function) or attribute -> classes it may hold
    batch: set[str] = set()
    plain: set[str] = set()

    def _key(node: ast.AST) -> str | None:
        """What a value is held under: a name within its function (a parameter of another
        function that happens to share the name holds something else), or an attribute's name
        across the file (``self.x`` is set in one method and read in another)."""
        if isinstance(node, ast.Attribute):
            return "." + node.attr
        if isinstance(node, (ast.Name, ast.arg)):
            name = node.id if isinstance(node, ast.Name) else node.arg
            scope = next(
                (a for a in summary.ancestors(node) if isinstance(
                    a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
                )),
                None,
            )
            if isinstance(scope, ast.ClassDef):  # `held: Plan | None = None` in a class body
                return "." + name
            return f"{id(scope)}:{name}"
        return None

    def hold(target: ast.AST, classes: Iterable[str]) -> None:
        names = set(classes)
        if not names:
            return  # most values and parameters name no class; finding their scope is not free
        key = _key(target)
        if key is not None:
            held.setdefault(key, set()).update(names)
            if key.endswith(_BATCH_SAMPLER_KEY):  # self.train_batch_sampler = C(...)
                batch.update(names)

    for target, value in summary.assignments():
        if value is not None:
            hold(target, _called(value))
    for annotated in summary.nodes(ast.AnnAssign):
        hold(annotated.target, _annotated(annotated.annotation))
    for arg in summary.nodes(ast.arg):  # def loader(batches: BucketBatches)
        hold(arg, _annotated(arg.annotation))
    for branch in summary.nodes(ast.If):  # if isinstance(x, C): ... batch_sampler=x
        test = branch.test
        if (
            isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance" and len(test.args) == 2
        ):
            key = _key(test.args[0])
            kinds = test.args[1]
            for kind in kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]:
                if key is not None:
                    held.setdefault(key, set()).update(_annotated(kind))

    def classes_of(value: ast.expr) -> set[str]:
        found = set(_called(value))
        key = _key(value)
        if key is not None:
            found |= held.get(key, set())
        return found

    loose_off = False  # a switch set outside a Trainer call (a kwargs dict, a config helper)
    calls: list[tuple[ast.Call, bool]] = []
    for call in summary.nodes(ast.Call):
        is_point = _is_injection_point(call, aliases)
        for keyword in call.keywords:
            if keyword.arg == _BATCH_SAMPLER_KEY:
                batch |= classes_of(keyword.value)
            elif keyword.arg == "sampler":
                plain |= classes_of(keyword.value)
            elif keyword.arg in _INJECTION_SWITCHES and _switch_off(keyword.value):
                loose_off = loose_off or not is_point
        if is_point:
            calls.append((call, any(k.arg is None for k in call.keywords)))
    for assign in summary.nodes(ast.Assign):  # options["batch_sampler"] = C(...)
        for target in assign.targets:
            if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
                if target.slice.value == _BATCH_SAMPLER_KEY:
                    batch |= classes_of(assign.value)
                elif target.slice.value in _INJECTION_SWITCHES and _switch_off(assign.value):
                    loose_off = True
    for literal in summary.nodes(ast.Dict):  # {"batch_sampler": C(...)}
        for dict_key, value in zip(literal.keys, literal.values, strict=True):
            if isinstance(dict_key, ast.Constant) and dict_key.value == _BATCH_SAMPLER_KEY:
                batch |= classes_of(value)
            elif isinstance(dict_key, ast.Constant) and dict_key.value in _INJECTION_SWITCHES:
                loose_off = loose_off or _switch_off(value)
    in_test = _is_test_file(key_path)
    points = [
        InjectionPoint(key_path, _call_disables(call) or (spread and loose_off), in_test)
        for call, spread in calls
    ]
    if loose_off and not calls:
        points.append(InjectionPoint(key_path, True, in_test))  # the switch, its Trainer unseen
    return {
        FACT_SITES: sorted((Site(n, key_path) for n in batch), key=lambda s: s.name),
        FACT_SAMPLER_ARGS: sorted((Site(n, key_path) for n in plain), key=lambda s: s.name),
        FACT_INJECTION: sorted(set(points), key=lambda p: (p.disabled, p.in_test)),
    }


def _is_injection_point(call: ast.Call, aliases: dict[str, str]) -> bool:
    """``Trainer(...)`` imported from Lightning, or any ``x.setup_dataloaders(...)``."""
    dotted = dotted_expression(call.func)
    if dotted is None:
        return False
    if dotted.endswith("setup_dataloaders"):
        return True
    qualified = qualify(aliases, dotted)
    return qualified.endswith(".Trainer") and any(
        qualified.startswith(prefix + ".") for prefix in LIGHTNING
    )


def _call_disables(call: ast.Call) -> bool:
    return any(
        k.arg in _INJECTION_SWITCHES and _switch_off(k.value) for k in call.keywords
    )


FRAMEWORK_FACTS = FactCollector(
    "batch sampler sites and trainers",
    (("sampler", "use_distributed_sampler", "replace_sampler_ddp", "Trainer",
      "setup_dataloaders"),),
    collect_framework_facts,
    kinds=(FACT_SITES, FACT_SAMPLER_ARGS, FACT_INJECTION),
)


def collect_trainer_facts(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    """The injection points of :func:`collect_framework_facts` alone, for the project-wide
    question."""
    return {FACT_TRAINERS: list(collect_framework_facts(tree, path)[FACT_INJECTION])}


def _injects(point: InjectionPoint) -> bool:
    return not point.in_test and not point.disabled


# Does some non-test Trainer leave injection on? The first one settles it (most projects build
# one early and never turn injection off), so the project's other Trainer files are not read.
# Every injection point spells one of these: a Lightning `Trainer` is named in its import or
# call, a Fabric one calls `setup_dataloaders`, and a switch set apart from its call names the
# switch.
TRAINERS = FactCollector(
    "trainers that may inject",
    (("Trainer", "setup_dataloaders", *_INJECTION_SWITCHES),),
    collect_trainer_facts,
    settled=lambda index: any(_injects(point) for point in index.get(FACT_TRAINERS)),
    kinds=(FACT_TRAINERS,),
)


def collect_lightning_files(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    modules = collect_module_facts(tree, path)[FACT_MODULES]
    lightning = any(
        module == prefix or module.startswith(prefix + ".")
        for module in modules for prefix in LIGHTNING
    )
    return {FACT_LIGHTNING_FILES: [file_key(path)] if lightning else []}


# Every file that imports Lightning / Fabric (not settled by the first: SL501 asks whether one
# sits in the folder of a given batch sampler).
LIGHTNING_FILES = FactCollector(
    "lightning files", (("lightning",),), collect_lightning_files,
    kinds=(FACT_LIGHTNING_FILES,), shape=lambda text: may_import(text, ("lightning",)),
)


def batch_sampler_sites(index: ProjectIndex, name: str) -> set[str]:
    """The paths where the class ``name`` reaches ``batch_sampler=``."""
    return _sites_of(index, FACT_SITES, name)


def sampler_arguments(index: ProjectIndex, name: str) -> set[str]:
    """The paths where the class ``name`` is passed as ``sampler=``."""
    return _sites_of(index, FACT_SAMPLER_ARGS, name)


def _sites_of(index: ProjectIndex, fact: str, name: str) -> set[str]:
    # A site names its class by the last name the file spells (``_called``, ``_annotated``):
    # only files whose text holds the name can have one, and only those are read.
    return {site.path for site in index.get_for(fact, name) if site.name == name}


def lightning_near(index: ProjectIndex, paths: Iterable[str]) -> bool:
    """Whether a file that imports Lightning / Fabric sits in the package or folder of one of
    ``paths``, above it or below it. A repository of independent examples keeps each example in
    its own folder: Lightning in one is no reason to judge a loader in another; a package that
    offers a Lightning data module anywhere in it is one project."""
    paths = list(paths)
    if any(facts_in_file(index, FACT_LIGHTNING_FILES, file_key(path), None) for path in paths):
        return True  # one of them imports it: near itself (read alone, not every such file)
    lightning = {_package_root(p) for p in index.get(FACT_LIGHTNING_FILES)}
    if not lightning:
        return False
    for path in paths:
        folder = _package_root(path)
        for other in lightning:
            if _within(folder, other) or _within(other, folder):
                return True
    return False


@functools.lru_cache(maxsize=4096)
def _package_root(path: str) -> str:
    """The outermost folder of the package holding ``path`` (each folder up to it has an
    ``__init__.py``), or the file's own folder outside any package."""
    root = os.path.dirname(path)
    while os.path.isfile(os.path.join(root, "__init__.py")):
        parent = os.path.dirname(root)
        if parent == root or not os.path.isfile(os.path.join(parent, "__init__.py")):
            break
        root = parent
    return root


def _within(folder: str, parent: str) -> bool:
    return folder == parent or folder.startswith(parent.rstrip(os.sep) + os.sep)


def injection_on_for(index: ProjectIndex, paths: Iterable[str]) -> bool:
    """Whether a Trainer may inject into the loaders built at ``paths`` (RULES.md: injection is
    off only for the Trainer that receives the loader). A file that builds its own Trainers is
    judged by them; otherwise the project's non-test Trainers decide, and injection is off only
    when every one of them turns it off (with none seen, when some code turns it off)."""
    paths = list(paths)
    judged_here = True  # every path builds Trainers of its own, and all of them turn it off
    for path in paths:  # each file read alone, not every file
        real = file_key(path)
        own = [p for p in index.get_for(FACT_INJECTION, real) if p.path == real]
        if any(_injects(p) for p in own):
            return True
        judged_here = judged_here and any(p.path == path and not p.in_test for p in own)
    return not judged_here and not _project_turns_injection_off(index)


def _project_turns_injection_off(index: ProjectIndex) -> bool:
    """Whether the project has non-test injection points and every one turns injection off."""
    points = [p for p in index.get(FACT_TRAINERS) if not p.in_test]
    return bool(points) and not any(_injects(p) for p in points)
