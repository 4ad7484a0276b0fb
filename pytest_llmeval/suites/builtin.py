"""The built-in suites, registered the way a third party registers its own.

The plugin's ``pytest_llmeval_register_suites`` hook implementation calls
:func:`register_builtin_suites` first; conftests and plugins implementing the same hook add
theirs after (suites claim files in registration order). Packages can also expose suites
through the ``pytest_llmeval.suites`` entry point group (an object or a class to instantiate),
which the offline commands (``summarize``, ``merge``) load too, through :func:`builtin_suites`.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from pytest_llmeval.suites.base import SuiteRegistry
from pytest_llmeval.suites.bfcl import BfclSuite
from pytest_llmeval.suites.gaia import GaiaSuite
from pytest_llmeval.suites.golden import GoldenSuite
from pytest_llmeval.suites.integration import IntegrationSuite
from pytest_llmeval.suites.toolforge import ToolForgeSuite
from pytest_llmeval.suites.when2call import When2CallSuite

__all__ = ["builtin_suites", "register_builtin_suites", "register_entry_point_suites"]


def register_builtin_suites(registry: SuiteRegistry) -> None:
    """Add the built-in suites, most specific first."""
    registry.register(IntegrationSuite())
    registry.register(ToolForgeSuite())
    registry.register(When2CallSuite())
    registry.register(GoldenSuite())
    registry.register(GaiaSuite())
    registry.register(BfclSuite())


def register_entry_point_suites(registry: SuiteRegistry) -> None:
    """Add the suites installed packages expose under ``pytest_llmeval.suites``."""
    for ep in entry_points(group="pytest_llmeval.suites"):
        suite = ep.load()
        registry.register(suite() if isinstance(suite, type) else suite)


def builtin_suites() -> SuiteRegistry:
    """A registry of the built-in suites and the installed packages' suites (no pytest)."""
    registry = SuiteRegistry()
    register_builtin_suites(registry)
    register_entry_point_suites(registry)
    return registry
