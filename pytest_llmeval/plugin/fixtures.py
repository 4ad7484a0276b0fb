"""Session fixtures an eval item can take over from the item before it, and run-ahead's key.

All items of an eval file share one fixture closure. When every fixture in it is
session-scoped, unparametrized and already cached, pytest's own resolution (a SubRequest per
fixture and per dependency, a ``request`` FixtureDef with its signature inspection, for each
item) returns those very values; copying them (:func:`reuse_fixture_values`) is the same result
for a fraction of the cost. Any other closure, or a cache that changed, takes pytest's path.

:func:`session_fixtures` is what tells the run-ahead whether two cases share their agent and
broker: only then may the next case's agent start before pytest reaches it.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_llmeval.plugin.compat import (
    fixture_closure,
    fixture_info,
    item_request,
    resolved_fixture_defs,
    reuse_fixture_defs,
)

__all__ = ["FixtureValues", "reuse_fixture_values", "session_fixtures"]


class FixtureValues:
    """An item's resolved session fixtures, and the cache entries they came from."""

    def __init__(
        self,
        fixtureinfo: Any,
        defs: dict[str, Any],
        values: dict[str, Any],
    ):
        self.fixtureinfo = fixtureinfo
        self.defs = defs
        self.values = values
        self.results = [(d, d.cached_result) for d in defs.values()]

    @classmethod
    def of(cls, item: pytest.Function) -> FixtureValues | None:
        """What ``item`` just resolved, or ``None`` unless every fixture is reusable."""
        defs = resolved_fixture_defs(item)
        if set(item.fixturenames) - {"request"} != set(defs):
            return None
        for d in defs.values():
            result = d.cached_result
            if d.scope != "session" or d.params is not None or result is None or result[2]:
                return None
        values = {name: item.funcargs[name] for name in defs}
        return cls(fixture_info(item), defs, values)

    def still_valid(self, item: pytest.Function) -> bool:
        return fixture_info(item) is self.fixtureinfo and all(
            d.cached_result is result for d, result in self.results
        )


def reuse_fixture_values(item: pytest.Function, known: FixtureValues | None) -> bool:
    """Fill ``item``'s ``funcargs`` from ``known`` (what the file's previous item resolved)
    when pytest could only hand out the same cached values again; ``False`` when it could
    not, and pytest resolves them."""
    if known is None or not known.still_valid(item):
        return False
    item.funcargs.update(known.values)
    if "request" in item.fixturenames:
        item.funcargs["request"] = item_request(item)
    reuse_fixture_defs(item, known.defs)
    return True


def session_fixtures(item: pytest.Item) -> tuple[object, ...]:
    """The fixtures answering ``item``'s ``llmeval_agent`` and ``llmeval_broker``, when both
    are session-scoped; else a value equal to no other item's (no run-ahead with them)."""
    names = fixture_closure(item)
    defs = []
    for name in ("llmeval_agent", "llmeval_broker"):
        chain = names.get(name) or ()
        last = chain[-1] if chain else None
        if last is None or last.scope != "session":
            return (object(),)  # never equal: no run-ahead for non-session fixtures
        defs.append(last)
    return tuple(defs)
