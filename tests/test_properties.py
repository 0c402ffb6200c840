"""Property tests: generated programs never make the linter raise, and every fix result parses,
compiles and is a fixed point.

Two sources of programs: hypothesmith's grammar-based generator (odd but valid syntax), and
programs assembled from the shapes of real training code with our rule patterns spliced in. CI runs
a few hundred examples; set ``SAMPLER_LINT_FUZZ_EXAMPLES`` for more.
"""

from __future__ import annotations

import ast
import io
import os
import random
import tokenize
import warnings
from typing import Any

import hypothesmith
import pytest
from hypothesis import HealthCheck, assume, given, settings
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


def _check_fix(code: str) -> str | None:
    """Fix ``code``: no fix may be refused (a refusal is a rule building a wrong fix), the result
    compiles and is a fixed point. Returns the fixed code, ``None`` when nothing changed."""
    result = lint_code(code, select=["ALL"], fix=True, unsafe_fixes=True, use_prefilter=False)
    assert not result.result.errors, result.result.errors
    assert not result.result.internal_error
    if result.fixed is None:
        assert not [f for f in result.findings if f.fix is not None and f.code != "SL002"], (
            "fixable findings left, yet nothing was fixed"
        )
        return None
    _compile(result.fixed, "<fixed>")
    again = lint_code(result.fixed, select=["ALL"], fix=True, unsafe_fixes=True,
                      use_prefilter=False)
    assert again.fixed is None, "a second fix run changed the code"
    assert not again.result.errors, again.result.errors
    return result.fixed


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
@given(hypothesmith.from_grammar())
def test_notebook_masking_leaves_python_alone(code: str) -> None:
    """IPython syntax is never Python at the start of a statement, so a valid program put in a
    notebook cell is linted exactly as written: nothing is masked."""
    from sampler_lint.engine.notebook import mask

    masked = mask(code)
    assert masked == (code, []) or code.lstrip().startswith("%%")


@COMMON
@given(st.text(alphabet=st.sampled_from(list("%!?ab =(\\\n\"' #:"))))
def test_notebook_masking_round_trips(text: str) -> None:
    from sampler_lint.engine.notebook import mask, unmask

    masked = mask(text)
    if masked is not None:
        assert unmask(*masked) == text


@COMMON
@given(st.text(alphabet=st.sampled_from(list(" \tab=(\n'"))))
def test_a_cells_leading_indent_comes_off_and_goes_back(text: str) -> None:
    from sampler_lint.engine.notebook import dedented, indented_again, leading_indent

    indent = leading_indent(text)
    assert indented_again(dedented(text, indent), indent, text) == text


# ------------------------------------------------------------------------------------------------
# Programs that are flagged: the fix path is reached in every example

SURE_SHAPES = [
    # (statements in a function of (x, n, rank, world_size), the rule they must raise)
    # (each name is assigned once: `{i}` numbers the shape within its program)
    ("out{i} = x.split(len(x) // world_size)[rank]", "SL101"),
    ("out{i} = x.split(x.size(0) // world_size, dim=0)[rank]", "SL101"),
    ("out{i} = torch.split(x, len(x) // world_size)[rank]", "SL101"),
    ("per{i} = len(x) // world_size\nout{i} = x.split(per{i})[rank]", "SL101"),
    ("out{i} = x.chunk(world_size)[rank]", "SL102"),
    ("per{i} = len(x) // world_size\nout{i} = x[rank * per{i}:(rank + 1) * per{i}]", "SL103"),
]


@st.composite
def flagged_program(draw: st.DrawFn) -> str:
    """A function holding one to three shapes that must be flagged, with filler around them."""
    shapes = draw(st.lists(st.sampled_from(SURE_SHAPES), min_size=1, max_size=3))
    filler = st.sampled_from(["y = 1", "z = len(x)", "if n:\n    pass", "# a comment", ""])
    lines: list[str] = []
    for number, (statement, _) in enumerate(shapes):
        lines += draw(filler).splitlines()
        lines += statement.format(i=number).splitlines()
    body = "\n".join("    " + line if line else "" for line in lines)
    return (
        "import torch\n\n\ndef shard(x, n, rank, world_size):\n"
        f"{body}\n    return out0\n"
    )


@COMMON
@given(flagged_program())
def test_flagged_programs_are_flagged_and_fixed(code: str) -> None:
    findings = lint_code(code, select=["ALL"]).findings
    assert {f.code for f in findings} & {"SL101", "SL102", "SL103"}, "the generator's shapes"
    assert _check_fix(code) is not None, "a flagged program must reach the fix path"


