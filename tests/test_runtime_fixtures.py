"""The fixture outputs, executed with real torch (data-driven: every ``.fixed.py`` of the rule
families below takes part, new ones included):

- SL1xx: each statement a fix changed is run on every simulated rank of an uneven split (10 items,
  4 ranks), after the statements before it in its function; the shards must cover every item
  exactly once.
- SL2xx: each function is run over several epochs with a shuffling DistributedSampler; every
  sampler iterated more than once must have changed its order between passes.
- SL301: each function that builds a sampler from a seed is run with two seeds; the orders differ.
- SL502 (no fix; the bug itself): under Lightning's own sampler injection, a flagged batch
  sampler gives two ranks identical batches.

Parameters are bound by their names (rank and world-size vocabulary, a tensor for data). A
statement or function the harness cannot bind is left out, but every fixture must have at least
one checked, so a harness that silently checks nothing fails. Skipped without torch/Lightning
(CI requires them: tests/conftest.py)."""

from __future__ import annotations

import ast
import difflib
import itertools
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sampler_lint.analysis.vocabulary import RANK_NAMES, WORLD_SIZE_NAMES

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
WORLD = 4
LENGTHS = (10, 16)  # uneven first; a multiple of 8 for code that asserts one


def _fixed_files(prefix: str) -> list[Path]:
    return sorted(FIXTURES.glob(f"{prefix}*/*.fixed.py"))


def _changed_lines(fixed: Path) -> set[int]:
    original = fixed.with_name(fixed.name.replace(".fixed.py", ".py")).read_text().splitlines()
    new = fixed.read_text().splitlines()
    changed: set[int] = set()
    matcher = difflib.SequenceMatcher(a=original, b=new, autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            changed.update(range(j1 + 1, j2 + 1))
    return changed


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            yield node


class _Simulated:
    world = WORLD
    rank = 0


@pytest.fixture
def simulated(monkeypatch: pytest.MonkeyPatch) -> type[_Simulated]:
    """torch.distributed answering for one simulated rank of ``_Simulated.world``."""
    dist = torch.distributed
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: _Simulated.world)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: _Simulated.rank)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "init_process_group", lambda *a, **k: None)
    return _Simulated


