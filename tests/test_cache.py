"""The persistent cache: a second run over an unchanged project parses nothing, any change that
matters re-lints, and corrupt or foreign cache files are ignored."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from click.testing import CliRunner

from sampler_lint.cli import main
from sampler_lint.engine import cache as cache_module
from sampler_lint.engine import replay

BUGGY = "def f(x, world_size, rank):\n    return x.split(x.size(0) // world_size)[rank]\n"


def run(project: Path, *args: str) -> tuple[int, str]:
    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(
            main, ["check", "--output-format", "concise", "--jobs", "1", *args],
            catch_exceptions=False,
        )
    finally:
        os.chdir(cwd)
    return result.exit_code, result.stdout


@pytest.fixture
def repo(project: Path) -> Path:
    (project / "a.py").write_text(BUGGY)
    (project / "b.py").write_text("x = 1\n")
    return project


def _parses(project: Path, *args: str) -> tuple[int, str, int]:
    import libcst

    real = libcst.parse_module
    with mock.patch("sampler_lint.engine.linter.cst.parse_module", side_effect=real) as parse:
        code, out = run(project, *args)
    return code, out, parse.call_count


def test_second_run_parses_nothing_and_reports_the_same(repo: Path) -> None:
    code1, out1, parsed1 = _parses(repo, ".")
    code2, out2, parsed2 = _parses(repo, ".")
    assert parsed1 == 1 and parsed2 == 0
    assert (code1, out1) == (code2, out2) == (1, out1)
    assert "a.py:2:12: SL101" in out1
    assert (repo / ".sampler_lint_cache" / ".gitignore").read_text().endswith("*\n")


def test_a_changed_file_is_linted_again(repo: Path) -> None:
    run(repo, ".")
    (repo / "a.py").write_text("import os\n" + BUGGY)
    code, out, parsed = _parses(repo, ".")
    assert parsed == 1 and "a.py:3:12: SL101" in out and code == 1


def test_a_changed_configuration_is_linted_again(repo: Path) -> None:
    run(repo, ".")
    code, out, _ = _parses(repo, ".", "--ignore", "SL101")
    assert code == 0 and "SL101" not in out


def test_no_cache_neither_reads_nor_writes(repo: Path) -> None:
    run(repo, ".", "--no-cache")
    assert not (repo / ".sampler_lint_cache").exists()
    _, _, parsed = _parses(repo, ".", "--no-cache")
    assert parsed == 1


def test_cache_dir_option(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    elsewhere = tmp_path_factory.mktemp("cache")
    run(repo, ".", "--cache-dir", str(elsewhere))
    assert (elsewhere / "results.marshal").exists()
    assert not (repo / ".sampler_lint_cache").exists()


@pytest.mark.parametrize(
    "content",
    [b"garbage", cache_module._header() + b"not marshal", b"sampler-lint-cache 3\n0.0.1\n" + b"x",
     cache_module._header() + bytes(32) + b"\x00"],
)
def test_corrupt_or_foreign_cache_is_ignored(repo: Path, content: bytes) -> None:
    run(repo, ".")
    (repo / ".sampler_lint_cache" / "results.marshal").write_bytes(content)
    code, out, parsed = _parses(repo, ".")
    assert parsed == 1 and code == 1 and "SL101" in out


def test_fixing_reads_the_cache_only_where_nothing_is_to_be_fixed(repo: Path) -> None:
    code, out, _ = _parses(repo, ".")
    # SL101's fix is unsafe: a plain --fix has nothing to apply, and the cached result stands.
    fix_code, fix_out, parsed = _parses(repo, ".", "--fix")
    assert parsed == 0 and (fix_code, fix_out) == (code, out)
    assert "tensor_split" not in (repo / "a.py").read_text()
    # With unsafe fixes on there is something to apply: the file is linted and fixed.
    _, _, parsed = _parses(repo, ".", "--fix", "--unsafe-fixes")
    assert parsed >= 1
    assert "tensor_split" in (repo / "a.py").read_text()
    code, out, _ = _parses(repo, ".")
    assert code == 0 and "SL101" not in out


CLEAN_LOADER = (
    "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
    "def train(dataset, epochs, step):\n"
    "    sampler = DistributedSampler(dataset)\n"
    "    loader = DataLoader(dataset, sampler=sampler)\n"
    "    for epoch in range(epochs):\n"
    "        sampler.set_epoch(epoch)\n"
    "        for batch in loader:\n"
    "            step(batch)\n"
)


def test_fixing_a_clean_tree_leaves_the_cache_warm(project: Path) -> None:
    (project / "train.py").write_text(CLEAN_LOADER)
    (project / "b.py").write_text("x = 1\n")
    code, out, parsed = _parses(project, ".", "--fix")
    assert code == 0 and parsed == 1  # the rules looked at train.py and found nothing
    assert _parses(project, ".", "--fix")[2] == 0
    assert _parses(project, ".") == (code, out, 0)
    assert (project / "train.py").read_text() == CLEAN_LOADER


SAMPLER = (
    "from torch.utils.data import Sampler\n\n\n"
    "class Chunks(Sampler):\n"
    "    def __init__(self, sizes):\n"
    "        self.sizes = sizes\n\n"
    "    def __iter__(self):\n"
    "        yield from self.sizes\n\n"
    "    def __len__(self):\n"
    "        return len(self.sizes)\n\n\n"
    "loader = DataLoader(data, batch_sampler=Chunks([1, 2]))\n"
)


def _parsed_files(project: Path, *args: str) -> tuple[str, list[str]]:
    from sampler_lint.engine import linter

    real = linter.parse
    with mock.patch("sampler_lint.engine.linter.parse", side_effect=real) as parse:
        _, out = run(project, *args)
    return out, sorted(Path(call.args[0]).name for call in parse.call_args_list)


def test_a_change_relints_only_what_depends_on_it(project: Path) -> None:
    (project / "a.py").write_text(BUGGY)  # SL101: reads nothing from other files
    (project / "s.py").write_text(SAMPLER)  # SL501: reads the project's trainer settings
    trainer = project / "t.py"
    trainer.write_text("import lightning as L\n\ntrainer = L.Trainer(devices=2)\n")
    out, parsed = _parsed_files(project, ".")
    assert parsed == ["a.py", "s.py"] and "s.py:4:7: SL501" in out

    # A change that leaves t.py's facts as they were re-lints nothing else.
    trainer.write_text("import lightning as L\n\n# two GPUs\ntrainer = L.Trainer(devices=2)\n")
    out, parsed = _parsed_files(project, ".")
    assert parsed == [] and "s.py:4:7: SL501" in out

    # Facts that no rule asked about changed (the switch spelt out at its default): s.py read
    # only the facts of the collectors gathered when it was linted, so it is not re-linted.
    trainer.write_text(
        "import lightning as L\n\ntrainer = L.Trainer(use_distributed_sampler=True)\n"
    )
    out, parsed = _parsed_files(project, ".")
    assert parsed == [] and "s.py:4:7: SL501" in out and "a.py:2:12: SL101" in out

    # Another class reaching `batch_sampler=`: s.py asks only where `Chunks` does, so it is not
    # re-linted.
    trainer.write_text(
        "import lightning as L\n\ntrainer = L.Trainer(use_distributed_sampler=True)\n"
        "loader = DataLoader(data, batch_sampler=Other(data))\n"
    )
    out, parsed = _parsed_files(project, ".")
    assert parsed == [] and "s.py:4:7: SL501" in out and "a.py:2:12: SL101" in out

    # A change to facts s.py reads (where `Chunks` reaches `batch_sampler=`) re-lints s.py, and
    # only s.py.
    trainer.write_text(
        "import lightning as L\n\ntrainer = L.Trainer(use_distributed_sampler=True)\n"
        "loader = DataLoader(data, batch_sampler=Chunks(data))\n"
    )
    out, parsed = _parsed_files(project, ".")
    assert parsed == ["s.py"] and "s.py:4:7: SL501" in out and "a.py:2:12: SL101" in out

    # Turning injection off: the whole index shows SL501 cannot fire; s.py is not even parsed.
    trainer.write_text(
        "import lightning as L\n\ntrainer = L.Trainer(use_distributed_sampler=False)\n"
    )
    out, parsed = _parsed_files(project, ".")
    assert parsed == [] and "SL501" not in out and "a.py:2:12: SL101" in out


def test_a_stale_noqa_is_reported_where_no_rule_looks(project: Path) -> None:
    # No rule's pre-filter wants this file; its stale suppression is still reported.
    (project / "quiet.py").write_text("total = 1  # noqa: SL101\n")
    code, out = run(project, ".", "--no-cache")
    assert code == 1 and "quiet.py:1:12: SL002" in out


# ------------------------------------------------------------------------------------------------
# A cache file committed to the repository can neither run code nor change results


class _Payload:
    """Unpickling this runs a shell command that leaves a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("header", [
    b"sampler-lint-cache\n" + cache_module.__version__.encode() + b"\n",
    cache_module._header(),
    cache_module._header() + bytes(32),
])
def test_a_committed_malicious_pickle_runs_nothing(
    repo: Path, tmp_path_factory: pytest.TempPathFactory, header: bytes
) -> None:
    import pickle

    marker = tmp_path_factory.mktemp("marker") / "pwned"
    clean = run(repo, ".", "--no-cache")
    evil = pickle.dumps({"x": _Payload(marker)})
    directory = repo / ".sampler_lint_cache"
    directory.mkdir(exist_ok=True)
    for name in ("results.pickle", "survey.pickle", "results.marshal", "survey.marshal"):
        (directory / name).write_bytes(header + evil)
    assert run(repo, ".") == clean
    assert run(repo, ".") == clean  # and again, over whatever the first run wrote
    assert not marker.exists()


