"""Cassettes: record model calls once, replay them offline and deterministically.

Layout under the cassette root::

    <root>/<runner-slug>-<fp12>/runner.json           the recorded runner's fingerprint dict
    <root>/<runner-slug>-<fp12>/<key[:2]>/<key>.json  {"key", "request", "repeat", "completion"}

``fp12`` is the first 12 hex characters of the runner fingerprint, ``key`` is
:func:`cassette_key`: sha256 over the runner fingerprint, the request and its *repeat index*
(the k-th identical request within one case, see
:func:`~pytest_llmeval.core.case_context.case_scope`). Files are pretty-printed JSON with
sorted keys so they diff well in git, and are written atomically
(:func:`~pytest_llmeval.core.atomic.write_text`: a temp file in the same folder +
``os.replace``), so any number of xdist workers may record at once.

:class:`RecordingRunner` wraps a live runner (``--llmeval-record none|new|all``);
:class:`ReplayRunner` replays a recorded folder with no live backend at all.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from pytest_llmeval.core.atomic import write_text
from pytest_llmeval.core.case_context import next_repeat_index, repeat_index
from pytest_llmeval.core.errors import CassetteMiss, ConfigError, RunnerError
from pytest_llmeval.core.fingerprint import canonical_json, fingerprint, sha256_hex
from pytest_llmeval.inputs.safe_read import SupportFileError, read_json
from pytest_llmeval.runners.base import Completion, GenerateRequest, Loglik, LoglikRequest, Runner
from pytest_llmeval.runners.record_command import GENERIC_HINT, record_hint

RecordMode = Literal["none", "new", "all"]

RUNNER_FILE = "runner.json"

# ---------------------------------------------------------------------------- keys and store


def runner_slug(name: str) -> str:
    """``name`` reduced to ``[a-z0-9-]`` (``"OpenAI HTTP/gpt"`` → ``"openai-http-gpt"``)."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return slug or "runner"


def canonical_request(request: GenerateRequest) -> dict[str, Any]:
    """The request as keyed: fields left at their defaults are omitted, so adding a field
    with a default to the models later does not invalidate recorded cassettes."""
    return request.model_dump(mode="json", exclude_defaults=True)


class RequestKeys:
    """One request's keys, its canonical JSON encoded once for all of them.

    :meth:`request_id` is ``fingerprint({"runner": runner_fp, "request": <canonical
    request>})`` and :meth:`key` is :func:`cassette_key`, byte for byte: the canonical JSON of
    a dict is its keys in sorted order (``repeat`` < ``request`` < ``runner``), so both are
    assembled around the request's canonical JSON, which is by far the largest part (a BFCL
    request carries its function docs) and is built once instead of once per key."""

    def __init__(self, runner_fp: dict[str, Any], request: GenerateRequest) -> None:
        self._request = canonical_json(canonical_request(request))
        self._runner = canonical_json(runner_fp)

    def request_id(self) -> str:
        """Identifies the request to the runner regardless of its repeat index."""
        return sha256_hex('{"request":' + self._request + ',"runner":' + self._runner + "}")

    def key(self, repeat: int) -> str:
        """The cassette key of the ``repeat``-th identical request (:func:`cassette_key`)."""
        head = '{"repeat":' + canonical_json(_repeat_key(repeat)) + ',"request":'
        return sha256_hex(head + self._request + ',"runner":' + self._runner + "}")


def _loglik_key(runner_fp: dict[str, Any], request: LoglikRequest) -> tuple[str, int]:
    """The cassette key of one log-likelihood request (with its repeat index in the case)."""
    body = {"runner": runner_fp, "loglik": request.model_dump(mode="json")}
    repeat = next_repeat_index(fingerprint(body))
    return fingerprint({**body, "repeat": _repeat_key(repeat)}), repeat


