"""What a project trains with (SL5xx): Lightning, Fabric, accelerate, plain DDP, and whether a
Lightning ``Trainer`` / Fabric turns sampler injection off.

Answers combine the file being linted (its imports) and the project index (the modules every
file imports, and the facts of :func:`collect_framework_facts`)."""

from __future__ import annotations

import ast
from typing import Any

from sampler_lint.context import FileContext
from sampler_lint.index import (
    FactCollector,
    ProjectIndex,
    dotted_expression,
    import_aliases,
    statements,
)
from sampler_lint.syntax_summary import SyntaxSummary

LIGHTNING = ("lightning", "pytorch_lightning", "lightning_fabric", "lightning.fabric")
DISTRIBUTED = (*LIGHTNING, "torch.distributed", "accelerate", "deepspeed", "torch.nn.parallel")
# Trainer(use_distributed_sampler=False) (2.x) / Trainer(replace_sampler_ddp=False) (1.x), and
# Fabric(...).setup_dataloaders(..., use_distributed_sampler=False).
_INJECTION_SWITCHES = ("use_distributed_sampler", "replace_sampler_ddp")

FACT_INJECTION_OFF = "sl5_injection_off"  # paths whose code turns injection off
FACT_BATCH_SAMPLERS = "sl5_batch_samplers"  # class names passed as batch_sampler=
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


def injection_disabled(context: FileContext) -> bool:
    return bool(context.index.get(FACT_INJECTION_OFF))


def batch_sampler_classes(context: FileContext) -> set[str]:
    return set(context.index.get(FACT_BATCH_SAMPLERS))


# For a rule's index stage (``Rule.may_match_index``): a project file that imports one of these
# modules passes the question's text pre-filter and so its import is in the index, unless the
# question was settled by another file; either way, ``False`` here means no file imports one.


def project_may_use_lightning(index: ProjectIndex) -> bool:
    return _project_imports(index, LIGHTNING)


def project_may_use_distributed_training(index: ProjectIndex) -> bool:
    return _project_imports(index, DISTRIBUTED)


def collect_framework_facts(tree: ast.Module, path: str) -> dict[str, list[Any]]:
    off: list[str] = []
    passed: set[str] = set()
    assigned: dict[str, str] = {}  # name -> class constructed, anywhere in the file
    summary = SyntaxSummary.of(tree)
    for assign in summary.nodes(ast.Assign):
        if isinstance(assign.value, ast.Call):
            called = dotted_expression(assign.value.func)
            for target in assign.targets:
                if isinstance(target, ast.Name) and called:
                    assigned[target.id] = called.rsplit(".", 1)[-1]
    for node in summary.nodes(ast.Call):
        for keyword in node.keywords:
            if keyword.arg in _INJECTION_SWITCHES and isinstance(keyword.value, ast.Constant):
                if keyword.value.value is False:
                    off.append(path)
            if keyword.arg == "batch_sampler":
                value = keyword.value
                if isinstance(value, ast.Call):
                    called = dotted_expression(value.func)
                    if called:
                        passed.add(called.rsplit(".", 1)[-1])
                elif isinstance(value, ast.Name) and value.id in assigned:
                    passed.add(assigned[value.id])
    return {FACT_INJECTION_OFF: sorted(set(off)), FACT_BATCH_SAMPLERS: sorted(passed)}


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


FRAMEWORK_FACTS = FactCollector("trainer switches", INDEX_REQUIRES, collect_framework_facts)
# Whether the project imports Lightning / any distributed framework: one file is enough to know,
# so these read the files parsed anyway and parse more only while the answer is no.
LIGHTNING_IMPORTS = FactCollector(
    "lightning imports", (("lightning",),), collect_module_facts,
    settled=lambda index: _project_imports(index, LIGHTNING),
)
DISTRIBUTED_IMPORTS = FactCollector(
    "distributed imports", (MODULE_TOKENS,), collect_module_facts,
    settled=lambda index: _project_imports(index, DISTRIBUTED),
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
