"""The plugin's fixtures: the settings, the runner, the tool broker and the agent every eval
case runs through. A conftest overrides ``llmeval_agent`` (or ``llmeval_runner``) to evaluate
its own agent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_llmeval.config import settings
from pytest_llmeval.engine.agent import default_agent
from pytest_llmeval.plugin import preflight
from pytest_llmeval.plugin.state import state_key
from pytest_llmeval.tools.broker import ToolBroker

__all__ = ["llmeval_agent", "llmeval_broker", "llmeval_runner", "llmeval_settings"]


@pytest.fixture(scope="session")
def llmeval_settings(pytestconfig: pytest.Config) -> settings.Settings:
    """The session's frozen pytest-llmeval settings."""
    return pytestconfig.stash[state_key].settings


@pytest.fixture(scope="session")
def llmeval_runner(
    pytestconfig: pytest.Config, llmeval_settings: settings.Settings
) -> Iterator[Any]:
    """The model runner (or agent endpoint) named by ``--llmeval-runner``."""
    state = pytestconfig.stash[state_key]
    runner = preflight.take_runner(pytestconfig)  # built once collection was done
    if runner is None:  # asked for outside the eval cases: built here, a usage error if bad
        runner = preflight.build_runner(pytestconfig, state)
    yield runner
    aclose = getattr(runner, "aclose", None)
    if aclose is not None:  # on the loop its cases ran on
        state.dispatcher.call_for(runner, aclose())


@pytest.fixture(scope="session")
def llmeval_broker(llmeval_settings: settings.Settings) -> ToolBroker:
    """The tool broker serving fixtures from ``--llmeval-fixtures``."""
    return ToolBroker.from_dir(llmeval_settings.fixtures)


@pytest.fixture(scope="session")
def llmeval_agent(llmeval_runner: Any) -> Any:
    """The agent each case runs through; override it in a conftest to evaluate your own."""
    return default_agent(llmeval_runner)