class _Stand_in:
    """Whatever a fixture imports from a project module it does not ship (``from augmentations
    import ColorJitter``): callable with any arguments, never a sampler."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


def _stub(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__getattr__ = lambda attribute: _Stand_in  # type: ignore[method-assign]
    return module


def _module(path: Path) -> dict[str, Any]:
    """The fixture executed; project modules it imports but does not ship are stand-ins."""
    stubbed: list[str] = []
    try:
        while True:
            namespace: dict[str, Any] = {"__name__": path.stem}
            try:
                exec(compile(path.read_text(), str(path), "exec"), namespace)
                return namespace
            except ModuleNotFoundError as error:
                if not error.name or error.name in stubbed or len(stubbed) > 5:
                    raise
                sys.modules[error.name] = _stub(error.name)
                stubbed.append(error.name)
    finally:
        for name in stubbed:
            sys.modules.pop(name, None)


# ------------------------------------------------------------------------------------------------
# SL1xx: shard coverage


def _data(name: str, function: ast.FunctionDef, length: int, two_d: bool) -> Any:
    source = ast.unparse(function)
    if f'{name}["' in source or f"{name}['" in source:
        return {key: torch.arange(length) for key in ("train", "valid", "test")}
    if two_d:
        return torch.arange(2 * length).reshape(2, length)
    return torch.arange(length)


def _bind(function: ast.FunctionDef, length: int, two_d: bool) -> dict[str, Any]:
    bound: dict[str, Any] = {}
    for arg in function.args.args:
        name = arg.arg
        if name in RANK_NAMES:
            bound[name] = _Simulated.rank
        elif name in WORLD_SIZE_NAMES:
            bound[name] = _Simulated.world
        elif name == "self":
            bound[name] = types.SimpleNamespace(world_size=_Simulated.world, rank=_Simulated.rank)
        elif name == "group":
            bound[name] = None
        elif "total" in name or "numel" in name or name in ("n", "length"):
            bound[name] = length
        else:
            bound[name] = _data(name, function, length, two_d)
    return bound


def _items(value: Any, two_d: bool) -> list[Any]:
    if isinstance(value, torch.Tensor):
        if two_d and value.dim() == 2:
            return [tuple(int(v) for v in column) for column in value.t()]
        return [int(v) for v in value.reshape(-1)]
    if isinstance(value, tuple | list) and value and isinstance(value[0], torch.Tensor) \
            and value[0].dim() > 0:
        return [item for part in value for item in _items(part, two_d)]
    return [int(v) for v in value]


def _run_statement(
    function: ast.FunctionDef, index: int, namespace: dict[str, Any], length: int, two_d: bool,
    value: ast.expr | None = None,
) -> Any:
    statement = function.body[index]
    assert isinstance(statement, ast.Assign | ast.Return | ast.Expr) and statement.value
    body = [s for s in function.body[:index] if not isinstance(s, ast.Return)]
    computed = value if value is not None else statement.value
    body.append(ast.Assign([ast.Name("__value__", ast.Store())], computed, lineno=0))
    module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
    scope = {**namespace, **_bind(function, length, two_d)}
    exec(compile(module, "<statement>", "exec"), scope)
    return scope["__value__"]


def _coverage(
    function: ast.FunctionDef, index: int, namespace: dict[str, Any],
    value: ast.expr | None = None,
) -> str | None:
    """``None`` when the statement covers every item exactly once across the ranks, else why
    not; raises ``LookupError`` when it cannot be run with the harness's bindings."""
    two_d = "dim=1" in ast.unparse(function.body[index])
    for length in LENGTHS:
        values = []
        try:
            for rank in range(WORLD):
                _Simulated.rank = rank
                values.append(_items(
                    _run_statement(function, index, namespace, length, two_d, value), two_d
                ))
        except AssertionError:
            continue  # the code asserts something of the length: try the next one
        except Exception as error:
            raise LookupError(f"{type(error).__name__}: {error}") from error
        finally:
            _Simulated.rank = 0
        whole = torch.arange(2 * length).reshape(2, length) if two_d else torch.arange(length)
        expected = _items(whole, two_d)
        if all(v == values[0] for v in values):
            got = values[0]  # the same on every rank: the whole partition (a list of chunks)
        else:
            got = [item for value in values for item in value]
        if sorted(got) != sorted(expected):
            return f"length {length}, {WORLD} ranks: the shards hold {values}"
        return None
    raise LookupError("no length satisfies the code's assertions")


