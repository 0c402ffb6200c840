"""The project index built on demand (engine/demand.py): the same answers as the index gathered up
front, and no file parsed for a collector until a rule asks for that collector's facts."""

from __future__ import annotations

import ast
import contextlib
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from sampler_lint.analysis import index as index_module
from sampler_lint.analysis.frameworks import project_may_use_lightning
from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.engine import demand, registry
from sampler_lint.engine.cache import Cache
from sampler_lint.engine.config import ConfigResolver, RawSettings
from sampler_lint.engine.demand import DemandIndex, Source, is_facts
from sampler_lint.engine.runner import RunOptions, build_index, run
from sampler_lint.engine.survey import Collectors, survey_source

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).parent.parent / "examples"


def _project() -> list[Path]:
    return sorted({*FIXTURES.rglob("*.py"), *EXAMPLES.rglob("*.py")})


def _collectors() -> Collectors:
    return Collectors.for_rules(tuple(registry.all_rules()))


def _surveyed(files: list[Path], collectors: Collectors) -> list[Source]:
    sources = []
    for path in files:
        survey = survey_source(path.read_bytes(), str(path), None, collectors, gather=False)
        sources.append(Source(path, str(path), survey.deferred))
    return sources


@pytest.fixture
def any_number_of_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Questions about names stay questions about names, however many a test asks (past
    KEYED_QUESTIONS a run reads the whole collector instead)."""
    monkeypatch.setattr(demand, "KEYED_QUESTIONS", 10_000)


def _write(root: Path, files: dict[str, str]) -> list[Path]:
    """Write ``files`` (path below ``root`` -> code); their paths, sorted."""
    for name, code in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(code)
    return sorted(root / name for name in files)


def _eager_and_lazy(files: list[Path]) -> tuple[ProjectIndex, DemandIndex]:
    """The index of ``files`` gathered up front, and one built on demand over their survey."""
    collectors = _collectors()
    eager = build_index(files, registry.all_rules())
    return eager, DemandIndex(_surveyed(files, collectors), collectors.collectors)


def _kinds(collectors: Collectors) -> list[str]:
    return sorted({kind for collector in collectors.collectors for kind in collector.kinds})


def test_every_collector_names_the_facts_it_makes() -> None:
    # A fact a collector makes without naming it would be gathered only by accident.
    for collector in _collectors().collectors:
        assert collector.kinds, collector.name
        for path in _project():
            try:
                tree = ast.parse(path.read_bytes())
            except SyntaxError:
                continue
            made = set(collector.collect(tree, str(path)))
            assert made <= set(collector.kinds), (collector.name, made - set(collector.kinds))


@pytest.mark.parametrize("surveyed", [True, False], ids=["surveyed", "unread"])
def test_answers_are_those_of_the_index_gathered_up_front(surveyed: bool) -> None:
    files = _project()
    collectors = _collectors()
    eager = build_index(files, registry.all_rules())
    sources = _surveyed(files, collectors) if surveyed else [Source(p, str(p)) for p in files]
    lazy = DemandIndex(sources, collectors.collectors)
    for kind in _kinds(collectors):
        if kind in ("sl5_modules", "sl204_lightning_1x"):
            continue  # yes-or-no questions: each stops at the first file that settles it
        assert lazy.get(kind) == eager.get(kind), kind
    assert project_may_use_lightning(lazy) == project_may_use_lightning(eager)
    assert bool(lazy.get("sl204_lightning_1x")) == bool(eager.get("sl204_lightning_1x"))


def test_nothing_is_parsed_until_asked_and_then_only_for_that_collector() -> None:
    files = _project()
    collectors = _collectors()
    sources = _surveyed(files, collectors)
    index = DemandIndex(sources, collectors.collectors)
    with mock.patch.object(demand, "_collect", side_effect=demand._collect) as collect:
        assert index.gathered == {}
        collect.assert_not_called()
        index.get("sl4_classes")
        parsed = [call.args[1] for call in collect.call_args_list]
        wanting = [s.fact_path for s in sources if "sampler classes" in (s.collectors or ())]
        assert sorted(parsed) == sorted(wanting) and len(wanting) < len(files)
        index.get("sl4_classes")  # asked again: nothing more
        # From the second collector on, each parse reads every collector the file passes;
        # a third reuses them and parses only files neither of the first two read.
        index.get("sl4_outside_writes")
        second = [call.args[1] for call in collect.call_args_list][len(parsed):]
        index.get("sl5_class_shapes")
        third = [call.args[1] for call in collect.call_args_list][len(parsed) + len(second):]
        assert not set(third) & set(second)


def test_a_question_about_one_name_reads_only_the_files_that_spell_it(tmp_path: Path) -> None:
    writes = tmp_path / "writes.py"
    writes.write_text("sampler.offset = 3\n")
    other = tmp_path / "other.py"
    other.write_text("sampler.limit = 3\n")
    collectors = _collectors()
    index = DemandIndex(_surveyed([writes, other], collectors), collectors.collectors)
    with mock.patch.object(demand, "_collect", side_effect=demand._collect) as collect:
        assert index.get_for("sl4_outside_writes", "offset") == ["offset"]
        assert [call.args[1] for call in collect.call_args_list] == [str(writes)]
        assert index.get_for("sl4_outside_writes", "missing") == []
    # The whole collector, asked afterwards, reuses what was read.
    assert sorted(index.get("sl4_outside_writes")) == ["limit", "offset"]
    assert "attributes assigned from outside[offset]" in index.gathered


def _chained_samplers(root: Path) -> list[Path]:
    """Subclasses of DistributedSampler across files, three deep, a name two classes share
    (`QTopSampler`: one of them derives from DistributedSampler) and one that makes a base
    ambiguous (`QTwoSampler`)."""
    files = {
        "base.py": "from torch.utils.data import DistributedSampler as DS\n"
                   "class QShufSampler(DS): pass\n",
        "middle.py": "from base import QShufSampler\n"
                     "class QMidSampler(QShufSampler): pass\n",
        "top.py": "from middle import QMidSampler\n"
                  "class QTopSampler(QMidSampler): pass\n"
                  "class QTwoSampler(QMidSampler): pass\n"
                  "class QLowSampler(QTwoSampler): pass\n",
        "other.py": "from torch.utils.data import Sampler\n"
                    "class QPlainSampler(Sampler): pass\n"
                    "class QTopSampler(QPlainSampler): pass\n"
                    "class QTwoSampler(QPlainSampler): pass\n",
        "options.py": "def parser(p):\n    p.add_argument('--data-seed', type=int)\n    return p\n",
        "train.py": "import options\nfrom top import QTopSampler\n"
                    "def main(cfg):\n    s = QTopSampler(d, seed=cfg.seed)\n"
                    "    loader = make_loader(s)\n    loader.sampler.set_epoch(cfg.seed + 1)\n",
        "loader.py": "import torch\n"
                     "class Lines(torch.utils.data.IterableDataset): pass\n"
                     "class Shards(Lines):\n    epoch = 0\n",
    }
    for name, code in files.items():
        (root / name).write_text(code)
    return sorted(root / name for name in files)


def test_questions_about_class_names_answer_as_the_whole_index(
    tmp_path: Path, any_number_of_names: None
) -> None:
    # Questions keyed by a class name (get_for) read only the files that spell it, and must
    # answer exactly as the index gathered up front (however many names are asked here).
    from sampler_lint.analysis import batch_samplers, rank_split, sampler_family, worker_epochs

    files = [*_project(), *_chained_samplers(tmp_path)]
    eager, lazy = _eager_and_lazy(files)
    for torch_class in ("DistributedSampler", "Sampler", "BatchSampler"):
        assert sampler_family.project_subclass_names(lazy, torch_class) == \
            sampler_family.project_subclass_names(eager, torch_class), torch_class
    found = sampler_family.project_subclass_names(eager, "DistributedSampler")
    assert {"QShufSampler", "QMidSampler", "QTopSampler", "QTwoSampler"} <= found
    assert "QLowSampler" not in found  # its base is ambiguous: opaque
    names = {fact.name for fact in eager.get(sampler_family.FACT)}
    names |= {fact.name for fact in eager.get(rank_split.FACT)}
    for name in sorted(names):
        for path in files[:: max(1, len(files) // 7)]:
            assert sampler_family.torch_bases_of(lazy, name, str(path)) == \
                sampler_family.torch_bases_of(eager, name, str(path)), (name, path)
            assert worker_epochs.find_epoch_class(lazy, name, str(path)) == \
                worker_epochs.find_epoch_class(eager, name, str(path)), (name, path)
        for fact in eager.get(sampler_family.FACT):
            if fact.name == name:
                assert batch_samplers.shape_of(lazy, fact) == batch_samplers.shape_of(eager, fact)
        assert sampler_family.shards_by_rank(lazy, name) == \
            sampler_family.shards_by_rank(eager, name), name
        assert rank_split.class_is_split(lazy, name) == rank_split.class_is_split(eager, name)
    from sampler_lint.analysis import seed_facts

    for head, _key, where in eager.get(seed_facts.FACT_KEYS):
        for path in (where, *files[:: max(1, len(files) // 5)]):
            stems = seed_facts.import_stems({"options", "top", "base"}, str(path))
            assert seed_facts.seed_keys(lazy, head, str(path), stems) == \
                seed_facts.seed_keys(eager, head, str(path), stems), (head, path)
    for function, _names in eager.get(seed_facts.FACT_SEEDED_EPOCH):
        assert seed_facts.seeded_epoch_names(lazy, function) == \
            seed_facts.seeded_epoch_names(eager, function)
    for init in eager.get(seed_facts.FACT_INITS):
        assert seed_facts.init_takes_seed(lazy, init.name, init.path) == \
            seed_facts.init_takes_seed(eager, init.name, init.path)
    for klass, path, method in eager.get(seed_facts.FACT_SEED_METHODS):
        assert seed_facts.is_seed_method(lazy, klass, path, method)
    assert "seeds" not in lazy.gathered
    # Only whole-project questions gather a whole collector; these asked about names.
    assert "sampler classes" not in lazy.gathered
    assert "dataset classes" not in lazy.gathered
    assert "batch sampler shapes" not in lazy.gathered


def test_past_many_names_a_collector_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from sampler_lint.analysis.sampler_family import FACT

    monkeypatch.setattr(demand, "KEYED_QUESTIONS", 2)
    files = _project()
    eager, lazy = _eager_and_lazy(files)
    names = ["Sampler", "BatchSampler", "DistributedSampler", "Missing"]
    answers = [lazy.get_for(FACT, name) for name in names]
    assert "sampler classes" in lazy.gathered  # the third name read the whole collector
    assert "sampler classes[DistributedSampler]" not in lazy.gathered
    for name, answer in zip(names, answers, strict=True):
        assert [f for f in answer if f.name == name] == [
            f for f in eager.get(FACT) if f.name == name
        ], name


def test_facts_are_cached_per_file_and_digests_follow_changes(tmp_path: Path) -> None:
    module = tmp_path / "samplers.py"
    module.write_text(
        "from torch.utils.data import Sampler\n\n\nclass Mine(Sampler):\n"
        "    def __iter__(self):\n        yield 1\n"
    )
    collectors = _collectors()
    cache = Cache(tmp_path / "cache", "facts", is_facts)
    first = DemandIndex(_surveyed([module], collectors), collectors.collectors, cache)
    digest = first.digests(["sampler classes"])
    assert first.fresh  # made here, for the main process to keep
    cache.save()
    cache = Cache(tmp_path / "cache", "facts", is_facts)
    with mock.patch.object(demand, "_collect") as collect:
        again = DemandIndex(_surveyed([module], collectors), collectors.collectors, cache)
        assert again.digests(["sampler classes"]) == digest
        collect.assert_not_called()
    module.write_text(module.read_text().replace("Mine", "Yours"))
    changed = DemandIndex(_surveyed([module], collectors), collectors.collectors, cache)
    assert changed.digests(["sampler classes"]) != digest
    assert changed.digests(["no such collector"]) == ("no such collector", "-")


def test_a_named_file_that_asks_nothing_reads_no_other_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    for number in range(30):
        (tmp_path / f"m{number}.py").write_text(
            "from torch.utils.data import Sampler, DataLoader\n"
            f"class S{number}(Sampler):\n    def __iter__(self):\n        yield 1\n"
        )
    named = tmp_path / "train.py"
    # SL301 keeps the file through both pre-filters; its index stage asks one question.
    named.write_text(
        "from torch.utils.data import DistributedSampler\n"
        "sampler = DistributedSampler(data, seed=0)\n"
    )
    with mock.patch.object(demand, "_collect", side_effect=demand._collect) as collect:
        result = run([named], ConfigResolver(RawSettings(), isolated=True),
                     RunOptions(use_cache=False, jobs=1))
    assert result.files_checked == 1
    # The question's own pre-filter was tested on the other files; none passed it, none parsed.
    assert [call.args[1] for call in collect.call_args_list if "train" not in call.args[1]] == []


def test_class_like_calls_are_not_each_asked_about_when_no_subclass_has_their_name(
    tmp_path: Path,
) -> None:
    """SL301 asks which project classes derive from DistributedSampler once; a class-like call
    of another name (`Options(...)`, `Model(...)`) is then no sampler, and the files defining
    those names are not read for it (a recipe's data module calls dozens of such classes, and
    each used to read every file spelling its name)."""
    (tmp_path / "pyproject.toml").write_text("")
    for number in range(12):
        (tmp_path / f"m{number}.py").write_text(
            "from torch.utils.data import Sampler\n"
            f"class Model{number}(Sampler):\n    def __iter__(self):\n        yield 1\n"
        )
    (tmp_path / "shard.py").write_text(
        "from torch.utils.data import DistributedSampler\n"
        "class ShardSampler(DistributedSampler):\n    pass\n"
    )
    named = tmp_path / "train.py"
    named.write_text(
        "from torch.utils.data import DistributedSampler\n"
        "from shard import ShardSampler\n"
        + "".join(f"from m{n} import Model{n}\n" for n in range(12))
        + "def main(data, seed):\n"
        + "".join(f"    Model{n}(data)\n" for n in range(12))
        + "    return ShardSampler(data)\n"
    )
    with mock.patch.object(demand, "_collect", side_effect=demand._collect) as collect:
        result = run([named], ConfigResolver(RawSettings(), isolated=True),
                     RunOptions(use_cache=False, jobs=1))
    assert [f.code for f in result.results[0].findings] == ["SL301"]  # the subclass is seen
    read = {Path(call.args[1]).name for call in collect.call_args_list}
    assert not any(name.startswith("m") for name in read), sorted(read)


def _alone_and_pooled(files: list[Path]) -> tuple[DemandIndex, DemandIndex]:
    """Two indexes of ``files``: one that reads in this process, one with two workers."""
    from sampler_lint.engine.runner import _gather_in_pool

    collectors = _collectors()
    alone = DemandIndex(_surveyed(files, collectors), collectors.collectors)
    pooled = DemandIndex(_surveyed(files, collectors), collectors.collectors, None,
                         _gather_in_pool(2))
    return alone, pooled


def test_gathering_in_worker_processes_gives_the_same_answers() -> None:
    files = _project()
    collectors = _collectors()
    alone, pooled = _alone_and_pooled(files)
    with mock.patch.object(demand, "_collect", side_effect=demand._collect) as collect:
        answers = {kind: pooled.get(kind) for kind in _kinds(collectors)}
    assert collect.call_count < len(files)  # most were read by the workers
    for kind, answer in answers.items():
        assert answer == alone.get(kind), kind
    assert pooled.gathered == alone.gathered


def test_a_question_about_a_name_read_in_worker_processes_gives_the_same_answer() -> None:
    # Many files hold the name: they are read in worker processes, and only they are.
    from sampler_lint.analysis.sampler_family import FACT

    files = _project()
    alone, pooled = _alone_and_pooled(files)
    holding = [path for path in files if b"Sampler" in path.read_bytes()]
    assert len(holding) >= demand.PARALLEL_GATHER
    with mock.patch.object(demand, "_collect", side_effect=demand._collect) as collect:
        answer = pooled.get_for(FACT, "Sampler")
    assert collect.call_count < len(holding)  # most were read by the workers
    assert answer == alone.get_for(FACT, "Sampler")
    assert pooled.gathered == alone.gathered
    assert "sampler classes" not in pooled.gathered  # not the whole collector


def test_what_one_worker_reads_another_reuses(tmp_path: Path) -> None:
    import multiprocessing

    from sampler_lint.engine.demand import Shared

    files = _project()
    collectors = _collectors()
    shared = Shared(multiprocessing.get_context(), [c.name for c in collectors.collectors],
                    tmp_path)
    first = DemandIndex(_surveyed(files, collectors), collectors.collectors)
    first.shared = shared
    first.get("sl4_classes")
    second = DemandIndex(_surveyed(files, collectors), collectors.collectors)
    second.shared = shared
    with mock.patch.object(demand, "_collect", side_effect=demand._collect) as collect:
        assert second.get("sl4_classes") == first.get("sl4_classes")
        collect.assert_not_called()
    assert second.gathered == first.gathered


def test_a_parse_serves_only_the_collectors_some_rule_in_play_reads() -> None:
    # Once a run asks a second question, a parse also reads the facts of the other collectors
    # the file passes, but never those of a collector no rule left after the pre-filters reads
    # (a run over one file asks only that file's rules' questions).
    from sampler_lint.analysis.sampler_family import CLASS_FACTS
    from sampler_lint.analysis.sampler_family import FACT as CLASS_FACT
    from sampler_lint.analysis.seed_facts import FACT_NAMED, NAMED_SAMPLER_FACTS

    files = _project()
    collectors = _collectors()
    index = DemandIndex(_surveyed(files, collectors), collectors.collectors)
    index.in_play = frozenset({CLASS_FACTS.name, NAMED_SAMPLER_FACTS.name})
    index.get(FACT_NAMED)
    index.get(CLASS_FACT)
    read = {name for name, _ in index._read}
    assert read == {CLASS_FACTS.name, NAMED_SAMPLER_FACTS.name}
    everything = DemandIndex(_surveyed(files, collectors), collectors.collectors)
    everything.get(FACT_NAMED)
    everything.get(CLASS_FACT)
    assert {name for name, _ in everything._read} > read  # the others, when all are in play
    assert index.get(CLASS_FACT) == everything.get(CLASS_FACT)


@pytest.mark.parametrize(
    ("text", "spelled"),
    [
        (b"dm = AsrDataModule(args)\n", True),
        (b"from data import (AsrDataModule)\n", True),
        (b"x.AsrDataModule.y\n", True),
        (b"dm = LibriSpeechAsrDataModule(args)\n", False),  # a longer name only
        (b"AsrDataModule_v2 = 1\n", False),
        ("é = AsrDataModuleé\n".encode(), False),  # a letter of a non-ASCII name
        (b"nothing here\n", False),
    ],
)
def test_a_question_about_a_name_reads_the_files_that_spell_the_whole_word(
    text: bytes, spelled: bool
) -> None:
    assert demand._spells_word(text, "AsrDataModule") is spelled


def _loader_project(root: Path) -> list[Path]:
    """Loaders built in one module and reached from scripts through a package that re-exports
    the factory, an aliased import, a whole-module import, a method inherited from a base class
    and a module linked into a second recipe; unrelated modules define the same names with
    other loaders (only imports by module path reach them)."""
    files = {
        "pkg/__init__.py": "from .build import build_loader\n",
        "pkg/build.py": "from torch.utils.data import DataLoader\n"
                        "def build_loader(ds, s):\n    return DataLoader(ds, sampler=s)\n"
                        "def plain_loader(ds, s):\n    return DataLoader(ds, sampler=s)\n",
        "other/build.py": "from torch.utils.data import DataLoader\n"
                          "def build_loader(ds, b):\n    return DataLoader(ds, batch_sampler=b)\n"
                          "def plain_loader(ds, b):\n    return DataLoader(ds, batch_sampler=b)\n",
        "recipe/data.py": "from torch.utils.data import DataLoader\n"
                          "class Base:\n    def train_loader(self):\n"
                          "        return DataLoader(self.ds, sampler=self.s)\n"
                          "class Module(Base):\n    def __init__(self, ds):\n"
                          "        self.loader = DataLoader(ds, sampler=None)\n",
        "recipe/train.py": "from pkg import build_loader\n"
                           "from pkg.build import plain_loader as pl\n"
                           "import pkg.build\nfrom data import Module\n"
                           "def main(d, b, s, epochs):\n"
                           "    one = build_loader(d, b)\n    two = pl(d, s)\n"
                           "    three = pkg.build.plain_loader(d, s)\n"
                           "    dm = Module(d)\n    four = dm.train_loader()\n"
                           "    for epoch in range(epochs):\n"
                           "        for loader in (one, two, three, four):\n"
                           "            loader.sampler.set_epoch(epoch)\n",
        "recipe/evaluate.py": "from pkg import build_loader\n"
                              "def main(d, s):\n    return build_loader(d, s)\n",
        "elsewhere/data.py": "from torch.utils.data import DataLoader\n"
                             "class Module:\n    def train_loader(self):\n"
                             "        return DataLoader(self.ds, batch_sampler=self.b)\n",
    }
    made = _write(root, files)
    # Recipes that link a shared data module into their folder: recipe2 one of the project's,
    # recipe3 one the project does not list itself (an excluded folder).
    (root / "vendor").mkdir()
    (root / "vendor" / "data.py").write_text(files["recipe/data.py"])
    for recipe, shared in (("recipe2", root / "recipe" / "data.py"),
                           ("recipe3", root / "vendor" / "data.py")):
        (root / recipe).mkdir()
        (root / recipe / "train.py").write_text(files["recipe/train.py"])
        made.append(root / recipe / "train.py")
        with contextlib.suppress(OSError):
            (root / recipe / "data.py").symlink_to(shared)
            made.append(root / recipe / "data.py")
    return sorted(made)


def test_loader_provenance_reads_the_files_imports_lead_to(
    tmp_path: Path, any_number_of_names: None
) -> None:
    # SL201/SL202's questions (where a loader comes from, how a project function uses it) follow
    # imports file by file and callers by name, and answer as the index gathered up front.
    from sampler_lint.analysis import loader_facts, loaders

    files = [*_project(), *_loader_project(tmp_path)]
    eager, lazy = _eager_and_lazy(files)
    origins = [o for _, _, returned, _ in eager.get(loader_facts.FACT_RETURNS) for o in returned]
    for _, _, positional, keywords in eager.get(loader_facts.FACT_CALLS):
        origins += [*positional, *(o for _, o in keywords)]
    origins += [o for _, _, _, o in eager.get(loader_facts.FACT_SELF)]
    assert len(origins) > 50
    # What train.py's loaders are, as SL201 asks from that file (both recipes).
    asked = {}
    recipes = ("recipe", "recipe2", "recipe3")
    for recipe in recipes:
        train = loader_facts.file_key(str(tmp_path / recipe / "train.py"))
        asked[recipe] = {
            "build_loader": ("call", train, "build_loader", (2, ())),
            "pl": ("call", train, "pl", (2, ())),
            "plain_loader": ("call", train, "plain_loader", (2, ())),
            "train_loader": ("objmethod", train, ("call", train, "Module", (1, ())),
                             "train_loader"),
        }
        origins += asked[recipe].values()
    evaluate = loader_facts.file_key(str(tmp_path / "recipe" / "evaluate.py"))
    reexported = ("call", evaluate, "build_loader", (2, ()))  # through pkg/__init__.py only
    origins.append(reexported)
    answers = {}
    for origin in dict.fromkeys(origins):
        answers[origin] = loaders.can_carry_batch_sampler(eager, [origin])
        assert loaders.can_carry_batch_sampler(lazy, [origin]) == answers[origin], origin
    for recipe in recipes:
        # Through the re-export, the aliased and the whole-module import: pkg/build.py's
        # loaders, not other/build.py's; the inherited method of the Module of recipe/data.py
        # (linked into recipe2, and its copy linked into recipe3), not elsewhere/data.py's.
        found = {name: answers[origin] for name, origin in asked[recipe].items()}
        assert found == {
            "build_loader": False, "pl": False, "plain_loader": False, "train_loader": False,
        }, recipe
    assert answers[reexported] is False
    for function, *_ in eager.get(loader_facts.FACT_EPOCH_USERS):
        for caller in [*files[:: max(1, len(files) // 9)], tmp_path / "recipe" / "train.py"]:
            assert loaders.project_epoch_uses(lazy, str(caller), function) == \
                loaders.project_epoch_uses(eager, str(caller), function), (function, caller)
    assert loader_facts.set_epoch_receivers(lazy) == loader_facts.set_epoch_receivers(eager)
    assert "loader provenance" not in lazy.gathered  # asked file by file and name by name


def test_a_question_about_a_missing_file_depends_on_the_list_of_files(tmp_path: Path) -> None:
    from sampler_lint.analysis.loader_facts import FACT_NAMES, file_key

    script = tmp_path / "train.py"
    script.write_text("from helpers import make_loader\nloader = make_loader()\n")
    collectors = _collectors()
    index = DemandIndex(_surveyed([script], collectors), collectors.collectors)
    assert index.get_for(FACT_NAMES, file_key(str(tmp_path / "helpers.py"))) == []
    assert "loader provenance[/]" in index.gathered
    helpers = tmp_path / "helpers.py"
    helpers.write_text("from torch.utils.data import DataLoader\ndef make_loader():\n"
                       "    return DataLoader(d)\n")
    grown = DemandIndex(_surveyed([script, helpers], collectors), collectors.collectors)
    rows = grown.get_for(FACT_NAMES, file_key(str(helpers)))
    assert [row[0] for row in rows] == [file_key(str(helpers))]
    assert grown.digests(["loader provenance[/]"]) != index.digests(["loader provenance[/]"])


def test_seed_keys_are_read_from_the_files_around_the_one_asking(
    tmp_path: Path, any_number_of_names: None
) -> None:
    # "Which seed keys does `args` carry here?" reads the file itself, the modules it imports
    # and the files that spell both the namespace and its module name (those that may import
    # it), and answers as the index gathered up front.
    from sampler_lint.analysis import seed_facts
    from sampler_lint.analysis.loader_facts import file_key

    files = {
        "opts.py": "def add(parser):\n    parser.add_argument('--data-seed', type=int)\n",
        "tools/train.py": "from opts import add\nfrom torch.utils.data import DistributedSampler\n"
                          "def main(args, conf):\n    return DistributedSampler(d)\n",
        "launch.py": "from tools.train import main\nmain(args, conf)\nprint(conf.run_seed)\n",
        "unrelated.py": "import argparse\np = argparse.ArgumentParser()\n"
                        "p.add_argument('--seed')\nprint(conf.seed, args.other_seed)\n",
        "pkg/__init__.py": "print(conf.pkg_seed)\n",
        "pkg/sub.py": "from . import helpers\nprint(conf.sub_seed)\n",
    }
    paths = _write(tmp_path, files)
    eager, lazy = _eager_and_lazy(paths)
    stems = dict(eager.get(seed_facts.FACT_IMPORTS))
    train = tmp_path / "tools" / "train.py"
    stems[file_key(str(train))] = seed_facts.import_stems({"opts", "torch.utils.data"}, str(train))
    for path in paths:
        imported = stems.get(file_key(str(path)), ())
        for namespace in ("args", "conf", "missing"):
            assert seed_facts.seed_keys(lazy, namespace, str(path), imported) == \
                seed_facts.seed_keys(eager, namespace, str(path), imported), (path, namespace)
    imported = stems[file_key(str(train))]
    assert seed_facts.seed_keys(lazy, "args", str(train), imported) == ["data_seed"]
    assert seed_facts.seed_keys(lazy, "conf", str(train), imported) == ["run_seed"]
    init = tmp_path / "pkg" / "__init__.py"
    assert seed_facts.seed_keys(lazy, "conf", str(init), ()) == ["pkg_seed", "sub_seed"]
    assert "seeds" not in lazy.gathered


def test_seed_keys_reach_a_module_through_the_packages_that_re_export_it(
    tmp_path: Path, any_number_of_names: None
) -> None:
    # `from feeds import make` reaches feeds/build.py through feeds/__init__.py's re-export
    # without spelling `build`: the seed keys of the script that imports the package are the
    # builder's, two packages up too, and only through packages that do import the module.
    from sampler_lint.analysis import seed_facts

    files = {
        "run.py": "from feeds import make\ndef main(conf):\n    print(conf.data_seed)\n",
        "feeds/__init__.py": "from .build import make\n",
        "feeds/build.py": "def make(conf):\n    return DistributedSampler(d)\n",
        "feeds/other.py": "def other(conf):\n    return DistributedSampler(d)\n",
        "top.py": "from src import deep\ndef main(opts):\n    print(opts.run_seed)\n",
        "src/__init__.py": "from .inner import deep\n",
        "src/inner/__init__.py": "from src.inner.loader import deep\n",
        "src/inner/loader.py": "def deep(opts):\n    return DistributedSampler(d)\n",
        "plain/__init__.py": "VERSION = 1\n",
        "plain/build.py": "def make(conf):\n    return DistributedSampler(d)\n",
        "side.py": "import plain\ndef main(conf):\n    print(conf.side_seed)\n",
    }
    paths = _write(tmp_path, files)
    eager, lazy = _eager_and_lazy(paths)
    for path in paths:
        for namespace in ("conf", "opts"):
            assert seed_facts.seed_keys(lazy, namespace, str(path), ()) == \
                seed_facts.seed_keys(eager, namespace, str(path), ()), (path, namespace)

    def keys(name: str, namespace: str) -> list[str]:
        return seed_facts.seed_keys(lazy, namespace, str(tmp_path / name), ())

    assert keys("feeds/build.py", "conf") == ["data_seed"]
    assert keys("feeds/other.py", "conf") == []  # the package does not import it
    assert keys("src/inner/loader.py", "opts") == ["run_seed"]  # two packages up
    assert keys("plain/build.py", "conf") == []  # `import plain` re-exports nothing of it
    assert "seeds" not in lazy.gathered and "package re-exports" not in lazy.gathered


def test_lightning_near_a_file_that_imports_it_reads_that_file_alone(tmp_path: Path) -> None:
    from sampler_lint.analysis import frameworks

    files = {
        "data/sampler.py": "import lightning as L\nfrom torch.utils.data import Sampler\n"
                           "class Buckets(Sampler):\n    pass\n"
                           "def train():\n    L.Trainer().fit(model)\n",
        "data/plain.py": "from torch.utils.data import Sampler\nclass Plain(Sampler):\n    pass\n",
        "tools/fit.py": "import lightning as L\nL.Trainer(use_distributed_sampler=False).fit(m)\n",
    }
    paths = _write(tmp_path, files)
    eager, lazy = _eager_and_lazy(paths)
    sampler = str(tmp_path / "data" / "sampler.py")
    assert frameworks.lightning_near(lazy, [sampler]) is True
    assert frameworks.injection_on_for(lazy, [sampler]) is True
    assert "lightning files" not in lazy.gathered  # its own import answered
    assert "batch sampler sites and trainers" not in lazy.gathered  # its own Trainer answered
    for path in paths:
        for ask in (frameworks.lightning_near, frameworks.injection_on_for):
            assert ask(lazy, [str(path)]) == ask(eager, [str(path)]), (ask, path)


@pytest.mark.parametrize(
    "projects_trainer", ["L.Trainer()", "L.Trainer(use_distributed_sampler=False)"]
)
def test_the_project_wide_injection_question_stops_at_the_first_injecting_trainer(
    tmp_path: Path, projects_trainer: str
) -> None:
    from sampler_lint.analysis import frameworks

    files = {
        "a/off.py": "import lightning as L\nL.Trainer(use_distributed_sampler=False).fit(m)\n",
        "b/fit.py": f"import lightning as L\n{projects_trainer}.fit(m)\n",
        "c/later.py": "import lightning as L\nL.Trainer().fit(m)\n"
        if projects_trainer == "L.Trainer()" else "import lightning as L\nL.Trainer(\n"
        "    replace_sampler_ddp=False).fit(m)\n",
        "d/data.py": "from torch.utils.data import Sampler\nclass Plain(Sampler):\n    pass\n",
        "tests/test_fit.py": "import lightning as L\nL.Trainer().fit(m)\n",
    }
    paths = _write(tmp_path, files)
    eager, lazy = _eager_and_lazy(paths)
    data, off = str(tmp_path / "d" / "data.py"), str(tmp_path / "a" / "off.py")
    injects = projects_trainer == "L.Trainer()"
    assert frameworks.injection_on_for(lazy, [data]) is injects  # tests' Trainers do not count
    assert frameworks.injection_on_for(lazy, [off]) is False  # judged by its own Trainer
    assert frameworks.injection_on_for(lazy, [off, data]) is injects
    read = {path for name, path in lazy._read if name == frameworks.TRAINERS.name}
    later = str(tmp_path / "c" / "later.py")
    # Settled by b/fit.py when its Trainer injects; else every Trainer must be seen to be off.
    assert (later in read) is not injects
    for path in paths:
        for others in ([], [data], [off]):
            asked = [str(path), *others]
            assert frameworks.injection_on_for(lazy, asked) == \
                frameworks.injection_on_for(eager, asked), asked


def test_a_class_on_a_base_the_tool_cannot_see_is_not_looked_for_at_batch_sampler(
    tmp_path: Path, any_number_of_names: None
) -> None:
    from sampler_lint.analysis import batch_samplers, frameworks
    from sampler_lint.analysis.sampler_family import find_class

    files = {
        "model.py": "import torch\nfrom torch.utils.data import Sampler\n"
                    "class Net(torch.nn.Module):\n    pass\n"
                    "class Chunks(Sampler):\n    def __iter__(self):\n        yield [1, 2]\n",
        "fit.py": "from torch.utils.data import DataLoader\nfrom model import Net, Chunks\n"
                  "DataLoader(d, batch_sampler=Net())\nDataLoader(d, batch_sampler=Chunks())\n",
    }
    paths = _write(tmp_path, files)
    eager, lazy = _eager_and_lazy(paths)
    model = str(tmp_path / "model.py")
    for index in (eager, lazy):
        net, chunks = find_class(index, "Net", model), find_class(index, "Chunks", model)
        assert net is not None and chunks is not None
        assert batch_samplers.breakage(index, net) is None  # its base may be a BatchSampler
        assert batch_samplers.breakage(index, chunks) is not None  # no batch_size / drop_last
    sites = frameworks.FRAMEWORK_FACTS.name
    assert f"{sites}[Chunks]" in lazy.gathered
    assert f"{sites}[Net]" not in lazy.gathered


def test_the_survey_reads_costly_facts_only_where_a_rule_left_for_the_file_reads_them(
    tmp_path: Path,
) -> None:
    from sampler_lint.analysis.loader_facts import FACT_RETURNS, LOADER_FACTS
    from sampler_lint.engine.runner import lint_options_for

    files = {
        # SL301 is left (an unseeded DistributedSampler); no rule that reads loader provenance.
        "seeds.py": "from torch.utils.data import DistributedSampler\n\n"
                    "def make_loader(ds):\n    return DistributedSampler(ds)\n",
        # SL202 is left (a loader built with a sampler, iterated once per epoch), and it reads
        # loader provenance.
        "train.py": "from torch.utils.data import DataLoader, DistributedSampler\n\n"
                    "def make_loader(ds, epochs):\n"
                    "    loader = DataLoader(ds, sampler=DistributedSampler(ds))\n"
                    "    for epoch in range(epochs):\n"
                    "        for batch in loader:\n"
                    "            pass\n"
                    "    return loader\n",
    }
    paths = _write(tmp_path, files)
    assert LOADER_FACTS.costly
    collectors = _collectors()
    resolver = ConfigResolver(RawSettings(select=("ALL",)), isolated=True)
    lint = lint_options_for(resolver.for_path(paths[0]), paths[0], RunOptions())
    surveys = {
        path.name: survey_source(path.read_bytes(), str(path), lint, collectors, gather=False)
        for path in paths
    }
    for survey in surveys.values():
        assert LOADER_FACTS.name in survey.deferred  # both pass its text pre-filter
    assert "SL202" not in (surveys["seeds.py"].rules or ())
    assert LOADER_FACTS.name not in dict(surveys["seeds.py"].read)
    assert "SL202" in (surveys["train.py"].rules or ())
    assert LOADER_FACTS.name in dict(surveys["train.py"].read)
    # A question that reaches seeds.py reads it again: the answers are those of an index
    # gathered up front.
    lazy = DemandIndex(
        [Source(path, str(path), surveys[path.name].deferred) for path in paths],
        collectors.collectors,
    )
    for path in paths:
        lazy.known(str(path), surveys[path.name].read)
    eager = build_index(paths, registry.all_rules())
    assert sorted(map(repr, lazy.get(FACT_RETURNS))) == sorted(map(repr, eager.get(FACT_RETURNS)))
    assert {r[1] for r in lazy.get(FACT_RETURNS)} == {str(path) for path in paths}


def test_questions_that_share_a_word_read_only_the_files_that_spell_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Questions about `<namespace>+<module>` share the module's word, which most files lack:
    # once a file is known not to spell it, no later question that needs it reads the file
    # again, whichever word the first question found missing (a monorepo read 6 GB of text for
    # 95 MB of files, question after question).
    monkeypatch.setattr(demand, "TEXTS_KEPT", 0)  # every answer needs the file read again
    files = {f"common{n}.py": "x = seed = 0\n" for n in range(4)} | {
        "zcaller.py": "from sync import run\nrun(model=1, optimizer=2, dataset=3, seed=4)\n",
    }
    paths = _write(tmp_path, files)
    sources = [Source(path, str(path), None) for path in paths]  # none surveyed
    index = DemandIndex(sources, _collectors().collectors)
    collector = next(c for c in _collectors().collectors if c.name == "seeds")
    with mock.patch.object(demand, "read_source", side_effect=demand.read_source) as read:
        assert index._holders_of(collector, "model+sync") == {str(paths[-1])}
        assert read.call_count == len(paths)
        read.reset_mock()
        assert index._holders_of(collector, "optimizer+sync") == {str(paths[-1])}
        assert index._holders_of(collector, "seed+sync") == {str(paths[-1])}
        assert index._holders_of(collector, "x+sync") == set()
        assert [call.args[0] for call in read.call_args_list] == [paths[-1]] * 3
    caller = files["zcaller.py"].encode()
    for token in ("model", "sync+model", "missing+model", "model+seed+optimizer", "x+sync"):
        expected = all(demand._spells_word(caller, word) for word in token.split("+"))
        assert index._file_spells(sources[-1], caller, token) is expected


@pytest.mark.parametrize(("text", "defined"), [
    ("class Base(object):\n    pass\n", True),
    ("class Base:\n    pass\n", True),
    ("if x:\n    class Base(A): pass\n", True),
    ("class\tBase(A): pass\n", True),
    ("class \\\n        Base(A): pass\n", True),  # a continued line
    ("@dataclass\nclass Base:\n    x: int\n", True),
    ("\fclass Base: pass\n", True),
    ("x = 1\rclass Base: pass\r", True),  # lines that end in a carriage return alone
    ("x = 1\r\nclass Base: pass\r\n", True),
    ("from pkg import Base\nclass Child(Base): pass\n", False),  # imports and subclasses it
    ("x = Base()\n", False),
    ("class BaseSampler: pass\n", False),
    ("class MyBase: pass\n", False),
    ("# class Base was moved\n", False),
    ("def f():\n    return Base\n", False),
    # A line holding the keyword alone must not hide the statement below it.
    ("class\nclass Base: pass\n", True),
    ("class Other: pass\nclass Base: pass\n", True),
    ("x = 1; class Base: pass\n", False),  # the keyword does not start its line
    ("subclass Base\n", False),
    ("class Based: pass\nclass_ Base\n", False),
])
def test_a_question_about_a_class_reads_the_files_that_may_define_it(
    text: str, defined: bool
) -> None:
    assert demand._spells_word(text.encode(), index_module.CLASS_DEFINED + "Base") is defined


def test_every_class_statement_is_found_by_its_shape() -> None:
    # Never narrower than the parse: every class a file of the fixtures, the examples or this
    # package defines is found in its bytes by the shape of a class statement.
    package = Path(index_module.__file__).parent.parent
    files = [*_project(), *package.rglob("*.py")]
    checked = 0
    for path in files:
        data = path.read_bytes()
        try:
            tree = ast.parse(data)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                assert demand._spells_word(data, "class " + node.name), (path, node.name)
                checked += 1
    assert checked > 200


def test_a_class_is_looked_for_where_it_may_be_defined_not_where_it_is_used(
    tmp_path: Path,
) -> None:
    # Recipes subclass a base defined in a file of its own: the chain of bases of one
    # of them parses the file that defines the base, not the other recipes.
    from sampler_lint.analysis import sampler_family

    files = {"interfaces.py": "class RecipeInterface:\n    def setup(self): ...\n"} | {
        f"recipe{n}.py": "from interfaces import RecipeInterface\n"
                         "from torch.utils.data import Sampler\n"
                         f"class Recipe{n}(RecipeInterface):\n"
                         "    def setup(self):\n        self.sampler = Sampler(None)\n"
        for n in range(6)
    }
    paths = _write(tmp_path, files)
    eager, lazy = _eager_and_lazy(paths)
    with mock.patch.object(demand, "_collect", side_effect=demand._collect) as collect:
        found = sampler_family.find_class(lazy, "RecipeInterface", str(tmp_path / "x.py"))
        assert found is None  # no fact: a base without bases of its own is no sampler class
        assert {call.args[1] for call in collect.call_args_list} <= {
            str(tmp_path / "interfaces.py")
        }
    for name in ("RecipeInterface", "Recipe0", "Recipe5", "Missing"):
        assert sampler_family._named(lazy, name) == sampler_family._named(eager, name), name


def test_the_classes_of_a_file_are_listed_whatever_its_line_ends() -> None:
    from sampler_lint.analysis.index import class_names_in

    for end in ("\n", "\r\n", "\r"):
        text = end.join(["import x", "class A(x.B): pass", "    class  C: pass", ""])
        assert class_names_in(text) == {"A", "C"}, repr(end)
    # A docstring line holding the word alone does not hide the statement below it.
    assert class_names_in('"""Or a\nclass\n"""\nclass D: pass\n') == {"D"}
    # Nor does a decorator whose name ends in the word (a consuming pattern took `dataclass`,
    # a newline and `class` for one statement, and lost every dataclass of the file).
    assert class_names_in("@dataclass\nclass E:\n    x: int\n") == {"E"}


def test_statements_are_every_statement_each_block_in_source_order() -> None:
    # The collectors read statements from this list (imports, classes, functions): every
    # statement that ast.walk finds, none more, the statements of each block in source order
    # (the blocks of one statement come in the order the collectors have always read them).
    package = Path(index_module.__file__).parent.parent
    files = [*_project(), *package.rglob("*.py")]
    code = (
        "try:\n    import a\nexcept E:\n    import b\nelse:\n    import c\nfinally:\n"
        "    import d\nmatch x:\n    case 1:\n        import e\nwhile y:\n    pass\nelse:\n"
        "    import f\nclass C:\n    def m(self):\n        with g:\n            import h\n"
    )
    trees = [ast.parse(code)]
    for path in files:
        try:
            trees.append(ast.parse(path.read_bytes()))
        except SyntaxError:
            continue
    for tree in trees:
        listed = list(index_module.statements(tree))
        walked = [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
        assert sorted(map(id, listed)) == sorted(map(id, walked))
        position = {id(node): number for number, node in enumerate(listed)}
        for block in ast.walk(tree):
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                children = getattr(block, name, None)
                if isinstance(children, list):
                    seen = [position[id(c)] for c in children if id(c) in position]
                    assert seen == sorted(seen)
    imports = [
        node.names[0].name for node in index_module.statements(trees[0])
        if isinstance(node, ast.Import)
    ]
    assert sorted(imports) == ["a", "b", "c", "d", "e", "f", "h"]


def test_each_file_is_searched_for_class_statements_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SL501 asks about each class of a file in turn, and each question looks for ``class
    name`` in every file of its collector: what a file's class statements may define is listed
    once per file, not searched for once per name."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'classes'\n")
    (tmp_path / "samplers.py").write_text(
        "import lightning as L\nfrom torch.utils.data import Sampler\n\n\n"
        + "".join(
            f"class Batches{n}(Sampler):\n    def __init__(self, data, size):\n"
            f"        self.size = size\n\n    def __iter__(self):\n"
            f"        yield [0] * self.size\n\n\n"
            for n in range(4)
        )
    )
    for n in range(3):
        (tmp_path / f"train{n}.py").write_text(
            "import lightning as L\nfrom torch.utils.data import DataLoader\n"
            "from samplers import Batches0\n\n\n"
            f"class Model{n}(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.data, batch_sampler=Batches0(self.data, 4))\n"
        )
    scanned: list[bytes] = []
    statements = demand.class_statements_in

    def counting(data: bytes) -> frozenset[bytes]:
        scanned.append(data)
        return statements(data)

    assert demand._NAMES_OF[index_module.CLASS_DEFINED] is statements
    monkeypatch.setitem(demand._NAMES_OF, index_module.CLASS_DEFINED, counting)
    monkeypatch.chdir(tmp_path)
    resolver = ConfigResolver(RawSettings(select=("SL501",)), isolated=True)
    result = run([Path(".")], resolver, RunOptions(jobs=1, use_cache=False))
    assert sorted(f.code for r in result.results for f in r.findings) == ["SL501"]
    assert len(scanned) >= 2, scanned  # several files were asked about
    assert len(scanned) == len(set(scanned)), "a file was searched again"


def test_a_batch_sampler_declared_as_a_dataclass_is_judged_by_the_index_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SL501's index stage asks about each class statement of the file: the class right under
    `@dataclass` is one (the keyword was once read with `dataclass`'s last letters)."""
    source = FIXTURES / "SL501" / "dataclass_batch_sampler.py"
    (tmp_path / "samplers.py").write_text(source.read_text())
    monkeypatch.chdir(tmp_path)
    resolver = ConfigResolver(RawSettings(select=("SL501",)), isolated=True)
    result = run([Path(".")], resolver, RunOptions(jobs=1, use_cache=False))
    found = [(f.code, f.location.line) for r in result.results for f in r.findings]
    assert found == [("SL501", 10)]


