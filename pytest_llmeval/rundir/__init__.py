"""The run directory: its layout, its files' models, writing and reading them back.

A base-layer package: it imports the data models and errors only, never pytest, a suite or a
runner. See :mod:`pytest_llmeval.rundir.layout` for every artifact, its writer and readers.
"""

from __future__ import annotations

from pytest_llmeval.rundir.layout import ARTIFACTS, REPORT_FILES, Artifact, RunLayout
from pytest_llmeval.rundir.models import (
    REPORT_VERSION,
    Gate,
    GateResult,
    GatesSection,
    Report,
    RunManifest,
    SuiteSection,
    Totals,
)
from pytest_llmeval.rundir.read import RunRecord, read_run

__all__ = [
    "ARTIFACTS",
    "REPORT_FILES",
    "REPORT_VERSION",
    "Artifact",
    "Gate",
    "GateResult",
    "GatesSection",
    "Report",
    "RunLayout",
    "RunManifest",
    "RunRecord",
    "SuiteSection",
    "Totals",
    "read_run",
]
