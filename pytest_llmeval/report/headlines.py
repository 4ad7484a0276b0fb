"""Each suite's headline numbers: the few figures a reader looks for first in a run.

One small table, read from a ``report.json`` through the suites' typed section models, for
every place that shows a run at a glance (``runs``, ``compare``, a page header):

======================  ==========================================================
suite                   headlines
======================  ==========================================================
golden                  pass rate (Wilson 95%); with repeats pass@K and pass^K
toolforge               pass rate (Wilson 95%)
when2call               acc, acc_norm (±1.96 stderr), macro-F1 (3 and 4 labels),
                        tool hallucination rate
integration             lax F1, strict F1 (macro), integration coverage
gaia                    accuracy (Wilson 95%), then per level
any other suite         pass rate (Wilson 95%)
======================  ==========================================================

A section that does not fit its suite's model (a report of an older plugin) falls back to the
pass rate, which every section has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_llmeval.core.repeats import Z95, wilson
from pytest_llmeval.rundir.models import Accuracy, Report, SuiteSection
from pytest_llmeval.suites.gaia import GaiaSection
from pytest_llmeval.suites.golden import GoldenSection
from pytest_llmeval.suites.integration_metrics import IntegrationSection
from pytest_llmeval.suites.toolforge import ToolForgeSection
from pytest_llmeval.suites.when2call_metrics import When2CallSection

__all__ = ["Headline", "format_headline", "format_value", "headlines", "suite_headlines"]

Interval = Literal["wilson", "stderr"]


class Headline(BaseModel):
    """One headline number of one suite."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: str
    """The suite's name (``report.json`` ``suites.<name>``)."""
    label: str
    """What a reader sees: ``pass rate``, ``acc_norm``, ``lax F1`` ..."""
    metric: str
    """Where it is in the suite's section (a gate's metric path: ``acc_norm``,
    ``lax.macro_f1``, ``levels.level1.accuracy``)."""
    value: float | None
    """The number, a share in [0, 1]; ``None`` when there was nothing to measure."""
    low: float | None = None
    """The lower end of its 95% interval, when the suite has one."""
    high: float | None = None
    """The upper end of its 95% interval."""
    interval: Interval | None = None
    """How the interval was made: ``wilson`` (the Wilson score interval of passes out of
    judged cases) or ``stderr`` (value ± 1.96 standard errors, clipped to [0, 1])."""
    n: int | None = None
    """How many cases (or questions) the number is over, when it is a share of them."""


def headlines(report: Report) -> dict[str, list[Headline]]:
    """Every suite's headline numbers, by suite name (as the report orders them)."""
    return {name: suite_headlines(name, section) for name, section in report.suites.items()}


def suite_headlines(name: str, section: SuiteSection) -> list[Headline]:
    """The headline numbers of one suite's section."""
    reader = _READERS.get(name)
    if reader is not None:
        model, read = reader
        try:
            typed = model.model_validate(section.model_dump(mode="json"))
        except ValidationError:
            pass  # written by another version of the suite: its pass rate still reads
        else:
            return read(name, typed)
    return [_pass_rate(name, section)]