# SL104's fixes build loaders, not shards: tests/test_runtime_sl104.py runs them.
@pytest.mark.parametrize(
    "path", [p for p in _fixed_files("SL1") if p.parent.name != "SL104"],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_sharding_fixes_cover_every_item_once(path: Path, simulated: type[_Simulated]) -> None:
    namespace = _module(path)
    changed = _changed_lines(path)
    checked, failures, unbound = 0, [], []
    for function in _functions(ast.parse(path.read_text())):
        for index, statement in enumerate(function.body):
            lines = set(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
            if not lines & changed or not isinstance(statement, ast.Assign | ast.Return):
                continue
            # A function's several results (`return a_shard, b_shard`): each one is a shard.
            parts = statement.value.elts if isinstance(statement.value, ast.Tuple) else [None]
            for part in parts:
                try:
                    problem = _coverage(function, index, namespace, part)
                except LookupError as error:
                    unbound.append(f"line {statement.lineno}: {error}")
                    continue
                checked += 1
                if problem:
                    failures.append(f"line {statement.lineno}: {problem}")
    assert not failures, "\n".join(failures)
    assert checked, "no fixed statement could be run: " + "; ".join(unbound)


# ------------------------------------------------------------------------------------------------
# SL2xx and SL301: samplers, recorded


class _Log:
    samplers: list[Any] = []


def _recording_sampler() -> type:
    base = torch.utils.data.DistributedSampler

    class Recording(base):  # type: ignore[misc, valid-type]
        def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                     *args: Any, **kwargs: Any) -> None:
            super().__init__(dataset, num_replicas if num_replicas is not None else 2,
                             rank if rank is not None else 0, *args, **kwargs)
            self.orders: list[list[int]] = []
            _Log.samplers.append(self)

        def __iter__(self) -> Iterator[int]:
            order = list(super().__iter__())
            self.orders.append(order)
            return iter(order)

    return Recording


def _sampler_namespace(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    recording = _recording_sampler()
    monkeypatch.setattr(torch.utils.data, "DistributedSampler", recording)
    namespace = _module(path)
    for key, value in list(namespace.items()):
        if value is torch.utils.data.distributed.DistributedSampler:
            namespace[key] = recording
    _Log.samplers = []
    return namespace


DATASET = list(range(32))
EPOCHS = 3
# The parameters fixtures take the run's seed as (seeding_calls.py seeds from any name).
SEED_PARAMETERS = ("seed", "trial", "run_number")


def _loader(batch_sampler_too: bool = False) -> Any:
    sampler = torch.utils.data.DistributedSampler(DATASET)
    return torch.utils.data.DataLoader(DATASET, batch_size=4, sampler=sampler)


def _argument(name: str, loader: Any, epoch: int, seed: int) -> Any:
    if name in ("dataset", "train_set", "data", "ds", "idx", "corpus"):
        return DATASET
    if name == "parts":
        return [DATASET]
    if name in ("replicas", "world"):
        return 2
    if name == "index":
        return 0
    if name == "batch":
        return 4
    if name == "n_epochs":
        return EPOCHS
    if name in ("single", "debug"):
        return False  # the distributed path
    if name in ("epochs", "steps"):
        return EPOCHS * 8 if name == "steps" else EPOCHS
    if name in ("step", "train_one_epoch"):
        return lambda *batch: [list(b) for b in batch if hasattr(b, "__iter__")]
    if name in ("loader", "dataloader", "train_loader"):
        return loader
    if name == "epoch":
        return epoch
    if name in SEED_PARAMETERS:
        return seed
    if name in ("distributed", "first"):
        return name == "distributed"
    if name in ("args", "state", "self"):
        return types.SimpleNamespace(
            distributed=True, start_epoch=0, epochs=EPOCHS, seed=seed, dataloader=loader,
            state=types.SimpleNamespace(dataloader=loader),
        )
    raise LookupError(name)


def _call(function: Any, node: ast.FunctionDef, loader: Any, epoch: int, seed: int) -> Any:
    names = [a.arg for a in node.args.args]
    arguments = [_argument(name, loader, epoch, seed) for name in names]
    keywords = {a.arg: _argument(a.arg, loader, epoch, seed) for a in node.args.kwonlyargs
                if a.arg == "seed"}
    return function(*arguments, **keywords)


def _callables(
    namespace: dict[str, Any], tree: ast.Module
) -> Iterator[tuple[Any, ast.FunctionDef]]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield namespace[node.name], node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield getattr(namespace[node.name], item.name), item


@pytest.mark.parametrize("path", _fixed_files("SL2"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_epoch_fixes_reshuffle(
    path: Path, simulated: type[_Simulated], monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace = _sampler_namespace(path, monkeypatch)
    changed = _changed_lines(path)
    tree = ast.parse(path.read_text())
    checked, failures = 0, []
    for function, node in _callables(namespace, tree):
        if not set(range(node.lineno, (node.end_lineno or node.lineno) + 1)) & changed:
            continue  # a function no fix touched (reported only, or not flagged)
        _Log.samplers = []
        loader = _loader()
        try:
            if "epoch" in [a.arg for a in node.args.args]:
                for epoch in range(EPOCHS):  # one call per epoch; the caller trains in between
                    _call(function, node, loader, epoch, 0)
                    list(loader)
            else:
                _call(function, node, loader, 0, 0)
        except (LookupError, TypeError, AttributeError, StopIteration):
            continue  # the harness cannot stand in for this function's arguments
        passes = [s.orders for s in _Log.samplers if len(s.orders) > 1]
        if not passes:
            continue
        checked += 1
        for orders in passes:
            if all(order == orders[0] for order in orders):
                failures.append(f"{node.name}: every pass has the same order {orders[0]}")
    assert not failures, "\n".join(failures)
    assert checked, "no fixed function could be run over several epochs"


@pytest.mark.parametrize("path", _fixed_files("SL301"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_seed_fixes_use_the_seed(
    path: Path, simulated: type[_Simulated], monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace = _sampler_namespace(path, monkeypatch)
    tree = ast.parse(path.read_text())
    checked, failures = 0, []
    for function, node in _callables(namespace, tree):
        names = [a.arg for a in node.args.args + node.args.kwonlyargs]
        if not {*SEED_PARAMETERS, "args"} & set(names):
            continue
        orders = []
        for seed in (1, 2):
            loader = _loader()
            _Log.samplers = []  # only the samplers the function builds
            try:
                _call(function, node, loader, 0, seed)
            except (LookupError, TypeError, AttributeError):
                break
            built = [s for s in _Log.samplers if s.dataset is DATASET]
            if not built:
                break
            orders.append([list(iter(s)) for s in built])
        if len(orders) != 2:
            continue
        checked += 1
        for first, second in zip(orders[0], orders[1], strict=True):
            if first == second:
                failures.append(f"{node.name}: seeds 1 and 2 give the same order {first}")
    assert not failures, "\n".join(failures)
    assert checked, "no function building a sampler from a seed could be run"


# ------------------------------------------------------------------------------------------------
# SL502 under Lightning's injection


def test_sl502_flagged_batch_samplers_give_every_rank_the_same_batches() -> None:
    fabric_data = pytest.importorskip("lightning.fabric.utilities.data")
    from sampler_lint.api import lint_code

    path = FIXTURES / "SL502" / "ignores.py"
    source = path.read_text()
    flagged = {f.location.line for f in lint_code(source, select=["SL502"]).findings}
    namespace = _module(path)
    tree = ast.parse(source)
    checked = 0
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        iters = [i for i in node.body if isinstance(i, ast.FunctionDef) and i.name == "__iter__"]
        if not iters or iters[0].lineno not in flagged:
            continue
        batches = []
        for rank in (0, 1):
            dataset = list(range(16))
            base = torch.utils.data.SequentialSampler(dataset)
            try:
                # Built as in a `*_dataloader` hook: Lightning records the arguments to re-create
                # the batch sampler around its DistributedSampler.
                with fabric_data._replace_dunder_methods(torch.utils.data.BatchSampler):
                    batch_sampler = namespace[node.name](base, 4, False, [list(range(16))])
            except TypeError:
                continue
            loader = torch.utils.data.DataLoader(dataset, batch_sampler=batch_sampler)
            sampler = torch.utils.data.DistributedSampler(
                dataset, num_replicas=2, rank=rank, shuffle=False
            )
            injected = fabric_data._update_dataloader(loader, sampler)
            assert injected.batch_sampler.sampler is sampler  # Lightning did inject it
            try:
                batches.append([[int(i) for i in batch] for batch in injected])
            except AttributeError:
                break  # state the harness does not know how to give (set after construction)
        if len(batches) == 2:
            checked += 1
            assert batches[0] == batches[1], "the ranks got different batches"
    assert checked, "no flagged batch sampler could be built"
    # And a batch sampler that draws from its sampler splits the data between the ranks.
    halves = []
    for rank in (0, 1):
        dataset = list(range(16))
        loader = torch.utils.data.DataLoader(dataset, batch_size=4)
        sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=2, rank=rank,
                                                      shuffle=False)
        injected = fabric_data._update_dataloader(loader, sampler)
        halves.append(sorted(int(i) for batch in injected for i in batch))
    assert halves[0] != halves[1] and sorted(halves[0] + halves[1]) == list(range(16))


def test_the_harness_catches_a_floor_split() -> None:
    """The coverage check itself: the buggy form drops items on an uneven split."""
    x = torch.arange(10)
    shards = [x.split(len(x) // WORLD)[rank] for rank in range(WORLD)]
    assert sorted(_items(list(itertools.chain(shards)), False)) != list(range(10))
