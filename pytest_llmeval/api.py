"""The public API, imported all at once: the same names as :mod:`pytest_llmeval` itself.

Code written against ``pytest_llmeval.api`` keeps working; new code may import from the
package directly (``from pytest_llmeval import Completion``), which loads these names only
when they are first used. The package docstring and ``docs/api.md`` describe them.
"""

from __future__ import annotations

from pytest_llmeval.config.settings import Settings
from pytest_llmeval.core.case_context import emit, repeat_index, workspace
from pytest_llmeval.core.errors import (
    BackendUnreachable,
    CaseFileError,
    CassetteMiss,
    ConfigError,
    EvalFailure,
    FingerprintMismatch,
    LLMEvalError,
    RunDirError,
    RunDirVersionError,
    RunnerError,
    RunnerErrorKind,
)
from pytest_llmeval.core.models import (
    CaseResult,
    CaseScore,
    ChoiceTask,
    EvalCase,
    JudgeTask,
    Loglik,
    LoglikRequest,
    Message,
    ToolCall,
    ToolCallRecord,
    ToolSpec,
    Transcript,
    Usage,
)
from pytest_llmeval.core.version import __version__
from pytest_llmeval.engine.agent import Agent
from pytest_llmeval.limits import Limiter, Slot
from pytest_llmeval.rundir import Report, RunLayout, RunManifest, RunRecord, SuiteSection, read_run
from pytest_llmeval.runners.base import (
    AgentEndpoint,
    AgentResponse,
    Completion,
    GenerateRequest,
    Runner,
    SupportsLoglikelihood,
)
from pytest_llmeval.runners.registry import RunnerFactory, RunnerRegistry
from pytest_llmeval.suites.base import (
    CaseSource,
    LoadItem,
    PendingCase,
    Suite,
    SuiteBase,
    SuiteContext,
    SuiteRegistry,
    base_totals,
)
from pytest_llmeval.tools.broker import ToolBroker
from pytest_llmeval.tools.registry import ToolRegistry

__all__ = [
    "Agent",
    "AgentEndpoint",
    "AgentResponse",
    "BackendUnreachable",
    "CaseFileError",
    "CaseResult",
    "CaseScore",
    "CaseSource",
    "CassetteMiss",
    "ChoiceTask",
    "Completion",
    "ConfigError",
    "EvalCase",
    "EvalFailure",
    "FingerprintMismatch",
    "GenerateRequest",
    "JudgeTask",
    "LLMEvalError",
    "Limiter",
    "LoadItem",
    "Loglik",
    "LoglikRequest",
    "Message",
    "PendingCase",
    "Report",
    "RunDirError",
    "RunDirVersionError",
    "RunLayout",
    "RunManifest",
    "RunRecord",
    "Runner",
    "RunnerError",
    "RunnerErrorKind",
    "RunnerFactory",
    "RunnerRegistry",
    "Settings",
    "Slot",
    "Suite",
    "SuiteBase",
    "SuiteContext",
    "SuiteRegistry",
    "SuiteSection",
    "SupportsLoglikelihood",
    "ToolBroker",
    "ToolCall",
    "ToolCallRecord",
    "ToolRegistry",
    "ToolSpec",
    "Transcript",
    "Usage",
    "__version__",
    "base_totals",
    "emit",
    "read_run",
    "repeat_index",
    "workspace",
]
