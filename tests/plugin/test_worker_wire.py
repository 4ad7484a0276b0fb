"""The xdist boundary's typed values (plugin/worker_wire.py)."""

from __future__ import annotations

from types import SimpleNamespace

from pytest_llmeval.plugin import worker_wire as wire


def test_a_spoiled_field_of_a_workers_output_costs_only_that_field() -> None:
    node = SimpleNamespace(
        workeroutput={
            "llmeval": {
                "refusal": "resume refused: another runner",
                "datasets": "not a mapping",
                "deselected": {"golden": 2},
            }
        }
    )
    output = wire.node_output(node)
    assert output is not None
    assert output.refusal == "resume refused: another runner"
    assert output.deselected == {"golden": 2}
    assert output.datasets == {}


def test_a_worker_that_said_nothing_gives_nothing() -> None:
    assert wire.node_output(SimpleNamespace(workeroutput={})) is None
    assert wire.node_output(SimpleNamespace(workeroutput={"llmeval": ["x"]})) is None
    assert wire.node_output(SimpleNamespace()) is None


def test_report_facts_travel_as_one_plain_mapping() -> None:
    report = SimpleNamespace()
    wire.add_facts(report, {"in_flight": 3})
    wire.add_facts(report, {"refusal": "why"})
    assert report.llmeval == {"in_flight": 3, "refusal": "why"}
    assert wire.facts(report) == {"in_flight": 3, "refusal": "why"}
    assert wire.facts(SimpleNamespace()) == {}


def test_reports_with_equal_facts_share_them_and_never_change_each_others() -> None:
    """pytest keeps every report: equal in-flight counts are one dict, never written into."""
    first, second, third = SimpleNamespace(), SimpleNamespace(), SimpleNamespace()
    wire.add_facts(first, {"in_flight": 3})
    wire.add_facts(second, {"in_flight": 3})
    assert first.llmeval is second.llmeval
    wire.add_facts(second, {"refusal": "why"})
    wire.add_facts(third, {"in_flight": 3})
    wire.add_facts(third, {"in_flight": 4})
    assert wire.facts(first) == {"in_flight": 3}
    assert wire.facts(second) == {"in_flight": 3, "refusal": "why"}
    assert wire.facts(third) == {"in_flight": 4}