def test_a_question_about_a_rare_name_looks_for_it_before_the_pre_filter(tmp_path: Path) -> None:
    # A one-file run asks about its own class: every project file is read for the name, and the
    # collector's pre-filter (any of five words, a search for each) is consulted only for the
    # files that spell it. A file found without the name is remembered so, as the full test
    # would, and the holders are those of the pre-filter-first order.
    files = {
        f"loader{n}.py": "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"
        for n in range(4)
    } | {
        "recipe.py": (
            "class FullRecipe:\n    def setup(self):\n        self.loader = DataLoader(ds)\n"
        ),
    }
    paths = _write(tmp_path, files)
    sources = [Source(path, str(path), None) for path in paths]  # none surveyed
    index = DemandIndex(sources, _collectors().collectors)
    collector = next(c for c in _collectors().collectors if c.name == "loader provenance")
    with mock.patch.object(demand, "_passes", side_effect=demand._passes) as passes:
        assert index._holders_of(collector, "FullRecipe") == {str(tmp_path / "recipe.py")}
    assert passes.call_count == 1  # recipe.py's: the others lack the name
    assert index._answers("FullRecipe")[0] == {
        str(tmp_path / f"loader{n}.py"): False for n in range(4)
    } | {str(tmp_path / "recipe.py"): True}
    # The same holders when nothing is kept in memory (the pre-filter first, as before).
    again = DemandIndex([Source(path, str(path), None) for path in paths],
                        _collectors().collectors)
    again._text_room = 0
    assert again._holders_of(collector, "FullRecipe") == {str(tmp_path / "recipe.py")}


