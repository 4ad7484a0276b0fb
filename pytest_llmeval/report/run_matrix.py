"""Several runs side by side: the suite table, the case matrix and the statistics against the
first run (pure; ``python -m pytest_llmeval compare`` reads the run dirs and writes the files).

* **Runs** are columns ``A``, ``B``, ``C`` ... in the order given; the first is the reference.
* **The suite table:** each suite's headline numbers (:mod:`pytest_llmeval.report.headlines`)
  with their 95% intervals, one column per run.
* **The case matrix:** every case (node id) of any run as a row, each run's outcome and score
  (the mean of the case's scores) as a cell. Rows whose outcome differs between the runs that
  have the case come first, then the cases only some runs have, then the rest.
* **Statistics:** each later run against the first, through the baseline diff
  (:func:`pytest_llmeval.report.baseline.diff`, mismatched runners allowed: comparing them is
  the point): cases compared, flips both ways, the exact McNemar p-value on those flips, and
  the cases one side has and the other does not (runs of different datasets compare on the
  cases they share).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.markdown import md_cell, md_code, md_plain, one_line
from pytest_llmeval.report.baseline.diff import diff
from pytest_llmeval.report.baseline.file import Baseline, BaselineCase, subset_of
from pytest_llmeval.report.headlines import Headline, format_headline, headlines
from pytest_llmeval.report.history import run_summary, runner_text, started_text
from pytest_llmeval.rundir.outcomes import CaseOutcome, RunOutcomes

__all__ = [
    "MARKER",
    "MAX_MARKDOWN_ROWS",
    "CaseCell",
    "CaseRow",
    "Comparison",
    "PairStats",
    "RunColumn",
    "SuiteRow",
    "cases_line",
    "compare_markdown",
    "compare_runs",
    "outcome_text",
    "p_text",
    "run_keys",
]

MAX_MARKDOWN_ROWS = 50
"""Case rows ``compare.md`` shows (``compare.html`` shows them all)."""
MAX_ID_CHARS = 200
"""A case id (or run dir name) longer than this is clipped in ``compare.md``
(:func:`~pytest_llmeval.core.clip.clip`); ``compare.html`` keeps it whole."""

MAX_REASON_CHARS = 160
"""The most characters of a case's reason a matrix cell shows (clipped with a marker)."""

MARKER = "written by python -m pytest_llmeval compare"
"""In every file ``compare`` writes: it replaces only files that carry it."""


CellOutcome = Literal["passed", "failed", "xfail", "error", "skipped"]


class RunColumn(BaseModel):
    """One compared run."""

    model_config = ConfigDict(extra="forbid")

    key: str
    """Its column: ``A``, ``B`` ... (``A`` is the reference)."""
    name: str
    """The run dir's folder name."""
    path: str
    started: str
    """When it started (``2026-11-26 11:24 UTC``)."""
    runner: str
    """The runner and model (``replay: example-router``)."""
    cases: int
    verdict: str
    interrupted: str | None
    """Why it was cut short, when it was."""
    dataset_sha256: str


class SuiteRow(BaseModel):
    """One headline number of one suite, in every run (``None`` where a run lacks it)."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    label: str
    cells: list[Headline | None]


class CaseCell(BaseModel):
    """One case in one run."""

    model_config = ConfigDict(extra="forbid")

    outcome: CellOutcome | None
    """``xfail`` is a miss the case's manifest expects; ``None``: the run has no such case."""
    score: float | None = None
    """The mean of the case's scores, when it has any."""
    scores: dict[str, float] = {}
    reason: str | None = None
    """Why the case failed, errored or was skipped in this run, on one line and clipped to
    :data:`MAX_REASON_CHARS`."""


class CaseRow(BaseModel):
    """One case (node id) across the runs."""

    model_config = ConfigDict(extra="forbid")

    nodeid: str
    suite: str
    cells: list[CaseCell]
    differs: bool
    """The runs that have the case do not agree on its outcome."""
    changed: bool = False
    """The case's data changed between the runs that have it (another case fingerprint): its
    outcomes are not comparable, and the flips leave it out."""
    shared: bool
    """Every run has the case."""


class PairStats(BaseModel):
    """One run against the first."""

    model_config = ConfigDict(extra="forbid")

    key: str
    compared: int
    """Cases judged in both with the same case fingerprint."""
    pass_to_fail: int
    fail_to_pass: int
    mcnemar_p: float
    """Exact two-sided McNemar p-value on the two flip counts."""
    only_reference: int
    """Cases the first run has and this one does not."""
    only_this: int
    """Cases this run has and the first does not."""
    changed: int
    """Cases in both whose data changed (another case fingerprint): not compared."""
    runner_differs: bool
    """The two runs were answered by different runners or models."""


