"""The baseline comparison as ``report.json`` ``baseline`` holds it: the flip table, McNemar,
metric and gate deltas, and how the case set changed (computed by
:mod:`pytest_llmeval.report.baseline`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_llmeval.core.models import Outcome

__all__ = [
    "FLIP_KINDS",
    "BaselineDiff",
    "CaseChange",
    "CaseSetChanges",
    "FingerprintChange",
    "FlipKind",
    "GateChange",
    "MetricDelta",
]

FlipKind = Literal["pass->fail", "fail->pass", "new", "removed", "changed", "skipped"]
FLIP_KINDS: tuple[FlipKind, ...] = (
    "pass->fail",
    "fail->pass",
    "new",
    "removed",
    "changed",
    "skipped",
)


class MetricDelta(BaseModel):
    """One numeric metric present in both reports."""

    model_config = ConfigDict(extra="forbid")

    baseline: int | float
    """The value in the baseline."""
    current: int | float
    """The value in this run."""
    delta: int | float
    """``current - baseline`` (floats rounded to :data:`DELTA_DIGITS` decimals)."""


class GateChange(BaseModel):
    """A gate present in both reports."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """The gate's canonical name (``golden.pass_rate>=0.9``)."""
    baseline_passed: bool
    """Whether it passed in the baseline."""
    current_passed: bool
    """Whether it passes now."""
    baseline_status: str | None = None
    """Its status in the baseline (``passed``, ``failed``, ``partial``, ``n/a`` ...)."""
    current_status: str | None = None
    """Its status now."""
    baseline_value: float | None = None
    """The metric's value in the baseline (``None`` when it had none)."""
    current_value: float | None = None
    """The metric's value now."""
    delta: float | None = None
    """``current_value - baseline_value`` when both are known."""


class FingerprintChange(BaseModel):
    """A report fingerprint that differs between the baseline and this run."""

    model_config = ConfigDict(extra="forbid")

    baseline: str | None
    """The baseline's value."""
    current: str | None
    """This run's value."""


class CaseChange(BaseModel):
    """A case listed in the flip table."""

    model_config = ConfigDict(extra="forbid")

    kind: FlipKind
    """Which list it is in."""
    nodeid: str
    """This run's node id (the baseline's for a removed case)."""
    suite: str
    """The case's suite."""
    before: Outcome | None
    """Its outcome in the baseline (``None`` for a new case)."""
    after: Outcome | None
    """Its outcome now (``None`` for a removed case)."""


class CaseSetChanges(BaseModel):
    """How this run's cases differ from the baseline's, by case id and case fingerprint.

    Only ``unchanged`` cases (same case, same fingerprint) are compared; the others are
    listed here and never make the run incomparable.
    """

    model_config = ConfigDict(extra="forbid")

    counts: dict[str, int]
    """``unchanged``, ``added``, ``removed`` and ``changed``: how many cases of each."""
    added: list[str]
    """Node ids of cases the baseline does not have (sorted)."""
    removed: list[str]
    """Node ids of baseline cases this run does not have (sorted)."""
    changed: list[str]
    """Node ids of cases in both whose case fingerprint differs: the case itself was edited
    (input, expected output, thresholds), so its outcome is not compared (sorted)."""
    data_changes: dict[str, FingerprintChange] = Field(default_factory=dict)
    """Data fingerprints that differ (``dataset_sha256``, ``tool_registry_sha256``,
    ``fixtures_sha256``): shown, never a reason to refuse the comparison."""


class BaselineDiff(BaseModel):
    """This run against a baseline: the flip table, McNemar, metric and gate deltas."""

    model_config = ConfigDict(extra="forbid")

    baseline: str
    """Where the baseline was read from."""
    baseline_run_id: str | None = None
    """The baseline run's id, when known."""
    compared: int
    """Aligned cases with the same case fingerprint, judged (not skipped) in both runs."""
    flips: dict[FlipKind, list[str]]
    """Node ids per kind (all six keys, each list sorted): ``pass->fail``, ``fail->pass``,
    ``new``, ``removed``, ``changed``, ``skipped``."""
    cases: list[CaseChange]
    """Every listed case with its two outcomes, in :data:`FLIP_KINDS` order, then node id."""
    pass_to_fail: int
    """McNemar's b: discordant pairs that passed in the baseline and do not now."""
    fail_to_pass: int
    """McNemar's c: discordant pairs that did not pass in the baseline and pass now."""
    mcnemar_p: float
    """Exact two-sided McNemar p-value on (b, c); 1.0 when there are no discordant pairs."""
    metric_deltas: dict[str, dict[str, MetricDelta]]
    """Suite (``*`` for the totals) -> dotted metric path -> delta, for every numeric leaf
    present in both reports: the whole runs, added, removed and changed cases included."""
    gate_changes: list[GateChange]
    """Gates present in both reports' ``gates`` sections, sorted by name."""
    fingerprint_mismatches: dict[str, FingerprintChange]
    """Runner or scorer fingerprints that differ (only ever non-empty when mismatches were
    allowed): ``runner_fingerprint``, ``plugin_version``, ``case_runner_fingerprint``."""
    regressed: bool
    """Any pass->fail flip, or any gate that passed in the baseline and fails now."""
    case_changes: CaseSetChanges | None = None
    """Unchanged, added, removed and changed cases (absent in reports of older versions)."""
    unchanged_metric_deltas: dict[str, dict[str, MetricDelta]] = Field(default_factory=dict)
    """Suite (``*`` for all) -> metric -> delta over the unchanged cases judged in both runs
    only: ``pass_rate``, ``passed`` and ``mean_scores.<name>``. Like with like when the data
    changed, where :attr:`metric_deltas` (whole reports) also counts added and edited cases."""