def test_a_forged_cache_cannot_hide_findings(repo: Path) -> None:
    """Data-only is not enough: a committed cache file saying "no findings" for every file must
    not be believed. Only files keyed with this user's secret are read."""
    import marshal

    run(repo, ".")
    directory = repo / ".sampler_lint_cache"
    stored = (directory / "results.marshal").read_bytes()
    payload = stored[len(cache_module._header()) + 32:]
    entries = marshal.loads(payload)
    hollow = cache_module.encode(cache_module.decode(next(iter(entries.values()))))
    forged = {key: hollow for key in entries}
    for key in entries:  # every entry now claims a clean file
        value = cache_module.decode(forged[key])
        value.findings.clear()
        forged[key] = cache_module.encode(value)
    body = marshal.dumps(forged)
    other_key = b"k" * 32  # someone else's secret: the MAC is well formed but not ours
    (directory / "results.marshal").write_bytes(
        cache_module._header() + cache_module.mac(other_key, body) + body
    )
    code, out, parsed = _parses(repo, ".")
    assert code == 1 and "SL101" in out and parsed == 1


def test_entries_of_the_wrong_shape_are_misses(repo: Path) -> None:
    """Even an authentic file is checked entry by entry: a value that is not a lint result (an
    unknown tag, a class outside sampler-lint, the wrong field types) is a miss."""
    import marshal

    run(repo, ".")
    path = repo / ".sampler_lint_cache" / "results.marshal"
    key = cache_module.secret_key()
    assert key is not None
    entries = marshal.loads(path.read_bytes()[len(cache_module._header()) + 32:])
    _, tag, fields = next(iter(entries.values()))
    assert tag == "sampler_lint.engine.findings:FileResult"
    odd = [
        (..., "os:system", ("true",)),
        (..., tag, (3,)),  # too few fields
        (..., tag, (3, *fields[1:])),  # the filename is not a string
        (..., "no-such-tag", ()),
        "just a string",
        (..., "dict", ((..., "=", [1]), 1)),  # an unhashable key
        (..., "dict", ("key",)),  # a key without its value
    ]
    for bad in odd:
        body = marshal.dumps(dict.fromkeys(entries, bad))
        path.write_bytes(cache_module._header() + cache_module.mac(key, body) + body)
        code, out, parsed = _parses(repo, ".")
        assert (code, parsed) == (1, 1) and "SL101" in out, bad


