"""The bfcl suite under attack: hostile model output, a hostile data folder, fail-closed rules.

Each test drives one class of attack the way it reaches the suite, and requires that nothing
is run, nothing hangs or exhausts memory, and nothing passes that was not judged.
"""

from __future__ import annotations

import time

import pytest

from pytest_llmeval.scoring.bfcl import DecodeError, decode_prompt_python


@pytest.mark.parametrize(
    "value",
    [
        "['a' * 10**7] * 10**7",  # shared references: writing it out would not end
        "[[0] * 10**6] * 10**6",
        " * ".join(["10**249999"] * 60),  # a product of huge ints: the multiplications hang
        "'%.999999999f' % 1.0",  # printf-style width builds a gigabyte string
        "'%*d' % (999999999, 1)",
        "[" + ", ".join(["[0] * 9999999"] * 50) + "]",  # many large results in one reply
    ],
)
def test_prompt_arithmetic_that_would_explode_is_a_decode_failure_at_once(value: str) -> None:
    started = time.monotonic()
    with pytest.raises(DecodeError, match=r"too (large|long) to evaluate"):
        decode_prompt_python(f"[f(x={value})]")
    assert time.monotonic() - started < 5
