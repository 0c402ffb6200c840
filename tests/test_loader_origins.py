"""The ``ast`` twin of ``origins_at`` (SL201's hints to its index stage): where it answers, it
answers as the libcst reading does, and it declines where libcst's assignment table may hold
less than ``ast`` shows (one-line suites, after a backslash too)."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst
import pytest

from sampler_lint.analysis.index import ProjectIndex
from sampler_lint.analysis.loader_facts import (
    SAMPLER_IS_BATCH_SAMPLER,
    file_key,
    forwarded_attribute,
)
from sampler_lint.analysis.loaders import at_path, origins_ast, origins_at
from sampler_lint.analysis.syntax_summary import SyntaxSummary
from sampler_lint.analysis.tree import descendants
from sampler_lint.analysis.vocabulary import Vocabulary
from sampler_lint.rule import FileContext

PATH = "/project/train.py"

# Each snippet's `probe.sampler` is the loader expression asked about.
SNIPPETS = {
    "built here": "def f(ds):\n    probe = DataLoader(ds, sampler=s)\n    probe.sampler\n",
    "built with a batch sampler": "def f(ds, b):\n    probe = DataLoader(ds, batch_sampler=b)\n"
    "    probe.sampler\n",
    "five positional": "def f(ds):\n    probe = DataLoader(ds, 1, False, None, b)\n"
    "    probe.sampler\n",
    "keyword splat": "def f(ds, kw):\n    probe = DataLoader(ds, **kw)\n    probe.sampler\n",
    "star args": "def f(ds, a):\n    probe = DataLoader(ds, *a)\n    probe.sampler\n",
    "star args after four": "def f(ds, s, a):\n    probe = DataLoader(ds, 1, False, s, *a)\n"
    "    probe.sampler\n",
    "parameter": "def f(ds, probe):\n    probe.sampler\n",
    "keyword-only parameter": "def f(ds, *, probe):\n    probe.sampler\n",
    "method parameter": "class T:\n    def f(self, probe):\n        probe.sampler\n",
    "factory": "def f(cuts):\n    probe = make_loader(cuts, shuffle=True)\n    probe.sampler\n",
    "method of a module object": "def f(args, cuts):\n    dm = DataModule(args)\n"
    "    probe = dm.train_dataloaders(cuts)\n    probe.sampler\n",
    "own method": "class T:\n    def f(self):\n        probe = self.loader()\n"
    "        probe.sampler\n",
    "attribute of self": "class T:\n    def f(self):\n        self.probe.sampler\n",
    "branches": "def f(ds, c):\n    if c:\n        probe = DataLoader(ds, sampler=s)\n"
    "    else:\n        probe = None\n    probe.sampler\n",
    "conditional expression": "def f(ds, c):\n"
    "    probe = DataLoader(ds) if c else make(ds)\n    probe.sampler\n",
    "unpacked": "def f(ds):\n    model, probe = build(ds)\n    probe.sampler\n",
    "tuple item": "def f(ds):\n    pair = (model, DataLoader(ds))\n    probe = pair[1]\n"
    "    probe.sampler\n",
    "loader class through a local": "def f(ds, c):\n"
    "    cls = DataLoader if c else torch.utils.data.DataLoader\n"
    "    probe = cls(ds, batch_size=2)\n    probe.sampler\n",
    "module level": "probe = DataLoader(ds)\nprobe.sampler\n",
    "nested function's own assignment": "def f(ds):\n    def g():\n"
    "        probe = DataLoader(ds, batch_sampler=b)\n    probe = DataLoader(ds)\n"
    "    probe.sampler\n",
    "annotated": "def f(ds):\n    probe: DataLoader = DataLoader(ds, sampler=s)\n"
    "    probe.sampler\n",
    "in a loop and a try": "def f(ds, n):\n    for i in range(n):\n        try:\n"
    "            probe = DataLoader(ds)\n        except E:\n            probe = None\n"
    "    probe.sampler\n",
    "two on a line": "def f(ds):\n    probe = DataLoader(ds); other = 1\n    probe.sampler\n",
    "super's method": "class T(Base):\n    def f(self):\n        probe = super().loader()\n"
    "        probe.sampler\n",
    "super with its class named": "class T(Base):\n    def f(self):\n"
    "        probe = super(T, self).loader()\n        probe.sampler\n",
}

# libcst's table leaves one-line suites out: the twin declines rather than guess.
DECLINED = {
    "one-line if": "def f(ds, c):\n    if c: probe = DataLoader(ds)\n    probe.sampler\n",
    "one-line def": "def f(ds): probe = DataLoader(ds); probe.sampler\n",
    "second statement of a line only": "def f(ds):\n    x = 1; probe = DataLoader(ds)\n"
    "    probe.sampler\n",
    # The review's cases: a suite continued by a backslash; an unpacking in a one-line suite
    # (libcst: unknown; an item origin would replace it); a receiver's extra value in a
    # one-line suite (merged in, it hides the class whose method libcst follows).
    "backslash suite": "def f(ds, s):\n    if True: \\\n        probe = DataLoader(ds, sampler=s)\n"
    "    probe.sampler\n",
    "unpacked in a one-line suite": "def f(ds, c):\n    if c: model, probe = build(ds)\n"
    "    probe.sampler\n",
    "receiver's value in a one-line suite": "def f(ds, b, c, args):\n    dm = DataModule()\n"
    "    if c: dm = load_module(args)\n    probe = dm.train_dataloader(ds, b)\n"
    "    probe.sampler\n",
    # Keys stored over what a call returned: dicts of loaders are read with libcst alone.
    "keys stored over a call's value": "def f(ds):\n    probe = build(ds)\n"
    "    probe['x'] = DataLoader(ds)\n    probe.sampler\n",
    "a key that is no constant": "def f(ds, phase):\n    loaders = build(ds)\n"
    "    probe = loaders[phase]\n    probe.sampler\n",
    "a dict comprehension": "def f(ds):\n    probe = {x: DataLoader(ds[x]) for x in ds}['a']\n"
    "    probe.sampler\n",
    "a dict's get": "def f(ds):\n    probe = build(ds).get('train')\n    probe.sampler\n",
}


def _cst_origins(code: str) -> object:
    module = libcst.parse_module(code)
    context = FileContext(Path(PATH), module, {}, Vocabulary(), ProjectIndex())
    probe = next(
        node.value for node in descendants(module)
        if isinstance(node, libcst.Attribute) and node.attr.value == "sampler"
    )
    return origins_at(context, probe)


def _ast_origins(code: str) -> object:
    summary = SyntaxSummary(ast.parse(code))
    summary.source = code
    probe = next(
        node.value for node in summary.nodes(ast.Attribute) if node.attr == "sampler"
    )
    found = origins_ast(summary, probe)
    return None if found is None else at_path(found, file_key(PATH))


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_the_twin_reads_a_loader_as_libcst_does(name: str) -> None:
    code = SNIPPETS[name]
    assert _ast_origins(code) == _cst_origins(code)


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_the_twin_declines_what_libcst_may_not_hold(name: str) -> None:
    assert _ast_origins(DECLINED[name]) is None


def test_without_the_source_the_twin_follows_no_name() -> None:
    code = SNIPPETS["built here"]
    summary = SyntaxSummary(ast.parse(code))  # no source given
    probe = next(n.value for n in summary.nodes(ast.Attribute) if n.attr == "sampler")
    assert origins_ast(summary, probe) is None
    assert _ast_origins(SNIPPETS["parameter"]) is not None  # a parameter needs no table


@pytest.mark.parametrize(("code", "expected"), [
    ("class W:\n    def __getattr__(self, name):\n        return getattr(self.inner, name)\n",
     "inner"),
    ("class W(object):\n    def __getattr__(self, key):\n        '''Forward.'''\n"
     "        return self.loader.__getattribute__(key)\n", "loader"),
    # A base, a decorator or a metaclass may answer `.sampler` first.
    ("class W(Base):\n    def __getattr__(self, name):\n        return getattr(self.inner, name)\n",
     None),
    ("@dataclass\nclass W:\n    def __getattr__(self, name):\n"
     "        return getattr(self.inner, name)\n", None),
    ("class W(metaclass=M):\n    def __getattr__(self, name):\n"
     "        return getattr(self.inner, name)\n", None),
    # The class stores a sampler of its own, or may (`setattr`).
    ("class W:\n    def __init__(self, inner):\n        self.sampler = inner.sampler\n"
     "    def __getattr__(self, name):\n        return getattr(self.inner, name)\n", None),
    ("class W:\n    def __init__(self, inner, k, v):\n        setattr(self, k, v)\n"
     "    def __getattr__(self, name):\n        return getattr(self.inner, name)\n", None),
    # Not a plain forward: another name, a default, another object.
    ("class W:\n    def __getattr__(self, name):\n        return getattr(self.inner, 'x')\n",
     None),
    ("class W:\n    def __getattr__(self, name):\n"
     "        return getattr(self.inner, name, None)\n", None),
    ("class W:\n    def __getattr__(self, name):\n        return getattr(other, name)\n", None),
    # No `__getattr__` and nothing of those names: its instances have neither.
    ("class W:\n    def __init__(self, n):\n        self.n = n\n    def __iter__(self):\n"
     "        yield from range(self.n)\n", ""),
    ("class W:\n    def __init__(self, **options):\n        self.__dict__.update(options)\n", None),
    ("class W:\n    sampler = None\n", None),
    # A `sampler` property giving the batch sampler of what it wraps (NVIDIA's Efficientdet
    # `PrefetchLoader`): `.sampler.set_epoch` reaches that batch sampler.
    ("class W:\n    def __init__(self, loader):\n        self.loader = loader\n"
     "    @property\n    def sampler(self):\n        return self.loader.batch_sampler\n",
     SAMPLER_IS_BATCH_SAMPLER),
    ("class W:\n    @property\n    def sampler(self):\n        '''The batches.'''\n"
     "        return self.loader.batch_sampler\n"
     "    def __getattr__(self, name):\n        return getattr(self.loader, name)\n",
     SAMPLER_IS_BATCH_SAMPLER),
    # Anything else a `sampler` may give: unknown.
    ("class W:\n    @property\n    def sampler(self):\n        return self.loader.sampler\n",
     None),
    ("class W:\n    def sampler(self):\n        return self.loader.batch_sampler\n", None),
    ("class W:\n    @property\n    def sampler(self):\n        return self.batch_sampler\n",
     None),
    ("class W:\n    @property\n    def sampler(self):\n        return self.l.batch_sampler\n"
     "    @property\n    def batch_sampler(self):\n        return None\n", None),
])
def test_a_forwarding_wrapper_is_recognised(code: str, expected: str | None) -> None:
    klass = ast.parse(code).body[0]
    assert isinstance(klass, ast.ClassDef)
    assert forwarded_attribute(klass) == expected
