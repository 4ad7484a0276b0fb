"""Equal values held once, in a table that never grows past its limit."""

from __future__ import annotations

from pytest_llmeval.core.held_once import HeldOnce


def test_equal_values_are_the_first_one_given_and_the_table_starts_again_at_its_limit() -> None:
    table: HeldOnce[str, list[int]] = HeldOnce(limit=2)
    first = table.held("a", [1])
    assert table.held("a", [1]) is first
    made: list[str] = []
    assert table.made("a", lambda: made.append("a") or [2]) is first and made == []
    second = table.made("b", lambda: [2])
    assert second == [2] and table.held("b", [9]) is second
    third = table.held("c", [3])  # a third key: the table starts again, holding only it
    assert third == [3] and table.held("a", [4]) == [4] and table.held("a", [5]) == [4]
