"""Logging a run dir to MLflow: params, tags, metrics and artifacts in a local file store."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from pytest_llmeval.core.redact import MASK
from pytest_llmeval.report.mlflow_log import (
    INSTALL_HINT,
    TRUNCATED,
    MlflowLogError,
    log_run,
    main,
    report_metrics,
    settings_params,
)
from tests.conftest import write_json

if importlib.util.find_spec("mlflow") is None:
    pytest.skip("needs the mlflow extra: pip install -e '.[mlflow]'", allow_module_level=True)

SECRET = "s3cr3t-VALUE-4242"
CASES = [
    {"id": "w", "category": "weather", "input": "weather in Paris?",
     "expected_output": "It is 18C and cloudy in Paris."},
    {"id": "h", "category": "chit/chat", "input": "hello", "expected_output": "Hello there!"},
    {"id": "x", "category": "chit/chat", "input": "hello again", "expected_output": "Bye"},
]  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def mlflow(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """MLflow, imported with its telemetry off (decided once, at import), and warmed up.

    Pytester drops the modules a test imports once it has started; MLflow imports lots
    lazily and does not survive a second import in one process. So everything a log uses is
    imported here, before any test's pytester takes its snapshot.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        patch.setenv("DO_NOT_TRACK", "true")
        patch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        mlflow = pytest.importorskip("mlflow")
        for name in ("entities", "exceptions", "tracking", "utils.validation"):
            importlib.import_module(f"mlflow.{name}")

        root = tmp_path_factory.mktemp("warmup")
        (root / "a.txt").write_text("a")
        client = mlflow.tracking.MlflowClient(tracking_uri=(root / "mlruns").as_uri())
        run_id = client.create_run(client.create_experiment("warmup")).info.run_id
        client.log_batch(
            run_id,
            metrics=[mlflow.entities.Metric("m", 1.0, 0, 0)],
            params=[mlflow.entities.Param("p", "1")],
        )
        client.log_artifacts(run_id, str(root / "a.txt"))
        client.set_terminated(run_id)
        client.get_run(run_id)
        client.list_artifacts(run_id)
    return mlflow


