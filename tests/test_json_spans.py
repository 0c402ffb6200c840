"""The JSON span scanner that notebook rewriting stands on: every span holds exactly its value,
and raw offsets inside a string literal land on the character they name, escapes included."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_lint.engine.json_spans import Span, SpanError, parse_spans, raw_offset

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


def _check(span: Span, value: Any, text: str) -> None:
    assert json.loads(text[span.start: span.end]) == value
    if isinstance(value, dict):
        assert set(span.members) == set(value)
        for key, member in span.members.items():
            _check(member, value[key], text)
    elif isinstance(value, list):
        assert len(span.items) == len(value)
        for item, element in zip(span.items, value, strict=True):
            _check(item, element, text)


@given(values, st.sampled_from([None, 1, 2]), st.booleans())
def test_every_span_holds_its_value(value: Any, indent: int | None, ascii_: bool) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_)
    _check(parse_spans(text), value, text)


@given(st.text(), st.booleans())
def test_raw_offsets_land_on_their_character(text: str, ascii_: bool) -> None:
    token = json.dumps(text, ensure_ascii=ascii_)
    for index in range(len(text) + 1):
        assert json.loads(token[: raw_offset(token, index)] + '"') == text[:index]


@pytest.mark.parametrize("text", ["{", '{"a" 1}', "[1,]", "[1] 2", "nul"])
def test_not_json_is_an_error(text: str) -> None:
    with pytest.raises(SpanError):
        parse_spans(text)