def _repeat_key(repeat: int) -> int | list[int]:
    """The ``repeat`` of a cassette key: the k-th identical request within the case, and, for
    the case's second and later runs (``--llmeval-repeats``), which run: ``[run, k]``. The
    first run keeps the plain ``k``, so cassettes recorded without repeats stay valid."""
    run = repeat_index()
    return repeat if run == 0 else [run, repeat]


def cassette_key(runner_fp: dict[str, Any], request: GenerateRequest, repeat: int) -> str:
    """sha256 of ``{"runner": runner_fp, "request": <canonical request>, "repeat": ...}``."""
    return fingerprint(
        {"runner": runner_fp, "request": canonical_request(request), "repeat": _repeat_key(repeat)}
    )


def _pretty_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


class CassetteStore:
    """Content-addressed cassette files under ``root``."""

    def __init__(self, root: Path | str, redact: Callable[[Any], Any] | None = None) -> None:
        self.root = Path(root)
        self.redact = redact
        """Applied to every record before it is written (the session's redactor)."""

    def folder(self, runner_name: str, runner_fp: dict[str, Any]) -> Path:
        """The folder of one recorded runner: ``<root>/<slug>-<fp12>``."""
        return self.root / f"{runner_slug(runner_name)}-{fingerprint(runner_fp)[:12]}"

    @staticmethod
    def path(folder: Path, key: str) -> Path:
        return folder / key[:2] / f"{key}.json"

    def recorded(self) -> list[Path]:
        """Recorded runner folders (those holding ``runner.json``), sorted by name."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if (p / RUNNER_FILE).is_file())

    @staticmethod
    def read_runner(folder: Path) -> dict[str, Any]:
        """The fingerprint dict in ``folder/runner.json``; ConfigError when unusable."""
        path = folder / RUNNER_FILE
        try:
            data = read_json(path)
        except SupportFileError as exc:
            raise ConfigError(f"cassettes: {exc}; record the runner again") from None
        if not isinstance(data, dict):
            raise ConfigError(f"cassettes: {path} must hold a JSON object")
        return data

    @staticmethod
    def write_runner(folder: Path, runner_fp: dict[str, Any]) -> None:
        """Write ``runner.json`` once (concurrent identical writes are harmless)."""
        path = folder / RUNNER_FILE
        if not path.exists():
            write_text(path, _pretty_json(runner_fp))  # fingerprints never hold secrets

    def get(self, folder: Path, key: str) -> Completion | None:
        """The recorded completion for ``key``, or ``None`` when there is none."""
        record = _read_cassette(self.path(folder, key), "completion")
        if record is None:
            return None
        try:
            return Completion.model_validate(record)
        except ValidationError as exc:
            raise _corrupt(self.path(folder, key), _first_problem(exc)) from None

    def get_loglik(self, folder: Path, key: str) -> Loglik | None:
        """The recorded log-likelihood for ``key``, or ``None``."""
        record = _read_cassette(self.path(folder, key), "loglik")
        if record is None:
            return None
        try:
            return Loglik.model_validate(record)
        except ValidationError as exc:
            raise _corrupt(self.path(folder, key), _first_problem(exc)) from None

    def put_loglik(
        self, folder: Path, key: str, request: LoglikRequest, repeat: int, result: Loglik
    ) -> None:
        """Record one scored continuation."""
        record = {"loglik_request": request.model_dump(mode="json"), "repeat": repeat,
                  "loglik": result.model_dump(mode="json")}  # fmt: skip
        if self.redact is not None:
            record = self.redact(record)
        write_text(self.path(folder, key), _pretty_json({**record, "key": key}))

    def put(
        self,
        folder: Path,
        key: str,
        request: GenerateRequest,
        repeat: int,
        completion: Completion,
    ) -> Path:
        """Record one call; returns the cassette's path."""
        path = self.path(folder, key)
        record = {
            "key": key,
            "request": canonical_request(request),
            "repeat": repeat,
            "completion": completion.model_dump(mode="json"),
        }
        if self.redact is not None:
            record = {**self.redact(record), "key": key}
        write_text(path, _pretty_json(record))
        return path


