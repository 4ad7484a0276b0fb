"""The session's verdict beyond single cases: gates, the baseline diff, the exit status.

Gates come from ``--llmeval-gate`` and from the ``gates`` of the ``*.llmeval.yaml`` manifests
whose cases ran. Each gate, and the baseline comparison, is reported as its own test outcome
(``llmeval-gates::<gate>``, ``llmeval-baseline::no-regressions``) so that the terminal,
``--junitxml`` and ``--json-report`` show it like any test.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from pytest_llmeval.errors import CaseFileError, FingerprintMismatch
from pytest_llmeval.manifest import read_manifest
from pytest_llmeval.models import CaseResult
from pytest_llmeval.report.baseline import BaselineDiff, diff, load_baseline
from pytest_llmeval.report.gates import Gate, GateResult, parse_gate, parse_gate_spec
from pytest_llmeval.settings import Settings

GATES_NODE = "llmeval-gates"
BASELINE_NODE = "llmeval-baseline::no-regressions"


def cli_gates(settings: Settings) -> list[Gate]:
    """Gates from ``--llmeval-gate`` / ini ``llmeval_gate``; a bad one is a usage error."""
    gates = []
    for text in settings.gate:
        try:
            gates.append(parse_gate(text, "cli"))
        except ValueError as exc:
            raise pytest.UsageError(f"--llmeval-gate: {exc}") from None
    return gates


def manifest_gates(results: Iterable[CaseResult], rootdir: Path) -> tuple[list[Gate], list[str]]:
    """Gates declared by the manifests whose cases ran, and problems found reading them."""
    gates: list[Gate] = []
    problems: list[str] = []
    manifests = sorted(
        {r.nodeid.split("::", 1)[0] for r in results if ".llmeval.yaml::" in r.nodeid}
    )
    for name in manifests:
        try:
            manifest = read_manifest(rootdir / name, name)
        except CaseFileError as exc:
            problems.append(str(exc))
            continue
        spec = manifest.get("gates")
        if spec is None:
            continue
        try:
            gates += parse_gate_spec(spec, "manifest", default_suite=manifest["suite"])
        except ValueError as exc:
            problems.append(f"{name}: gates: {exc}")
    return gates, problems


def compare_with_baseline(
    settings: Settings, report: dict[str, Any], results: Sequence[CaseResult]
) -> tuple[BaselineDiff | None, str | None]:
    """The diff against ``--llmeval-baseline``, or the reason it was refused."""
    if settings.baseline is None:
        return None, None
    try:
        baseline = load_baseline(settings.baseline)
        return (
            diff(report, results, baseline, allow_mismatch=settings.baseline_allow_mismatch),
            None,
        )
    except FingerprintMismatch as exc:
        return None, str(exc)
    except ValueError as exc:
        return None, str(exc)


def gate_reports(results: Sequence[GateResult]) -> list[pytest.TestReport]:
    """One passed or failed test outcome per gate (setup, call and teardown reports)."""
    reports: list[pytest.TestReport] = []
    for result in results:
        nodeid = f"{GATES_NODE}::{result.gate.name}"
        reports += _test_reports(nodeid, result.passed, result.message)
    return reports


def baseline_reports(diff_: BaselineDiff | None, refusal: str | None) -> list[pytest.TestReport]:
    """The baseline comparison as one test outcome (none when no baseline was given)."""
    if refusal is not None:
        return _test_reports(BASELINE_NODE, False, f"baseline not compared: {refusal}")
    if diff_ is None:
        return []
    failed = diff_.flips["pass->fail"]
    message = (
        f"{len(failed)} case(s) passed in the baseline and fail now: {', '.join(failed[:20])}"
        if failed
        else "a gate that passed in the baseline fails now"
    )
    return _test_reports(BASELINE_NODE, not diff_.regressed, message)


def _test_reports(nodeid: str, passed: bool, message: str) -> list[pytest.TestReport]:
    location = (nodeid.split("::", 1)[0], None, nodeid.split("::", 1)[-1])
    keywords: dict[str, Literal[1]] = {"llmeval": 1}
    return [
        pytest.TestReport(nodeid, location, keywords, "passed", None, "setup"),
        pytest.TestReport(
            nodeid,
            location,
            keywords,
            "passed" if passed else "failed",
            None if passed else message,
            "call",
        ),
        pytest.TestReport(nodeid, location, keywords, "passed", None, "teardown"),
    ]


def exit_status(
    current: int | pytest.ExitCode, exit_on: str, verdict_failed: bool
) -> int | pytest.ExitCode:
    """The session's exit status once gates, regressions and leaks are known.

    Only a clean or a tests-failed status is changed; interruptions, internal and usage
    errors, and "no tests collected" stand.
    """
    judged = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    if current not in judged:
        return current
    if exit_on == "gates":
        return pytest.ExitCode.TESTS_FAILED if verdict_failed else pytest.ExitCode.OK
    if verdict_failed:
        return pytest.ExitCode.TESTS_FAILED
    return current
