"""The configurable vocabulary reaches both the matchers and the text pre-filter."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sampler_lint.api import lint_code
from sampler_lint.cli import main

CODE = "def f(x, n_ranks, me):\n    return x.split(x.size(0) // n_ranks)[me]\n"


def test_configured_names_are_matched_and_not_prefiltered_away() -> None:
    assert lint_code(CODE, select=["SL101"]).findings == []
    found = lint_code(
        CODE, select=["SL101"], options={"world-size-names": ["n_ranks"], "rank-names": ["me"]}
    ).findings
    assert [(f.code, f.location.line) for f in found] == [("SL101", 2)]


def test_prefilter_agrees_with_a_full_parse_on_vocabulary_forms() -> None:
    code = (
        "import os\nimport torch.distributed as dist\n"
        "ws = int(os.environ['WORLD_SIZE'])\nr = dist.get_rank()\n"
        "mine = idx.split(len(idx) // ws)[r]\n"
    )
    fast = lint_code(code, select=["ALL"]).findings
    full = lint_code(code, select=["ALL"], use_prefilter=False).findings
    assert [f.code for f in fast] == [f.code for f in full] == ["SL101"]


@pytest.mark.parametrize(("code", "setting", "source"), [
    ("SL103", 'rank-names = ["shard_index"]',
     "def shard(items, args, world_size):\n"
     "    per = len(items) // world_size\n"
     "    return items[args.shard_index * per:(args.shard_index + 1) * per]\n"),
    ("SL101", 'world-size-names = ["n_shards"]',
     "def shard(items, rank, args):\n"
     "    per = len(items) // args.n_shards\n"
     "    return items.split(per)[rank]\n"),
])
def test_a_configured_name_reaches_the_syntax_filter_of_a_project_run(
    tmp_path: Path, code: str, setting: str, source: str
) -> None:
    # The survey of a run (not lint_code's path) hands the configured names to the syntax stage.
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.sampler-lint]\nselect = ["{code}"]\n{setting}\n'
    )
    (tmp_path / "shard.py").write_text(source)
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "concise", str(tmp_path)]
    )
    assert f"shard.py:3:12: {code}" in result.output, result.output


@pytest.mark.parametrize("extra", [(), ("my_rank_of_node", "ws")])
def test_a_token_group_drops_only_tokens_that_hold_another(extra: tuple[str, ...]) -> None:
    """A text pre-filter group searches fewer tokens, never fewer texts: a text holding any
    token of the vocabulary (configured names included) still passes its group."""
    from sampler_lint.analysis.vocabulary import Vocabulary
    from sampler_lint.engine.registry import all_rules

    vocabulary = Vocabulary.from_options({"rank-names": list(extra)})
    for rule in all_rules():
        for written, group in zip(rule.requires, rule.prefilter_groups(vocabulary), strict=True):
            every = [
                token for item in written
                for token in (vocabulary.tokens(item) if item.startswith("{") else [item])
            ]
            assert all(group.search(f"x = {token}(y)") for token in every), rule.code
            assert not any(
                other != token and other in token
                for token in group.tokens for other in group.tokens
            ), rule.code
    rank = next(
        g for r in all_rules() for g in r.prefilter_groups(vocabulary) if "rank" in g.tokens
    )
    assert "get_rank" not in rank.tokens and "local_rank" not in rank.tokens
