"""The bfcl suite under attack: hostile model output, a hostile data folder, fail-closed rules.

Each test drives one class of attack the way it reaches the suite, and requires that nothing
is run, nothing hangs or exhausts memory, and nothing passes that was not judged.
"""

from __future__ import annotations

import time
from typing import Any

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


def _math_session() -> Any:
    """A fresh official MathAPI behind the safe executor (skips without bfcl-eval)."""
    backends = pytest.importorskip("pytest_llmeval.tools.bfcl_backends")
    from pytest_llmeval.tools.bfcl_execute import BackendSession

    try:
        instances = backends.new_instances(["MathAPI"], {}, long_context=False)
    except backends.BackendsMissing:
        pytest.skip("needs `pip install --no-deps bfcl-eval==2026.3.23`")
    return BackendSession(instances, label="m", entry_id="multi_turn_base_0")


@pytest.mark.parametrize(
    "call",
    [
        "power(base=10, exponent=1000000000000000000)",  # 10**(10**18): an endless C loop
        "logarithm(value=10, base=2, precision=1000000000)",  # mpmath at 10**9 digits
        "square_root(number=2, precision=1000000000)",  # decimal at 10**9 digits
        "multiply(a=0x" + "f" * 500_000 + ", b=0x" + "f" * 500_000 + ")",  # hex is not capped
    ],
)
def test_a_backend_call_that_would_compute_without_end_is_that_calls_error(call: str) -> None:
    session = _math_session()
    started = time.monotonic()
    [result] = session.execute([call])
    assert result.text.startswith("Error during execution: ")
    assert "not run" in result.text
    assert time.monotonic() - started < 5
    [fine] = session.execute(["power(base=2, exponent=10)", "add(a=1, b=2)"])[:1]
    assert fine.text == '{"result": 1024}'


def test_a_backend_result_that_cannot_be_written_is_that_calls_error_as_officially() -> None:
    """``power(base=10, exponent=5000)`` returns an int of 5,001 digits, past Python's limit
    for ``str``: the official executor formats inside its ``try``, so the call's result is
    ``Error during execution: Exceeds the limit ...``, never a crashed case."""
    session = _math_session()
    [result] = session.execute(["power(base=10, exponent=5000)"])
    assert result.text.startswith("Error during execution: Exceeds the limit (4300 digits)")
