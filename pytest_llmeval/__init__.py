"""pytest-llmeval: evaluate LLMs and agents on tool use, one eval case per pytest test.

This package is the public API. The names in ``__all__`` are everything a runner, agent or
suite author, a ``conftest.py`` and the project's own docs and examples import, and only they
are promised to stay; ``docs/api.md`` says what each one is for::

    from pytest_llmeval import Completion, GenerateRequest, RunnerRegistry

    class MyModel:
        name = "my-model"
        def fingerprint(self) -> dict: return {"type": "my-model", "model": "m1"}
        async def generate(self, request: GenerateRequest) -> Completion: ...
        async def aclose(self) -> None: ...

    def pytest_llmeval_register_runners(registry: RunnerRegistry) -> None:
        registry.register("my-model", lambda settings: MyModel())

The hooks are ``pytest_llmeval_register_runners(registry: RunnerRegistry)`` and
``pytest_llmeval_register_suites(registry: SuiteRegistry)``; the fixtures, session-scoped and
overridable in any ``conftest.py``, are ``llmeval_settings`` (a :class:`Settings`),
``llmeval_runner`` (a :class:`Runner` or :class:`AgentEndpoint`), ``llmeval_broker`` (a
:class:`ToolBroker`) and ``llmeval_agent`` (an :class:`Agent`).

:mod:`pytest_llmeval.api` holds the same names, imported at once, for code that already
imports from there. :mod:`pytest_llmeval.testing` is public too: test doubles for your own
tests (a scripted model, a loopback OpenAI-compatible server). Every other module (``plugin``,
``engine``, ``runners``, ``suites``, ``report``, ``rundir``, ``core`` and the rest) is
internal: it may move or change in any release.

The names are imported on first use (a module ``__getattr__``): every import of a part of the
package, the pytest plugin's included, runs this file first, and it stays cheap that way. Their
one list is ``pytest_llmeval.api.__all__``; ``pytest_llmeval.__all__`` is that list.
"""

from __future__ import annotations

from importlib import import_module

from pytest_llmeval.core.version import __version__ as __version__

TYPE_CHECKING = False
"""``typing.TYPE_CHECKING`` without importing :mod:`typing` (type checkers read it as true)."""
if TYPE_CHECKING:
    # the public names, typed; ``pytest_llmeval.api.__all__`` is their one list
    from pytest_llmeval.api import *  # noqa: F403
    from pytest_llmeval.api import __all__ as __all__
else:

    def __getattr__(name: str) -> object:
        """A public name (or ``__all__``), imported from :mod:`pytest_llmeval.api` the first
        time it is asked for (and kept here, so the second time is a plain attribute)."""
        if name.startswith("_") and name != "__all__":  # probes (__wrapped__, pytest's
            # _mock_name on every module a test file imports ...): no public name starts so
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        api = import_module("pytest_llmeval.api")  # not "from pytest_llmeval import": this hook
        if name != "__all__" and name not in api.__all__:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(api, name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(import_module("pytest_llmeval.api").__all__))
