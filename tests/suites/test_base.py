"""The suite contract: the built-in suites subclass :class:`SuiteBase`, and the registry wraps a
suite that only implements the :class:`Suite` protocol so that it has every optional member too
(its own where it defines one, the default otherwise)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pytest_llmeval.core.models import CaseResult, CaseScore, EvalCase, Message, Transcript
from pytest_llmeval.rundir.models import SuiteSection
from pytest_llmeval.suites.base import (
    CaseSource,
    LoadItem,
    ProtocolSuite,
    SuiteBase,
    SuiteContext,
    SuiteRegistry,
)
from pytest_llmeval.suites.builtin import register_builtin_suites


class Bare:
    """The protocol's four members and a name, nothing more."""

    name = "bare"

    def claims(self, path: Path, head: bytes) -> bool:
        return path.suffix == ".bare"

    def load(self, source: CaseSource, ctx: SuiteContext) -> Iterator[LoadItem]:
        return iter(())

    def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
        return CaseScore(passed=True)

    def aggregate(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        return {"total": len(results)}


class SharpSection(SuiteSection):
    sharp: int


class Dressed(Bare):
    """The protocol plus its own optional members, without subclassing :class:`SuiteBase`."""

    name = "dressed"
    section_model = SharpSection
    manifest_options: ClassVar[dict[str, Any]] = {"sharpness": {"type": "integer"}}

    def markdown_lines(self, artifacts: dict[str, Any]) -> list[str]:
        return ["## dressed", str(artifacts["n"])]

    def console_lines(self, artifacts: dict[str, Any]) -> list[str]:
        return [f"dressed: {artifacts['n']}"]

    def file_artifacts(
        self, source: CaseSource, results: Sequence[CaseResult], ctx: SuiteContext, run_id: str
    ) -> dict[str, Any]:
        return {"dressed/x.json": {"n": len(results)}}

    def mask_output(self, text: str) -> str:
        return text.replace("secret", "******")

    def shown_expect(self, case: EvalCase) -> dict[str, Any]:
        return {"only": case.expect.get("only")}

    def score_names(self) -> tuple[frozenset[str], tuple[str, ...]]:
        return frozenset({"sharp"}), ("sharp.",)


def _case() -> EvalCase:
    return EvalCase(
        case_id="c",
        suite="bare",
        file="x.bare",
        line=1,
        messages=[Message(role="user", content="hi")],
        expect={"only": 1, "more": 2},
    )


def test_every_builtin_suite_subclasses_the_base() -> None:
    registry = SuiteRegistry()
    register_builtin_suites(registry)
    suites = [registry.get(name) for name in registry.names()]
    assert suites and all(type(s) is not ProtocolSuite for s in suites)
    assert all(isinstance(s, SuiteBase) for s in suites)


def test_a_protocol_only_suite_gets_the_defaults() -> None:
    registry = SuiteRegistry()
    registry.register(Bare())
    suite = registry.get("bare")
    assert isinstance(suite, ProtocolSuite) and isinstance(suite.suite, Bare)
    assert suite.claims(Path("a.bare"), b"") and not suite.claims(Path("a.json"), b"")
    assert suite.aggregate([]) == {"total": 0}
    assert suite.section_model is SuiteSection
    assert suite.manifest_options is None  # any manifest key is handed to it
    assert suite.markdown_lines({"n": 1}) is None  # no summary.md section
    assert suite.console_lines({"n": 1}) == []
    source = CaseSource(path=Path("x.bare"), display="x.bare")
    assert suite.file_artifacts(source, [], None, "run") == {}  # type: ignore[arg-type]
    assert suite.mask_output("a secret") == "a secret"
    assert suite.shown_expect(_case()) == {"only": 1, "more": 2}
    assert suite.score_names() is None


def test_a_protocol_only_suite_keeps_its_own_optional_members() -> None:
    registry = SuiteRegistry()
    registry.register(Dressed())
    suite = registry.get("dressed")
    assert isinstance(suite, ProtocolSuite)
    assert suite.section_model is SharpSection
    assert suite.manifest_options == {"sharpness": {"type": "integer"}}
    assert suite.markdown_lines({"n": 3}) == ["## dressed", "3"]
    assert suite.console_lines({"n": 3}) == ["dressed: 3"]
    source = CaseSource(path=Path("x.bare"), display="x.bare")
    artifacts = suite.file_artifacts(source, [], None, "run")  # type: ignore[arg-type]
    assert artifacts == {"dressed/x.json": {"n": 0}}
    assert suite.mask_output("a secret") == "a ******"
    assert suite.shown_expect(_case()) == {"only": 1}
    assert suite.score_names() == (frozenset({"sharp"}), ("sharp.",))


def test_a_subclass_of_the_base_is_registered_as_it_is() -> None:
    class Own(SuiteBase):
        name = "own"

        def claims(self, path: Path, head: bytes) -> bool:
            return False

        def load(self, source: CaseSource, ctx: SuiteContext) -> Iterator[LoadItem]:
            return iter(())

        def score(self, case: EvalCase, transcript: Transcript, ctx: SuiteContext) -> CaseScore:
            return CaseScore(passed=True)

        def aggregate(self, results: Sequence[CaseResult]) -> dict[str, Any]:
            return {}

    own = Own()
    registry = SuiteRegistry()
    registry.register(own)
    assert registry.get("own") is own
    assert registry.claim(Path("a.json"), b"") is None
