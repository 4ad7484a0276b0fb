"""The GAIA suite: a GAIA split (``metadata.jsonl`` / ``metadata.parquet``) named by a manifest.

GAIA files have arbitrary names, so the suite never claims a file by itself: a
``*.llmeval.yaml`` manifest names it::

    suite: gaia
    data: gaia/2023/validation/metadata.jsonl
    levels: [1, 2]          # optional; also limit, shuffle, seed, split_dir, dataset_root,
                            # system_prompt, tools, max_turns, attachment_paths

Each row becomes a case: a system message (:data:`~pytest_llmeval.scoring.gaia.
GAIA_SYSTEM_PROMPT`, or the manifest's ``system_prompt``; ``""`` sends none) and the question,
plus ``Attached file: <path>`` when the row has an attachment. That path is relative to the
rootdir by default (``attachment_paths: relative``), so recorded cassettes replay from any
checkout; ``attachment_paths: absolute`` gives the absolute path. The absolute path is always
in the case metadata as ``attachment``. Tools are served by the broker (all registry tools, or
the manifest's ``tools``). Reading rules are in :mod:`pytest_llmeval.suites.gaia_data`.

Scoring: the text after the last ``FINAL ANSWER:`` is judged by the official
``question_scorer``; a response without that line is wrong (see
:func:`~pytest_llmeval.scoring.gaia.score_response`).

Accuracy (``report.json`` ``suites.gaia``): ``accuracy`` is ``correct / questions`` where every
case that was not skipped is a question, so a case that errored (a timeout, a missing
attachment, a broken row) counts as **wrong**, as a missing answer does on the leaderboard.
``levels.levelN`` is the same per level; errors from broken rows carry no level and are
counted in ``unleveled`` (and overall) only.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import CaseFileError
from pytest_llmeval.core.models import CaseResult, CaseScore, EvalCase, Message, Transcript
from pytest_llmeval.rundir.models import Accuracy, Number, SuiteSection
from pytest_llmeval.scoring import gaia
from pytest_llmeval.suites.base import (
    CaseSource,
    LoadItem,
    SuiteBase,
    SuiteContext,
    artifact_name,
    base_totals,
    display_stem,
    row_fingerprint,
)
from pytest_llmeval.suites.fields import RowReader
from pytest_llmeval.suites.gaia_data import (
    ID_COLUMNS,
    LEVEL_COLUMN,
    OPTIONS,
    QUESTION_COLUMNS,
    TRUTH_COLUMNS,
    GaiaOptions,
    GaiaRow,
    attachment_candidates,
    first_column,
    missing_columns,
    parse_level,
    read_options,
    read_rows,
    select,
)

RAW_OUTPUT_CHARS = 2000
"""``details.raw_output`` keeps this many characters (``response`` in results is complete)."""


class GaiaSection(SuiteSection):
    """``report.json`` ``suites.gaia``: the leaderboard accuracy, overall and per level."""

    accuracy: Number | None
    correct: int
    questions: int
    levels: dict[str, Accuracy]
    unleveled: Accuracy


class GaiaSuite(SuiteBase):
    """GAIA validation/test splits, through a manifest only."""

    name = "gaia"
    section_model = GaiaSection
    manifest_options: ClassVar[dict[str, dict[str, Any]]] = {key: {} for key in OPTIONS}
    """Its manifest options; :func:`~pytest_llmeval.suites.gaia_data.read_options` checks
    their values."""

    def claims(self, path: Path, head: bytes) -> bool:
        """Never: a GAIA file is collected only when a manifest names it."""
        return False

    def load(self, source: CaseSource, ctx: SuiteContext) -> Iterator[LoadItem]:
        try:
            options = read_options(source)
        except CaseFileError as exc:
            yield exc
            return
        rows: list[GaiaRow] = []
        for item in read_rows(source):
            if isinstance(item, CaseFileError):
                yield item
                continue
            try:
                item.level = _level(source, item)
            except CaseFileError as exc:
                yield exc
                continue
            rows.append(item)
        ids = _given_ids(rows)
        for row in select(rows, options):
            try:
                yield self._case(source, row, options, ctx, ids)
            except CaseFileError as exc:
                yield exc

    def _case(
        self,
        source: CaseSource,
        row: GaiaRow,
        options: GaiaOptions,
        ctx: SuiteContext,
        ids: Collection[str] = (),
    ) -> EvalCase:
        values = row.row
        read = RowReader(source.display, row.line, values)
        question_column = first_column(values, QUESTION_COLUMNS)
        truth_column = first_column(values, TRUTH_COLUMNS)
        if question_column is None or truth_column is None:
            raise CaseFileError(source.display, row.line, missing_columns(list(values)) or "")
        question = read.text(question_column, required=True) or ""
        truth = _truth(read, truth_column)
        id_column = first_column(values, ID_COLUMNS)
        case_id = (read.id(id_column) if id_column else None) or _row_name(row.index, ids)
        attachment = _attachment(source, row, options)
        shown = _shown(attachment, options, ctx) if attachment else None
        system = gaia.GAIA_SYSTEM_PROMPT if options.system_prompt is None else options.system_prompt
        user = question + (f"\n\nAttached file: {shown}" if shown else "")
        messages = [Message(role="system", content=system)] if system else []
        messages.append(Message(role="user", content=user))
        used = {question_column, truth_column, id_column, LEVEL_COLUMN}
        metadata = {k: v for k, v in values.items() if k not in used}
        metadata["level"] = row.level
        metadata["attachment"] = str(attachment) if attachment else None
        return EvalCase(
            case_id=case_id,
            suite=self.name,
            file=source.display,
            line=row.line,
            category=f"level{row.level}" if row.level is not None else None,
            messages=messages,
            tools=ctx.registry.specs(options.tools),
            tool_mode="broker",
            max_turns=options.max_turns or ctx.settings.max_turns,
            expect={"final_answer": truth},
            metadata=metadata,
            fingerprint=row_fingerprint(
                self.name, {"row": values, "system_prompt": system, "attachment": shown}
            ),
        )

    def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
        truth = case.expect["final_answer"]
        extracted, verdict = gaia.score_response(transcript.response, truth)
        failure = None
        if not verdict.correct:
            failure = (
                f"expected {_dumps(truth)}, got {_dumps(extracted)} "
                f"({verdict.branch}: {verdict.reason})"
            )
        return CaseScore(
            passed=verdict.correct,
            scores={"correct": verdict.score},
            failure=failure,
            details={
                "extracted_answer": extracted,
                "raw_output": _clip(transcript.response),
                "branch": verdict.branch,
                "reason": verdict.reason,
                "normalized_prediction": verdict.normalized_prediction,
                "normalized_ground_truth": verdict.normalized_ground_truth,
                "level": case.metadata.get("level"),
            },
        )

    def aggregate(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        return {**base_totals(results), **gaia.aggregate(_rows(results))}

    def file_artifacts(
        self, source: CaseSource, results: Sequence[CaseResult], ctx: SuiteContext, run_id: str
    ) -> dict[str, Any]:
        """``gaia/<data path>.json``: the file's accuracy and its answers, submission-style."""
        answers = [
            {
                "task_id": r.case_id,
                "level": _result_level(r),
                "outcome": r.outcome,
                "model_answer": r.details.get("extracted_answer"),
            }
            for r in sorted(results, key=lambda r: r.case_id)
            if r.outcome != "skipped"
        ]
        body = {"file": source.display, **gaia.aggregate(_rows(results)), "answers": answers}
        return {artifact_name("gaia", display_stem(source), source): body}

    def console_lines(self, artifacts: dict[str, Any]) -> list[str]:
        parts = [f"gaia {artifacts.get('file')}: accuracy {_share(artifacts)}"]
        for level, tally in (artifacts.get("levels") or {}).items():
            parts.append(f"{level} {_share(tally)}")
        unleveled = artifacts.get("unleveled") or {}
        if unleveled.get("questions"):
            parts.append(f"no level {_share(unleveled)}")
        return [", ".join(parts)]


