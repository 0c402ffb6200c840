"""Local ranks and global world sizes (SL404): which expressions are a process's index on its own
machine, which are the size of the whole job, and how the file spells ``torch.distributed``."""

from __future__ import annotations

import ast

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.index import dotted_expression
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.analysis.vocabulary import LOCAL_RANK_CALLS, LOCAL_RANK_ENV, LOCAL_RANK_NAMES
from sampler_lint.rule import FileContext

# The size of the whole job (not one machine's share: `nprocs`, `num_gpus`, `device_count()` are
# per machine, and a sampler sized by them is meant to shard per machine).
_GLOBAL_WORLD_SIZE_NAMES = ("world_size", "num_replicas", "num_processes", "WORLD_SIZE")
_LOCAL_PARTS = ("local", "node", "per_")
_HOROVOD_SIZE = ("horovod.torch.size", "horovod.tensorflow.size", "horovod.size")


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def environment_key(node: cst.BaseExpression) -> str | None:
    """``"LOCAL_RANK"`` for ``os.environ["LOCAL_RANK"]``, ``os.environ.get("LOCAL_RANK", 0)``,
    ``os.getenv("LOCAL_RANK")``, each also inside ``int(...)``."""
    if isinstance(node, cst.Call) and dotted_name(node.func) == "int" and node.args:
        return environment_key(node.args[0].value)
    key: cst.BaseExpression | None = None
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        element = node.slice[0].slice
        if _last(dotted_name(node.value) or "") == "environ" and isinstance(element, cst.Index):
            key = element.value
    elif isinstance(node, cst.Call) and node.args and not node.args[0].star:
        called = dotted_name(node.func) or ""
        if called.endswith("environ.get") or _last(called) == "getenv":
            key = node.args[0].value
    if isinstance(key, cst.SimpleString):
        value = key.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _assigned_values(
    context: FileContext, node: cst.BaseExpression, name: str
) -> list[cst.BaseExpression] | None:
    """What ``name`` is assigned in the function around ``node`` (else the module); ``None``
    when it is a parameter of that function (its value comes from the caller)."""
    function = context.enclosing_function(node)
    if function is not None:
        params = function.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        if any(param.name.value == name for param in every):
            return None
        values = context.assignments(function).get(name)
        if values:
            return values
    return context.assignments(context.module).get(name, [])


def is_local_rank(context: FileContext, node: cst.BaseExpression, *, follow: bool = True) -> bool:
    """``local_rank``, ``args.local_rank``, ``hvd.local_rank()``, ``int(os.environ["LOCAL_RANK"])``,
    and a name or attribute assigned only such values in the enclosing function (or module):
    ``gpu = int(os.environ["LOCAL_RANK"])``. A local-rank name assigned something else there
    (``args.local_rank = dist.get_rank()``) is not one."""
    name = dotted_name(node)
    if name is not None:
        values = _assigned_values(context, node, name) if follow else []
        if values:
            return all(is_local_rank(context, value, follow=False) for value in values)
        return _last(name) in LOCAL_RANK_NAMES
    if isinstance(node, cst.Call):
        called = dotted_name(node.func)
        if called is not None and _last(called) in LOCAL_RANK_CALLS and not node.args:
            return True
    return environment_key(node) in LOCAL_RANK_ENV


def may_be_local_rank(node: ast.expr, summary: SyntaxSummary, *, follow: bool = True) -> bool:
    """For syntax pre-filters, the ``ast`` twin of :func:`is_local_rank`, looser: a local-rank
    name, call or environment key in ``node``, or, for a name or attribute, in any value the file
    assigns it (the visitor asks that every value assigned in the enclosing function is one)."""
    name = dotted_expression(node)
    if name is not None and _last(name) in LOCAL_RANK_NAMES:
        return True
    if type(node) is ast.Call:
        called = dotted_expression(node.func)
        if called is not None and _last(called) in LOCAL_RANK_CALLS:
            return True
    if any(type(n) is ast.Constant and n.value in LOCAL_RANK_ENV for n in ast.walk(node)):
        return True
    return follow and name is not None and any(
        may_be_local_rank(value, summary, follow=False)
        for value in summary.values_by_target().get(name, ())
    )


