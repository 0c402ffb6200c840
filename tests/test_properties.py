"""Property tests: generated programs never make the linter raise, and every fix result parses,
compiles and is a fixed point.

Two sources of programs: hypothesmith's grammar-based generator (odd but valid syntax), and
programs assembled from the shapes of real training code with our rule patterns spliced in. CI runs
a few hundred examples; set ``SAMPLER_LINT_FUZZ_EXAMPLES`` for more.
"""

from __future__ import annotations

import os
import warnings

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sampler_lint.api import lint_code

# hypothesmith writes programs like `1()`: valid, but they warn when compiled.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

EXAMPLES = int(os.environ.get("SAMPLER_LINT_FUZZ_EXAMPLES", "100"))
COMMON = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _compile(code: str, name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        compile(code, name, "exec", dont_inherit=True)


def _check_fix(code: str) -> None:
    result = lint_code(code, select=["ALL"], fix=True, unsafe_fixes=True, use_prefilter=False)
    if result.fixed is None:
        return
    _compile(result.fixed, "<fixed>")
    again = lint_code(result.fixed, select=["ALL"], fix=True, unsafe_fixes=True,
                      use_prefilter=False)
    assert again.fixed is None, "a second fix run changed the code"


@COMMON
@given(hypothesmith.from_grammar())
def test_generated_programs_never_crash(code: str) -> None:
    result = lint_code(code, select=["ALL"], use_prefilter=False)
    assert not result.result.internal_error
    _check_fix(code)


# ------------------------------------------------------------------------------------------------
# Training-code shapes with rule patterns spliced in

NAMES = st.sampled_from(["idx", "train_idx", "edges", "data", "x", "split_idx['train']"])
WORLD = st.sampled_from(["world_size", "dist.get_world_size()", "args.world_size", "num_devices"])
RANK = st.sampled_from(["rank", "dist.get_rank()", "args.local_rank", "local_rank"])
LENGTH = st.sampled_from(["{x}.size(0)", "len({x})", "{x}.shape[0]", "n"])


@st.composite
def shard_statement(draw: st.DrawFn) -> str:
    x, w, r = draw(NAMES), draw(WORLD), draw(RANK)
    length = draw(LENGTH).format(x=x)
    shape = draw(st.sampled_from([
        "out = {x}.split({n} // {w})[{r}]",
        "out = {x}.split({n} // {w}, dim=0)[{r}]",
        "out = torch.split({x}, {n} // {w})[{r}]",
        "out = {x}.chunk({w})[{r}]",
        "per = {n} // {w}\nout = {x}[{r} * per:({r} + 1) * per]",
        "per = {n} // {w}\nout = {x}.split(per)[{r}]",
        "chunks = {x}.split({n} // {w})\nout = chunks[{r}]  # keep",
        "out = {x}.split(  # why\n    {n} // {w},\n)[{r}]",
        "sampler = DistributedSampler({x}, shuffle=True)",
        "sampler = DistributedSampler({x}, seed={r})",
        "loader.sampler.set_epoch({r})",
        # Shapes the ast pre-filters look for more closely.
        "q = {n} // {w}\nout = q % {w}",
        "sampler = DistributedSampler({x}, shuffle=True, seed=0)\n"
        "out = DataLoader({x}, batch_size=8, shuffle=True, sampler=sampler)",
        "out = DataLoader({x}, 8, True, DistributedSampler({x}))",
        "start = {r} * ({n} // {w})\nout = {x}[start:start + {n} // {w}]",
        "for i in range({r} * ({n} // {w}), ({r} + 1) * ({n} // {w})):\n    out = i",
        "s = loader.sampler\ns.set_epoch({r})",
        "it = zip(loader, {x})\nloader.sampler.set_epoch({r})\nout = next(it)",
    ]))
    return shape.format(x=x, n=length, w=w, r=r)


@st.composite
def training_program(draw: st.DrawFn) -> str:
    body = draw(st.lists(shard_statement(), min_size=1, max_size=4))
    wrapper = draw(st.sampled_from(["function", "method", "module", "loop"]))
    header = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.utils.data import DataLoader, DistributedSampler\n\n"
    )
    lines = "\n".join(body).splitlines()
    if wrapper == "module":
        return header + "\n".join(lines) + "\n"
    indent = {"function": "    ", "loop": "        ", "method": "        "}[wrapper]
    block = "\n".join(indent + line if line.strip() else line for line in lines)
    if wrapper == "function":
        signature = "def shard(idx, data, x, edges, n, rank, world_size, args, loader):"
        return header + f"{signature}\n{block}\n    return out\n"
    if wrapper == "loop":
        signature = "def train(idx, n, rank, world_size, loader):\n    for epoch in range(10):"
        return header + f"{signature}\n{block}\n"
    signature = "class Sharder:\n    def shard(self, idx, n, rank, world_size):"
    return header + f"{signature}\n{block}\n        return out\n"


@COMMON
@given(training_program())
def test_training_shapes_fix_to_a_fixed_point(code: str) -> None:
    _compile(code, "<generated>")  # the generator writes valid code
    result = lint_code(code, select=["ALL"])
    assert not result.result.internal_error
    # Both pre-filter stages (text, then Python's parser) never hide a finding.
    unfiltered = lint_code(code, select=["ALL"], use_prefilter=False)
    key = lambda r: [(f.code, f.location) for f in r.findings]  # noqa: E731
    assert key(result) == key(unfiltered)
    _check_fix(code)


@COMMON
@given(training_program(), st.sampled_from(["\n", "\r\n"]))
def test_line_endings_survive_fixes(code: str, newline: str) -> None:
    source = code.replace("\n", newline)
    result = lint_code(source.encode(), select=["ALL"], fix=True, unsafe_fixes=True)
    if result.fixed is not None and newline == "\r\n":
        assert "\n" not in result.fixed.replace("\r\n", "")


@COMMON
@given(hypothesmith.from_grammar())
def test_notebook_masking_leaves_python_alone(code: str) -> None:
    """IPython syntax is never Python at the start of a statement, so a valid program put in a
    notebook cell is linted exactly as written: nothing is masked."""
    from sampler_lint.notebook import mask

    masked = mask(code)
    assert masked == (code, []) or code.lstrip().startswith("%%")


@COMMON
@given(st.text(alphabet=st.sampled_from(list("%!?ab =(\\\n\"' #:"))))
def test_notebook_masking_round_trips(text: str) -> None:
    from sampler_lint.notebook import mask, unmask

    masked = mask(text)
    if masked is not None:
        assert unmask(*masked) == text