def _read_cassette(path: Path, field: str) -> Any:
    """The ``field`` of the cassette at ``path`` (``None`` when there is no cassette), read
    through the support-file reader: a broken one is that case's cassette error saying what
    is wrong (cut short, NaN, invalid UTF-8, nested too deeply) and where."""
    if not path.is_file():
        return None
    try:
        record = read_json(path)
    except SupportFileError as exc:
        if exc.unreadable:
            raise RunnerError(f"cannot read cassette {exc}", kind="cassette") from None
        raise _corrupt(exc.where, exc.message) from None
    if not isinstance(record, dict) or field not in record:
        raise _corrupt(path, f"expected a JSON object with {field!r}")
    return record[field]


def _corrupt(where: Path | str, what: str) -> RunnerError:
    return RunnerError(
        f"corrupt cassette {where}: {what}; delete it and record again", kind="cassette"
    )


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def _miss(folder: Path, key: str, repeat: int, why: str, hint: str) -> CassetteMiss:
    return CassetteMiss(
        f"{why}: no cassette for this request in {folder} "
        f"(key {key[:12]}…, repeat {repeat}); {hint}"
    )


# ---------------------------------------------------------------------------- runners


class RecordingRunner:
    """Wraps a live runner with cassettes.

    ``none``: replay only, a miss raises :class:`CassetteMiss`; ``new``: replay what is
    recorded, call the live runner and record the rest; ``all``: always call the live runner
    and (over)write the cassette. ``name`` and ``fingerprint()`` are the inner runner's, so
    results and baselines line up with live runs.
    """

    def __init__(
        self,
        inner: Runner,
        store: CassetteStore,
        mode: RecordMode = "new",
        *,
        command: str | None = None,
    ) -> None:
        if mode not in ("none", "new", "all"):
            raise ConfigError(f"unknown record mode {mode!r} (expected none, new or all)")
        self.inner = inner
        self.store = store
        self.mode: RecordMode = mode
        self.command = command
        """The session's pytest command, for the command a miss names (``None``: generic)."""
        self.name = inner.name
        self.supports_response_format = bool(getattr(inner, "supports_response_format", False))

    def fingerprint(self) -> dict[str, Any]:
        return self.inner.fingerprint()

    async def generate(self, request: GenerateRequest) -> Completion:
        runner_fp = self.inner.fingerprint()
        folder = self.store.folder(self.inner.name, runner_fp)
        keys = RequestKeys(runner_fp, request)
        repeat = next_repeat_index(keys.request_id())
        key = keys.key(repeat)
        if self.mode != "all":
            recorded = self.store.get(folder, key)
            if recorded is not None:
                return recorded
            if self.mode == "none":
                hint = record_hint(self.command, runner_fp)
                raise _miss(folder, key, repeat, f"{self.name}: recording is off", hint)
        completion = await self.inner.generate(request)
        self.store.write_runner(folder, runner_fp)
        self.store.put(folder, key, request, repeat, completion)
        return completion

    async def loglikelihood(self, requests: list[LoglikRequest]) -> list[Loglik]:
        """Replay recorded scores; score the misses with the live runner (in one batch)."""
        live = getattr(self.inner, "loglikelihood", None)
        if live is None:
            raise RunnerError(f"runner {self.name!r} cannot score log-likelihoods", kind="protocol")
        runner_fp = self.inner.fingerprint()
        folder = self.store.folder(self.inner.name, runner_fp)
        keyed = [_loglik_key(runner_fp, request) for request in requests]
        found = [None if self.mode == "all" else self.store.get_loglik(folder, k) for k, _ in keyed]
        missing = [i for i, result in enumerate(found) if result is None]
        if missing and self.mode == "none":
            key, repeat = keyed[missing[0]]
            hint = record_hint(self.command, runner_fp)
            raise _miss(folder, key, repeat, f"{self.name}: recording is off", hint)
        if missing:
            fresh = await live([requests[i] for i in missing])
            self.store.write_runner(folder, runner_fp)
            for i, result in zip(missing, fresh, strict=True):
                key, repeat = keyed[i]
                self.store.put_loglik(folder, key, requests[i], repeat, result)
                found[i] = result
        return [result for result in found if result is not None]

    async def aclose(self) -> None:
        await self.inner.aclose()


