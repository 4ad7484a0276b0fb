"""Typed models of a run dir's JSON files: ``report.json`` (:class:`Report`) and
``manifest.json`` (:class:`RunManifest`).

The report is built once (``report.build``), weighed once (``report.verdict.weigh``) and written
once (``report.writer``); every reader (``summarize``, ``merge``, baselines, MLflow, the HTML
page) gets this model back from :func:`pytest_llmeval.rundir.read.read_run`. A suite's section
is a :class:`SuiteSection`: the counts every suite has, typed, and the suite's own metrics,
which a suite may type in a subclass of its own (``SuiteBase.section_model``).

A report of another major :data:`REPORT_VERSION` is refused with a
:class:`~pytest_llmeval.core.errors.RunDirVersionError` naming both versions.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    StrictInt,
    model_serializer,
    model_validator,
)

from pytest_llmeval.rundir.baseline_diff import BaselineDiff

__all__ = [
    "REPORT_VERSION",
    "Accuracy",
    "Gate",
    "GateOp",
    "GateResult",
    "GateSource",
    "GateStatus",
    "GatesSection",
    "Interrupted",
    "Number",
    "RecordedFault",
    "Report",
    "RunManifest",
    "RunVerdict",
    "SuiteSection",
    "Totals",
    "VerdictStatus",
]

REPORT_VERSION = "1.0.0"
"""The ``report_version`` this plugin writes; it reads reports of the same major version."""

Number = int | float
"""A metric as written: an int stays an int (``0``, not ``0.0``), so the JSON is unchanged."""

GateOp = Literal[">=", "<=", ">", "<", "=="]
GateSource = Literal["cli", "manifest", "header"]
GateStatus = Literal["passed", "failed", "partial", "inconclusive", "warn", "n/a"]
"""What a gate decided. ``partial``: the run left cases of the gate's suite out (``-k``, ``-m``,
``--lf``), so a met threshold proves nothing; ``inconclusive`` and ``warn`` are a suite's own
gate statuses; ``n/a``: an optional gate with nothing to judge (a gate that is not optional
fails then). Only ``failed`` fails the run."""


class Totals(BaseModel):
    """Outcome counts of a set of cases; ``pass_rate`` is over judged (not skipped) cases."""

    model_config = ConfigDict(extra="forbid")

    total: int
    passed: int
    failed: int
    errors: int
    skipped: int
    pass_rate: float | None
    cost_usd: float | None = None
    """What the cases' tokens cost by ``--llmeval-prices``, in US dollars; written only when
    prices were given (``report.json`` ``totals``)."""
    accuracy: float | None = None
    """A suite's own accuracy of these cases, where it has one (a BFCL category's: passed
    over the cases not skipped); written only when set."""

    @model_serializer(mode="wrap")
    def _without_unknown_cost(self, handler: SerializerFunctionWrapHandler) -> Any:
        body = handler(self)
        if isinstance(body, dict):
            for key in ("cost_usd", "accuracy"):
                if body.get(key) is None:
                    body.pop(key, None)
        return body


class Accuracy(BaseModel):
    """``correct / questions`` (``None`` for no questions)."""

    model_config = ConfigDict(extra="forbid")

    accuracy: Number | None
    correct: int
    questions: int


class SuiteSection(Totals):
    """``report.json`` ``suites.<name>``: the counts, per-category counts and the suite's own
    metrics (kept as extra fields unless the suite types them in a subclass)."""

    model_config = ConfigDict(extra="allow")

    categories: dict[str, Totals] = Field(default_factory=dict)


class Gate(BaseModel):
    """One threshold on one aggregate metric."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Canonical text ``SUITE.METRIC OP VALUE`` without spaces (``golden.pass_rate>=0.9``)."""
    suite: str
    """The suite whose aggregate is read, or ``*`` for the run's totals."""
    metric: str
    """Dotted path into the suite's aggregate (``pass_rate``, ``mean_scores.exact_match``)."""
    op: GateOp
    """The comparison: ``>=``, ``<=``, ``>``, ``<`` or ``==``."""
    threshold: float
    """The value the metric is compared with."""
    source: GateSource = "cli"
    """Where the gate was declared: ``--llmeval-gate``, a manifest, or a dataset header."""
    optional: bool = False
    """Declared optional (``... optional``): with nothing to judge (its metric ``n/a``) it is
    ``n/a`` rather than ``failed``. Written only when true."""

    @model_serializer(mode="wrap")
    def _without_default_optional(self, handler: SerializerFunctionWrapHandler) -> Any:
        body = handler(self)
        if isinstance(body, dict) and not body.get("optional"):
            body.pop("optional", None)
        return body


