"""Sessions that run no test: ``--collect-only``, ``--setup-only`` and ``--setup-plan``.

pytest collects in all three; the last two also set up (``--setup-only``) or only plan
(``--setup-plan``) each test's fixtures, and never call a test. An eval case runs its agent
in setup, so in such a session its item sets up its fixtures and stops there: no agent runs,
no result is made or journaled, no run dir is claimed or written and ``latest`` is not
moved. pytest's own status stands (``no tests ran``: exit 0).
"""

from __future__ import annotations

import pytest

__all__ = ["runs_no_case"]


def runs_no_case(config: pytest.Config) -> bool:
    """Whether the session runs no test (``--collect-only``, ``--setup-only``,
    ``--setup-plan``): nothing of a run is made."""
    option = config.option
    return bool(
        option.collectonly
        or getattr(option, "setuponly", False)
        or getattr(option, "setupplan", False)
    )