class ReplayRunner:
    """Replays one recorded runner folder; no live backend, so a miss is always an error.

    With one recorded folder under the root it is used; with several, ``select`` (a folder
    name, a prefix of one, or a runner name) chooses. ``fingerprint()`` is the recorded
    runner's, so results line up with the live run that recorded them.
    """

    name = "replay"
    in_process = True
    """It answers from files here, with no backend to wait on: its cases run on pytest's
    thread."""

    def __init__(
        self,
        store: CassetteStore,
        select: str | None = None,
        model: str | None = None,
        *,
        select_option: str = "--llmeval-replay-from",
        command: str | None = None,
    ) -> None:
        self.store = store
        self.command = command
        """The session's pytest command, for the command a miss names (``None``: generic)."""
        self.folder = _select_folder(store, select, model, select_option, command)
        self.recorded_fingerprint = store.read_runner(self.folder)
        _check_model(self.folder, self.recorded_fingerprint, select, model)
        # the recorded runner's requests, judges' strict form included, are what replays
        self.supports_response_format = self.recorded_fingerprint.get("type") == "openai"

    @property
    def recorded_name(self) -> str:
        """The recorded runner's name as its folder spells it (slugged)."""
        return self.folder.name.rsplit("-", 1)[0]

    def fingerprint(self) -> dict[str, Any]:
        return dict(self.recorded_fingerprint)

    async def generate(self, request: GenerateRequest) -> Completion:
        keys = RequestKeys(self.recorded_fingerprint, request)
        repeat = next_repeat_index(keys.request_id())
        key = keys.key(repeat)
        recorded = self.store.get(self.folder, key)
        if recorded is None:
            raise _miss(self.folder, key, repeat, "replay", self._hint())
        return recorded

    async def loglikelihood(self, requests: list[LoglikRequest]) -> list[Loglik]:
        results = []
        for request in requests:
            key, repeat = _loglik_key(self.recorded_fingerprint, request)
            recorded = self.store.get_loglik(self.folder, key)
            if recorded is None:
                raise _miss(self.folder, key, repeat, "replay", self._hint())
            results.append(recorded)
        return results

    def _hint(self) -> str:
        return record_hint(self.command, self.recorded_fingerprint)

    async def aclose(self) -> None:
        return None


def recorded_model(runner_fp: dict[str, Any]) -> str | None:
    """The ``model`` a recorded runner's fingerprint names, or ``None``."""
    model = runner_fp.get("model")
    return model if isinstance(model, str) and model.strip() else None


def replayed(store: CassetteStore, select: str | None, model: str | None) -> str:
    """What replay plays back, for the terminal's header: the model and its folder (a
    :class:`ConfigError` when it cannot be chosen)."""
    folder = _select_folder(store, select, model)
    named = recorded_model(store.read_runner(folder))
    what = f"model {named}" if named else "a runner that names no model"
    return f"replaying {what} ({folder})"


def _models(store: CassetteStore, folders: list[Path]) -> dict[Path, str | None]:
    return {folder: recorded_model(store.read_runner(folder)) for folder in folders}


def _record_hint(store: CassetteStore, folders: list[Path], model: str, command: str | None) -> str:
    types = {store.read_runner(f).get("type") for f in folders}
    runner = next(iter(types)) if len(types) == 1 and isinstance(next(iter(types)), str) else None
    start = f"{command} " if command else ""
    return (
        f"record it with `{start}--llmeval-runner {runner or '<runner>'} --llmeval-model {model} "
        "--llmeval-record new`"
    )