def _given_ids(rows: Sequence[GaiaRow]) -> set[str]:
    """The ids the file's rows give themselves (whatever their type, as strings)."""
    ids = set()
    for row in rows:
        column = first_column(row.row, ID_COLUMNS)
        value = row.row.get(column) if column else None
        if value is not None and not isinstance(value, bool):
            ids.add(str(value))
    return ids


def _row_name(index: int, ids: Collection[str]) -> str:
    """``row<index>`` for a row without an id; ``_`` appended while a row's own id is that."""
    name = f"row{index}"
    while name in ids:
        name += "_"
    return name


def _level(source: CaseSource, row: GaiaRow) -> int | None:
    try:
        return parse_level(row.row.get(LEVEL_COLUMN))
    except ValueError:
        value = row.row.get(LEVEL_COLUMN)
        message = f"expected a whole number (1, 2 or 3), got {json.dumps(value)}"
        raise CaseFileError(source.display, row.line, message, field=LEVEL_COLUMN) from None


def _truth(read: RowReader, column: str) -> str | int | float:
    value = read.row.get(column)
    if value is None:
        raise read.error(column, "missing (null); a GAIA final answer is a string")
    ok = isinstance(value, (str, int, float)) and not isinstance(value, bool)
    if not ok:
        raise read.error(column, f"expected a string, got {json.dumps(value)}")
    return value  # type: ignore[no-any-return]


def _attachment(source: CaseSource, row: GaiaRow, options: GaiaOptions) -> Path | None:
    candidates = attachment_candidates(row.row, options)
    found = next((path for path in candidates if path.is_file()), None)
    if candidates and found is None:
        name = row.row.get("file_name") or row.row.get("file_path")
        tried = ", ".join(path.as_posix() for path in candidates)
        raise CaseFileError(
            source.display,
            row.line,
            f"attachment {name!r} not found (looked for {tried})",
            field="file_name",
        )
    return found.resolve() if found else None


def _shown(path: Path, options: GaiaOptions, ctx: SuiteContext) -> str:
    """The attachment's path as the model reads it (see the module docstring)."""
    if options.attachment_paths == "relative":
        try:
            return path.relative_to(ctx.settings.rootdir.resolve()).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def _result_level(result: CaseResult) -> int | None:
    level = result.details.get("level")
    if isinstance(level, int) and not isinstance(level, bool):
        return level
    return gaia.level_of(result.category)


def _rows(results: Sequence[CaseResult]) -> list[tuple[int | None, bool]]:
    return [(_result_level(r), r.outcome == "passed") for r in results if r.outcome != "skipped"]


def _share(tally: dict[str, Any]) -> str:
    accuracy = tally.get("accuracy")
    rate = "n/a" if accuracy is None else f"{accuracy * 100:.2f}%"
    return f"{rate} ({tally.get('correct', 0)}/{tally.get('questions', 0)})"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _clip(text: str) -> str:
    return clip(text, RAW_OUTPUT_CHARS)