def is_global_world_size(
    context: FileContext, node: cst.BaseExpression, *, follow: bool = True
) -> bool:
    """The size of the whole job: ``dist.get_world_size()``, ``int(os.environ["WORLD_SIZE"])``,
    ``world_size`` / ``args.world_size`` / ``accelerator.num_processes``, and a name assigned
    only such values in the enclosing function (``world_size = torch.cuda.device_count()`` is
    one machine's count: not global)."""
    name = dotted_name(node)
    if name is not None:
        values = _assigned_values(context, node, name) if follow else []
        if values:
            return all(is_global_world_size(context, value, follow=False) for value in values)
        last = _last(name)
        return last in _GLOBAL_WORLD_SIZE_NAMES and not any(p in name for p in _LOCAL_PARTS)
    if isinstance(node, cst.Call):
        called = dotted_name(node.func)
        if called is not None and _last(called) == "get_world_size" and not node.args:
            return True
        if context.qualified_name(node.func) in _HOROVOD_SIZE and not node.args:
            return True
    return environment_key(node) == "WORLD_SIZE"


def needs_default_group(context: FileContext, node: cst.BaseExpression | None) -> bool:
    """A sampler's ``num_replicas`` that already needs an initialised default process group: left
    out (the sampler asks ``dist.get_world_size()``) or ``dist.get_world_size()`` itself (also
    through one assignment)."""
    if node is None:
        return True
    if isinstance(node, cst.Call):
        called = context.qualified_name(node.func)
        return called == "torch.distributed.get_world_size" and not node.args
    name = dotted_name(node)
    if name is not None and "." not in name:
        values = _assigned_values(context, node, name)
        return bool(values) and all(
            isinstance(v, cst.Call) and needs_default_group(context, v) for v in values or []
        )
    return False


def get_rank_call(context: FileContext, at: cst.CSTNode) -> str | None:
    """How code at ``at`` can call ``torch.distributed.get_rank``: ``dist.get_rank()`` after
    ``import torch.distributed as dist``, ``torch.distributed.get_rank()`` after ``import
    torch.distributed``, ``get_rank()`` after ``from torch.distributed import get_rank``, with the
    import at module level or in a function around ``at`` (an import inside another function is
    not visible there); ``None`` otherwise."""
    blocks: list[cst.CSTNode] = [context.module]
    blocks += [a for a in context.ancestors(at) if isinstance(a, cst.FunctionDef)]
    found: dict[str, str] = {}  # local name -> what it imports
    for block in blocks:
        for statement in _visible_statements(block):
            if isinstance(statement, cst.Import):
                for alias in statement.names:
                    full = dotted_name(alias.name) or ""
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        found[alias.asname.name.value] = full
                    elif full == "torch.distributed":
                        found["torch.distributed"] = full
            elif isinstance(statement, cst.ImportFrom) and not statement.relative:
                module = dotted_name(statement.module) if statement.module else None
                if module is None or isinstance(statement.names, cst.ImportStar):
                    continue
                for alias in statement.names:
                    local = dotted_name(alias.name) or ""
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        local = alias.asname.name.value
                    found[local] = f"{module}.{dotted_name(alias.name)}"
    for local, target in sorted(found.items()):
        if target == "torch.distributed.get_rank":
            return f"{local}()"
    for local, target in sorted(found.items()):
        if target == "torch.distributed":
            return f"{local}.get_rank()"
    return None


def _visible_statements(block: cst.CSTNode) -> list[cst.BaseSmallStatement]:
    """The small statements directly in a module or function body, and in the ``if`` / ``try``
    blocks there (``try: import torch.distributed as dist``)."""
    body = getattr(block, "body", None)
    items: list[cst.CSTNode] = list(body.body if isinstance(body, cst.BaseSuite) else body or [])
    found: list[cst.BaseSmallStatement] = []
    while items:
        item = items.pop(0)
        if isinstance(item, cst.SimpleStatementLine):
            found.extend(item.body)
        elif isinstance(item, (cst.If, cst.Try)):
            items.extend(item.body.body)
            if isinstance(item, cst.Try):
                for handler in item.handlers:
                    items.extend(handler.body.body)
    return found