class GateResult(BaseModel):
    """A gate checked against one report."""

    model_config = ConfigDict(extra="forbid")

    gate: Gate
    """The gate that was checked."""
    value: float | None
    """The metric's value in the report; ``None`` when it is missing or not a number."""
    passed: bool
    """Whether the value meets the threshold (always ``False`` without a value)."""
    message: str
    """One line for the terminal: the value against the threshold, or why there is none."""
    status: GateStatus
    """What the gate decided; every reader (terminal, junit, ``summary.md``, the HTML page)
    shows this. A report written before the field existed gets ``passed`` or ``failed``."""

    @model_validator(mode="before")
    @classmethod
    def _status_from_passed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "status" not in data and "passed" in data:
            data = {**data, "status": "passed" if data["passed"] else "failed"}
        return data

    @property
    def failed(self) -> bool:
        """Whether this gate fails the run."""
        return self.status == "failed"


class GatesSection(BaseModel):
    """``report.json`` ``gates``: every gate's result, sorted by name, and whether none failed
    or judged a subset (``partial``)."""

    model_config = ConfigDict(extra="forbid")

    passed: bool
    results: list[GateResult]

    @classmethod
    def of(cls, results: list[GateResult]) -> GatesSection:
        rows = sorted(results, key=lambda r: r.gate.name)
        passed = all(r.status not in ("failed", "partial") for r in rows)
        return cls(passed=passed, results=rows)


class Interrupted(BaseModel):
    """``interrupted`` of ``report.json`` and ``manifest.json``: the run was cut short, so its
    gates judged only the cases that ran (a gate that held is ``partial``). Absent from a run
    that ran every case."""

    model_config = ConfigDict(extra="forbid")

    reason: str
    """Why: ``maxfail`` (``-x``, ``--maxfail``), ``keyboard_interrupt`` (Ctrl-C), ``sigterm``
    (a CI cancel, ``timeout``), ``sighup`` (a closing terminal or ssh session), ``budget``
    (``--llmeval-max-tokens-total``, ``--llmeval-max-cost``), ``journal`` (the journal could not
    be written: a full disk), ``exit`` (``pytest.exit()``), ``stopped`` (another plugin stopped
    the session), or ``incomplete`` (cases left without a result for another reason, such as
    xdist giving up on crashed workers)."""
    cases_run: int
    """Cases with a result that ran (a case a budget skipped did not), earlier attempts of a
    resumed run included."""
    cases_total: int
    """Every eval case of the run: the ones that ran, the ones it never reached and the ones
    left out (deselected, or skipped by a budget); ``cases_total - cases_run`` were left out,
    as ``deselected`` counts them."""


class Report(BaseModel):
    """``report.json``: aggregates, fingerprints, gates and the baseline comparison."""

    model_config = ConfigDict(extra="allow")

    report_version: str = REPORT_VERSION
    plugin_version: str
    totals: Totals
    suites: dict[str, SerializeAsAny[SuiteSection]]
    """Per suite, by name (sorted); each dumped as its own (sub)class, a suite's typed fields
    included."""
    datasets: dict[str, str]
    """Data file (relative to the rootdir) -> sha256 of its bytes."""
    dataset_sha256: str
    """sha256 over :attr:`datasets`."""
    datasets_changed: dict[str, str] | None = None
    """Data files whose bytes changed while the run used them -> what happened (present only
    then): :attr:`datasets` holds the hash of the bytes collected, the ones judged."""
    runner_fingerprint: str | None
    """The one runner's fingerprint id; ``None`` with several runners or none."""
    runners: dict[str, dict[str, Any]]
    """Runner fingerprint id -> the runner's fingerprint."""
    tool_registry_sha256: str | None = None
    fixtures_sha256: str | None = None
    deselected: dict[str, int] | None = None
    """Eval cases left out of the run by ``-k``, ``-m``, ``--lf`` (any deselection but a
    shard's and a resume's), by suite; present only when some were. Gates on those suites (and
    on ``*``) are then ``partial``."""
    gates: GatesSection | None = None
    """Present when the run had gates."""
    baseline: BaselineDiff | None = None
    """Present when the run was compared with a baseline."""
    interrupted: Interrupted | None = None
    """Present when the run was cut short (``-x``, Ctrl-C, SIGTERM, a budget); every gate
    that held is then ``partial``."""

    def dump(self) -> dict[str, Any]:
        """The JSON body: optional sections only when present."""
        optional = {"deselected", "gates", "baseline", "interrupted", "datasets_changed"}
        body = self.model_dump(mode="json", exclude=optional)
        if self.datasets_changed is not None:
            body["datasets_changed"] = self.datasets_changed
        if self.deselected is not None:
            body["deselected"] = self.deselected
        if self.interrupted is not None:
            body["interrupted"] = self.interrupted.model_dump(mode="json")
        if self.gates is not None:
            body["gates"] = self.gates.model_dump(mode="json")
        if self.baseline is not None:
            body["baseline"] = self.baseline.model_dump(mode="json")
        return body

    def without_baseline(self) -> Report:
        return self.model_copy(update={"baseline": None})


