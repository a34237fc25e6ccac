"""The store's escaping of long strings is PyMySQL's, byte for byte (a faster way to the same text)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from pymysql.converters import escape_string

from delayq.store.mysql import escape

SPECIAL = "\0\n\r\x1a\"'\\"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(SPECIAL) + ["a", "é", "中", "\t", "\x01", "%", "_"]), max_size=300))
def test_escape_is_pymysqls_escape_string(text):
    assert escape(text) == escape_string(text)


def test_a_long_json_value_with_every_special_character():
    rng = random.Random(7)
    text = "".join(rng.choice(SPECIAL + "abc{}[],:0123456789") for _ in range(50_000))
    assert escape(text) == escape_string(text)
