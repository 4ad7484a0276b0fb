"""The public API of pytest-llmeval for runner, agent and suite authors.

Everything a plugin or a ``conftest.py`` needs is importable from here, and only what is here
is promised to stay::

    from pytest_llmeval.api import Completion, GenerateRequest, RunnerRegistry

    class MyModel:
        name = "my-model"
        def fingerprint(self) -> dict: return {"type": "my-model", "model": "m1"}
        async def generate(self, request: GenerateRequest) -> Completion: ...
        async def aclose(self) -> None: ...

    def pytest_llmeval_register_runners(registry: RunnerRegistry) -> None:
        registry.register("my-model", lambda settings: MyModel())

The hooks (``pytest_llmeval_register_runners(registry)``,
``pytest_llmeval_register_suites(registry)``) are specified in
:mod:`pytest_llmeval.plugin.hookspecs`;
the fixtures are ``llmeval_settings``, ``llmeval_runner``, ``llmeval_broker`` and
``llmeval_agent`` (session-scoped, overridable in any conftest). A suite implements
:class:`Suite`; the run dir's files are described by :class:`RunLayout` and read back with
:func:`read_run`.
"""

from __future__ import annotations

from pytest_llmeval import __version__
from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.case_context import emit, repeat_index, workspace
from pytest_llmeval.core.errors import (
    CaseFileError,
    ConfigError,
    EvalFailure,
    LLMEvalError,
    RunDirError,
    RunDirVersionError,
    RunnerError,
)
from pytest_llmeval.core.models import (
    CaseResult,
    CaseScore,
    EvalCase,
    Loglik,
    LoglikRequest,
    Message,
    ToolCall,
    ToolCallRecord,
    ToolSpec,
    Transcript,
    Usage,
)
from pytest_llmeval.rundir import Report, RunLayout, RunManifest, read_run
from pytest_llmeval.runners.base import (
    AgentEndpoint,
    AgentResponse,
    Completion,
    GenerateRequest,
    Runner,
    SupportsLoglikelihood,
)
from pytest_llmeval.runners.registry import RunnerRegistry
from pytest_llmeval.suites.base import CaseSource, PendingCase, Suite, SuiteContext, SuiteRegistry
from pytest_llmeval.tools.broker import ToolBroker

__all__ = [
    "AgentEndpoint",
    "AgentResponse",
    "CaseFileError",
    "CaseResult",
    "CaseScore",
    "CaseSource",
    "Completion",
    "ConfigError",
    "EvalCase",
    "EvalFailure",
    "GenerateRequest",
    "LLMEvalError",
    "Loglik",
    "LoglikRequest",
    "Message",
    "PendingCase",
    "Report",
    "RunDirError",
    "RunDirVersionError",
    "RunLayout",
    "RunManifest",
    "Runner",
    "RunnerError",
    "RunnerRegistry",
    "Settings",
    "Suite",
    "SuiteContext",
    "SuiteRegistry",
    "SupportsLoglikelihood",
    "ToolBroker",
    "ToolCall",
    "ToolCallRecord",
    "ToolSpec",
    "Transcript",
    "Usage",
    "__version__",
    "emit",
    "read_run",
    "repeat_index",
    "workspace",
]
