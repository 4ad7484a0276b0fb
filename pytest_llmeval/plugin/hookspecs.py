"""Hooks pytest-llmeval calls, for plugins and conftest files to implement."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_llmeval.runners.registry import RunnerRegistry
    from pytest_llmeval.suites.base import SuiteRegistry

__all__ = [
    "pytest_llmeval_register_runners",
    "pytest_llmeval_register_suites",
]


@pytest.hookspec
def pytest_llmeval_register_runners(registry: RunnerRegistry) -> None:
    """Register runners by name: ``registry.register("my-model", factory)``.

    ``factory(settings)`` returns a Runner (a model the agent loop drives) or an
    AgentEndpoint (a whole agent). Select it with ``--llmeval-runner my-model``.
    """


@pytest.hookspec
def pytest_llmeval_register_suites(registry: SuiteRegistry) -> None:
    """Register suites: ``registry.register(MySuite())``. Suites claim files in order."""