class Comparison(BaseModel):
    """Everything ``compare.md`` and ``compare.html`` show."""

    model_config = ConfigDict(extra="forbid")

    runs: list[RunColumn]
    suites: list[SuiteRow]
    pairs: list[PairStats]
    cases: list[CaseRow]
    """Differing rows first, then rows only some runs have, then the rest (each by node id)."""
    shared: int
    """Cases every run has."""
    not_shared: int
    """Cases only some runs have."""
    differing: int
    """Shared cases whose outcome differs between the runs."""
    changed: int = 0
    """Cases whose data changed between the runs that have them."""


def run_keys(n: int) -> list[str]:
    """``A`` .. ``Z``, then ``AA``, ``AB`` ...: a column name per run."""
    letters = string.ascii_uppercase
    return [letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26] for i in range(n)]


def compare_runs(records: Sequence[RunOutcomes]) -> Comparison:
    """The comparison of ``records``, the first as reference."""
    keys = run_keys(len(records))
    runs = [_column(key, record) for key, record in zip(keys, records, strict=True)]
    cases = _case_rows(records)
    return Comparison(
        runs=runs,
        suites=_suite_rows(records),
        pairs=[
            _pair(key, records[0], other) for key, other in zip(keys[1:], records[1:], strict=True)
        ],
        cases=cases,
        shared=sum(1 for row in cases if row.shared),
        not_shared=sum(1 for row in cases if not row.shared),
        differing=sum(1 for row in cases if row.shared and row.differs),
        changed=sum(1 for row in cases if row.changed),
    )


# -- building ----------------------------------------------------------------------------------


def _column(key: str, record: RunOutcomes) -> RunColumn:
    summary = run_summary(record)
    cut = summary.interrupted
    return RunColumn(
        key=key,
        name=summary.name,
        path=summary.path,
        started=started_text(summary.started),
        runner=runner_text(summary),
        cases=summary.cases,
        verdict=summary.verdict,
        interrupted=f"{cut.reason}: {cut.cases_run} of {cut.cases_total} ran" if cut else None,
        dataset_sha256=record.report.dataset_sha256,
    )


def _suite_rows(records: Sequence[RunOutcomes]) -> list[SuiteRow]:
    per_run = [headlines(r.report) for r in records]
    order: dict[tuple[str, str], None] = {}
    for found in per_run:
        for suite in sorted(found):
            for headline in found[suite]:
                order.setdefault((suite, headline.label), None)
    rows = []
    for suite, label in sorted(order, key=lambda pair: pair[0]):  # stable: labels keep order
        cells = []
        for found in per_run:
            match = [h for h in found.get(suite, []) if h.label == label]
            cells.append(match[0] if match else None)
        rows.append(SuiteRow(suite=suite, label=label, cells=cells))
    return rows


def _cell(result: CaseOutcome | None) -> CaseCell:
    # built unvalidated (model_construct) from validated rows: a matrix has a cell per case
    # and run, and validating each again triples the time of a 20,000-case comparison
    if result is None:
        return CaseCell.model_construct(outcome=None, score=None, scores={}, reason=None)
    outcome: CellOutcome = "xfail" if result.xfailed else result.outcome
    scores = dict(sorted(result.scores.items()))
    score = sum(scores.values()) / len(scores) if scores else None
    reason = None
    if result.error and result.outcome != "passed":
        reason = clip(one_line(result.error[: MAX_REASON_CHARS * 4]), MAX_REASON_CHARS)
    return CaseCell.model_construct(outcome=outcome, score=score, scores=scores, reason=reason)


def _case_rows(records: Sequence[RunOutcomes]) -> list[CaseRow]:
    by_run = [{r.nodeid: r for r in record.outcomes} for record in records]
    nodeids = sorted(set().union(*by_run))
    rows = []
    for nodeid in nodeids:
        found = [results.get(nodeid) for results in by_run]
        present = [r for r in found if r is not None]
        prints = {r.case_fingerprint for r in present if r.case_fingerprint}
        rows.append(
            CaseRow.model_construct(
                nodeid=nodeid,
                suite=present[0].suite,
                cells=[_cell(r) for r in found],
                differs=len({r.outcome for r in present}) > 1,
                changed=len(prints) > 1,
                shared=len(present) == len(found),
            )
        )
    rank = {True: 0, False: 2}
    return sorted(
        rows,
        key=lambda row: (rank[row.differs or row.changed] if row.shared else 1, row.nodeid),
    )


def _pair(key: str, reference: RunOutcomes, other: RunOutcomes) -> PairStats:
    body = reference.report.dump()
    baseline = Baseline(
        source=str(reference.path),
        run_id=reference.manifest.run_id,
        report=body,
        results=[_baseline_case(r) for r in reference.outcomes],
        subset=subset_of(body, reference.manifest.shard),
    )
    current = [_baseline_case(r) for r in other.outcomes]
    found = diff(other.report.dump(), current, baseline, allow_mismatch=True)
    return PairStats(
        key=key,
        compared=found.compared,
        pass_to_fail=found.pass_to_fail,
        fail_to_pass=found.fail_to_pass,
        mcnemar_p=found.mcnemar_p,
        only_reference=len(found.flips["removed"]),
        only_this=len(found.flips["new"]),
        changed=len(found.flips["changed"]),
        runner_differs=bool(found.fingerprint_mismatches.keys() - {"plugin_version"}),
    )


