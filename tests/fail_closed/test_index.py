"""The fail-closed corpus: every class of "a run that ends green without being judged" and the
tests that drive it.

Each class has its entries in a topic file beside this one (``test_<topic>.py``),
written in the bad-input corpus's way: a small project run through pytest, with real faults
(signals, a killed xdist worker, two sessions on one run dir, a full tmpfs, loopback servers),
asserting the exit status, the cases in ``results.jsonl``, every gate's status and that no file
was lost or overwritten. This index keeps the corpus whole: every class names its tests, each
named test exists, and no test of a topic file is left out of the index.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

CLASSES: dict[str, tuple[str, list[str]]] = {
    "configuration errors stop the run before any case": ("verdict", [
        "test_a_configuration_error_is_one_usage_error_before_any_case",
        "test_a_resume_refused_for_its_configuration_leaves_the_run_dir_as_it_was",
        "test_under_xdist_it_is_still_one_usage_error",
        "test_an_own_agent_makes_the_runner_option_irrelevant",
        "test_a_conftest_runner_is_known_at_the_start",
        "test_the_issues_example_is_now_a_usage_error",
        "test_an_optional_gate_never_hides_a_typo",
        "test_gates_on_real_categories_and_scores_still_run",
    ]),
    "a manifest gate that cannot be judged stops the run before any case": ("manifest_gates", [
        "test_a_manifest_gate_that_does_not_parse_stops_the_run_before_any_case",
        "test_a_manifest_gate_no_collected_case_can_produce_stops_the_run",
        "test_an_optional_manifest_gate_keeps_its_meaning",
        "test_a_manifest_that_cannot_be_read_stays_broken_input",
        "test_summarize_and_merge_read_an_old_run_dirs_bad_manifest_gate_as_red",
        "test_an_empty_gates_list_decides_nothing_under_exit_on_gates",
    ]),
    "exit on gates needs a gate": ("verdict", [
        "test_exit_on_gates_without_any_gate_is_a_usage_error",
        "test_exit_on_gates_counts_a_manifests_and_a_suites_own_gates",
    ]),
    "a resume keeps no result of a file not collected now": ("state", [
        "test_a_resume_with_results_of_files_not_collected_now_is_refused",
    ]),
    "only a scored miss is an expected failure": ("verdict", [
        "test_a_run_where_every_case_errored_is_red",
        "test_under_exit_on_gates_a_miss_is_xfailed_an_error_is_not",
        "test_with_exit_on_gates_and_only_misses_the_gates_decide",
        "test_a_run_in_which_every_case_was_skipped_is_red",
        "test_a_run_with_one_judged_case_is_not_nothing_judged",
    ]),
    "a gate with nothing to judge is not passed": ("verdict", [
        "test_a_gate_with_nothing_to_judge_fails_unless_optional",
        "test_a_null_metric_fails_its_gate_and_optional_reads_n_a",
        "test_a_deselected_suites_gate_is_partial_and_the_run_stays_usable",
        "test_a_gate_when_no_eval_case_was_collected_is_a_usage_error",
        "test_a_gate_whose_cases_were_all_deselected_is_partial_everywhere",
        "test_a_deselected_manifests_gate_is_still_checked_at_the_start",
        "test_a_suites_own_gate_with_nothing_to_judge",
        "test_optional_is_spelled_alike_on_the_command_line_and_in_manifests",
        "test_a_manifest_gate_value_that_is_not_a_number_is_refused",
        "test_every_status_reads_as_itself_everywhere",
        "test_summary_md_and_junit_show_each_gates_status",
    ]),
    "a run cut short is partial and says so": ("interrupt", [
        "test_a_run_stopped_by_maxfail_is_partial",
        "test_maxfail_under_exit_on_gates_never_ends_green",
        "test_an_uninterrupted_run_has_no_interrupted_key",
        "test_a_signalled_run_writes_every_report_and_resume_finishes_the_rest",
        "test_sigterm_before_any_result_still_writes_every_report",
        "test_sigterm_under_xdist_writes_the_reports",
        "test_a_sigterm_that_reaches_a_worker_first_is_recorded_as_sigterm",
        "test_a_budget_stop_is_interrupted",
        "test_a_merge_of_a_cut_short_shard_is_cut_short",
        "test_a_cut_short_run_does_not_update_the_baseline",
        "test_a_signal_while_the_reports_are_written_waits_for_them",
        "test_maxfail_under_xdist_is_maxfail_and_exits_1",
        "test_cases_total_and_the_cases_left_out_add_up",
        "test_a_full_disk_is_recorded_as_the_journal_stopping",
        "test_the_resume_hint_names_the_real_run_dir_with_equals",
    ]),
    "a dropped signal stops the session wherever it lands, and only in the test loop": (
        "dropped_signal",
        [
            "test_a_dropped_sigterm_anywhere_in_a_case_stops_the_session",
            "test_a_sigterm_during_collection_still_writes_whole_reports",
            "test_a_sigterm_in_the_collection_finish_hooks_still_writes_the_record",
            "test_a_dropped_sighup_stops_the_session_as_sighup",
            "test_a_dropped_sigterm_in_the_case_x_stops_on_is_still_a_sigterm",
            "test_a_second_sigterm_after_a_dropped_one_still_writes_the_reports",
            "test_a_sigterm_an_xdist_worker_dropped_stops_the_session",
            "test_a_sigterm_the_xdist_controller_dropped_stops_the_session",
            "test_a_sigterm_the_xdist_controller_dropped_is_not_taken_for_x",
        ],
    ),
    "a crashed xdist worker loses no case": ("interrupt", [
        "test_a_killed_worker_case_is_an_error_and_resume_runs_it",
        "test_workers_given_up_on_leave_an_incomplete_run",
        "test_a_worker_killed_after_its_case_was_judged_makes_the_run_red",
    ]),
    "an agent raising SystemExit or KeyboardInterrupt errs its case, never hangs": ("interrupt", [
        "test_an_agent_raising_systemexit_or_keyboardinterrupt_is_its_cases_error",
    ]),
    "scores are finite": ("scores", [
        "test_a_judge_verdict_that_is_not_finite_is_the_cases_error",
        "test_a_nan_verdict_over_the_wire_is_repaired_once_then_an_error",
        "test_a_scorer_that_gives_nan_makes_the_case_an_error",
        "test_an_embedding_that_is_not_finite_is_the_cases_error",
        "test_a_manifest_threshold_that_is_not_finite_is_refused",
        "test_an_agent_reporting_a_latency_that_is_not_finite_is_the_cases_error",
        "test_a_positive_log_likelihood_is_the_cases_error_never_a_pick",
        "test_an_agent_reply_that_breaks_the_contract_is_the_cases_error",
    ]),
    "repeats count their errors": ("scores", [
        "test_replaying_more_repeats_than_were_recorded_is_an_error",
        "test_an_errored_repeat_is_an_error_under_xdist_too",
        "test_one_errored_or_unjudgeable_repeat_makes_the_case_an_error",
        "test_a_case_that_errors_under_repeats_is_a_baseline_regression",
    ]),
    "every judge failure is audited": ("scores", [
        "test_a_judge_backend_that_is_down_is_audited",
        "test_a_judge_backend_that_refuses_is_audited",
        "test_a_judge_that_times_out_is_audited",
        "test_a_judge_reply_nested_too_deeply_is_an_audited_judge_error",
    ]),
    "a rubric without a threshold warns once": ("verdict", [
        "test_a_rubric_without_a_threshold_warns_once_naming_the_cases",
    ]),
    "resume reuses only unchanged results": ("state", [
        "test_an_edited_case_runs_again_on_resume",
        "test_a_run_dir_of_another_dataset_is_refused",
        "test_a_run_dir_of_another_runner_is_refused",
        "test_results_judged_by_other_scorers_run_again",
        "test_a_changed_scoring_configuration_judges_the_cases_again_on_resume",
    ]),
    "a resume path must be a run dir": ("state", [
        "test_a_resume_path_that_is_not_a_run_dir_is_an_error",
        "test_a_resume_path_is_relative_to_where_pytest_started",
        "test_a_spaced_resume_that_moves_the_rootdir_is_refused",
        "test_a_spaced_path_option_that_moves_the_ini_file_is_refused",
        "test_a_spaced_run_dir_not_made_yet_is_judged_as_the_workers_will_see_it",
        "test_resuming_a_finished_run_rebuilds_its_reports_and_exits_as_it_did",
    ]),
    "one session owns a run dir": ("state", [
        "test_a_second_session_on_a_run_dir_in_use_stops_and_touches_nothing",
        "test_xdist_workers_belong_to_the_controllers_session",
        "test_under_xdist_the_controller_claims_a_new_run_dir_before_any_worker",
        "test_the_baseline_replaces_only_a_baseline",
    ]),
    "a baseline is a run of every case": ("state", [
        "test_a_subset_is_never_blessed_as_the_baseline",
        "test_a_baseline_that_judged_a_subset_is_not_compared",
    ]),
    "never write over what the plugin did not make": ("state", [
        "test_a_run_dir_that_is_a_users_folder_is_refused",
        "test_validate_sharding_never_deletes_a_run_dir_it_did_not_make",
        "test_merge_never_deletes_an_input",
    ]),
    "a run dir records how its session ended, and every reader shows it": ("recorded", [
        "test_a_worker_crash_after_judging_reads_failed_everywhere",
        "test_a_leak_found_after_the_reports_reads_failed_everywhere",
        "test_a_plain_test_failing_beside_the_evals_fails_the_run",
        "test_a_cut_short_run_records_partial_with_its_exit_status",
        "test_a_run_dir_without_a_recorded_verdict_is_judged_from_its_files",
        "test_a_merge_keeps_what_only_a_shards_session_knew",
        "test_an_empty_shard_and_a_shards_unblessed_baseline_do_not_fail_the_merge",
        "test_a_data_file_that_fails_to_collect_is_red_under_exit_on_gates",
        "test_a_status_changed_after_the_record_is_recorded_as_pytest_exits",
        "test_a_plain_test_failing_under_exit_on_gates_is_red",
        "test_a_forged_verdict_never_reads_green_and_says_so_in_one_line",
        "test_a_late_verdict_is_written_when_the_folder_takes_no_new_file",
        "test_a_writer_that_raises_after_the_run_dir_leaves_it_red",
        "test_a_merge_of_a_shard_cut_short_never_exits_0",
        "test_a_resume_keeps_a_crash_whose_judged_case_it_reuses",
        "test_a_forged_passed_record_never_shows_a_red_run_green",
        "test_a_session_that_cannot_finish_its_files_leaves_no_earlier_record",
    ]),
    "summarize and a reused run dir judge one run, and say so": ("state", [
        "test_summarize_exits_as_its_verdict_says",
        "test_a_fresh_session_in_a_used_run_dir_never_mixes_with_the_last",
    ]),
    "every data row is collected exactly once": ("inputs", [
        "test_every_row_is_collected_exactly_once",
        "test_a_gaia_row_without_an_id_never_takes_a_real_id",
        "test_a_broken_row_whose_fixture_skips_first_stays_an_error",
    ]),
    "an agent whose fingerprint cannot be read errs its cases": ("inputs", [
        "test_an_agent_whose_fingerprint_fails_errs_each_case_in_one_line",
    ]),
    "unwritable or unreadable paths give one line": ("state", [
        "test_a_run_dir_path_that_is_a_file_is_one_line",
        "test_a_read_only_run_dir_is_one_line",
        "test_a_disk_that_fills_leaves_a_journal_resume_can_finish",
        "test_a_damaged_journal_is_one_line_naming_it",
        "test_a_torn_last_journal_line_is_skipped",
    ]),
    "every count that multiplies work is bounded": ("bounds", [
        "test_a_bad_repeat_count_on_the_command_line_is_a_usage_error",
        "test_every_count_that_multiplies_work_is_bounded",
        "test_a_bad_count_in_the_ini_file_or_the_environment_is_a_usage_error",
        "test_the_largest_counts_are_accepted",
        "test_a_number_option_that_is_not_finite_or_in_range_is_a_usage_error",
        "test_a_bad_repeat_count_in_a_row_is_that_rows_error",
        "test_a_bad_turn_limit_in_a_row_is_that_rows_error",
        "test_a_bad_repeat_count_in_a_manifest_is_that_manifests_error",
        "test_a_bad_turn_limit_in_a_gaia_manifest_is_that_manifests_error",
        "test_the_timeout_covers_all_of_a_cases_repeats",
        "test_ctrl_c_stops_a_case_with_the_most_repeats",
        "test_a_case_with_many_repeats_holds_few_tasks",
    ]),
    "budgets count everything that costs": ("bounds", [
        "test_a_token_budget_counts_every_repeat",
        "test_a_token_budget_counts_the_judge_and_its_repeats",
        "test_judge_tokens_of_every_repeat_are_counted_and_priced",
        "test_under_xdist_a_budget_is_the_sessions_not_a_share",
        "test_under_xdist_the_workers_share_one_budget",
        "test_a_budget_counts_the_embedding_calls",
        "test_a_budget_counts_what_an_errored_case_spent",
        "test_the_ledger_sums_every_workers_spend_and_fails_to_a_share",
        "test_a_token_count_that_is_no_count_is_the_cases_protocol_error",
        "test_a_runner_or_embedder_giving_a_negative_count_errs_its_case",
    ]),
    "a secret anywhere in the base URL is masked; dummies are not secrets": ("inputs", [
        "test_a_key_in_the_base_url_path_is_masked_in_every_artifact",
        "test_a_placeholder_key_is_not_a_secret",
        "test_a_real_key_is_still_a_secret",
        "test_a_date_or_number_is_not_a_secret",
        "test_a_key_with_digits_and_letters_is_still_a_secret",
        "test_which_path_segments_look_like_keys",
    ]),
    "every support file goes through the one safe reader": ("inputs", [
        "test_a_support_file_every_case_needs_is_a_usage_error_at_the_start",
        "test_a_bad_tool_fixture_file_is_each_cases_error",
        "test_a_bad_cassette_is_that_cases_error_saying_what_is_wrong",
        "test_a_broken_runner_json_is_a_usage_error",
        "test_a_broken_baseline_is_refused_and_the_run_is_red",
    ]),
    "deep JSON in an option, an argument or the journal is one line": ("inputs", [
        "test_deep_json_in_an_option_is_one_usage_error",
        "test_deep_json_in_another_argument_is_only_text",
        "test_a_deep_journal_line_is_one_line_naming_it",
    ]),
    "an empty golden array and a JSON syntax error": ("inputs", [
        "test_a_golden_file_holding_an_empty_array_is_an_empty_suite",
        "test_a_file_with_a_json_syntax_error_says_where",
    ]),
    # round 2: budgets
    "a replayed model is the model asked for, and the header names it": ("budgets", [
        "test_replaying_a_model_no_recording_has_is_a_usage_error",
        "test_the_header_names_the_model_being_replayed",
        "test_a_replayed_judge_is_chosen_by_its_model_and_named",
    ]),
    "a resume counts what the run already spent": ("budgets", [
        "test_a_resume_with_the_same_token_budget_stops_at_once",
        "test_a_resume_counts_every_earlier_attempt_under_a_cost_budget",
        "test_under_xdist_a_resume_counts_what_the_run_already_spent",
    ]),
    "a budget that cannot be measured is an error, not off": ("budgets", [
        "test_a_usage_with_only_a_total_is_counted_by_a_token_budget",
        "test_a_usage_with_only_a_total_is_priced_at_the_higher_price",
        "test_a_runner_without_usage_under_a_token_budget_errs_its_first_case",
        "test_a_cost_budget_that_cannot_price_the_model_is_a_usage_error",
        "test_a_cost_budget_that_cannot_price_the_runners_model_is_a_usage_error",
        "test_a_cost_budget_that_cannot_price_the_judge_is_a_usage_error",
        "test_a_model_first_named_by_a_case_that_cannot_be_priced_errs_that_case",
    ]),
    # round 2: secrets
    "a secret-named variable includes ..._KEY, ..._PAT, ..._AUTH; harmless ones stay shown": (
        "secrets", [
            "test_a_key_named_variable_is_a_secret_in_every_file",
            "test_secret_named_variables",
            "test_harmless_variables",
            "test_harmless_values_stay_visible",
        ]),
    "an encoded echo of a secret is masked and looked for": ("secrets", [
        "test_an_encoded_echo_is_masked_in_every_file",
        "test_a_backends_escaped_error_body_is_masked",
        "test_every_encoding_is_masked_and_found",
    ]),
    "the leak check reads every file the session writes; logs are masked at the source": (
        "secrets", [
            "test_the_log_file_is_masked_at_the_source",
            "test_a_secret_in_the_log_file_fails_the_run_naming_the_file",
            "test_a_log_record_is_masked_whole",
            "test_the_leak_check_reads_every_file_pytest_and_its_plugins_write",
        ]),
    # round 2: protocol
    "every xdist distribution mode judges each case once": ("protocol", [
        "test_dist_each_is_refused_before_any_case",
        "test_dist_each_stays_for_plain_tests",
        "test_every_other_dist_mode_judges_each_case_once_as_one_process_does",
    ]),
    "reruns are repeats, not second chances": ("protocol", [
        "test_reruns_on_the_command_line_or_in_the_ini_are_refused",
        "test_reruns_stay_for_plain_tests",
        "test_a_flaky_mark_on_an_eval_case_is_that_cases_error",
        "test_the_flaky_plugin_is_refused_alike",
        "test_pytest_repeat_count_judges_each_eval_case_once",
        "test_the_order_of_the_items_changes_no_result",
        "test_pytest_randomly_changes_no_result",
        "test_a_pytest_timeout_is_the_cases_error",
    ]),
    "a crashed worker is blamed on the case whose agent was running": ("protocol", [
        "test_a_worker_killed_by_an_agent_running_ahead_blames_that_case",
    ]),
    # round 2: late
    "a hook that raises after the run dir was written leaves it red": ("late", [
        "test_a_hook_that_raises_after_the_run_dir_leaves_it_red",
    ]),
    "a blocked synchronous agent never hangs the process": ("late", [
        "test_a_blocked_synchronous_agent_never_hangs_the_process",
    ]),
    "SIGHUP is handled like SIGTERM": ("late", [
        "test_sighup_is_handled_as_sigterm",
        "test_a_signal_ignored_on_purpose_stays_ignored",
    ]),
    "runs and compare survive a folder they cannot read": ("late", [
        "test_runs_and_compare_survive_an_unreadable_folder",
    ]),
    # round 2: marks
    "a user's xfail mark never hides an error": ("marks", [
        "test_a_users_xfail_never_hides_an_error",
        "test_an_xfail_a_fixture_applies_never_hides_a_scoring_error",
    ]),
    "a skipped eval case is a case left out": ("marks", [
        "test_a_skipped_case_leaves_its_gates_partial_and_the_run_red",
        "test_a_skip_under_xdist_is_the_same",
        "test_a_run_with_a_skipped_case_is_never_blessed_as_the_baseline",
        "test_a_resume_runs_the_skipped_cases_again",
        "test_a_deselection_stays_partial_and_green",
    ]),
    "setup-only sessions write no run": ("marks", [
        "test_a_session_that_runs_no_test_writes_no_run",
    ]),
    # round 2: files
    "merge and validate-sharding delete only what they wrote": ("files", [
        "test_merging_again_keeps_the_users_files_in_the_output",
        "test_merge_refuses_a_users_file_where_it_writes_and_touches_nothing",
        "test_validate_sharding_keeps_the_users_files_in_the_run_dirs_it_replaces",
    ]),
    "every data file keeps its own per-file artifact": ("files", [
        "test_two_toolforge_files_of_one_name_keep_an_artifact_each",
        "test_when2call_files_whose_escaped_paths_meet_keep_an_artifact_each",
        "test_a_registered_suite_that_names_artifacts_by_file_name_keeps_one_each",
    ]),
    "the data hash is of the bytes judged": ("files", [
        "test_a_data_file_edited_during_the_run_records_the_bytes_judged",
        "test_workers_that_collected_different_bytes_are_noted",
    ]),
    # round 2: hostile review
    "an eval case's teardown error is red in every mode": ("hostile2", [
        "test_an_eval_cases_teardown_error_is_red_in_every_mode",
    ]),
    "an agent's pytest.xfail() is a case left out, with its reason": ("hostile2", [
        "test_an_agents_xfail_is_a_case_left_out_with_its_reason",
    ]),
    "a skip fails a baseline comparison as it fails a gate": ("hostile2", [
        "test_a_skipped_case_fails_a_baseline_comparison",
    ]),
    "a secret with every character encoded is masked and found": ("hostile2", [
        "test_a_secret_with_every_character_encoded_is_masked_and_found",
    ]),
    "a flaky mark added after collection is refused": ("hostile2", [
        "test_a_flaky_mark_added_as_the_case_starts_is_refused",
    ]),
    # round 2: first_hour
    "a bare pytest after init never aborts the user's own tests": ("first_hour", [
        "test_bare_pytest_after_init_runs_the_users_tests_and_names_pytest_evals",
        "test_the_folders_keys_in_the_roots_configuration_take_it_in",
        "test_a_session_started_in_the_eval_folder_is_unchanged",
    ]),
    "a replay miss names the exact command that records it": ("first_hour", [
        "test_a_replay_miss_names_the_command_that_records_it",
    ]),
    "a gate on a metric the protocol never produces stops the run at the start": ("first_hour", [
        "test_a_gate_on_a_metric_the_protocol_does_not_produce_stops_at_the_start",
    ]),
    # round 2: hostile review 2
    "a well-known dummy password is not a secret": ("hostile3", [
        "test_a_well_known_dummy_password_is_not_a_secret",
    ]),
    "an absurd token count is the case's error, as a negative one is": ("hostile3", [
        "test_an_absurd_token_count_is_the_cases_error",
    ]),
    "per-file artifacts whose names differ only in case keep one each": ("hostile3", [
        "test_artifacts_whose_names_differ_only_in_case_keep_one_each",
    ]),
    "what a test prints is masked before any report shows it": ("hostile3", [
        "test_what_a_test_prints_is_masked_in_every_report",
    ]),
}  # fmt: skip

TOPICS = sorted({topic for topic, _ in CLASSES.values()})


def _module(topic: str) -> ModuleType:
    return importlib.import_module(f"tests.fail_closed.test_{topic}")


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_class_names_tests_that_exist(name: str) -> None:
    topic, tests = CLASSES[name]
    module = _module(topic)
    assert tests, f"{name}: no test drives it"
    missing = [test for test in tests if not callable(getattr(module, test, None))]
    assert not missing, f"{name}: not in tests/fail_closed/test_{topic}.py: {missing}"


@pytest.mark.parametrize("topic", TOPICS)
def test_every_test_of_a_topic_file_is_in_the_index(topic: str) -> None:
    indexed = {test for t, tests in CLASSES.values() if t == topic for test in tests}
    defined = {name for name in vars(_module(topic)) if name.startswith("test_")}
    assert defined == indexed
