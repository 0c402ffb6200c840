"""SL104 ddp-loader-without-distributed-sampler: a training loader with no sampler that splits
the data, in a script that trains under DistributedDataParallel / FSDP."""

from __future__ import annotations

import ast
import builtins
import os
import re

import sampler_lint.analysis.lazy_libcst as cst
from sampler_lint.analysis.appending import append, keyword
from sampler_lint.analysis.imports import dotted_name
from sampler_lint.analysis.loader_calls import is_epoch_loop, is_evaluation_name
from sampler_lint.analysis.matching import get_arg, is_pure_reference
from sampler_lint.analysis.rank_split import (
    DATASET_CLASSES,
    SPLIT_IDENTIFIER,
    class_is_split,
)
from sampler_lint.analysis.sampler_family import (
    CLASS_FACTS,
    RANK_ATTRIBUTES,
    chain_of,
    constructed_class,
)
from sampler_lint.analysis.seeds import may_be_none, visible_shared_seed
from sampler_lint.analysis.set_epoch_fix import at_epoch_start
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.analysis.text_shapes import names_a_word
from sampler_lint.analysis.tree import descendants, scope_body_statements
from sampler_lint.rule import Applicability, Example, Fix, Replacement, Rule, Severity

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
_SAMPLER, _BATCH_SAMPLER = 3, 4
# What runs a model under data parallelism (last names of calls that resolve to torch or apex).
_WRAPS = ("DistributedDataParallel", "FullyShardedDataParallel", "fully_shard")
_INIT = ("init_process_group",)
_DISTRIBUTED_ROOTS = ("torch.", "apex.")
# Where the loaders this rule reads come from (torch's, and PyG's, which pass their arguments on).
_LOADERS = ("torch.utils.data", "torch_geometric.loader", "torch_geometric.data")
# torch's samplers that never read the rank: every process draws from the whole dataset.
_WHOLE_DATA_SAMPLERS = ("RandomSampler", "SequentialSampler", "WeightedRandomSampler")
# Libraries that give every process its share of a loader themselves (or build the loader):
# a file importing one is left alone.
_SHARDING_FRAMEWORKS = (
    "lightning", "pytorch_lightning", "lightning_fabric", "accelerate", "ray.train", "ray",
    "ignite", "composer", "mmengine", "mmcv", "detectron2", "catalyst", "speechbrain",
    "transformers.trainer", "trl", "colossalai", "horovod", "torch_xla", "determined",
)
_SHARDING_CALLS = ("setup_dataloaders", "auto_dataloader", "initialize")
# Names from transformers that take a dataset and shard it (HF Trainer and friends).
_HF_TRAINERS = re.compile(r"Trainer$")
# Calls that iterate the loader they are given, here and now (or wrap it for iteration).
_ITERATING = (
    "iter", "enumerate", "tqdm", "zip", "trange", "islice", "chain", "cycle", "Prefetcher",
    "prefetcher", "data_prefetcher", "DataPrefetcher",
)
# A condition that picks the distributed or the single-process path: a loader built under it
# belongs to one of them and the rule cannot tell which.
_DISTRIBUTED_TEST = re.compile(
    r"distributed|ddp|fsdp|world_size|rank|num_replicas|multi_?gpu|n_?gpus|num_gpus|"
    r"is_initialized|is_available|parallel",
    re.IGNORECASE,
)
# Synthetic data (benchmarks, smoke runs): there is nothing to split.
_SYNTHETIC = re.compile(r"^(?:randn|rand|randint|randn_like|rand_like)$|fake|dummy|synthetic",
                        re.IGNORECASE)
# Streaming and sharded sources split themselves (webdataset, HF streaming datasets).
_STREAMING = re.compile(r"^(?:wds|webdataset|WebDataset|streaming|IterableDataset)$")
_MAX_VALUE_DEPTH = 4
_BUILTINS = frozenset(dir(builtins))
_CALLEE_DEPTH = 2