class MergedFrom(BaseModel):
    """One shard run dir a merged run dir was made from."""

    run_dir: str
    run_id: str | None
    shard: list[int] | None
    cases: int
    duration_s: float | None


VerdictStatus = Literal["passed", "failed", "partial"]


class RecordedFault(BaseModel):
    """A reason the run failed that only its session knew (a worker crash, a leak ...)."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    """``crash``, ``write``, ``mlflow``, ``leak``, ``unjudged``, ``baseline``, ``journal``,
    ``tests`` (a test that is not an eval case failed), ``exit`` (the session exited non-zero
    for a reason of its own); readers keep a kind they do not know."""
    message: str
    """The line the terminal printed."""


class RunVerdict(BaseModel):
    """``verdict`` of ``manifest.json``: how the session that wrote the run dir ended, and
    why. ``runs``, ``compare`` and report.html read it back instead of judging the run's
    files again, which cannot see what only the session knew (a crashed worker, a leak)."""

    model_config = ConfigDict(extra="forbid")

    status: VerdictStatus
    """``failed`` when a gate failed or could not be read, the baseline regressed or was
    refused, a case errored, nothing was judged, a fault (a crash, a leak, an unwritable file)
    or, with ``--llmeval-exit-on all``, a case failed that was not an expected miss; also any
    other non-zero exit of a run that was not cut short. ``partial`` when the run was cut short
    or a gate judged a subset of its cases; ``passed`` otherwise."""
    exit_status: StrictInt | None
    """The exit status of the session (of ``merge`` or ``summarize``, for the records they
    write); ``None`` when the verdict was read from the files alone."""
    reasons: list[str]
    """Why the status is not ``passed``, one line each."""
    faults: list[RecordedFault] = []
    """The faults among the reasons, by kind: ``summarize`` keeps those it cannot see again."""

    @model_validator(mode="after")
    def _green_only_when_it_is(self) -> RunVerdict:
        """A ``passed`` record with a non-zero exit status (but 5, an empty shard's: nothing of
        it to judge), a reason or a fault contradicts itself (a hand edit, a bad merge of
        files): refused, so no reader shows it green."""
        red_exit = self.exit_status not in (None, 0, 5)
        if self.status == "passed" and (red_exit or self.reasons or self.faults):
            raise ValueError(
                "'passed' with a non-zero exit status, a reason or a fault contradicts itself"
            )
        return self


class RunManifest(BaseModel):
    """``manifest.json``: what ran, where and when; written at the end of a session (its
    verdict written again when it changes after, or when ``summarize`` judges the run again)."""

    model_config = ConfigDict(extra="allow")

    run_id: str
    plugin_version: str
    python: str
    pytest: str
    started: str | None
    finished: str | None
    duration_s: float
    settings: dict[str, Any]
    """The settings (``Settings.public_dict()``), redacted."""
    invocation: list[str]
    git: dict[str, Any] | None
    environment: dict[str, Any] | None
    attempt: int
    shard: list[int] | None
    artifacts: list[str]
    merged_from: list[MergedFrom] | None = None
    """A merged run dir's shards."""
    interrupted: Interrupted | None = None
    """Present when the run was cut short (as ``report.json`` ``interrupted``)."""
    verdict: RunVerdict | None = None
    """How the session ended and why; absent from run dirs written before it was recorded."""

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=False, exclude=_absent(self))


def _absent(manifest: RunManifest) -> set[str]:
    optional = ("merged_from", "interrupted", "verdict")
    return {name for name in optional if getattr(manifest, name) is None}
