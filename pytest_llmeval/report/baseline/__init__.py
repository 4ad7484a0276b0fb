"""Baselines: a previous run's report and per-case outcomes, and the diff of this run against it.

The feature is three modules, one job each:

* :mod:`~pytest_llmeval.report.baseline.file`: the baseline file format (reading a run dir or
  a baseline file, writing one, the :class:`~pytest_llmeval.report.baseline.file.BaselineCase`
  every side of the diff is made of);
* :mod:`~pytest_llmeval.report.baseline.diff`: the diff with its statistics (alignment,
  flips, McNemar, metric and gate deltas);
* :mod:`~pytest_llmeval.report.baseline.render`: its text (the terminal lines, the Markdown
  section of ``summary.md`` and of pull-request comments).

The models the diff writes into ``report.json`` are in :mod:`pytest_llmeval.rundir.baseline_diff`.

Cases are aligned by node id, else by ``(file, case_id)`` when exactly one unmatched case on
each side has that pair (a renamed manifest keeps its cases). The comparison is case by case:

* an aligned pair with the same case fingerprint is *unchanged* and compared. Outcomes are
  *pass* (``passed``) or *not pass* (``failed`` or ``error``: an error is not a pass, so
  ``passed -> error`` is a regression and ``error -> passed`` an improvement). A case
  ``skipped`` in exactly one of the two runs is listed under ``skipped`` and is no flip;
  skipped in both, it is not listed. Only the flips enter the McNemar test and the
  ``regressed`` verdict;
* an aligned pair whose case fingerprints differ (both known) is ``changed``: the case itself
  was edited, so its outcome is not compared; a case on one side only is ``new`` (added) or
  ``removed``. These are listed apart (``case_changes``), never counted as regressions, and
  never make the run incomparable: adding or editing a case needs no new baseline.

Only what judges every case makes the whole run incomparable
(:data:`~pytest_llmeval.report.baseline.diff.FINGERPRINT_KEYS`): the runner (the report's
``runner_fingerprint``, and each unchanged case's own), and the scorers, which ship with the
plugin (``plugin_version``). Then the diff is refused unless
``--llmeval-baseline-allow-mismatch``. A changed data file (``dataset_sha256``), tool registry
or fixtures is listed under ``case_changes.data_changes``.

Dataset-level metrics: ``metric_deltas`` compares the two reports whole, as they are (added and
edited cases count there); ``unchanged_metric_deltas`` recomputes the pass rate and mean scores
over the unchanged cases judged in both runs, so a changed data set still compares like with
like.
"""