class DdpLoaderWithoutDistributedSampler(Rule):
    code = "SL104"
    name = "ddp-loader-without-distributed-sampler"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    fix_risk = (
        "each process then trains on 1/W of the data per epoch (W times fewer steps: the "
        "schedule and epoch count were tuned for the old length), padded to a multiple of W"
    )
    requires = (
        ("DataLoader",),
        ("init_process_group", "DistributedDataParallel", "FullyShardedDataParallel",
         "fully_shard"),
    )
    collectors = (DATASET_CLASSES, CLASS_FACTS)
    uses_index = True
    has_syntax_filter = True

    @classmethod
    def may_match_text(cls, text: str) -> bool:
        # The names the syntax stage wants called or imported, each as a whole word: not the
        # `DistributedDataParallelKwargs` of every accelerate script (diffusers: 29 files parsed
        # for it, none kept).
        return names_a_word(text, ("DataLoader",)) and names_a_word(text, _WRAPS + _INIT)

    @classmethod
    def may_match(cls, summary: SyntaxSummary) -> bool:
        # What visit_Module and _is_torch_loader require, read from Python's tree: a call that
        # resolves to DistributedDataParallel / FSDP / init_process_group and one to a
        # DataLoader (through the file's imports: the called name, or the name imported under
        # an alias, ends that way), and no import of a framework that shards loaders itself
        # (libcst's import table holds every import statement of the file, as ast does).
        names = summary.names
        if "DataLoader" not in names or not any(name in names for name in _WRAPS + _INIT):
            return False
        modules = {alias.name for node in summary.nodes(ast.Import) for alias in node.names}
        modules |= {"." * node.level + (node.module or "")
                    for node in summary.nodes(ast.ImportFrom)}
        if any(
            module == prefix or module.startswith(prefix + ".")
            for module in modules for prefix in _SHARDING_FRAMEWORKS
        ):
            return False
        # A call that may be torch's (or PyG's) DataLoader, and one that may start DDP, through
        # the file's imports as _is_torch_loader and _runs_distributed read them: dgl's and
        # graphbolt's own DataLoader in a DDP script are neither (dgl: 20 files linted for it).
        calls = summary.nodes(ast.Call)
        return any(
            summary.may_resolve_to(call.func, _LOADERS, ("DataLoader",)) for call in calls
        ) and any(
            summary.may_resolve_to(call.func, _DISTRIBUTED_ROOTS, _WRAPS + _INIT)
            for call in calls
        )

    def visit_Module(self, node: cst.Module) -> None:
        self._evidence: list[cst.CSTNode] = []
        self._skip_file = _is_test_file(str(self.context.path)) or self._uses_framework()
        if self._skip_file:
            return
        for child in descendants(node):
            if isinstance(child, cst.Call) and self._runs_distributed(child):
                self._evidence.append(child)
        if not self._evidence:
            self._skip_file = True

    # -- the file ---------------------------------------------------------------------------------
    def _uses_framework(self) -> bool:
        imports = self.context.imports
        if imports.imports_any(_SHARDING_FRAMEWORKS):
            return True
        if any(
            target.startswith(("transformers.", "trl.")) and _HF_TRAINERS.search(target)
            for target in imports.aliases.values()
        ):
            return True
        return "training_data" in self.context.source and imports.imports_any(("deepspeed",))

    def _runs_distributed(self, call: cst.Call) -> bool:
        qualified = self.context.qualified_name(call.func) or ""
        last = qualified.rsplit(".", 1)[-1]
        if last not in _WRAPS and last not in _INIT:
            return False
        return qualified.startswith(_DISTRIBUTED_ROOTS)

    # -- the loader -------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if self._skip_file or not self._is_torch_loader(node):
            return
        if any(arg.star for arg in node.args) or len(
            [a for a in node.args if a.keyword is None]
        ) > _SAMPLER:
            return  # positional samplers and **kwargs: not read
        if get_arg(node, None, "batch_sampler") is not None:
            return
        sampler = get_arg(node, None, "sampler")
        kind = "none" if sampler is None else self._sampler_kind(node, sampler.value, 0)
        if kind is None:
            return
        dataset = get_arg(node, 0, "dataset")
        if dataset is None:
            return
        function = self.context.enclosing_function(node)
        scope: cst.CSTNode = function if function is not None else self.context.module
        if self._dataset_is_split(scope, dataset.value, 0):
            return
        target = self._bound_to(node)
        if target is None:
            return
        if is_evaluation_name(target) or self._names_evaluation(dataset.value):
            return
        if self._under_distributed_test(node):
            return
        klass = self.context.enclosing_class(node)
        if "." in target and not (target.startswith("self.") and klass is not None):
            return
        owner: cst.CSTNode = klass if target.startswith("self.") and klass else scope
        if target != "<inline>" and target != "<returned>" and not self._assigned_once(
            owner, target
        ):
            return
        if not self._near_evidence(node, owner):
            return
        if not target.startswith("<") and self._handed_to_sharder(owner, target):
            return
        if not self._trained_on(node, owner, target):
            return
        what = "no sampler" if kind == "none" else (
            f"a `{kind}`" if kind in _WHOLE_DATA_SAMPLERS
            else f"a `{kind}` (a sampler that never reads the rank)"
        )
        shown = "this loader" if target.startswith("<") else f"`{target}`"
        message = (
            f"{shown} has {what} in a script that trains under DistributedDataParallel / FSDP: "
            "every process iterates the whole dataset, so the processes train on the same "
            "samples and an epoch is W times longer than it should be; pass "
            "`sampler=DistributedSampler(dataset)` (and call `set_epoch` each epoch)"
        )
        fix = self._fix(node, target, kind, dataset) if kind == "none" else None
        self.report(node, message, fix)

    def _is_torch_loader(self, call: cst.Call) -> bool:
        func = call.func
        qualified = self.context.qualified_name(func) or ""
        if qualified.rsplit(".", 1)[-1] != "DataLoader":
            return False
        if isinstance(func, cst.Name) and func.value not in self.context.imports.aliases:
            return False  # a class of this file
        return qualified.startswith(_LOADERS)

    def _sampler_kind(
        self, loader: cst.Call, value: cst.BaseExpression, depth: int
    ) -> str | None:
        """``"none"``, the name of one of torch's whole-data samplers, or ``None`` (a sampler
        that may split the data: anything the rule cannot read)."""
        if isinstance(value, cst.Name) and value.value == "None":
            return "none"
        if isinstance(value, cst.Call):
            qualified = self.context.qualified_name(value.func) or ""
            last = qualified.rsplit(".", 1)[-1]
            if last in _WHOLE_DATA_SAMPLERS and qualified.startswith("torch."):
                return last
            return self._project_sampler(value)
        if isinstance(value, cst.Name) and depth < 2:
            values = self._values(loader, value.value)
            kinds = [self._sampler_kind(loader, v, depth + 1) for v in values]
            if not kinds or any(k is None for k in kinds):
                return None
            named = [k for k in kinds if k != "none"]
            return named[0] if named else "none"
        return None

    def _project_sampler(self, call: cst.Call) -> str | None:
        """The name of a project sampler class that never reads the rank: its chain of bases
        ends in torch's samplers other than ``DistributedSampler`` and is wholly visible, no
        class of it reads or sets ``self.rank`` / ``self.num_replicas`` (and the like) or
        mentions a rank, world size, shard or worker anywhere, and the construction is handed
        none of those either."""
        name = dotted_name(call.func)
        if name is None:
            return None
        index = self.context.index
        found = constructed_class(index, name, str(self.context.path))
        if found is None:
            return None
        chain = chain_of(index, found)
        if not chain.torch_bases or chain.opaque or chain.torch_bases & {
            "DistributedSampler", "BatchSampler"
        }:
            return None
        if (chain.read | chain.assigned) & RANK_ATTRIBUTES or class_is_split(index, name):
            return None
        if any(self._mentions_split(arg.value) for arg in call.args):
            return None
        return found.name

    def _mentions_split(self, value: cst.BaseExpression) -> bool:
        vocabulary = self.context.vocabulary
        for node in descendants(value):
            word = node.value if isinstance(node, cst.Name) else (
                node.attr.value if isinstance(node, cst.Attribute) else None
            )
            if word is not None and (
                SPLIT_IDENTIFIER.search(word) or word in vocabulary.rank_names
                or word in vocabulary.world_size_names
            ):
                return True
        return False

    def _values(self, at: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
        """What ``name`` is assigned in the function around ``at`` (else the module), with the
        alternatives of conditional expressions opened."""
        function = self.context.enclosing_function(at)
        scope: cst.CSTNode = function if function is not None else self.context.module
        values = self.context.assignments(scope).get(name, []) + _paired(scope, name)
        if not values and function is not None:
            params = function.params
            every = [*params.posonly_params, *params.params, *params.kwonly_params]
            if any(p.name.value == name for p in every):
                return []
            module = self.context.module
            values = self.context.assignments(module).get(name, []) + _paired(module, name)
        opened: list[cst.BaseExpression] = []
        stack = list(values)
        while stack:
            value = stack.pop()
            if isinstance(value, cst.IfExp):
                stack.extend([value.body, value.orelse])
            else:
                opened.append(value)
        return opened

    # -- the dataset ------------------------------------------------------------------------------
    def _dataset_is_split(self, scope: cst.CSTNode, value: cst.BaseExpression, depth: int) -> bool:
        """The dataset expression, or what its names were assigned (a few steps back), reads
        the rank, the world size, a shard or a worker, is a streaming or synthetic source, or
        constructs a project class that splits or is iterable; also when the rule cannot see
        where it comes from (a function parameter is read as it is)."""
        for node in _data_nodes(value):
            if isinstance(node, cst.Name):
                word = node.value
            elif isinstance(node, cst.Attribute):
                word = node.attr.value
            elif isinstance(node, cst.Arg) and node.keyword is not None:
                word = node.keyword.value
            else:
                continue
            if SPLIT_IDENTIFIER.search(word) or _SYNTHETIC.search(word) or _STREAMING.match(word):
                return True
            if word in self.context.vocabulary.rank_names or word in (
                self.context.vocabulary.world_size_names
            ):
                return True
        for node in _data_nodes(value):
            if isinstance(node, cst.Call):
                called = dotted_name(node.func)
                if called is None:
                    continue
                if class_is_split(self.context.index, called):
                    return True
                local = self._function_of_file(called)
                if local is not None and self._reads_split_words(local):
                    return True
        if depth >= _MAX_VALUE_DEPTH:
            return False
        for node in self._data_references(value):
            name = dotted_name(node) or ""
            assigned = self._values(value, name) if "." not in name else self._self_values(
                value, name
            )
            if not assigned and self._unknown_origin(value, name):
                return True  # handed in by a caller that may have split it for this process
            for item in assigned:
                if self._dataset_is_split(scope, item, depth + 1):
                    return True
        return False

    def _data_references(self, value: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The names the data comes from: ``dataset`` and ``idx`` in ``dataset[idx]``,
        ``train_nid`` in ``train_nid.numpy()``, ``self.train_set``; not ``args`` in
        ``args.data_dir`` (configuration) nor the functions called."""
        found: list[cst.BaseExpression] = []
        callees = {id(n.func) for n in _data_nodes(value) if isinstance(n, cst.Call)}
        for node in _data_nodes(value):
            if id(node) in callees:
                if isinstance(node, cst.Attribute):
                    # `train_idx.numpy()`: the receiver is data (unless it is a module).
                    receiver = node.value
                    if dotted_name(receiver) is not None and not self._is_module(receiver):
                        found.append(receiver)
                continue
            if (isinstance(node, cst.Name) and not self._is_attribute_part(node)) or (
                isinstance(node, cst.Attribute) and dotted_name(node.value) == "self"
            ):
                found.append(node)
        return found

    def _is_attribute_part(self, name: cst.Name) -> bool:
        """``args`` in ``args.data_dir``, ``data_dir`` there too, or the keyword of an
        argument: not data of its own."""
        parent = self.context.parent(name)
        if isinstance(parent, cst.Attribute):
            return True
        return isinstance(parent, cst.Arg) and parent.keyword is name

    def _is_module(self, node: cst.BaseExpression) -> bool:
        root = (dotted_name(node) or "").split(".", 1)[0]
        return root in self.context.imports.aliases

    def _self_values(self, at: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
        klass = self.context.enclosing_class(at)
        if klass is None or not name.startswith("self."):
            return []
        values: list[cst.BaseExpression] = []
        for statement in klass.body.body:
            if isinstance(statement, cst.FunctionDef):
                values.extend(self.context.assignments(statement).get(name, []))
        return values

    def _unknown_origin(self, at: cst.CSTNode, name: str) -> bool:
        """A name bound by something the rule does not read (a parameter, a tuple unpacking,
        a ``for`` or ``with`` target, an attribute set elsewhere); not an import, a builtin or
        a class or function of the module."""
        if name in self.context.imports.aliases or name in _BUILTINS or name in ("True",
                                                                                "False", "None"):
            return False
        return not any(
            isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value == name
            for s in self.context.module.body
        )

    def _function_of_file(self, name: str) -> cst.FunctionDef | None:
        if "." in name or name in self.context.imports.aliases:
            return None
        for statement in self.context.module.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
                return statement
        return None

    def _reads_split_words(self, function: cst.FunctionDef) -> bool:
        for node in descendants(function):
            word = None
            if isinstance(node, cst.Name):
                word = node.value
            elif isinstance(node, cst.Attribute):
                word = node.attr.value
            if word is not None and (
                SPLIT_IDENTIFIER.search(word) or _STREAMING.match(word)
                or class_is_split(self.context.index, word)
            ):
                return True
        return False

    def _names_evaluation(self, value: cst.BaseExpression) -> bool:
        name = dotted_name(value)
        if name is None and isinstance(value, cst.Subscript):
            inner = value.slice[0].slice if value.slice else None
            if isinstance(inner, cst.Index) and isinstance(inner.value, cst.SimpleString):
                key = inner.value.evaluated_value
                return isinstance(key, str) and is_evaluation_name(key)
            return False
        return name is not None and is_evaluation_name(name)

    # -- where the loader goes --------------------------------------------------------------------
    def _bound_to(self, call: cst.Call) -> str | None:
        """The name (``loader``, ``self.train_loader``) the loader is assigned to; ``<inline>``
        for ``for batch in DataLoader(...)``; ``<returned>`` for ``return DataLoader(...)``."""
        parent = self.context.parent(call)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            return dotted_name(parent.targets[0].target)
        if isinstance(parent, cst.AnnAssign):
            return dotted_name(parent.target)
        if isinstance(parent, cst.For) and parent.iter is call:
            return "<inline>"
        if isinstance(parent, cst.Return):
            return "<returned>"
        return None

    def _under_distributed_test(self, node: cst.CSTNode) -> bool:
        for ancestor in self.context.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
            test = None
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)):
                test = ancestor.test
            if test is not None and _DISTRIBUTED_TEST.search(self.context.code_for(test)):
                return True
        return False

    def _assigned_once(self, owner: cst.CSTNode, target: str) -> bool:
        if isinstance(owner, cst.ClassDef):
            count = sum(
                len(self.context.assignments(s).get(target, []))
                for s in owner.body.body if isinstance(s, cst.FunctionDef)
            )
        else:
            count = len(self.context.assignments(owner).get(target, []))
        return count == 1

    def _near_evidence(self, node: cst.CSTNode, owner: cst.CSTNode) -> bool:
        """The model is wrapped (or the process group started) in the function that builds the
        loader or one enclosing it; in its class, for a loader kept on ``self``; at module level
        for a loader built there; in a function of this file that this function calls; or in a
        function of this file that calls this one."""
        containers = [a for a in self.context.ancestors(node)
                      if isinstance(a, (cst.FunctionDef, cst.ClassDef))]
        if isinstance(owner, cst.ClassDef):
            containers.append(owner)
        for evidence in self._evidence:
            home = self._home(evidence)
            if home is None:
                if not any(isinstance(c, cst.FunctionDef) for c in containers):
                    return True  # both at module level: a script
                continue
            if home in containers or any(a in containers for a in self.context.ancestors(home)):
                return True
        function = self.context.enclosing_function(node)
        if function is None:
            return False
        homes = {self._home(e) for e in self._evidence}
        # A helper it calls (`setup(rank, world_size)`) or a caller (`main_worker` calling
        # `build_loaders(args)`).
        for call in descendants(function):
            if isinstance(call, cst.Call):
                callee = self._function_of_file(dotted_name(call.func) or "")
                if callee is not None and callee in homes:
                    return True
        return any(home is not None and self._calls(home, function.name.value) for home in homes)

    def _home(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return self.context.enclosing_function(node)

    def _calls(self, scope: cst.CSTNode, name: str) -> bool:
        for node in descendants(scope):
            if isinstance(node, cst.Call):
                called = dotted_name(node.func) or ""
                if called == name or called == f"self.{name}":
                    return True
        return False

    def _handed_to_sharder(self, owner: cst.CSTNode, target: str) -> bool:
        """The loader goes to a call that shards loaders itself (``accelerator.prepare``,
        Ray Train's ``prepare_data_loader``, Fabric's ``setup_dataloaders``, ignite's
        ``auto_dataloader``), whatever the file imports."""
        for node in descendants(owner):
            if isinstance(node, cst.Call) and _handed(node, {target}) is not None:
                last = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
                if last.startswith("prepare") or last in _SHARDING_CALLS:
                    return True
        return False

    # -- the fix ----------------------------------------------------------------------------------
    def _fix(self, loader: cst.Call, target: str, kind: str, dataset: cst.Arg) -> Fix | None:
        """``sampler=DistributedSampler(<dataset>, shuffle=<the loader's>[, seed=<seed>])``
        in place of the loader's ``shuffle``, and, for a shuffling one, ``<loader>.sampler.
        set_epoch(<epoch>)`` first in the epoch loop of the same function. Offered only where
        the process group surely exists when the loader is built (see ``_group_ready``)."""
        if kind != "none" or not is_pure_reference(dataset.value):
            return None
        function = self.context.enclosing_function(loader)
        if function is None or not self._group_ready(function, loader):
            return None
        bound = self.context.imports.aliases.get("DistributedSampler")
        if bound is not None and not bound.startswith("torch."):
            return None  # the name means something else here
        if self._defined_in_module("DistributedSampler"):
            return None
        shuffle_arg = get_arg(loader, 2, "shuffle")
        if shuffle_arg is not None and shuffle_arg.keyword is None:
            return None
        shuffle = "False"
        if shuffle_arg is not None:
            shuffle = dotted_name(shuffle_arg.value) or ""
            if shuffle not in ("True", "False"):
                return None  # a shuffle from configuration: which one is meant is not clear
        replacements: list[Replacement] = []
        arguments = f"{self.context.code_for(dataset.value)}, shuffle={shuffle}"
        if shuffle == "True":
            if "." in target or target.startswith("<"):
                return None
            loop = self._epoch_loop(function, loader, target)
            if loop is None:
                return None
            insertion = at_epoch_start(self.context, loop, f"{target}.sampler", guarded=False)
            if insertion is None:
                return None
            replacements.append(insertion)
            seed = visible_shared_seed(self.context, loader)
            if seed is not None and not may_be_none(self.context, loader, seed):
                arguments += f", seed={seed}"
        sampler = cst.parse_expression(f"DistributedSampler({arguments})")
        replacements.insert(0, (loader, self._with_sampler(loader, sampler, shuffle_arg)))
        return Fix(
            replacements=replacements,
            applicability=Applicability.UNSAFE,
            message=f"Give each process its share: `sampler=DistributedSampler(..., "
                    f"shuffle={shuffle})`" + (" and `set_epoch` each epoch"
                                             if shuffle == "True" else ""),
            imports=[("torch.utils.data", "DistributedSampler")],
        )

    def _with_sampler(
        self, loader: cst.Call, sampler: cst.BaseExpression, shuffle_arg: cst.Arg | None
    ) -> cst.Call:
        """The loader with ``sampler=<sampler>`` where ``shuffle=`` (or ``sampler=None``) was,
        else after its last argument."""
        args = list(loader.args)
        old_sampler = get_arg(loader, None, "sampler")
        if shuffle_arg is not None and old_sampler is not None:
            args.remove(shuffle_arg)
            if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT and (
                shuffle_arg is loader.args[-1]
            ):
                args[-1] = args[-1].with_changes(comma=shuffle_arg.comma)
        place = old_sampler if old_sampler is not None else shuffle_arg
        if place is not None:
            position = args.index(place)
            args[position] = place.with_changes(
                keyword=cst.Name("sampler"), value=sampler, equal=place.equal
            )
        else:
            args = append(args, keyword("sampler", sampler), loader.whitespace_before_args)
        return loader.with_changes(args=args)

    def _defined_in_module(self, name: str) -> bool:
        return name in self.context.assignments(self.context.module) or any(
            isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value == name
            for s in self.context.module.body
        )

    def _group_ready(self, function: cst.FunctionDef, loader: cst.Call) -> bool:
        """The process group exists, on every path, when the loader is built: the function
        starts it (``init_process_group`` or a helper of this file that does) unconditionally
        in a statement before the loader's, or wraps a model in DDP / FSDP unconditionally
        and never starts the group itself (the caller did)."""
        body = function.body
        if not isinstance(body, cst.IndentedBlock):
            return False
        statements = list(body.body)
        loader_at = self._top_statement(function, loader)
        if loader_at is None:
            return False
        homes = {id(self._home(e)) for e in self._evidence if self._home(e) is not None}
        starts: list[int] = []
        wraps = False
        for position, statement in enumerate(statements):
            for node in descendants(statement):
                if not isinstance(node, cst.Call):
                    continue
                callee = self._function_of_file(dotted_name(node.func) or "")
                starting = (
                    callee is not None and id(callee) in homes and self._starts_group(callee)
                ) or (self._runs_distributed(node) and _last(self, node) in _INIT)
                wrapping = self._runs_distributed(node) and _last(self, node) in _WRAPS
                if not (starting or wrapping):
                    continue
                if starting and not self._unconditional(node, function):
                    return False  # a group started on some paths only: not surely ready
                if starting:
                    starts.append(position)
                elif self._unconditional(node, function):
                    wraps = True
        if starts:
            return all(position < loader_at for position in starts)
        return wraps

    def _starts_group(self, function: cst.FunctionDef) -> bool:
        return any(
            isinstance(n, cst.Call) and self._runs_distributed(n) and _last(self, n) in _INIT
            for n in descendants(function)
        )

    def _top_statement(self, function: cst.FunctionDef, node: cst.CSTNode) -> int | None:
        body = function.body
        assert isinstance(body, cst.IndentedBlock)
        statements: list[cst.CSTNode] = list(body.body)
        for ancestor in [node, *self.context.ancestors(node)]:
            if ancestor in statements:
                return statements.index(ancestor)
        return None

    def _unconditional(self, node: cst.CSTNode, function: cst.FunctionDef) -> bool:
        for ancestor in self.context.ancestors(node):
            if ancestor is function:
                return True
            if isinstance(ancestor, (
                cst.If, cst.IfExp, cst.Try, cst.While, cst.For, cst.Match, cst.BooleanOperation,
                cst.Lambda, cst.FunctionDef, cst.ClassDef,
            )):
                return False
        return False

    def _epoch_loop(self, function: cst.FunctionDef, loader: cst.Call, name: str) -> cst.For | None:
        """The one epoch loop of ``function`` after the loader's statement that uses the
        loader (iterates it or hands it on) and calls no ``set_epoch`` yet."""
        loader_at = self._top_statement(function, loader)
        body = function.body
        assert isinstance(body, cst.IndentedBlock)
        found = []
        for position, statement in enumerate(body.body):
            if not isinstance(statement, cst.For) or loader_at is None or position <= loader_at:
                continue
            if not is_epoch_loop(statement):
                continue
            names = {n.value for n in descendants(statement.body) if isinstance(n, cst.Name)}
            if name in names:
                found.append(statement)
        if len(found) != 1:
            return None
        loop = found[0]
        if "set_epoch" in self.context.code_for(loop.body):
            return None
        return loop

    # -- training ---------------------------------------------------------------------------------
    def _trained_on(self, node: cst.Call, owner: cst.CSTNode, target: str) -> bool:
        if target == "<inline>":
            loop = self.context.parent(node)
            return isinstance(loop, cst.For) and _has_training_step(loop.body)
        if target == "<returned>":
            function = self.context.enclosing_function(node)
            return function is not None and self._callers_train(function, None)
        if isinstance(owner, cst.ClassDef):
            return any(
                self._trains(s, {target}, 0)
                for s in owner.body.body if isinstance(s, cst.FunctionDef)
            )
        if self._trains(owner, {target}, 0):
            return True
        function = self.context.enclosing_function(node)
        if function is None:
            return False
        position = self._returned_position(function, target)
        return position is not None and self._callers_train(function, position)

    def _trains(self, scope: cst.CSTNode, names: set[str], depth: int) -> bool:
        """Whether ``scope`` trains on the loader called one of ``names``: a loop over it (or
        over ``enumerate(it)``, ``tqdm(it)``, ``iter(it)`` bound to a name) whose body steps an
        optimiser or calls ``backward``; or it is handed to a call named ``train...``, or to a
        function of this file that does so."""
        names = set(names)
        for _ in range(2):  # aliases: `it = iter(loader)`, `pbar = tqdm(loader)`
            for name, values in self.context.assignments(scope).items():
                if any(isinstance(v, cst.Call) and _iterates(v, names) for v in values):
                    names.add(name)
        for child in descendants(scope, prune=lambda n: n is not scope and isinstance(
                n, (cst.FunctionDef, cst.ClassDef))):
            if isinstance(child, cst.For) and _iterates(child.iter, names):
                if _has_training_step(child.body):
                    return True
            elif isinstance(child, cst.Call):
                called = dotted_name(child.func) or ""
                last = called.rsplit(".", 1)[-1]
                handed = _handed(child, names)
                if handed is None:
                    continue
                if last == "next":
                    if self._in_training_loop(child, scope):
                        return True
                    continue
                if last.lower().startswith("train") and not last.lower().startswith("trainer"):
                    return True
                if depth >= _CALLEE_DEPTH:
                    continue
                callee = self._callee(child)
                if callee is None:
                    continue
                parameter = _parameter_for(child, callee, handed)
                if parameter is not None and self._trains(callee, {parameter}, depth + 1):
                    return True
        return False

    def _in_training_loop(self, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
        for ancestor in self.context.ancestors(node):
            if ancestor is scope:
                return False
            if isinstance(ancestor, (cst.For, cst.While)) and _has_training_step(ancestor.body):
                return True
        return False

    def _callee(self, call: cst.Call) -> cst.FunctionDef | None:
        func = call.func
        if isinstance(func, cst.Attribute) and dotted_name(func.value) == "self":
            klass = self.context.enclosing_class(call)
            if klass is None:
                return None
            methods = [s for s in klass.body.body
                       if isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value]
            return methods[0] if len(methods) == 1 else None
        return self._function_of_file(dotted_name(func) or "")

    def _returned_position(self, function: cst.FunctionDef, name: str) -> int | None:
        """Where ``function`` returns the loader: ``-1`` for ``return loader``, its index for
        ``return train_loader, val_loader``; ``None`` when it is not returned."""
        for node in descendants(function):
            if isinstance(node, cst.Return) and node.value is not None:
                value = node.value
                if isinstance(value, cst.Name) and value.value == name:
                    return -1
                if isinstance(value, cst.Tuple):
                    for position, element in enumerate(value.elements):
                        if isinstance(element.value, cst.Name) and element.value.value == name:
                            return position
        return None

    def _callers_train(self, function: cst.FunctionDef, position: int | None) -> bool:
        """A function of this file calls ``function`` (``a = f(...)``, ``a, b = f(...)``) and
        trains on what it gets back at ``position`` (``None`` / ``-1``: the whole value)."""
        name = function.name.value
        for statement in descendants(self.context.module):
            if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
                continue
            value = statement.value
            if not isinstance(value, cst.Call) or dotted_name(value.func) not in (
                name, f"self.{name}"
            ):
                continue
            target = statement.targets[0].target
            bound: str | None = None
            if position is None or position == -1:
                bound = dotted_name(target)
            elif isinstance(target, (cst.Tuple, cst.List)) and position < len(target.elements):
                bound = dotted_name(target.elements[position].value)
            if bound is None or is_evaluation_name(bound):
                continue
            caller = self.context.enclosing_function(statement)
            scope: cst.CSTNode = caller if caller is not None else self.context.module
            if "." not in bound and self._trains(scope, {bound}, 0):
                return True
        return False

    documentation = """
    A training loader without a sampler that splits the data, under DistributedDataParallel.

    ## What it does
    Flags a torch `DataLoader` built with no `sampler=` (or `sampler=None`), or with one of
    torch's samplers that never read the rank (`RandomSampler`, `SequentialSampler`,
    `WeightedRandomSampler`), in a file that wraps a model in `DistributedDataParallel` /
    `FullyShardedDataParallel` / `fully_shard` or calls `init_process_group` (torch's or
    apex's), when all of this holds:

    - the wrap or `init_process_group` is in the function that builds the loader (or one
      around it), in its class for a loader kept on `self`, at module level for a script, or
      in a function of the file that calls this one or that this one calls;
    - the loader is trained on: a loop over it (directly, or through `enumerate`, `tqdm`,
      `iter` + `next`) calls `backward` or `step`, or it is handed to a call named `train...`,
      or to a function of the file that does so, or returned to a caller of the file that does;
    - it is assigned once in its function (or class), is not built under a condition that
      picks the distributed or the single-process path (`if args.distributed: ... else: ...`),
      and neither the loader nor its dataset is named for evaluation (`val`, `test`, `eval`).

    Not flagged: a `batch_sampler=`, a sampler the rule cannot read (a project class, a
    parameter), `**kwargs`; a dataset already split by process: its expression, or what its
    names were assigned, reads the rank, the world size, a shard, the DataLoader worker
    (`split_dataset_by_node`, `ds.shard(...)`, `x[rank::world_size]`, `Subset(ds, my_idx)`
    with `my_idx` from the rank), or constructs a project class that does or that is an
    `IterableDataset`; streaming (webdataset, `streaming=True`) and synthetic data (`randn`,
    `FakeData`, `Dummy...`); files that import a library that shards loaders itself (Lightning,
    Fabric, accelerate, Ray Train, ignite, Composer, mmengine, detectron2, HF / trl `Trainer`,
    DeepSpeed given `training_data=`...), and test files (a test of DDP often feeds every rank
    the same batches on purpose).

    ## Why is this bad
    DistributedDataParallel averages the gradients of W processes, each meant to see a
    different 1/W of the data. A plain DataLoader hands every process the whole dataset: with
    `shuffle=False` all processes compute the same batches (W GPUs do the work of one, and
    each epoch takes W times the steps it should), with `shuffle=True` they draw overlapping
    random subsets. The loss still falls, so nothing looks wrong; it is the most common
    mistake of first DDP scripts (PyTorch forum threads "DDP training is not faster", "each
    GPU sees the same data").

    ## Example
    ```python
    dist.init_process_group("nccl")
    model = DDP(model.cuda(), device_ids=[local_rank])
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    for epoch in range(epochs):
        for x, y in loader:
            loss_fn(model(x), y).backward()
            optimizer.step()
    ```

    ## Use instead
    ```python
    dist.init_process_group("nccl")
    model = DDP(model.cuda(), device_ids=[local_rank])
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss_fn(model(x), y).backward()
            optimizer.step()
    ```

    ## Fix safety
    Unsafe: each process then trains on 1/W of the data per epoch, so an epoch has W times
    fewer steps (learning-rate schedules, epoch counts and logging intervals were tuned for the
    old length), and `DistributedSampler` pads the data with repeated samples to a multiple
    of W. The fix replaces the loader's `shuffle=` (absent, `True` or `False`; `sampler=None`
    too) with `sampler=DistributedSampler(<dataset>, shuffle=<the same>)`, adding
    `seed=<seed>` when a seed shared by every process is visible (a parameter or local named
    like a seed that cannot be `None`), and imports `DistributedSampler` from
    `torch.utils.data`. For a shuffling loader it also inserts `<loader>.sampler.set_epoch(
    <epoch>)` as the first statement of the one epoch loop of the same function that uses the
    loader (else: no fix). It is offered only where the process group surely exists when the
    loader is built, since `DistributedSampler()` raises otherwise: the function starts it
    unconditionally (`init_process_group`, or a helper of the file that calls it) before the
    loader's statement, or wraps the model unconditionally and never starts the group itself.
    A loader built under `if args.ddp:`-style conditions, before the group starts, from a
    dataset expression that is not a plain name, kept on `self`, returned, or with a
    `RandomSampler`, is reported without a fix.

    ## References
    - torch `DistributedSampler` and the DDP tutorial ("use DistributedSampler to ... load a
      subset of the original dataset that is exclusive to it")
    - pytorch/examples `imagenet/main.py` (the sampler only when `args.distributed`)
    """

    examples = (
        Example(
            "import torch.distributed as dist\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "from torch.utils.data import DataLoader\n"
            "from torchvision.datasets import MNIST\n"
            "\n"
            "\n"
            "def main(model, optimizer, epochs):\n"
            "    dist.init_process_group('nccl')\n"
            "    model = DDP(model)\n"
            "    dataset = MNIST('data', train=True)\n"
            "    loader = DataLoader(dataset, batch_size=32, shuffle=True)\n"
            "    for epoch in range(epochs):\n"
            "        for x, y in loader:\n"
            "            model(x).sum().backward()\n"
            "            optimizer.step()\n",
            lines=(11,),
            fixed=(
                "import torch.distributed as dist\n"
                "from torch.nn.parallel import DistributedDataParallel as DDP\n"
                "from torch.utils.data import DistributedSampler, DataLoader\n"
                "from torchvision.datasets import MNIST\n"
                "\n"
                "\n"
                "def main(model, optimizer, epochs):\n"
                "    dist.init_process_group('nccl')\n"
                "    model = DDP(model)\n"
                "    dataset = MNIST('data', train=True)\n"
                "    loader = DataLoader(dataset, batch_size=32, "
                "sampler=DistributedSampler(dataset, shuffle=True))\n"
                "    for epoch in range(epochs):\n"
                "        loader.sampler.set_epoch(epoch)\n"
                "        for x, y in loader:\n"
                "            model(x).sum().backward()\n"
                "            optimizer.step()\n"
            ),
        ),
        Example(
            "import torch.distributed as dist\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "from torch.utils.data import DataLoader, DistributedSampler\n"
            "from torchvision.datasets import MNIST\n"
            "\n"
            "\n"
            "def main(model, optimizer, epochs):\n"
            "    dist.init_process_group('nccl')\n"
            "    model = DDP(model)\n"
            "    dataset = MNIST('data', train=True)\n"
            "    sampler = DistributedSampler(dataset)\n"
            "    loader = DataLoader(dataset, batch_size=32, sampler=sampler)\n"
            "    for epoch in range(epochs):\n"
            "        sampler.set_epoch(epoch)\n"
            "        for x, y in loader:\n"
            "            model(x).sum().backward()\n"
            "            optimizer.step()\n"
        ),
    )


def _is_test_file(path: str) -> bool:
    """By its name or its own folder's (a folder higher up may hold the whole project)."""
    name = os.path.basename(path)
    folder = os.path.basename(os.path.dirname(path))
    return (
        name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
        or folder in ("tests", "test", "unittests", "unit_tests")
    )


def _iterates(expr: cst.BaseExpression, names: set[str]) -> bool:
    """``loader``, ``self.loader``, or an iterating call over it (``enumerate(loader)``,
    ``tqdm(enumerate(loader), ...)``)."""
    name = dotted_name(expr)
    if name is not None:
        return name in names
    if isinstance(expr, cst.Call):
        called = (dotted_name(expr.func) or "").rsplit(".", 1)[-1]
        if called in _ITERATING:
            return any(_iterates(arg.value, names) for arg in expr.args)
    return False


def _handed(call: cst.Call, names: set[str]) -> str | None:
    for arg in call.args:
        name = dotted_name(arg.value)
        if name is not None and name in names:
            return name
    return None


def _has_training_step(body: cst.CSTNode) -> bool:
    """``loss.backward()``, ``optimizer.step()``, ``scaler.scale(loss).backward()``, or a call
    named ``train_step`` / ``training_step``."""
    for node in descendants(body):
        if isinstance(node, cst.Call):
            func = node.func
            last = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else ""
            )
            if last in ("backward", "step") or last.startswith(("train_step", "training_step")):
                return True
    return False


def _parameter_for(call: cst.Call, callee: cst.FunctionDef, name: str) -> str | None:
    params = callee.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if isinstance(call.func, cst.Attribute) and positional[:1] in (["self"], ["cls"]):
        positional = positional[1:]
    position = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if dotted_name(arg.value) == name:
                return arg.keyword.value
            continue
        if dotted_name(arg.value) == name:
            return positional[position] if position < len(positional) else None
        position += 1
    return None




# Calls whose arguments say where the data goes, not what it is (`x.to(device)`, with `device`
# from the rank).
_PLACING = ("to", "cuda", "pin_memory", "type", "float", "half", "long", "int", "bfloat16")


def _data_nodes(value: cst.BaseExpression) -> list[cst.CSTNode]:
    """The nodes of ``value`` without the arguments of calls that place or cast data."""
    skipped: set[int] = set()
    for node in descendants(value):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _PLACING
        ):
            skipped.update(id(arg) for arg in node.args)
    return [n for n in descendants(value, prune=lambda n: id(n) in skipped)
            if id(n) not in skipped]


def _paired(scope: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """``x_train`` in ``x_train, y_train = a[idx], b[idx]``: the element assigned to it."""
    found: list[cst.BaseExpression] = []
    for statement in scope_body_statements(scope):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Assign) or not isinstance(small.value, cst.Tuple):
                continue
            for target in small.targets:
                inner = target.target
                if not isinstance(inner, (cst.Tuple, cst.List)):
                    continue
                if len(inner.elements) != len(small.value.elements):
                    continue
                for element, value in zip(inner.elements, small.value.elements, strict=True):
                    if dotted_name(element.value) == name and not isinstance(
                        value, cst.StarredElement
                    ):
                        found.append(value.value)
    return found


def _last(rule: DdpLoaderWithoutDistributedSampler, call: cst.Call) -> str:
    return (rule.context.qualified_name(call.func) or "").rsplit(".", 1)[-1]