@pytest.fixture
def store(tmp_path: Path, mlflow: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    """A local file store's tracking URI and a client that reads it back."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # for the client reading it back
    uri = (tmp_path / "mlruns").as_uri()
    return uri, mlflow.tracking.MlflowClient(tracking_uri=uri)


def _git(path: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def _run_dir(pytester: pytest.Pytester, *args: str, runner: str = "scripted") -> Path:
    write_json(pytester, "qa.golden.json", CASES)
    pytester.runpytest("--llmeval-runner", runner, "--llmeval-run-dir", "run", *args)
    run_dir = pytester.path / "run"
    assert (run_dir / "manifest.json").is_file()
    return run_dir


def _artifact_dir(client: Any, run_id: str) -> Path:
    return Path(urlsplit(client.get_run(run_id).info.artifact_uri).path)


def test_a_run_dir_is_logged_as_params_tags_metrics_and_artifacts(
    scripted: pytest.Pytester, store: tuple[str, Any]
) -> None:
    uri, client = store
    commit = None
    if shutil.which("git"):
        _git(scripted.path, "init", "-q")
        _git(scripted.path, "add", "-A")
        _git(scripted.path, "commit", "-q", "-m", "cases")
        commit = _git(scripted.path, "rev-parse", "HEAD")
    long_note = "n" * 7000
    run_dir = _run_dir(
        scripted,
        "--llmeval-gate", "golden.pass_rate>=0.5", "--llmeval-gate", "*.failed==0",
        "--llmeval-extra-body", json.dumps({"top_k": 1, "note": long_note}),
    )  # fmt: skip
    report = json.loads((run_dir / "report.json").read_text())

    run_id = log_run(run_dir, uri, "evals")
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "run"
    assert client.get_experiment(run.info.experiment_id).name == "evals"

    params = run.data.params
    assert params["runner"] == "scripted"
    assert params["max_turns"] == "5"
    assert params["extra_body.top_k"] == "1"  # nested settings are flattened
    assert json.loads(params["gate"]) == ["golden.pass_rate>=0.5", "*.failed==0"]
    assert params["snapshot"] == "null"
    note = params["extra_body.note"]
    assert note.endswith(TRUNCATED) and len(note) < len(long_note)

    tags = run.data.tags
    assert tags["llmeval.run_id"] == "run"
    assert tags["llmeval.plugin_version"] == report["plugin_version"]
    for name in ("runner_fingerprint", "dataset_sha256", "fixtures_sha256"):
        assert tags[f"llmeval.{name}"] == report[name]
    assert "llmeval.tool_registry_sha256" not in tags  # null in the report: no tag
    if commit is not None:
        assert tags["llmeval.git.commit"] == tags["mlflow.source.git.commit"] == commit
        assert tags["llmeval.git.dirty"] == "false"
    assert tags["mlflow.note.content"] == (run_dir / "summary.md").read_text()

    metrics = run.data.metrics
    assert metrics["totals.total"] == 3 and metrics["totals.failed"] == 1
    assert metrics["golden.pass_rate"] == pytest.approx(2 / 3, abs=1e-6)
    assert metrics["golden.categories.weather.pass_rate"] == 1.0
    assert metrics["golden.categories.chit_chat.pass_rate"] == 0.5  # "/" is not allowed
    assert metrics["golden.mean_scores.exact_match"] == pytest.approx(2 / 3, abs=1e-6)
    assert metrics["gates.passed"] == 0.0
    assert metrics["gates.golden.pass_rate_ge_0.5.passed"] == 1.0
    assert metrics["gates.golden.pass_rate_ge_0.5.value"] == pytest.approx(2 / 3, abs=1e-6)
    assert metrics["gates.totals.failed_eq_0.passed"] == 0.0
    assert metrics["gates.totals.failed_eq_0.value"] == 1.0
    assert set(metrics) == set(report_metrics(report))

    stored = _artifact_dir(client, run_id)
    expected = sorted(p.relative_to(run_dir) for p in run_dir.rglob("*") if p.is_file())
    assert sorted(p.relative_to(stored) for p in stored.rglob("*") if p.is_file()) == expected
    for name in ("report.json", "results.jsonl", "summary.md", "report.html", "manifest.json"):
        assert (stored / name).read_bytes() == (run_dir / name).read_bytes()

    again = log_run(run_dir, uri, "evals")  # the experiment is reused
    assert again != run_id
    assert client.get_run(again).info.experiment_id == run.info.experiment_id


def test_no_secret_value_reaches_the_store(
    pytester: pytest.Pytester, store: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, client = store
    monkeypatch.setenv("MY_SECRET", SECRET)
    text = f"the secret is {SECRET}"
    write_json(pytester, "qa.golden.json", [{"id": "s", "input": text, "expected_output": text}])
    pytester.runpytest(
        "--llmeval-runner", "echo", "--llmeval-run-dir", "run",
        "--llmeval-secret-env", "MY_SECRET",
        "--llmeval-extra-body", json.dumps({"user": SECRET}),
        "--llmeval-agent-url", f"http://bob:{SECRET}@127.0.0.1:9/chat",
        "--llmeval-gate", "golden.pass_rate>=1",
    )  # fmt: skip
    run_dir = pytester.path / "run"
    assert json.loads((run_dir / "results.jsonl").read_text())["passed"] is True

    run_id = log_run(run_dir, uri, "evals", secrets=[SECRET])
    run = client.get_run(run_id)
    assert run.data.params["extra_body.user"] == MASK
    assert run.data.params["agent_url"] == "http://127.0.0.1:9/chat"
    mlruns = Path(urlsplit(uri).path)
    files = [p for p in mlruns.rglob("*") if p.is_file()]
    assert any(p.name == "results.jsonl" for p in files)
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
    # without secrets= they come from the variables the manifest names
    assert log_run(run_dir, uri, "evals")


def test_a_run_dir_with_a_leaked_secret_is_not_uploaded(
    pytester: pytest.Pytester, store: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, client = store
    monkeypatch.setenv("MY_SECRET", SECRET)
    run_dir = _run_dir(pytester, "--llmeval-secret-env", "MY_SECRET", runner="echo")
    (run_dir / "notes.txt").write_text(f"oops {SECRET}")
    with pytest.raises(MlflowLogError, match=r"secret's value is in notes\.txt") as info:
        log_run(run_dir, uri, "evals")
    assert SECRET not in str(info.value)
    assert client.get_experiment_by_name("evals") is None  # MLflow was never touched


def test_metric_names_are_valid_unique_and_finite(mlflow: Any) -> None:
    from mlflow.utils.validation import _validate_metric_name

    report = {
        "totals": {"total": 4, "pass_rate": None, "ok": True, "ids": [1, 2]},
        "suites": {
            "golden": {
                "categories": {
                    "a/b": {"pass_rate": 0.5},
                    "a_b": {"pass_rate": 0.25},
                    "v1.2": {"pass_rate": 1.0},
                    "ünï: code": {"pass_rate": 0.0},
                    "x" * 300: {"pass_rate": 0.75},
                },
                "nan": float("nan"),
                "inf": float("inf"),
            }
        },
    }
    metrics = report_metrics(report)
    for name in metrics:
        _validate_metric_name(name)
        assert len(name) <= 250
    assert metrics["totals.total"] == 4.0
    assert "totals.ok" not in metrics and "totals.pass_rate" not in metrics
    assert not any(name.startswith("totals.ids") for name in metrics)
    assert "golden.nan" not in metrics and "golden.inf" not in metrics
    assert metrics["golden.categories.v1.2.pass_rate"] == 1.0  # the path gates use
    assert sorted(metrics.values()) == [0.0, 0.25, 0.5, 0.75, 1.0, 4.0]  # a/b and a_b both kept


def test_settings_params_are_flat_json_and_cut_to_the_limit() -> None:
    params = settings_params(
        {"runner": "echo", "gate": ["a>=1"], "seed": None, "extra_body": {"k": {"x": 2}},
         "api_key": "sk-abcdefghijklmnop", "long": "y" * 10_000, "providers": []},
        limit=100,
    )  # fmt: skip
    assert params["runner"] == "echo" and params["gate"] == '["a>=1"]'
    assert params["seed"] == "null" and params["providers"] == "[]"
    assert params["extra_body.k.x"] == "2"
    assert params["api_key"] == MASK
    assert len(params["long"]) == 100 and params["long"].endswith(TRUNCATED)


def test_missing_mlflow_names_the_extra(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _run_dir(pytester, runner="echo")
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError
    with pytest.raises(MlflowLogError, match=r"pip install 'pytest-llmeval-harness\[mlflow\]'"):
        log_run(run_dir, (tmp_path / "mlruns").as_uri(), "evals")
    assert INSTALL_HINT == "pip install 'pytest-llmeval-harness[mlflow]'"


def test_an_unreachable_server_is_a_clear_error_without_credentials(
    pytester: pytest.Pytester, mlflow: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    run_dir = _run_dir(pytester, runner="echo")
    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    uri = f"http://bob:{SECRET}@127.0.0.1:{port}"
    with pytest.raises(MlflowLogError, match=rf"at http://127\.0\.0\.1:{port}") as info:
        log_run(run_dir, uri, "evals", secrets=[SECRET])
    assert SECRET not in str(info.value)


def test_not_a_run_dir_and_a_deleted_experiment(
    pytester: pytest.Pytester, tmp_path: Path, store: tuple[str, Any]
) -> None:
    uri, client = store
    with pytest.raises(MlflowLogError, match=r"no manifest\.json"):
        log_run(tmp_path, uri, "evals")
    client.delete_experiment(client.create_experiment("gone"))
    with pytest.raises(MlflowLogError, match="'gone' is deleted"):
        log_run(_run_dir(pytester, runner="echo"), uri, "gone")


def test_the_command_line_relogs_a_run_dir(
    pytester: pytest.Pytester, store: tuple[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    uri, client = store
    run_dir = _run_dir(pytester, runner="echo")
    capsys.readouterr()  # the inner session's output
    assert main([str(run_dir), uri, "--experiment", "by-hand"]) == 0
    run_id = capsys.readouterr().out.split("MLflow run ")[1].split()[0]
    assert client.get_run(run_id).data.tags["llmeval.run_id"] == "run"
    assert main([str(pytester.path / "nowhere"), uri]) == 1
    assert "no manifest.json" in capsys.readouterr().err


def test_options_ini_and_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_llmeval.plugin.options import from_config

    settings = from_config(pytester.parseconfigure())
    assert settings.mlflow is None and settings.mlflow_experiment == "pytest-llmeval"
    monkeypatch.setenv("PYTEST_LLMEVAL_MLFLOW", "file:///tmp/mlruns")
    pytester.makeini("[pytest]\nllmeval_mlflow_experiment = nightly\n")
    settings = from_config(pytester.parseconfigure())
    assert (settings.mlflow, settings.mlflow_experiment) == ("file:///tmp/mlruns", "nightly")
    config = pytester.parseconfigure("--llmeval-mlflow", "https://u:pw@mlflow.example/?t=1")
    settings = from_config(config)
    assert settings.mlflow == "https://u:pw@mlflow.example/?t=1"  # what log_run is given
    assert settings.public_dict()["mlflow"] == "https://mlflow.example/"  # what is written


def test_a_file_store_is_allowed_for_the_call_only(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mlflow: Any
) -> None:
    run_dir = _run_dir(pytester, runner="echo")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    assert log_run(run_dir, (tmp_path / "allowed").as_uri(), "evals")
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ
    if not hasattr(
        importlib.import_module("mlflow.environment_variables"), "MLFLOW_ALLOW_FILE_STORE"
    ):
        return  # an MLflow from before the file store needed allowing
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "false")  # the user's own refusal holds
    with pytest.raises(MlflowLogError, match="MLFLOW_ALLOW_FILE_STORE"):
        log_run(run_dir, (tmp_path / "refused").as_uri(), "evals")


def test_the_option_logs_the_session_and_a_failure_fails_it(
    scripted: pytest.Pytester, store: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # the failure case: fail fast
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    uri, client = store
    write_json(scripted, "qa.golden.json", CASES)
    result = scripted.runpytest(
        "--llmeval-runner", "scripted", "--llmeval-run-dir", "run",
        "--llmeval-mlflow", uri, "--llmeval-mlflow-experiment", "ci",
    )  # fmt: skip
    result.stdout.fnmatch_lines(["llmeval: MLflow run * in experiment 'ci'"])
    experiment = client.get_experiment_by_name("ci")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.data.tags["llmeval.run_id"] == "run"
    failed = scripted.runpytest(
        "--llmeval-runner", "scripted", "--llmeval-run-dir", "run2",
        "--llmeval-mlflow", "http://127.0.0.1:9/", "--llmeval-exit-on", "gates",
        "--llmeval-gate", "golden.pass_rate>=0",
    )  # fmt: skip
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    assert (scripted.path / "run2" / "report.json").is_file()  # the run dir is never lost