def _baseline_case(result: CaseOutcome) -> BaselineCase:
    """The baseline diff's view of a case (its fields are a subset of the validated row's)."""
    return BaselineCase.model_construct(
        **{name: getattr(result, name) for name in _BASELINE_FIELDS}
    )


_BASELINE_FIELDS = tuple(BaselineCase.model_fields)


# -- Markdown ----------------------------------------------------------------------------------


def outcome_text(cell: CaseCell) -> str:
    """A matrix cell: ``passed 1.00``, ``failed 0.33``, ``xfail``, ``—`` for a missing case."""
    if cell.outcome is None:
        return "—"
    return cell.outcome if cell.score is None else f"{cell.outcome} {cell.score:.2f}"


def p_text(value: float) -> str:
    """A p-value: four significant digits."""
    return f"{value:.4g}"


def compare_markdown(comparison: Comparison, max_rows: int = MAX_MARKDOWN_ROWS) -> str:
    """``compare.md``: the runs, the suite table, the statistics against the first run and the
    case matrix (its first ``max_rows`` rows; it says how many more ``compare.html`` has)."""
    runs = comparison.runs
    keys = [run.key for run in runs]
    out = [f"<!-- {MARKER}; it replaces this file when run again -->",
           "# pytest-llmeval-harness comparison", "",
           "| run | run dir | started | runner | cases | verdict |",
           "|---|---|---|---|---:|---|"]  # fmt: skip
    for run in runs:
        verdict = run.verdict + (f" (interrupted: {run.interrupted})" if run.interrupted else "")
        out.append(
            f"| {run.key} | {md_cell(md_code(clip(run.name, MAX_ID_CHARS)))} | {run.started} | "
            f"{md_cell(md_plain(run.runner))} | {run.cases} | {md_cell(md_plain(verdict))} |"
        )
    out += ["", "## Suites", "", "| suite | metric | " + " | ".join(keys) + " |",
            "|---|---|" + "---:|" * len(keys)]  # fmt: skip
    for suite in comparison.suites:
        numbers = [format_headline(h, label=False) if h else "—" for h in suite.cells]
        out.append(
            f"| {md_plain(suite.suite)} | {md_plain(suite.label)} | " + " | ".join(numbers) + " |"
        )
    if comparison.pairs:
        first = keys[0]
        out += ["", f"## Against {first}", "",
                f"Flips from {first} to each run, over the cases both judged with the same data; "
                "the exact McNemar test is on the two flip counts.", "",
                f"| run | compared | pass → fail | fail → pass | McNemar p | "
                f"only in {first} | only in this run | data changed |",
                "|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
        for pair in comparison.pairs:
            runner = " (other runner)" if pair.runner_differs else ""
            out.append(
                f"| {pair.key}{runner} | {pair.compared} | {pair.pass_to_fail} | "
                f"{pair.fail_to_pass} | {p_text(pair.mcnemar_p)} | {pair.only_reference} | "
                f"{pair.only_this} | {pair.changed} |"
            )
    out += ["", "## Cases", "", cases_line(comparison), ""]
    out += ["| case | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    for row in comparison.cases[:max_rows]:
        mark = ("**≠** " if row.differs else "") + ("**Δ data changed** " if row.changed else "")
        told = row.differs or row.changed  # each side's reason, where the outcomes need one
        cells = " | ".join(md_cell(_cell_markdown(cell, told)) for cell in row.cells)
        out.append(f"| {mark}{md_cell(md_code(clip(row.nodeid, MAX_ID_CHARS)))} | {cells} |")
    omitted = len(comparison.cases) - max_rows
    if omitted > 0:
        out += ["", f"{omitted} more case rows are in compare.html."]
    return "\n".join(out) + "\n"


def _cell_markdown(cell: CaseCell, reason: bool) -> str:
    """A matrix cell of ``compare.md``: the outcome, and its reason as a code span when
    ``reason`` (a row whose outcomes differ or whose data changed)."""
    text = outcome_text(cell)
    return f"{text}: {md_code(cell.reason)}" if reason and cell.reason else text


def cases_line(comparison: Comparison) -> str:
    """The sentence above the case matrix: how many cases are shared, differ, or are not."""
    text = (
        f"{comparison.shared} cases in every run, {comparison.differing} of them with "
        "differing outcomes (marked ≠, listed first)"
    )
    if comparison.changed:
        text += (
            f"; {comparison.changed} cases whose data changed between the runs (marked Δ, "
            "listed first: another case fingerprint, so their outcomes are not compared)"
        )
    if comparison.not_shared:
        text += (
            f"; {comparison.not_shared} cases in only some runs (— where a run lacks one): "
            "the statistics compare the cases both runs share"
        )
    return (
        text + ". A score is the mean of the case's scores; where outcomes differ or data "
        "changed, each run's reason for its outcome is shown."
    )