def test_the_project_subclass_question_parses_only_files_whose_class_headers_may_derive(
    tmp_path: Path,
) -> None:
    # "Which project classes derive from DistributedSampler?" follows each base name down: a
    # file that only imports or builds the class (every training script) is not parsed for it,
    # yet every class the whole index finds is found, however its header or import is written.
    from sampler_lint.analysis import sampler_family

    files = _write(tmp_path, {
        "train.py": "from torch.utils.data import DistributedSampler\n"
                    "class Recipe:\n    def setup(self):\n"
                    "        self.s = DistributedSampler(ds)\n",
        "script.py": "import torch\nsampler = torch.utils.data.DistributedSampler(ds)\n",
        "renamed.py": "from torch.utils.data import (\n    DistributedSampler  # torch's\n"
                      "    as DS,\n)\nclass Renamed(DS):\n    pass\n",
        "long.py": "import torch\nclass Long(\n    # a comment that closes)) a bracket:\n"
                   "    make('it\\'s a string that closes))) one: too'),\n"
                   "    make(\"\"\"a long one\n))): too\"\"\"),\n"
                   "    torch.utils.data.DistributedSampler,\n"
                   "    metaclass=make(lambda: 'x:)'),\n):\n    pass\n"
                   "class Deeper(Long):\n    pass\n",
        "generic.py": "from torch.utils.data import DistributedSampler\n"
                      "class Typed(DistributedSampler[int]):\n    pass\n",
        "continued.py": "from torch.utils.data import DistributedSampler\n"
                        "class Continued \\\n        (Mixin, DistributedSampler): pass\n",
    })
    eager, lazy = _eager_and_lazy(files)
    parsed: list[str] = []
    real = demand._collect

    def counting(data: bytes, fact_path: str, collectors: list[Any]) -> list[Any]:
        parsed.append(Path(fact_path).name)
        return real(data, fact_path, collectors)

    with mock.patch.object(demand, "_collect", counting):
        found = sampler_family.project_subclass_names(lazy, "DistributedSampler")
    assert found == sampler_family.project_subclass_names(eager, "DistributedSampler")
    assert found == {"Renamed", "Long", "Typed", "Deeper", "Continued"}
    assert "train.py" not in parsed and "script.py" not in parsed
    # The same files when the question's holders are searched for first (a run with worker
    # processes reads them ahead).
    collector = next(c for c in _collectors().collectors if c.name == "sampler classes")
    holders = lazy._holders_of(collector, index_module.DERIVES_FROM + "DistributedSampler")
    assert sorted(Path(path).name for path in holders) == [
        "continued.py", "generic.py", "long.py", "renamed.py",
    ]


def test_a_collector_whose_gathering_raised_raises_again_when_asked_again(tmp_path: Path) -> None:
    # Not an empty answer the second time: a file linted again after the index raised for it
    # (the lint helper's fallback) must meet the same error, not fewer facts.
    module = tmp_path / "module.py"
    module.write_text("x = 1\n")
    calls: list[str] = []

    def collect(tree: ast.Module, path: str) -> dict[str, list[Any]]:
        calls.append(path)
        raise RecursionError("too deep")

    collector = index_module.FactCollector("raising", (("x",),), collect, kinds=("raising",))
    index = DemandIndex([Source(module, str(module))], [collector])
    for _ in range(2):
        with pytest.raises(RecursionError):
            index.get("raising")
    assert len(calls) == 2
