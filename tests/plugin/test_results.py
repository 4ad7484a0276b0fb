"""A case's input, expectation and conversation in results.jsonl and report.html:
redacted, clipped, and the same whatever ``-n`` or shards."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_llmeval.core.clip import marker
from pytest_llmeval.core.models import EvalCase, Message, ToolCall, Transcript
from pytest_llmeval.core.redact import MASK, Redactor
from pytest_llmeval.report.case_view import MAX_MESSAGES, TEXT_LIMIT, CaseView
from pytest_llmeval.suites.builtin import builtin_suites
from tests.conftest import read_jsonl, write_json

SECRET = "sk-plantedSECRET0123456789"
"""A token shape the redactor knows."""
ENV_SECRET = "hunter2-correct-horse-battery"
"""A literal secret, known to the redactor through ``--llmeval-secret-env``."""
LONG = 50_000

GOLDEN = [
    {"id": "weather", "input": "What is the weather in Paris?", "tools": ["get_weather"],
     "expected_output": "It is 18C and cloudy in Paris."},
    {"id": "secret", "input": f"my key is {SECRET} and {ENV_SECRET}", "keywords": ["key"],
     "min_scores": {"contains_keywords": 1.0}},
    {"id": "long", "input": "alpha " + "x" * LONG, "keywords": ["alpha"],
     "min_scores": {"contains_keywords": 1.0}},
    {"id": "missed", "input": "hello", "expected_output": "Goodbye"},
]  # fmt: skip
"""The scripted model answers the weather through the tool, echoes nothing else: ``hello``
gets ``Hello there!``, anything else its own text."""

TOOLFORGE = {
    "metadata": {"toolName": "get_weather"},
    "cases": [
        {
            "id": "tf-stub",
            "input": {"message": "What's the weather?"},
            "stubs": {"get_weather": {"temp_c": 21, "conditions": "sunny"}},
            "expect": {"toolsCalled": ["get_weather"], "responseContains": ["21C"]},
        }
    ],
}


def _write_cases(pytester: pytest.Pytester) -> None:
    write_json(pytester, "evals/qa.golden.json", GOLDEN)
    write_json(pytester, "evals/get_weather.golden.json", TOOLFORGE)
    city = {"type": "object", "properties": {"city": {"type": "string"}}}
    registry = {"tools": [{"name": "get_weather", "description": "Weather", "parameters": city}]}
    write_json(pytester, "tools.json", registry)


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    _write_cases(pytester)
    result = pytester.runpytest(
        "--llmeval-runner", "scripted", "--llmeval-tool-registry", "tools.json",
        "--llmeval-secret-env", "PLANTED_SECRET", "--llmeval-run-dir", "run",
        "--junitxml", "junit.xml", *args,
    )  # fmt: skip
    rows = {r["case_id"]: r for r in read_jsonl(pytester.path / "run/results.jsonl")}
    return result, rows


@pytest.fixture
def run(
    scripted: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> tuple[pytest.Pytester, pytest.RunResult, dict[str, Any]]:
    monkeypatch.setenv("PLANTED_SECRET", ENV_SECRET)
    result, rows = _run(scripted)
    return scripted, result, rows


def test_golden_case_with_tool_calls_keeps_its_conversation(
    run: tuple[pytest.Pytester, pytest.RunResult, dict[str, Any]],
) -> None:
    _, result, rows = run
    result.assert_outcomes(passed=4, failed=1)
    row = rows["weather"]
    assert row["input"] == [{"role": "user", "content": "What is the weather in Paris?"}]
    assert row["expected"] == {
        "expected_output": "It is 18C and cloudy in Paris.",
        "metrics": ["exact_match"],
        "thresholds": {"exact_match": 1.0},
    }
    call, answer, final = row["transcript"]
    assert call["role"] == "assistant" and "content" not in call
    (asked,) = call["tool_calls"]
    assert (asked["name"], asked["arguments"]) == ("get_weather", {"city": "Paris"})
    assert answer["role"] == "tool" and answer["name"] == "get_weather"
    assert json.loads(answer["content"]) == {"conditions": "cloudy", "temp_c": 18}  # the fixture
    assert answer.get("tool_call_id") == asked.get("id")
    assert final == {"role": "assistant", "content": "It is 18C and cloudy in Paris."}

    missed = rows["missed"]  # a failure reads from the row alone
    assert missed["outcome"] == "failed"
    assert missed["expected"]["expected_output"] == "Goodbye"
    assert missed["transcript"] == [{"role": "assistant", "content": "Hello there!"}]


def test_toolforge_case_keeps_its_assertions_and_the_stub_result(
    run: tuple[pytest.Pytester, pytest.RunResult, dict[str, Any]],
) -> None:
    _, _, rows = run
    row = rows["tf-stub"]
    assert row["input"] == [{"role": "user", "content": "What's the weather?"}]
    assert row["expected"] == {"toolsCalled": ["get_weather"], "responseContains": ["21C"]}
    roles = [m["role"] for m in row["transcript"]]
    assert roles == ["assistant", "tool", "assistant"]
    assert json.loads(row["transcript"][1]["content"]) == {"temp_c": 21, "conditions": "sunny"}
    assert row["transcript"][2]["content"] == "It is 21C and sunny in Paris."


def test_secrets_are_masked_and_long_texts_clipped(
    run: tuple[pytest.Pytester, pytest.RunResult, dict[str, Any]],
) -> None:
    pytester, _, rows = run
    text = (pytester.path / "run/results.jsonl").read_text(encoding="utf-8")
    assert SECRET not in text and ENV_SECRET not in text
    assert rows["secret"]["input"][0]["content"] == f"my key is {MASK} and {MASK}"
    assert rows["secret"]["transcript"][0]["content"] == f"my key is {MASK} and {MASK}"

    (said,) = rows["long"]["input"]
    (answer,) = rows["long"]["transcript"]
    for message in (said, answer):
        assert len(message["content"]) == TEXT_LIMIT + len(marker(LONG + 6))
        assert message["content"].endswith(marker(LONG + 6))
    # junit keeps small scalar properties: no transcript, no blob
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert "x" * 1000 not in junit and "transcript" not in junit
    assert SECRET not in junit and ENV_SECRET not in junit


def test_html_case_detail_has_the_new_fields(
    run: tuple[pytest.Pytester, pytest.RunResult, dict[str, Any]],
) -> None:
    pytester, _, _ = run
    page = (pytester.path / "run/report.html").read_text(encoding="utf-8")
    assert SECRET not in page and ENV_SECRET not in page
    start = page.index('<script type="application/json" id="llmeval-data">')
    block = page[start:].split(">", 1)[1].split("</script>", 1)[0]
    data = json.loads(block)
    cases = {c["id"]: c for c in data["cases"]}
    weather = cases["weather"]
    assert weather["input"] == [{"role": "user", "content": "What is the weather in Paris?"}]
    assert json.loads(weather["expected"])["expected_output"] == "It is 18C and cloudy in Paris."
    # the final answer is the page's "Final response", not repeated in the transcript
    assert [m["role"] for m in weather["transcript"]] == ["assistant", "tool"]
    assert weather["transcript"][0]["calls"][0]["name"] == "get_weather"
    assert weather["response"] == "It is 18C and cloudy in Paris."
    long_answer = cases["long"]["transcript"][0]["content"]
    if isinstance(long_answer, int):  # a long text met twice is stored once, in "strings"
        long_answer = data["strings"][long_answer]
    assert long_answer.endswith(marker(LONG + 6))  # the full length, not the first cut's


def test_xdist_and_shards_keep_the_fields(
    scripted: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    monkeypatch.setenv("PLANTED_SECRET", ENV_SECRET)
    _, serial = _run(scripted)
    _, parallel = _run(scripted, "-n", "2")
    for case_id, row in serial.items():
        other = parallel[case_id]
        for key in ("input", "expected", "transcript"):
            assert other[key] == row[key], (case_id, key)
    assert all(r["transcript"] for r in parallel.values())

    for index in (0, 1):
        scripted.runpytest(
            "--llmeval-runner", "scripted", "--llmeval-tool-registry", "tools.json",
            "--llmeval-secret-env", "PLANTED_SECRET", "--llmeval-shard", f"{index}/2",
            "--llmeval-run-dir", f"shard{index}",
        )  # fmt: skip
    merged = scripted.run(
        sys.executable, "-m", "pytest_llmeval", "merge", "merged", "shard0", "shard1"
    )
    merged.stdout.fnmatch_lines(["*2 shard(s), 5 case(s) -> merged*exit 1"])  # "missed" failed
    rows = {r["case_id"]: r for r in read_jsonl(scripted.path / "merged/results.jsonl")}
    for case_id, row in serial.items():
        for key in ("input", "expected", "transcript"):
            assert rows[case_id][key] == row[key], (case_id, key)


# -- unit: the shapes ---------------------------------------------------------------------------


def _view(tmp_path: Path) -> CaseView:
    return CaseView(builtin_suites(), Redactor())


def _case(**fields: Any) -> EvalCase:
    base: dict[str, Any] = {"case_id": "c", "suite": "golden", "file": "f.json", "line": 1}
    return EvalCase(**(base | fields))


def test_a_long_conversation_keeps_its_ends_around_a_count(tmp_path: Path) -> None:
    messages = [Message(role="user", content="q")] + [
        Message(role="assistant" if i % 2 else "tool", content=str(i)) for i in range(100)
    ]
    case = _case(messages=messages[:1])
    shown = _view(tmp_path).shown_transcript(case, Transcript(messages=messages))
    assert shown is not None and len(shown) == MAX_MESSAGES + 1
    half = MAX_MESSAGES // 2
    assert shown[half] == {"omitted": 100 - MAX_MESSAGES}
    assert shown[0]["content"] == "0" and shown[-1]["content"] == "99"


def test_a_conversation_not_starting_from_the_input_is_kept_whole(tmp_path: Path) -> None:
    case = _case(messages=[Message(role="user", content="q")])
    rewritten = [Message(role="system", content="be brief"), Message(role="user", content="q"),
                 Message(role="assistant", content="a")]  # fmt: skip
    shown = _view(tmp_path).shown_transcript(case, Transcript(messages=rewritten))
    assert [m["role"] for m in shown or []] == ["system", "user", "assistant"]
    assert _view(tmp_path).shown_transcript(case, Transcript(messages=rewritten[1:2])) is None


def test_a_secret_across_the_cut_is_masked_not_halved(tmp_path: Path) -> None:
    text = "y" * (TEXT_LIMIT - 6) + " " + SECRET + " " + "z" * 10
    shown = _view(tmp_path)._text(text)
    assert SECRET[:5] not in shown and shown.endswith(marker(len(text) - len(SECRET) + len(MASK)))


def test_long_arguments_and_expectations_become_clipped_redacted_json(tmp_path: Path) -> None:
    call = ToolCall(name="t", arguments={"api_key": "plain-value", "blob": "b" * TEXT_LIMIT})
    case = _case(
        messages=[Message(role="user", content="q")],
        expect={"expected_output": "", "keywords": [], "big": list(range(5000)), "flag": False},
    )
    view = _view(tmp_path)
    shown = view._call(call)["arguments"]
    assert isinstance(shown, str) and shown.startswith('{"api_key": "[REDACTED]"')
    assert shown.endswith(" characters in all]")
    expected = view.shown_expected(case)
    assert expected is not None and set(expected) == {"big", "flag"}  # empties left out
    assert isinstance(expected["big"], str) and expected["flag"] is False
    assert view.shown_expected(_case()) is None


def test_a_choice_case_shows_its_context_and_options(tmp_path: Path) -> None:
    from pytest_llmeval.core.models import ChoiceTask

    case = _case(
        suite="when2call",
        messages=[Message(role="user", content="q")],
        choices=ChoiceTask(context="Q: q\nA:", continuations=[" a", " b"]),
        expect={"label": "direct"},
    )
    view = _view(tmp_path)
    assert view.shown_input(case) == [
        {"role": "user", "content": "q"},
        {"role": "context", "content": "Q: q\nA:"},
        {"role": "option", "content": " a"},
        {"role": "option", "content": " b"},
    ]
    assert view.shown_expected(case) == {"label": "direct"}


def test_results_written_before_the_fields_still_read() -> None:
    from pytest_llmeval.core.models import CaseResult

    old = {"case_id": "c", "suite": "golden", "file": "f", "line": 1, "nodeid": "f::c",
           "outcome": "passed", "passed": True}  # fmt: skip
    result = CaseResult.kept(old)
    assert (result.input, result.expected, result.transcript) == (None, None, None)


def test_kept_results_share_what_repeats_and_tell_values_apart() -> None:
    from pytest_llmeval.core.models import CaseResult, Packed, unpack

    def row(i: int, threshold: Any) -> dict[str, Any]:
        answer = f"answer {i}"
        return json.loads(json.dumps({
            "case_id": f"c{i}", "suite": "golden", "file": "f", "line": i, "nodeid": f"f::c{i}",
            "outcome": "passed", "passed": True, "response": answer,
            "expected": {"expected_output": answer, "metrics": ["exact_match"],
                         "thresholds": {"exact_match": threshold}},
            "transcript": [{"role": "assistant", "content": answer}],
        }))  # fmt: skip

    first, second, other = (CaseResult.kept(row(i, t)) for i, t in ((1, 1.0), (2, 1.0), (3, 1)))
    assert isinstance(first.transcript, Packed) and isinstance(first.expected, Packed)
    assert unpack(first.transcript) == [{"role": "assistant", "content": "answer 1"}]
    same = CaseResult.kept(row(1, 1.0))
    assert same.expected is first.expected and same.transcript is first.transcript  # held once
    assert unpack(other.expected)["thresholds"] == {"exact_match": 1}
    assert json.dumps(unpack(other.expected)["thresholds"]) == '{"exact_match": 1}'  # not 1.0
    assert json.dumps(unpack(second.expected)["thresholds"]) == '{"exact_match": 1.0}'
    assert other.model_dump(mode="json")["expected"]["thresholds"] == {"exact_match": 1}
    assert first.model_dump() == CaseResult.model_validate(row(1, 1.0)).model_dump()


def test_kept_results_share_equal_scores_and_empty_fields_but_never_alike_values() -> None:
    """Most results of a session score alike and call no tool: their scores are one dict and
    their empty details and tool calls one each; ``0.0`` and ``-0.0`` (equal as numbers) and
    other scores stay apart, and every dump reads as it did."""
    from pytest_llmeval.core.models import CaseResult

    def row(i: int, score: Any) -> dict[str, Any]:
        return {"case_id": f"c{i}", "suite": "golden", "file": "f", "line": i,
                "nodeid": f"f::c{i}", "outcome": "passed", "passed": True,
                "scores": {"exact_match": score}}  # fmt: skip

    scores = [1.0, 1.0, 0.0, -0.0, 0.5]
    kept = [CaseResult.kept(json.loads(json.dumps(row(i, s)))) for i, s in enumerate(scores)]
    assert kept[0].scores is kept[1].scores
    assert kept[0].details is kept[4].details and kept[0].tool_calls is kept[4].tool_calls
    assert len({id(k.scores) for k in kept[1:]}) == 4  # 1.0, 0.0, -0.0, 0.5: apart
    for i, (result, score) in enumerate(zip(kept, scores, strict=True)):
        dumped = result.model_dump(mode="json")
        assert json.dumps(dumped["scores"]) == json.dumps({"exact_match": score}), i
        assert dumped["details"] == {} and dumped["tool_calls"] == []


def test_an_error_row_keeps_its_input_and_expectation(pytester: pytest.Pytester) -> None:
    """A case the backend could not answer is an error; its row still says what was asked and
    what was expected, so the report alone explains it."""
    pytester.makeconftest(
        "from pytest_llmeval.testing.scripted import ScriptedModel\n\n"
        "def pytest_llmeval_register_runners(registry):\n"
        "    registry.register('failing', lambda s: ScriptedModel(fail_with='boom'))\n"
    )
    write_json(pytester, "qa.golden.json", [{"id": "e", "input": "boom", "expected_output": "x"}])
    result = pytester.runpytest("--llmeval-runner", "failing", "--llmeval-run-dir", "run")
    result.assert_outcomes(errors=1)
    (row,) = read_jsonl(pytester.path / "run/results.jsonl")
    assert row["outcome"] == "error"
    assert row["input"] == [{"role": "user", "content": "boom"}]
    assert row["expected"]["expected_output"] == "x"


def test_a_long_answer_is_kept_clipped_with_its_full_length(pytester: pytest.Pytester) -> None:
    """results.jsonl keeps a model's answer up to RESPONSE_CHARS, then the marker;
    scoring saw the whole answer."""
    from pytest_llmeval.report.case_view import RESPONSE_CHARS
    from tests.conftest import answering_runner

    pytester.makeconftest(answering_runner("long", 'text == "long"', '"y" * 150_000 + "END"'))
    write_json(pytester, "qa.golden.json", [
        {"id": "long", "input": "long", "keywords": ["END"],
         "min_scores": {"contains_keywords": 1.0}},
    ])  # fmt: skip
    result = pytester.runpytest("--llmeval-runner", "long", "--llmeval-run-dir", "run")
    result.assert_outcomes(passed=1)  # the keyword at the very end was found
    (row,) = read_jsonl(pytester.path / "run/results.jsonl")
    assert row["response"] == "y" * RESPONSE_CHARS + marker(150_003)


def test_shared_score_dicts_refuse_changes_and_stay_apart_from_their_maker() -> None:
    """A held score dict is many results' at once: changing it through one raises (naming the
    copy to change instead), a copy is a plain dict of its own, and the dict a result was
    made with stays its maker's (the item's result is still changed nowhere else)."""
    import copy
    import math
    import pickle

    from pytest_llmeval.core.models import CaseResult
    from pytest_llmeval.core.packed import READ_ONLY

    row = {"case_id": "c", "suite": "golden", "file": "f", "line": 1, "nodeid": "f::c",
           "outcome": "passed", "passed": True, "scores": {"exact_match": 0.318309886}}  # fmt: skip
    made = CaseResult.model_validate(row)
    held = CaseResult.kept_as(made, made.model_dump(mode="json"))
    made.scores["exact_match"] = 0.0  # the maker's own dict: no held result sees it
    assert CaseResult.kept(row).scores == {"exact_match": 0.318309886}
    assert CaseResult.kept(row).scores is held.scores
    changes = [
        lambda: held.scores.update(extra=1.0),
        lambda: held.scores.__setitem__("exact_match", 2.0),
        lambda: held.scores.pop("exact_match"),
        lambda: held.details.setdefault("rank", 1),
        lambda: held.tool_calls.append({"name": "x"}),
        lambda: held.tool_calls.extend([1]),
    ]
    for change in changes:
        with pytest.raises(TypeError, match="read-only; change a copy"):
            change()
    assert READ_ONLY.startswith("llmeval: ")
    assert held.scores == {"exact_match": 0.318309886} and not held.details and not held.tool_calls
    for other in (held.model_copy(deep=True), pickle.loads(pickle.dumps(held))):
        other.scores["exact_match"] = 0.5
        other.details["rank"] = 1
        other.tool_calls.append(None)
        assert type(other.scores) is dict and type(other.tool_calls) is list
    assert type(copy.copy(held.scores)) is dict and type(dict(held.scores)) is dict
    assert held.scores == {"exact_match": 0.318309886} and not held.details and not held.tool_calls
    odd = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "neg": -0.0, "big": 1e308}
    for _ in range(2):
        kept = CaseResult.kept({**row, "scores": odd})
        assert json.dumps(kept.model_dump()["scores"]) == json.dumps(odd)
