"""The BFCL suite: the Berkeley Function Calling Leaderboard (v4), each item one case.

A ``*.llmeval.yaml`` manifest names what to run (BFCL's files are never claimed alone)::

    suite: bfcl
    data: bfcl_data              # optional: a BFCL data folder in the official layout;
                                 # default: the installed bfcl-eval's, found without import
    categories: [simple_python, multiple]   # optional: a list, or `all`
    ids: [simple_python_0]       # optional: only these item ids
    mode: fc                     # fc (the API's tool calling, default) or prompt

Each item is a case: ``case_id`` is the BFCL id, ``category`` its category. The case carries
the official first request (messages and tools, :mod:`.bfcl_conversation`) and a
:class:`~pytest_llmeval.core.models.BfclTask`, so the agent runs the official conversation
(``engine/bfcl_agent.py``). Scoring is the official checker's
(:mod:`pytest_llmeval.scoring.bfcl`): the AST checker, relevance, or the multi-turn state and
response checks on fresh backends; a failed case's message is one line and
``details.error_type`` the official error type.

Without ``bfcl-eval`` installed, a manifest without ``data:`` and any multi-turn or prompt-mode
manifest stop the session before any case (exit 4) naming ``pip install --no-deps
bfcl-eval==2026.3.23``. ``report.json`` ``suites.bfcl``: :class:`BfclSection`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import CaseFileError, ConfigError, SetupProblem
from pytest_llmeval.core.models import (
    BfclTask,
    CaseResult,
    CaseScore,
    EvalCase,
    Message,
    Transcript,
)
from pytest_llmeval.scoring.bfcl.calls import Mode, Verdict
from pytest_llmeval.scoring.bfcl.multi_turn import MultiTurnItem, score_multi_turn
from pytest_llmeval.scoring.bfcl.multi_turn_loop import transcript_from_replies
from pytest_llmeval.scoring.bfcl.relevance import is_relevance_category, score_relevance
from pytest_llmeval.scoring.bfcl.single_turn import score_ast
from pytest_llmeval.suites import bfcl_conversation as conv
from pytest_llmeval.suites.base import (
    CaseSource,
    LoadItem,
    PendingCase,
    SuiteBase,
    SuiteContext,
    artifact_name,
    base_totals,
    display_stem,
    row_fingerprint,
)
from pytest_llmeval.suites.bfcl_data import (
    INSTALL_LINE,
    default_data_dir,
    package_dir,
    read_data,
    select_categories,
)
from pytest_llmeval.suites.bfcl_replies import rebuilt_reply, reply_output, tool_specs
from pytest_llmeval.suites.bfcl_report import (
    BfclSection,
    bfcl_aggregate,
    console_lines,
    file_artifact,
    markdown_lines,
)
from pytest_llmeval.suites.bfcl_rows import BfclItem

__all__ = ["OPTIONS", "BfclSuite"]

OPTIONS = ("categories", "ids", "mode")
"""The manifest keys of the suite beyond the common ones (``data`` is common)."""

MODES = ("fc", "prompt")


class BfclSuite(SuiteBase):
    """BFCL v4's non-agentic categories, through a manifest only."""

    name = "bfcl"
    section_model = BfclSection
    data_folder = True
    manifest_options: ClassVar[dict[str, dict[str, Any]]] = {
        "categories": {"type": ["string", "array"], "items": {"type": "string"}},
        "ids": {"type": "array", "items": {"type": "string"}},
        "mode": {"enum": list(MODES)},
    }

    def claims(self, path: Path, head: bytes) -> bool:
        """Never: BFCL data is collected only through a manifest."""
        return False

    # -------------------------------------------------------------------------- loading

    def load(self, source: CaseSource, ctx: SuiteContext) -> Iterator[LoadItem]:
        try:
            mode, data_dir, root = _where(source, ctx)
            categories = select_categories(data_dir, source.options.get("categories"))
            _needs_package(source, mode, categories)
            ids = source.options.get("ids")
            data = read_data(data_dir, categories, ids, display_root=root)
        except ConfigError as exc:
            yield CaseFileError(source.display, None, str(exc), field="manifest")
            return
        except CaseFileError as exc:
            yield exc
            return
        for item in data.items:
            yield PendingCase(
                item.id, item.line, item.category, {}, self._maker(source, item, mode)
            )
        yield from data.errors  # after the items: a duplicate's error never takes their name

    def _maker(
        self, source: CaseSource, item: BfclItem, mode: Mode
    ) -> Callable[[int, dict[str, Any]], EvalCase]:
        held = _HOLD.encode(_as_json(item))  # one string, not ~40 live objects per item

        def make(line: int, row: dict[str, Any]) -> EvalCase:  # the JSON round trip is exact
            return self._case(source, BfclItem.model_construct(**json.loads(held)), mode)

        return make

    def _case(self, source: CaseSource, item: BfclItem, mode: Mode) -> EvalCase:
        messages = conv.first_messages(item, mode)
        tools = conv.tools_for(item, mode, conv.revealed_turns(item, 0))
        dumped = _as_json(item)
        return EvalCase(
            case_id=item.id,
            suite=self.name,
            file=source.display,
            line=item.line,
            category=item.category,
            messages=[Message(role=m["role"], content=m["content"]) for m in messages],
            tools=tool_specs(tools),
            tool_mode="routing",
            max_turns=1,
            expect={"ground_truth": item.ground_truth} if item.ground_truth is not None else {},
            metadata={"bfcl_file": item.path, "mode": mode},
            fingerprint=row_fingerprint(self.name, {"item": dumped, "mode": mode}),
            bfcl=conv.keeping(BfclTask(mode=mode, item=dumped), item),
        )

    # -------------------------------------------------------------------------- scoring

    def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
        assert case.bfcl is not None
        mode: Mode = case.bfcl.mode
        item = conv.task_item(case.bfcl)
        replies = transcript.replies or _replies_of(transcript)
        if item.multi_turn:
            if not transcript.replies:
                return _no_loop(mode, item)
            outputs = [[reply_output(reply, mode) for reply in turn] for turn in replies]
            verdict = score_multi_turn(
                MultiTurnItem.model_validate(case.bfcl.item),
                item.ground_truth or [],
                transcript_from_replies(outputs, mode),
            )
        else:
            output = reply_output(replies[-1][-1], mode) if replies and replies[-1] else None
            if is_relevance_category(item.category):
                verdict = score_relevance(item.category, output, mode)
            else:
                verdict = score_ast(
                    item.category, item.functions, item.ground_truth or [], output, mode
                )
        return _case_score(verdict, item, mode)

    def aggregate(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        return {**base_totals(results), **bfcl_aggregate(results)}

    def file_artifacts(
        self, source: CaseSource, results: Sequence[CaseResult], ctx: SuiteContext, run_id: str
    ) -> dict[str, Any]:
        """``bfcl/<manifest or data folder>.json``: its mode, groups and categories."""
        name = artifact_name("bfcl", display_stem(source), source)
        return {name: file_artifact(source.display, results)}

    def console_lines(self, artifacts: dict[str, Any]) -> list[str]:
        return console_lines(artifacts)

    def markdown_lines(self, artifacts: dict[str, Any]) -> list[str] | None:
        return markdown_lines(artifacts)


_HOLD = json.JSONEncoder(allow_nan=True, separators=(",", ":"))
"""How a collected item waits for its case: ASCII JSON, which ``json.loads`` reads back
exactly (NaN, -0.0, big integers and lone surrogates included, unlike pydantic's JSON)."""


def _as_json(item: BfclItem) -> dict[str, Any]:
    """``item.model_dump(mode="json")``, without copying: every field of an item read from
    JSON is JSON already (the dump's lists and dicts are the item's own, read only: for the
    case's fingerprint and a task read back; a dump copied the docs per case)."""
    return {name: getattr(item, name) for name in BfclItem.model_fields}


def _where(source: CaseSource, ctx: SuiteContext) -> tuple[Mode, Path, Path | None]:
    """The mode, the data folder and the root its paths are shown relative to."""
    mode = source.options.get("mode", "fc")
    if mode not in MODES:
        raise CaseFileError(
            source.display, None, "expected fc or prompt", field="manifest option mode"
        )
    if "data" in source.options:
        return mode, source.path, ctx.settings.rootdir
    if package_dir() is None:
        raise SetupProblem(source.display, None, _missing("the BFCL data", "or set `data:` to a "
                           "BFCL data folder"), field="data")  # fmt: skip
    data_dir = default_data_dir()
    return mode, data_dir, data_dir.parent.parent


def _needs_package(source: CaseSource, mode: Mode, categories: Sequence[str]) -> None:
    if package_dir() is not None:
        return
    multi = [c for c in categories if c.startswith("multi_turn")]
    if multi:
        what = f"the multi-turn categories ({', '.join(multi)}) run on its backends"
        raise SetupProblem(source.display, None, _missing(what), field="categories")
    if mode == "prompt":
        what = "prompt mode sends its system prompt"
        raise SetupProblem(source.display, None, _missing(what), field="mode")


def _missing(what: str, more: str = "") -> str:
    tail = f" ({more})" if more else ""
    return f"{what}: bfcl-eval is not installed; run `{INSTALL_LINE}`{tail}"


def _replies_of(transcript: Transcript) -> list[list[dict[str, Any]]]:
    """A user agent's transcript (no :attr:`Transcript.replies`): its last assistant
    message, as one turn of one reply."""
    for message in reversed(transcript.messages):
        if message.role == "assistant":
            reply = message.raw or rebuilt_reply(message.content, message.tool_calls)
            return [[reply]]
    return [[{"role": "assistant", "content": transcript.response}]]


def _no_loop(mode: Mode, item: BfclItem) -> CaseScore:
    why = (
        "a multi-turn BFCL item needs the plugin's own agent loop (the llmeval_runner "
        "fixture's runner): the agent returned no replies per turn"
    )
    return CaseScore(
        passed=False,
        failure=why,
        error=why,
        error_kind="agent",
        details={"mode": mode, "category": item.category},
    )


def _case_score(verdict: Verdict, item: BfclItem, mode: Mode) -> CaseScore:
    details: dict[str, Any] = {"mode": mode, "category": item.category}
    if verdict.valid:
        return CaseScore(passed=True, scores={"correct": 1.0}, details=details)
    details["error_type"] = verdict.error_type
    message = " ".join(verdict.message.split())
    return CaseScore(
        passed=False,
        scores={"correct": 0.0},
        failure=clip(f"{verdict.error_type}: {message}", 300),
        details=details,
    )