def test_values_round_trip_through_plain_data() -> None:
    from sampler_lint.engine.findings import FileResult, Finding, FixInfo, Location

    finding = Finding("SL101", "n", "error", "m", "a.py", Location(1, 2), Location(1, 5),
                      FixInfo("safe", "fix"), "src", None)
    result = FileResult("a.py", [finding], fixed_codes={"SL101": 1})
    for value in (result, ("a", (..., 1)), [(1, 2)], {"k": [("x", 1)]}, frozenset({1}), None):
        assert cache_module.decode(cache_module.encode(value)) == value
    with pytest.raises(cache_module.Unencodable):
        cache_module.encode(Path("x"))


def test_a_dataclass_with_keyword_only_fields_round_trips(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Values are rebuilt from positional fields where all are positional (cheaper), and by name
    # where some field is keyword-only.
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Keyed:
        first: int
        second: str = dataclasses.field(default="b", kw_only=True)

    Keyed.__module__, Keyed.__qualname__ = cache_module.__name__, "_KeyedForTest"
    monkeypatch.setattr(cache_module, "_KeyedForTest", Keyed, raising=False)
    value = Keyed(1, second="c")
    assert cache_module.decode(cache_module.encode(value)) == value

    # An InitVar is not a field (not written): such a value is a miss, never fields misplaced.
    def scaled(self: Any, scale: int) -> None:
        object.__setattr__(self, "second", self.second * scale)

    # Made, not declared: this module's annotations are strings, which hide an InitVar.
    Derived = dataclasses.make_dataclass(
        "Derived",
        [("first", int), ("scale", dataclasses.InitVar[int]),
         ("second", int, dataclasses.field(default=0))],
        frozen=True, namespace={"__post_init__": scaled},
    )
    Derived.__module__, Derived.__qualname__ = cache_module.__name__, "_DerivedForTest"
    monkeypatch.setattr(cache_module, "_DerivedForTest", Derived, raising=False)
    with pytest.raises(cache_module._Invalid):
        cache_module.decode(cache_module.encode(Derived(1, 2, 3)))
    from sampler_lint.engine.findings import Location

    cache_module.decode(cache_module.encode(Location(1, 2)))  # ours take the positional path
    assert cache_module._CLASSES[f"{Location.__module__}:Location"][2]


def test_without_a_key_the_run_is_uncached(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = repo / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv(replay.KEY_ENVIRONMENT, str(blocker / "cache-key"))
    code, out, parsed = _parses(repo, ".")
    assert code == 1 and "SL101" in out and parsed == 1
    assert not (repo / ".sampler_lint_cache" / "results.marshal").exists()
    _, _, parsed = _parses(repo, ".")
    assert parsed == 1


def test_a_hostile_baseline_file_is_an_error_not_a_crash(repo: Path) -> None:
    """Baselines are JSON read with ``json``: nothing in them runs, and a malformed one (deeply
    nested, a pickle, the wrong shape) is a clear error, exit 2."""
    import pickle

    for content in (b"[" * 100_000, pickle.dumps({"findings": []}), b'{"findings": 3}'):
        (repo / "baseline.json").write_bytes(content)
        code, _ = run(repo, "--baseline", "baseline.json", ".")
        assert code == 2


def test_facts_the_survey_read_are_cached_once_a_question_uses_them(project: Path) -> None:
    # The survey's parse reads the facts of every collector a file passes; the cached survey
    # keeps none of them (a warm run would load them all), and the facts a question used are
    # in the facts cache, so a change elsewhere parses no unchanged file for them again.
    from sampler_lint.engine import demand

    (project / "s.py").write_text(SAMPLER)
    trainer = project / "t.py"
    trainer.write_text("import lightning as L\n\ntrainer = L.Trainer(devices=2)\n")
    _code, out = run(project, ".")
    assert "s.py:4:7: SL501" in out
    survey = cache_module.Cache(project / cache_module.DIRECTORY, "survey")
    entries = [survey.get(key) for key in list(survey.old)]
    assert entries and all(entry.read == () for entry in entries)

    trainer.write_text("import lightning as L\n\n# two GPUs\ntrainer = L.Trainer(devices=2)\n")
    with mock.patch.object(demand, "_collect", side_effect=demand._collect) as collect:
        _code, out = run(project, ".")
    assert "s.py:4:7: SL501" in out
    parsed = {Path(call.args[1]).name for call in collect.call_args_list}
    assert "s.py" not in parsed  # its facts came from the cache, not from a parse


def test_an_unchanged_tree_gathers_no_collector(project: Path) -> None:
    # A collector's digest is remembered with the paths and contents of the files it may
    # read: a warm run over an unchanged tree checks each cached result against it without
    # decoding a single fact; a change to one of those files gathers it again.
    from sampler_lint.engine.demand import DemandIndex

    (project / "s.py").write_text(SAMPLER)
    trainer = project / "t.py"
    trainer.write_text("import lightning as L\n\ntrainer = L.Trainer(devices=2)\n")
    _code, first = run(project, ".")
    real = DemandIndex._gather
    real_load = cache_module.Cache._load
    with mock.patch.object(DemandIndex, "_gather", autospec=True, side_effect=real) as gather, \
            mock.patch.object(cache_module.Cache, "_load", autospec=True,
                              side_effect=real_load) as load:
        _code, second = run(project, ".")
    assert second == first and "s.py:4:7: SL501" in second
    assert gather.call_count == 0
    # Only the digests are read: the facts file (most of the cache) is not even loaded.
    loaded = {call.args[0].path.name for call in load.call_args_list}
    assert "digests.marshal" in loaded and "facts.marshal" not in loaded
    trainer.write_text(
        "import lightning as L\n\ntrainer = L.Trainer(use_distributed_sampler=False)\n"
    )
    with mock.patch.object(DemandIndex, "_gather", autospec=True, side_effect=real) as gather:
        _code, third = run(project, ".")
    assert gather.call_count > 0 and "SL501" not in third


def _reads_of(project: Path, name: str, *args: str) -> tuple[str, int]:
    """The output of a run and how often it read ``name`` to hash it."""
    from sampler_lint.engine import runner

    real = runner.read_source
    with mock.patch.object(runner, "read_source", side_effect=real) as read:
        _, out = run(project, *args)
    return out, sum(1 for call in read.call_args_list if Path(call.args[0]).name == name)


def test_an_unchanged_file_is_not_read_to_hash_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its size, times and inode are those recorded when it was last hashed: the digest is
    reused (the racy margin is lifted: the files here are younger than it)."""
    from sampler_lint.engine import runner

    monkeypatch.setattr(runner, "_RACY_NS", 0)
    first, reads = _reads_of(repo, "a.py", ".")
    assert reads >= 1 and "SL101" in first
    second, reads = _reads_of(repo, "a.py", ".")
    assert reads == 0 and second == first


def test_a_file_rewritten_behind_its_old_times_is_read_again(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same size, modification time put back: the change time still moves, and the new code is
    linted."""
    from sampler_lint.engine import runner

    monkeypatch.setattr(runner, "_RACY_NS", 0)
    first, _ = _reads_of(repo, "a.py", ".")
    assert "SL101" in first
    before = os.stat(repo / "a.py")
    fixed = BUGGY.replace("x.size(0) // world_size", "x.size(0) -  world_size")
    assert len(fixed) == len(BUGGY)
    (repo / "a.py").write_text(fixed)
    os.utime(repo / "a.py", ns=(before.st_atime_ns, before.st_mtime_ns))
    second, reads = _reads_of(repo, "a.py", ".")
    assert reads >= 1 and "SL101" not in second


def test_a_file_hashed_soon_after_it_changed_is_hashed_again(repo: Path) -> None:
    """Within the racy margin of its last change, a file's status does not vouch for its
    bytes (a second change in the same tick of a coarse clock would not show): read again."""
    run(repo, ".")
    _, reads = _reads_of(repo, "a.py", ".")
    assert reads == 1  # to hash it; the results are still those cached


def test_a_cache_another_build_wrote_is_not_read(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds of one version (a checkout between commits) keep surveys of different shapes:
    the cache is keyed by the code that wrote it, not by the version alone."""
    run(repo, ".")
    assert _parses(repo, ".")[2] == 0  # warm
    monkeypatch.setattr(cache_module, "code_stamp", lambda: "another build")
    code, out, parsed = _parses(repo, ".")
    assert parsed == 1 and code == 1 and "SL101" in out


def test_the_code_stamp_follows_the_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sampler_lint.engine import registry

    stamp = registry.code_stamp()
    assert stamp == registry.code_stamp() and len(stamp) == 32
    package = tmp_path / "sampler_lint" / "engine"
    package.mkdir(parents=True)
    (package / "registry.py").write_text("")
    (tmp_path / "sampler_lint" / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(registry, "__file__", str(package / "registry.py"))
    registry.code_stamp.cache_clear()
    try:
        first = registry.code_stamp()
        registry.code_stamp.cache_clear()
        (tmp_path / "sampler_lint" / "a.py").write_text("x = 2\n")
        assert registry.code_stamp() != first
    finally:
        registry.code_stamp.cache_clear()