def format_value(value: float | None) -> str:
    """A share as a percentage with one decimal (``45.8%``); ``n/a`` for none."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def format_headline(headline: Headline, *, label: bool = True) -> str:
    """``acc_norm 45.8% [25.5-66.2]``: the label (unless ``label`` is false), the value and
    its interval."""
    text = format_value(headline.value)
    if headline.low is not None and headline.high is not None:
        text += f" [{headline.low * 100:.1f}-{headline.high * 100:.1f}]"
    return f"{headline.label} {text}" if label else text


# -- per suite ---------------------------------------------------------------------------------


def _pass_rate(suite: str, section: SuiteSection) -> Headline:
    judged = section.total - section.skipped
    low, high = wilson(section.passed, judged)
    return Headline(
        suite=suite,
        label="pass rate",
        metric="pass_rate",
        value=section.pass_rate,
        low=low,
        high=high,
        interval="wilson" if low is not None else None,
        n=judged,
    )


def _golden(suite: str, section: SuiteSection) -> list[Headline]:
    out = [_pass_rate(suite, section)]
    extra = section.model_extra or {}
    at_k, hat_k = extra.get("pass_at_k"), extra.get("pass_hat_k")
    if isinstance(at_k, Mapping) and isinstance(hat_k, Mapping) and at_k:
        k = max(at_k, key=lambda key: int(key))
        out.append(_share(suite, f"pass@{k}", f"pass_at_k.{k}", at_k.get(k)))
        out.append(_share(suite, f"pass^{k}", f"pass_hat_k.{k}", hat_k.get(k)))
    return out


def _toolforge(suite: str, section: SuiteSection) -> list[Headline]:
    return [_pass_rate(suite, section)]


def _when2call(suite: str, section: SuiteSection) -> list[Headline]:
    assert isinstance(section, When2CallSection)
    return [
        _with_stderr(suite, "acc", section.acc, section.acc_stderr, section.n),
        _with_stderr(suite, "acc_norm", section.acc_norm, section.acc_norm_stderr, section.n),
        _share(suite, "macro-F1 (3)", "macro_f1_3", section.macro_f1_3, section.n),
        _share(suite, "macro-F1 (4)", "macro_f1_4", section.macro_f1_4, section.n),
        _share(
            suite,
            "tool hallucination",
            "tool_hallucination_rate",
            section.tool_hallucination_rate,
            section.tool_hallucination_n,
        ),
    ]


def _integration(suite: str, section: SuiteSection) -> list[Headline]:
    assert isinstance(section, IntegrationSection)
    return [
        _share(suite, "lax F1", "lax.macro_f1", section.lax.get("macro_f1")),
        _share(suite, "strict F1", "strict.macro_f1", section.strict.get("macro_f1")),
        _share(
            suite,
            "coverage",
            "integration_coverage",
            section.integration_coverage,
            section.eligible,
        ),
    ]


def _gaia(suite: str, section: SuiteSection) -> list[Headline]:
    assert isinstance(section, GaiaSection)
    out = [_accuracy(suite, "accuracy", "accuracy", section)]
    for level, tally in sorted(section.levels.items()):
        out.append(_accuracy(suite, level, f"levels.{level}.accuracy", tally))
    return out


def _accuracy(suite: str, label: str, metric: str, tally: Accuracy | GaiaSection) -> Headline:
    low, high = wilson(tally.correct, tally.questions)
    value = None if tally.accuracy is None else float(tally.accuracy)
    return Headline(
        suite=suite,
        label=label,
        metric=metric,
        value=value,
        low=low,
        high=high,
        interval="wilson" if low is not None else None,
        n=tally.questions,
    )


def _share(suite: str, label: str, metric: str, value: object, n: int | None = None) -> Headline:
    """A share without an interval; ``None`` (``n/a``) over no case at all, whatever a report
    of an older plugin wrote there (a macro-F1 of 0.0 over nothing)."""
    number = float(value) if isinstance(value, int | float) and n != 0 else None
    return Headline(suite=suite, label=label, metric=metric, value=number, n=n)


def _with_stderr(
    suite: str, label: str, value: float | None, stderr: float | None, n: int
) -> Headline:
    if value is None or stderr is None or n == 0:
        return _share(suite, label, label, value, n)
    half = Z95 * float(stderr)
    return Headline(
        suite=suite,
        label=label,
        metric=label,
        value=float(value),
        low=max(0.0, float(value) - half),
        high=min(1.0, float(value) + half),
        interval="stderr",
        n=n,
    )


_Reader = Callable[[str, SuiteSection], list[Headline]]

_READERS: dict[str, tuple[type[SuiteSection], _Reader]] = {
    "golden": (GoldenSection, _golden),
    "toolforge": (ToolForgeSection, _toolforge),
    "when2call": (When2CallSection, _when2call),
    "integration": (IntegrationSection, _integration),
    "gaia": (GaiaSection, _gaia),
}
"""The built-in suites' section models and headline readers, by suite name."""
