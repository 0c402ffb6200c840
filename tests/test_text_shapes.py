"""The text shape stage (``Rule.may_match_text``, ``sampler_lint.analysis.text_shapes``): it
spares the ``ast`` parse of files whose tokens pass but whose text cannot hold the pattern, and it
never answers ``False`` for a text whose syntax filter could keep it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampler_lint.analysis.frameworks import (
    DISTRIBUTED_IMPORTS,
    FACT_MODULES,
    LIGHTNING,
    LIGHTNING_FILES,
    LIGHTNING_IMPORTS,
    MODULE_TOKENS,
    collect_module_facts,
)
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.analysis.text_shapes import (
    CallText,
    TokenSearch,
    calls_in,
    is_literal,
    keyword_is,
    may_floor_divide,
    may_import,
    names_a_word,
)
from sampler_lint.analysis.vocabulary import Vocabulary
from sampler_lint.analysis.worker_epochs import (
    FACT_LIGHTNING_1X,
    LIGHTNING_1X,
    LIGHTNING_1X_MARKERS,
    collect_lightning_1x,
)
from sampler_lint.api import lint_code
from sampler_lint.engine.linter import LintOptions, rules_to_run
from sampler_lint.engine.registry import all_rules, rules_by_code
from sampler_lint.engine.survey import Collectors
from sampler_lint.rule import Rule

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")
SHAPED = [rule for rule in all_rules() if rule.may_match_text.__func__ is not Rule.may_match_text.__func__]  # type: ignore[attr-defined]  # noqa: E501


def test_the_rules_that_read_a_shape() -> None:
    assert sorted(rule.code for rule in SHAPED) == [
        "SL101", "SL103", "SL104", "SL304", "SL402", "SL503", "SL504"
    ]


@pytest.mark.parametrize("rule", SHAPED, ids=lambda rule: rule.code)
def test_every_flagged_fixture_and_example_has_the_shape(rule: type[Rule]) -> None:
    texts = [example.code for example in rule.examples if example.lines]
    for path in sorted(FIXTURES.glob("SL*/*.py")):
        if path.name.endswith(".fixed.py"):
            continue  # a fix's output: it keeps its markers, not always the shape
        text = path.read_text()
        if any(rule.code in found["codes"] for found in EXPECT.finditer(text)):
            texts.append(text)
    assert texts
    for text in texts:
        assert rule.may_match_text(text), text


# Each flagged by its rule, with the shape at the edge of what the text stage reads.
KEPT = {
    "SL103 URL before the division": (
        "SL103",
        "# https://example.com/shards\n"
        "def shard(x, rank, world_size):\n"
        "    per = len(x)//world_size\n"
        "    return x[rank * per:(rank + 1) * per]\n",
    ),
    "SL103 URL on the line of the division": (
        "SL103",
        "def shard(x, rank, world_size):\n"
        "    per = len(x)//world_size; site = 'http://x'\n"
        "    return x[rank * per:(rank + 1) * per], site\n",
    ),
    "SL304 constructor under an alias": (
        "SL304",
        "from numpy.random import default_rng as make_rng\n"
        "from torch.utils.data import Dataset\n"
        "class D(Dataset):\n    def __init__(self):\n        self.rng = make_rng(0)\n"
        "    def __getitem__(self, i):\n        return self.rng.random()\n",
    ),
    "SL104 set-up imported under an alias": (
        "SL104",
        "from torch.distributed import init_process_group as start\n"
        "from torch.utils.data import DataLoader\n"
        "from torchvision.datasets import MNIST\n"
        "def main(model, optimizer, epochs):\n    start('nccl')\n"
        "    dataset = MNIST('data', train=True)\n"
        "    loader = DataLoader(dataset, batch_size=32, shuffle=True)\n"
        "    for epoch in range(epochs):\n        for x, y in loader:\n"
        "            model(x).sum().backward()\n            optimizer.step()\n",
    ),
    "SL504 prepare_data_loader under an alias": (
        "SL504",
        "from accelerate.data_loader import prepare_data_loader as shard\n"
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "loader = shard(DataLoader(ds, sampler=DistributedSampler(ds)), 0, 2)\n",
    ),
    "SL504 sampler fourth by position, in brackets": (
        "SL504",
        "from accelerate import Accelerator\n"
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "accelerator = Accelerator()\n"
        "loader = (DataLoader)(ds, 8, False, DistributedSampler(ds))\n"
        "prepared = accelerator.prepare(loader)\n",
    ),
    "SL504 batch sampler built from a sampler, after a comment": (
        "SL504",
        "from accelerate import Accelerator\n"
        "from torch.utils.data import BatchSampler, DataLoader, DistributedSampler\n"
        "accelerator = Accelerator()\n"
        "loader = (DataLoader  # the training loader (\n"
        "    (ds, batch_sampler=BatchSampler(DistributedSampler(ds), 8, False)))\n"
        "prepared = accelerator.prepare(loader)\n",
    ),
    "SL503 shuffle third by position": (
        "SL503",
        "from torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, 32, True, make_sampler(ds))\n",
    ),
    "SL503 shuffle in brackets, comment and continuation": (
        "SL503",
        "from torch.utils.data import DataLoader\n"
        "a = DataLoader(ds, sampler=pick(ds), shuffle=(True))\n"
        "b = DataLoader(ds, sampler=pick(ds), shuffle  # on\n"
        "    =  # always\n    True)\n"
        "c = DataLoader(ds, sampler=pick(ds), shuffle=\\\n    True)\n",
    ),
    "SL503 batch sampler fifth by position": (
        "SL503",
        "import torch\n"
        "loader = torch.utils.data.DataLoader (make(ds, ')'), 16, False, None,\n"
        "    # a comment with a bracket (\n    buckets(ds))\n",
    ),
    "SL503 batch sampler by position after strings": (
        "SL503",
        "from torch.utils.data import DataLoader\n"
        "loader = DataLoader(pick('a, b', \"\"\"c), (d\"\"\", 'e\\', f'),\n"
        "    16, False, None, buckets(ds))\n",
    ),
    "SL503 batch sampler by position after an f-string": (
        "SL503",
        "from torch.utils.data import DataLoader\n"
        "loader = DataLoader(pick(f\"{a}, {b}\"), 16, False, None, buckets(ds))\n",
    ),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_kept_shapes_are_flagged_with_and_without_the_prefilter(name: str) -> None:
    code, snippet = KEPT[name]
    assert rules_by_code()[code].may_match_text(snippet)
    without = lint_code(snippet, select=[code], use_prefilter=False)
    assert code in {finding.code for finding in without.findings}
    with_filter = lint_code(snippet, select=[code])
    assert [f.location.line for f in with_filter.findings] == [
        f.location.line for f in without.findings
    ]


# Their tokens pass the text pre-filter, their shape does not: no parse, and no finding.
REJECTED = {
    "SL103 only a URL's slashes": (
        "SL103",
        "# see https://pytorch.org/docs for rank and world_size\n"
        "def shard(x, rank, world_size):\n    return x[rank::world_size]\n",
    ),
    "SL304 only inside longer names": (
        "SL304",
        "from torch.utils.data import Dataset, RandomSampler\n"
        "class D(Dataset):\n    def __init__(self):\n        self.s = RandomSampler(self)\n"
        "    def __getitem__(self, i):\n        return DataGenerator(i)\n",
    ),
    "SL104 only inside longer names": (
        "SL104",
        "from accelerate.utils import DistributedDataParallelKwargs\n"
        "from torch.utils.data import DataLoader\n"
        "kwargs = DistributedDataParallelKwargs(find_unused_parameters=True)\n"
        "loader = DataLoader(ds, batch_size=8, shuffle=True)\n",
    ),
    "SL504 only Lightning's prepare_data hook": (
        "SL504",
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "class Data:\n    def prepare_data(self):\n        download()\n"
        "    def train_dataloader(self):\n"
        "        return DataLoader(ds, sampler=DistributedSampler(ds))\n",
    ),
    "SL504 loaders given no sampler": (
        "SL504",
        "from accelerate import Accelerator\n"
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "accelerator = Accelerator()\n"
        "sampler = DistributedSampler(ds)\n"
        "loader = DataLoader(ds, batch_size=8, shuffle=True, collate_fn=collate)\n"
        "loader = accelerator.prepare(model, loader, DataLoader(ds, 8, False))\n",
    ),
    "SL503 sampler without shuffle": (
        "SL503",
        "from torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, batch_size=8, sampler=s, pin_memory=True, drop_last=True)\n",
    ),
    "SL503 shuffle without a sampler, True in another call": (
        "SL503",
        "import pytest\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, batch_size=8, shuffle=True, num_workers=2)\n"
        "case = pytest.param(0, 1, None, True)\n",
    ),
    "SL503 four arguments by position": (
        "SL503",
        "from torch.utils.data import DataLoader\n"
        "loader = DataLoader(make(a, b, c, d), 8, False, s)\n",
    ),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_shapes_the_text_stage_rejects(name: str) -> None:
    code, snippet = REJECTED[name]
    assert rules_by_code()[code].prefilter_groups()[0].search(snippet)
    assert not rules_by_code()[code].may_match_text(snippet)
    assert not lint_code(snippet, select=[code], use_prefilter=False).findings


def test_floor_division_and_words() -> None:
    assert may_floor_divide("a//b") and may_floor_divide("x[:n//2]") and may_floor_divide("n //= 2")
    assert not may_floor_divide("'s3://bucket', \"file:///tmp\"")
    assert names_a_word("r = random.Random(0)", ["Random"])
    assert not names_a_word("RandomSampler, MyRandom, Random_", ["Random"])


def test_keywords_and_literals() -> None:
    assert keyword_is("a, shuffle = True", "shuffle", "True")
    assert keyword_is("a, shuffle=(  # always\n True)", "shuffle", "True")
    assert not keyword_is("a, shuffle=False, pin_memory=True", "shuffle", "True")
    assert not keyword_is("a, reshuffle=True", "shuffle", "True")
    assert is_literal(" (True)  # on\n", "True")
    assert not is_literal(" True or x", "True")


def _calls(text: str) -> list[CallText | None]:
    return list(calls_in(text, re.compile(r"f\(")))


def _positional(text: str) -> list[tuple[str, ...]]:
    return [call.positional for call in _calls(text) if call is not None]


def test_calls_read_strings_brackets_and_keywords() -> None:
    assert _calls("f(a, b, c)") == [CallText(("a", " b", " c"), "a, b, c")]
    assert _calls("f(a, g(b, c)) + f()") == [
        CallText(("a", " g(b, c)"), "a, g(b, c)"), CallText((), "")
    ]
    assert _positional("f(a, 'b, c', \"d, (e\")") == [("a", " 'b, c'", ' "d, (e"')]
    assert _positional(r"f('a\', b', c)") == [(r"'a\', b'", " c")]  # an escaped quote
    assert _positional("f(a, '''x, ''' \"\"\"y, (\"\"\")") == [
        ("a", " '''x, ''' \"\"\"y, (\"\"\"")
    ]
    assert _positional("f(a, # c, (\n b)") == [("a", " # c, (\n b")]
    # The positional arguments end at the first keyword argument, and only there.
    assert _positional("f(a, b=1, c)") == [("a",)]
    assert [len(p) for p in _positional("f(lambda a=1: a, x == y, p <= q, (z := 1))")] == [4]
    # Unsure: an f-string, a string or a call that never closes.
    assert _calls("f(a, rf'{x}', b)") == _calls("f(a, 'open") == _calls("f(a, b") == [None]
    assert _calls("g(a, b, c)") == []


# A DataLoader call of random arguments: the shape must be no narrower than the syntax filter.
_VALUES = st.sampled_from([
    "True", "False", "None", "8", "s", "make(a, b)", "(True)", "'x, y'", "[1, 2]", "f'{a}'",
    "lambda a, b: a", "{'k': (1, 2)}", "a == b", "lambda a=1: a", "(x := 1)",
    "DistributedSampler(ds)",
])
_KEYWORDS = st.sampled_from(["shuffle", "sampler", "batch_sampler", "batch_size", "drop_last",
                             "pin_memory", "num_workers"])
_SPACES = st.sampled_from([
    "", " ", "  # note (\n    ", " \\\n    ", "  # note (\r    ", " # a # (b) #\r\n  # #\n  ",
])


@st.composite
def _loader_calls(draw: st.DrawFn) -> str:
    positional = draw(st.lists(_VALUES, max_size=7))
    keywords = draw(st.dictionaries(_KEYWORDS, _VALUES, max_size=4))
    space = draw(_SPACES)
    arguments = [*positional, *(f"{name}={space}{value}" for name, value in keywords.items())]
    name = draw(st.sampled_from(["DataLoader", "torch.utils.data.DataLoader", "MyDataLoader"]))
    return f"loader = {name}({(',' + space).join(arguments)})\n"


@settings(max_examples=400, deadline=None)
@given(_loader_calls())
def test_sl503_shape_is_no_narrower_than_its_syntax_filter(text: str) -> None:
    rule = rules_by_code()["SL503"]
    if rule.may_match(SyntaxSummary(ast.parse(text))):
        assert rule.may_match_text(text)


@settings(max_examples=400, deadline=None)
@given(_loader_calls())
def test_sl504_shape_is_no_narrower_than_its_syntax_filter(call: str) -> None:
    rule = rules_by_code()["SL504"]
    text = call + "prepared = accelerator.prepare(loader)\n"
    if rule.may_match(SyntaxSummary(ast.parse(text))):
        assert rule.may_match_text(text)


def test_may_import_finds_words_in_imports_only() -> None:
    imports = [
        "import pytorch_lightning as pl\n",
        "from lightning.pytorch import Trainer\n",
        "from . import (  # noqa: F401, re-exported\n    other,\n    lightning,\n)\n",
        "import os, \\\n    lightning\n",
        "if ok: import lightning\n",
        "from ..lightning_fabric import Fabric\n",
    ]
    for text in imports:
        assert may_import("x = {'a': 1}\n" + text, ["lightning"]), text
    assert may_import("import torch.distributed as dist\n", MODULE_TOKENS)
    assert may_import("from torch import distributed\n", MODULE_TOKENS)
    not_imports = [
        "LVIS = [{'synset': 'lightning_rod.n.02', 'name': 'lightning_rod'}]\n",
        "x = 1  # trained with lightning\n",
        "self.lightning_module = module\n",
        '"""Runs under pytorch_lightning."""\n',
    ]
    for text in not_imports:
        assert not may_import("import os\nx = 2\n" + text, ["lightning"]), text
    assert not may_import("state.distributed = True\nmodel.parallel = False\n", MODULE_TOKENS)


def _keyword_before_by_characters(text: str, at: int, limit_back: int) -> bool:
    """The import-keyword scan written as a plain loop over characters, one at a time: the
    reference the regular-expression scan must agree with."""
    start, limit = at, max(0, at - limit_back)
    while start > limit:
        char = text[start - 1]
        if char in " \t\r\n\f\\(),." or char.isalnum() or char == "_":
            start -= 1
            continue
        comment = text.find("#", text.rfind("\n", 0, start) + 1, start)
        if comment < 0:
            break
        start = comment
    else:
        if start > 0:
            return True
    return re.search(r"\b(?:import|from)\b", text[start:at]) is not None


_IMPORT_TEXT = st.lists(
    st.sampled_from([
        "import", "from", "lightning", " ", "  ", "\t", "\n", "\r\n", "\\\n", "(", ")", ",", ".",
        "#", "# a: b", ":", "=", "'", '"', "x", "_", "é", "²", "·", "a1", "\f",
    ]),
    max_size=40,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(_IMPORT_TEXT, st.sampled_from([3, 8, 4_000]))
def test_import_scan_agrees_with_a_scan_by_characters(text: str, limit: int) -> None:
    # The scan crosses runs of import characters with a regular expression over the reversed
    # text (at C speed); it must answer as a loop over characters would, at every occurrence,
    # near and past the scan's limit, and for letters `isalnum` and `\w` both take.
    from sampler_lint.analysis import text_shapes

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_shapes, "_IMPORT_SCAN_LIMIT", limit)
        at = text.find("lightning")
        while at >= 0:
            expected = _keyword_before_by_characters(text, at, limit)
            assert text_shapes._keyword_before(text, text[::-1], at) == expected, (text, at)
            at = text.find("lightning", at + 1)


_MODULES = st.sampled_from([
    "lightning", "pytorch_lightning", "lightning_fabric", "lightning.pytorch", "os",
    "torch.distributed", "torch", "deepspeed", "accelerate", "pkg.lightning", "torch.nn.parallel",
])
_GAPS = st.sampled_from([" ", "  ", " \\\n    ", " (\n    ", "  # note: a = 1\n    "])


@st.composite
def _import_lines(draw: st.DrawFn) -> str:
    module, alias = draw(_MODULES), draw(st.sampled_from(["", " as m"]))
    head, tail = module.rsplit(".", 1) if "." in module else ("", module)
    dots = draw(st.sampled_from(["", ".", ".."]))
    gap = draw(_GAPS)
    form = draw(st.integers(0, 2))
    if form == 0:
        line = f"import{gap.replace('(', '')}{module}{alias}"
    elif form == 1:
        line = f"from {dots}{module} import{gap}name{alias}"
    else:
        line = f"from {dots}{head} import{gap}other,{gap}{tail}{alias}"
    if "(" in line:
        line += "\n)"
    noise = draw(st.sampled_from(["", "label = 'lightning distributed'\n", "x.parallel = 1\n"]))
    return noise + line + "\n"


@settings(max_examples=400, deadline=None)
@given(_import_lines())
def test_import_collectors_admit_every_file_they_find_imports_in(text: str) -> None:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return  # `from . import x` forms the generator cannot always make valid
    modules = collect_module_facts(tree, "/m.py")[FACT_MODULES]
    if modules:
        assert DISTRIBUTED_IMPORTS.admits(text), text
    # The lightning collectors answer one question: does the project import Lightning?
    if any(module.split(".")[0] in LIGHTNING for module in modules):
        assert LIGHTNING_IMPORTS.admits(text) and LIGHTNING_FILES.admits(text), text


class _CountingText(str):
    searched: list[str]

    def __contains__(self, token: object) -> bool:
        self.searched.append(str(token))
        return super().__contains__(str(token))


def test_rules_and_collectors_search_each_token_once() -> None:
    """One token search per file serves the rules' and the collectors' pre-filters: a token a
    text lacks costs a scan of all of it (diffusers: 42 MB of code, 70 tokens)."""
    text = _CountingText(
        "from torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, sampler=s, shuffle=True)\n"
    )
    text.searched = []
    rules = tuple(all_rules())
    lint = LintOptions(rules=rules, options={}, vocabulary=Vocabulary())
    search = TokenSearch(text)
    kept = rules_to_run(text, frozenset(), lint, search)
    admitted = [c.name for c in Collectors.for_rules(rules).collectors if c.admits(text, search)]
    assert "SL503" in {rule.code for rule in kept} and "dataset loaders" in admitted
    assert len(text.searched) == len(set(text.searched)) > 20


_LETTERS = st.text(alphabet="ab_", max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab_\n", max_size=30), st.lists(st.lists(_LETTERS, max_size=4), max_size=6))
def test_token_search_answers_as_a_plain_search(text: str, groups: list[list[str]]) -> None:
    """What one text holds is what ``in`` says, whatever was asked before: a token inside a
    longer one, asked first or after it, answered from memory or not."""
    search = TokenSearch(text)
    for group in groups:
        assert search.any(group) == any(token in text for token in group)
        for token in group:
            assert search.holds(token) == (token in text)


def test_a_token_inside_a_missing_one_is_not_searched_for() -> None:
    """No ``sampler`` in the text: no scan for ``batch_sampler``."""
    text = _CountingText("import torch\n")
    text.searched = []
    search = TokenSearch(text)
    assert not search.holds("sampler") and not search.holds("batch_sampler")
    assert not search.any(["use_distributed_sampler", "sampler"])
    assert text.searched == ["sampler"]


@st.composite
def _lightning_1x_spellings(draw: st.DrawFn) -> str:
    """A line that may hold a Lightning 1.x marker as the collector reads one (an attribute, a
    keyword argument, a function's name, a whole string), or only inside a longer name."""
    marker = draw(st.sampled_from(LIGHTNING_1X_MARKERS))
    before = draw(st.sampled_from(["", "on_", "x"]))
    after = draw(st.sampled_from(["", "_hook", "2"]))
    name = before + marker + after
    form = draw(st.integers(0, 5))
    line = [
        f"model.{name} = None",
        f"Trainer({name}=False)",
        f"def {name}(self, outputs):\n    pass",
        f"hook = '{name}'",
        f"hook = rf\"{name}\"",
        f"hook = f'{{prefix}}{name}{{suffix}}'",
    ][form]
    return line + "\n"


@settings(max_examples=300, deadline=None)
@given(_lightning_1x_spellings())
def test_lightning_1x_collector_admits_every_file_it_finds_a_marker_in(text: str) -> None:
    """Its shape wants a marker as a whole word: never narrower than what it collects."""
    facts = collect_lightning_1x(ast.parse(text), "/m.py")[FACT_LIGHTNING_1X]
    if facts:
        assert LIGHTNING_1X.admits(text), text


def test_lightning_1x_collector_passes_over_the_2x_hooks() -> None:
    # Lightning 2.x's hooks spell the 1.x ones inside theirs: no marker, and no parse to learn so.
    assert not LIGHTNING_1X.admits("def on_validation_epoch_end(self):\n    pass\n")
    assert LIGHTNING_1X.admits("def validation_epoch_end(self, outputs):\n    pass\n")