def _by_model(
    store: CassetteStore, folders: list[Path], model: str, command: str | None = None
) -> Path:
    """The one recorded folder of ``model`` (``--llmeval-model``): replaying another model's
    recordings would judge a model that was not asked for."""
    models = _models(store, folders)
    found = [folder for folder, named in models.items() if named == model]
    if len(found) == 1:
        return found[0]
    if found:
        raise ConfigError(
            f"replay: --llmeval-model {model}: {len(found)} recordings under {store.root}: "
            f"{', '.join(f.name for f in found)}; choose one with `--llmeval-replay-from <folder>`"
        )
    have = ", ".join(
        f"{named} ({folder.name})" if named else f"no model named ({folder.name})"
        for folder, named in models.items()
    )
    raise ConfigError(
        f"replay: --llmeval-model {model}: no recording of it under {store.root} (recorded: "
        f"{have}); {_record_hint(store, folders, model, command)}, or drop --llmeval-model to "
        "replay what is recorded"
    )


def _check_model(
    folder: Path, runner_fp: dict[str, Any], select: str | None, model: str | None
) -> None:
    """A folder chosen by ``--llmeval-replay-from`` must not replay another model than
    ``--llmeval-model`` (a recording that names no model cannot be checked: the user chose
    it by name)."""
    named = recorded_model(runner_fp)
    if model is None or select is None or select == model or named is None or named == model:
        return
    raise ConfigError(
        f"replay: --llmeval-model {model}, but {folder} is a recording of model {named}; "
        f"replay a recording of {model} (or drop --llmeval-model), or record it with "
        f"`--llmeval-runner {runner_fp.get('type') or '<runner>'} --llmeval-model {model} "
        "--llmeval-record new`"
    )


def _select_folder(
    store: CassetteStore,
    select: str | None,
    model: str | None = None,
    option: str = "--llmeval-replay-from",
    command: str | None = None,
) -> Path:
    """The recorded folder ``select`` names, or ``model``'s when nothing is selected; ``option``
    is the flag that gave ``select`` (the judge's replay is chosen by ``--llmeval-judge-model``)."""
    how = f"choose one with `{option} <folder>` (a folder name, a prefix of one, or a runner name)"
    if command is None:
        hint = GENERIC_HINT
    else:  # no recorded runner to build from: the setting that placed the folder, and NAME
        hint = (
            "point --llmeval-cassettes (ini llmeval_cassettes, relative to the rootdir) at the "
            f"recordings, or record them with: {command} --llmeval-runner NAME "
            "--llmeval-record new"
        )
    if not store.root.is_dir():
        raise ConfigError(f"replay: no cassette folder at {store.root}; {hint}")
    folders = store.recorded()
    if not folders:
        raise ConfigError(
            f"replay: no recorded runner under {store.root} (no */{RUNNER_FILE}); {hint}"
        )
    names = ", ".join(f.name for f in folders)
    if select is None and model is not None:
        return _by_model(store, folders, model, command)
    if select is None:
        if len(folders) == 1:
            return folders[0]
        raise ConfigError(
            f"replay: {len(folders)} recorded runners under {store.root}: {names}; {how}"
        )
    wanted = Path(select).name if ("/" in select or os.sep in select) else select
    exact = [f for f in folders if f.name == wanted]
    if exact:
        return exact[0]
    matches = [
        f
        for f in folders
        if f.name.startswith(wanted) or f.name.rsplit("-", 1)[0] == runner_slug(wanted)
    ]
    if not matches:  # a recorded model's name (a judge's --llmeval-judge-model)
        matches = [f for f, named in _models(store, folders).items() if named == select]
    if len(matches) == 1:
        return matches[0]
    problem = "matches several" if matches else "matches none"
    found = ", ".join(f.name for f in matches) if matches else names
    raise ConfigError(
        f"replay: {select!r} {problem} of the recorded runners under {store.root}: {found}; {how}"
    )