@COMMON
@given(hypothesmith.from_grammar(), st.sampled_from(SURE_SHAPES))
def test_grammar_programs_with_a_pattern_spliced_in(prefix: str, shape: tuple[str, str]) -> None:
    """Hypothesmith's odd programs alone are never flagged; with a pattern appended they must
    be, and the fix must go through whatever odd code precedes it."""
    statement, code = shape
    body = "".join("    " + line + "\n" for line in statement.format(i=0).splitlines())
    program = prefix.rstrip("\\\n") + "\n\n\ndef _shard(x, n, rank, world_size):\n" + body
    try:
        _compile(program, "<generated>")
    except SyntaxError:
        assume(False)  # the prefix ended in a way a function cannot follow (rare)
    result = lint_code(program, select=["ALL"], use_prefilter=False)
    assert not result.result.internal_error
    assert code in {f.code for f in result.findings}, "the spliced pattern is flagged"
    _check_fix(program)


# ------------------------------------------------------------------------------------------------
# Pre-filter soundness on spelling: the same program, re-spaced

_LAYOUT = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def respace(code: str, chooser: random.Random, style: str = "mixed") -> str:
    """``code`` with the blanks between its tokens redrawn: none, several, or (inside brackets)
    a line break. ``style``: ``tight`` (none wherever possible, so no operator in the program
    keeps a blank beside it), ``wide`` or ``mixed``."""
    tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    starts = [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(position: tuple[int, int]) -> int:
        return starts[position[0] - 1] + position[1]

    pieces: list[str] = []
    cursor = 0
    depth = 0
    previous: tokenize.TokenInfo | None = None
    for token in tokens:
        if (
            previous is not None and previous.type not in _LAYOUT and token.type not in _LAYOUT
            and previous.end[0] == token.start[0] and token.type != tokenize.COMMENT
        ):
            gap_start, gap_end = offset(previous.end), offset(token.start)
            if not code[gap_start:gap_end].strip(" "):
                # Nothing between two words would join them: only next to an operator.
                joinable = (previous.type == tokenize.OP) != (token.type == tokenize.OP)
                if style == "tight":
                    choices = [""] if joinable else [" "]
                else:
                    choices = ([""] if joinable and style == "mixed" else []) + [" ", "  "]
                    choices += ["\n", "\n        "] if depth else []
                pieces.append(code[cursor:gap_start])
                pieces.append(chooser.choice(choices))
                cursor = gap_end
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        if token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        previous = token
    pieces.append(code[cursor:])
    return "".join(pieces)


def _same_tree(a: str, b: str) -> bool:
    try:
        return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except SyntaxError:
        return False


@st.composite
def respaced(draw: st.DrawFn, programs: st.SearchStrategy[str]) -> str:
    """A generated program re-spaced, kept only when Python reads the same syntax tree from it
    (joining two names, or a number and a dot, would change it)."""
    code = draw(programs)
    style = draw(st.sampled_from(["tight", "wide", "mixed"]))
    new = respace(code, draw(st.randoms(use_true_random=False)), style)
    assume(_same_tree(new, code))
    return new


def _findings(result: Any) -> list[tuple[str, int, int]]:
    return sorted((f.code, f.location.line, f.location.column) for f in result.findings)


@settings(COMMON, max_examples=max(10, EXAMPLES // 3))
@given(respaced(flagged_program()))
def test_prefilter_sees_through_any_spacing(code: str) -> None:
    filtered = lint_code(code, select=["ALL"])
    unfiltered = lint_code(code, select=["ALL"], use_prefilter=False)
    assert _findings(unfiltered), "a flagged program, however spaced, is flagged"
    assert _findings(filtered) == _findings(unfiltered)


@settings(COMMON, max_examples=max(10, EXAMPLES // 3))
@given(respaced(training_program()))
def test_prefilter_sees_through_any_spacing_of_training_shapes(code: str) -> None:
    filtered = lint_code(code, select=["ALL"])
    unfiltered = lint_code(code, select=["ALL"], use_prefilter=False)
    assert _findings(filtered) == _findings(unfiltered)


@COMMON
@given(flagged_program(), st.sampled_from(["\n", "\r\n"]))
def test_line_endings_survive_fixes(code: str, newline: str) -> None:
    source = code.replace("\n", newline)
    result = lint_code(source.encode(), select=["ALL"], fix=True, unsafe_fixes=True)
    assert result.fixed is not None, "a flagged program has a fix"
    assert not result.result.errors, result.result.errors
    lone = result.fixed.replace("\r\n", "")
    assert ("\n" in lone) == (newline == "\n"), "the fix mixed line endings"


def test_a_line_break_inside_a_shard_bound_is_fixed() -> None:
    """Found by the re-spacing test: SL103's fix re-parsed a bound holding a line break (valid
    inside the brackets it came from) as a bare expression, and the run reported an internal
    error."""
    code = (
        "def shard(idx, rank, world_size):\n"
        "    for i in range(rank * (idx\n"
        ".size(0) // world_size), (rank + 1) * (idx.size(0) // world_size)):\n"
        "        yield i\n"
    )
    result = lint_code(code, select=["ALL"])
    assert not result.result.internal_error and not result.result.errors
    assert "SL103" in {f.code for f in result.findings}
    assert _check_fix(code) is not None
