"""The one clipping marker: a clipped text says how long it was, also when it is
clipped again shorter (an error kept clipped, then shown in summary.md)."""

from __future__ import annotations

from pytest_llmeval.core.clip import clip, marker


def test_a_short_text_is_kept_and_a_long_one_says_its_length() -> None:
    assert clip("abc", 3) == "abc"
    assert clip("abcdef", 3) == "abc" + marker(6) == "abc… [clipped: 6 characters in all]"


def test_clipping_a_clipped_text_keeps_the_first_full_length() -> None:
    once = clip("A" * 200_000, 4_000)
    assert clip(once, 100) == "A" * 100 + marker(200_000)


def test_a_marker_inside_the_text_is_not_taken_for_its_length() -> None:
    quoted = f"the answer was {clip('x' * 50, 5)} and then more text"
    assert clip(quoted, 10).endswith(marker(len(quoted)))


def test_full_length_reads_the_marker() -> None:
    from pytest_llmeval.core.clip import full_length

    assert full_length("abc") == 3
    assert full_length(clip("a" * 500, 10)) == 500
