"""A kept result's packed values read back (:func:`unpack`) as ``json.loads`` reads them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_llmeval.core.packed import Packed, pack, unpack

VALUES: list[Any] = [
    [{"role": "user", "content": "hi"}],
    {"expected_output": "é ✓ \ud800", "thresholds": {"x": 1.0, "y": float("nan")}},
    [{"type": "audit", "n": [1, -2.5e-07, 10**30, None, True]}],
    [],
    {},
]


@pytest.mark.parametrize("value", VALUES)
def test_a_packed_value_reads_back_as_json_loads_reads_it(value: Any) -> None:
    packed = pack(value)
    expected = json.loads(packed.decode("utf-8", "surrogatepass"))
    assert repr(unpack(packed)) == repr(expected)


@pytest.mark.parametrize("text", [b"", b"[1] x", b"{", b"[1", b"nul"])
def test_packed_bytes_that_are_not_one_json_value_fail_as_json_loads_fails(text: bytes) -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError, match=f"^{caught.value.msg}"):
        unpack(Packed(text))


def test_space_around_the_value_is_read_as_json_loads_reads_it() -> None:
    assert unpack(Packed(b" [1] ")) == [1]
    assert unpack([{"a": 1}]) == [{"a": 1}]  # a value not packed is itself
