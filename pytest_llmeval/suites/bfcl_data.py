"""Reading a BFCL data folder in the official layout into typed items, row by row.

The layout is the one ``bfcl-eval==2026.3.23`` ships in ``bfcl_eval/data/``:

* ``BFCL_v4_<category>.json``: JSON Lines despite the suffix, one item per line;
* ``possible_answer/BFCL_v4_<category>.json``: ``{id, ground_truth}`` rows, matched by id
  (the relevance and irrelevance categories have none);
* ``multi_turn_func_doc/<file>.json``: the function docs of each multi-turn backend class
  (JSON Lines too), named by :data:`FUNC_DOC_FILES`.

An item is what the official loader makes of a row (``load_dataset_entry`` with no language
hint, the form its checker reads): a multi-turn item's ``functions`` are its involved classes'
docs in ``involved_classes`` order, minus the held-out ones, which move to
``missed_function`` (turn index -> docs), as ``populate_test_cases_with_predefined_functions``
does. The row key ``excluded_function`` is not read (the official code never reads it).

A broken row (a line that is not JSON, a missing or mistyped field, no ground truth, an id
that does not belong to its file's category) is that row's :class:`CaseFileError` with
``path:line`` and the field; the other rows still load. Nothing is dropped silently.

Where the data comes from: the manifest key ``data:``, or by default the ``data`` folder of an
installed ``bfcl-eval`` package, found with :func:`importlib.util.find_spec` on the top-level
package (which locates it without running it: the package must never be imported, its
``__init__`` chain pulls in every model SDK).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_llmeval.core.errors import CaseFileError, ConfigError
from pytest_llmeval.inputs.loading import iter_jsonl

PACKAGE_PIN = "bfcl-eval==2026.3.23"
"""The official package the suite reproduces (data, backends and rules)."""

INSTALL_LINE = f"pip install --no-deps {PACKAGE_PIN}"
"""How a user gets the data and backends without the package's heavy dependency tree."""

FILE_PREFIX = "BFCL_v4_"

NON_LIVE = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
)
LIVE = (
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
MULTI_TURN = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
CATEGORIES = NON_LIVE + LIVE + MULTI_TURN
"""Every category the suite runs (the non-agentic ones), in the official order."""

AGENTIC = (
    "web_search_base",
    "web_search_no_snippet",
    "memory_kv",
    "memory_vector",
    "memory_rec_sum",
)
"""The agentic categories: they need the network, and the suite leaves them out."""

FUNC_DOC_FILES: dict[str, str] = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
"""Multi-turn backend class -> its doc file in ``multi_turn_func_doc/`` (the official map)."""


class BfclItem(BaseModel):
    """One BFCL item, as the official loader reads it (no language hint applied)."""

    model_config = ConfigDict(frozen=True)

    id: str
    """The BFCL id (``simple_python_0``, ``live_simple_27-7-0``, ``multi_turn_base_3``)."""
    category: str
    """The BFCL category (the data file's)."""
    path: str
    """The data file, as shown in messages."""
    line: int
    """The 1-based line of the row in :attr:`path`."""
    question: list[list[dict[str, Any]]]
    """The turns, each a list of ``{role, content}`` messages (single-turn items have one)."""
    functions: list[dict[str, Any]]
    """The function docs offered from the start, in the official order."""
    ground_truth: list[Any] | None = None
    """Single-turn: ``[{name: {arg: [accepted values]}}]``; multi-turn: per turn, a list of
    call strings; ``None`` for the relevance and irrelevance categories."""
    involved_classes: list[str] = Field(default_factory=list)
    """Multi-turn: the backend classes, in the row's order."""
    initial_config: dict[str, Any] = Field(default_factory=dict)
    """Multi-turn: each class's starting state, by class name."""
    missed_function: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """``miss_func``: turn index (as the row writes it, a string) -> the held-out docs added
    at that turn."""

    @property
    def multi_turn(self) -> bool:
        return self.category.startswith("multi_turn")


@dataclass
class BfclData:
    """What a read produced: the items, and one error per row that could not be read."""

    items: list[BfclItem] = field(default_factory=list)
    errors: list[CaseFileError] = field(default_factory=list)


# ------------------------------------------------------------------------ where, which


def package_dir() -> Path | None:
    """The folder of the installed ``bfcl_eval`` package, or ``None``; never imports it.

    :func:`importlib.util.find_spec` on a top-level name finds the package without running its
    ``__init__``."""
    spec = importlib.util.find_spec("bfcl_eval")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def default_data_dir() -> Path:
    """The ``data`` folder of the installed ``bfcl-eval``, found without importing it.

    Raises :class:`ConfigError` naming the install line and the manifest key when the package
    is not installed."""
    package = package_dir()
    if package is not None and (package / "data").is_dir():
        return package / "data"
    raise ConfigError(
        f"the bfcl suite needs the BFCL data: run `{INSTALL_LINE}` (data and backends, without "
        "its dependencies), or set the manifest key `data:` to a BFCL data folder"
    )


def data_file(data_dir: Path, category: str) -> Path:
    return data_dir / f"{FILE_PREFIX}{category}.json"


def select_categories(data_dir: Path, categories: str | Sequence[str] | None) -> list[str]:
    """The categories to run, in the official order.

    ``None`` (the default): every category of :data:`CATEGORIES` whose file is in the folder;
    ``"all"``: all of them, each file required; a list: those, each file required. A name
    that is not a category, an agentic one, or a missing file is a :class:`ConfigError`."""
    if categories is None:
        present = [c for c in CATEGORIES if data_file(data_dir, c).is_file()]
        if not present:
            raise ConfigError(
                f"manifest key `data:`: {data_dir} holds no BFCL_v4_<category>.json file of "
                f"the categories {', '.join(CATEGORIES)}"
            )
        return present
    if categories == "all":
        wanted: list[str] = list(CATEGORIES)
    elif isinstance(categories, str) or not all(isinstance(c, str) for c in categories):
        raise ConfigError("manifest key `categories:` must be `all` or a list of category names")
    else:
        wanted = list(dict.fromkeys(categories))
    for name in wanted:
        if name in AGENTIC or name.startswith(("web_search", "memory")):
            raise ConfigError(
                f"manifest key `categories:`: {name!r} is agentic (it needs the network) and "
                "is not part of the bfcl suite; remove it"
            )
        if name not in CATEGORIES:
            raise ConfigError(
                f"manifest key `categories:`: unknown category {name!r}; expected `all` or "
                f"names from {', '.join(CATEGORIES)}"
            )
    missing = [str(data_file(data_dir, c)) for c in wanted if not data_file(data_dir, c).is_file()]
    if missing:
        raise ConfigError(
            f"manifest key `categories:` names categories without a data file: "
            f"{', '.join(missing)}; fix `data:` or the list"
        )
    return [c for c in CATEGORIES if c in wanted]


# ------------------------------------------------------------------------------ reading


def read_data(
    data_dir: Path,
    categories: Iterable[str],
    ids: Sequence[str] | None = None,
    display_root: Path | None = None,
) -> BfclData:
    """Read the chosen categories' items (only ``ids`` when given).

    An id in ``ids`` that no chosen category holds is a :class:`ConfigError` (a typo would
    otherwise run nothing and pass). ``display_root``: paths in messages are shown relative to
    it when they are under it."""
    wanted = set(ids) if ids is not None else None
    out = BfclData()
    docs = _DocCache(data_dir, display_root)
    seen: set[str] = set()
    for category in categories:
        _read_category(data_dir, category, wanted, docs, display_root, out, seen)
    if wanted is not None:
        unknown = sorted(wanted - seen)
        if unknown:
            raise ConfigError(
                f"manifest key `ids:`: no item of the chosen categories has the id "
                f"{', '.join(map(repr, unknown))}; check `ids:` and `categories:`"
            )
    return out


def _shown(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def _read_category(
    data_dir: Path,
    category: str,
    wanted: set[str] | None,
    docs: _DocCache,
    root: Path | None,
    out: BfclData,
    seen: set[str],
) -> None:
    path = data_file(data_dir, category)
    shown = _shown(path, root)
    truth_file = data_dir / "possible_answer" / path.name
    truths = _Truths(truth_file, root) if _has_truth(category) else None
    for record in iter_jsonl(path, shown):
        if record.error is not None:
            out.errors.append(record.error)
            continue
        row_id = record.value.get("id")
        if wanted is not None and row_id not in wanted:
            continue
        if isinstance(row_id, str):
            seen.add(row_id)
        line = record.line or 0
        try:
            out.items.append(_item(record.value, category, shown, line, truths, docs))
        except _RowError as exc:
            case_id = row_id if isinstance(row_id, str) else None
            out.errors.append(CaseFileError(shown, line, exc.message, exc.field, case_id))


def _has_truth(category: str) -> bool:
    return "relevance" not in category


class _RowError(Exception):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def _item(
    row: dict[str, Any],
    category: str,
    shown: str,
    line: int,
    truths: _Truths | None,
    docs: _DocCache,
) -> BfclItem:
    row_id = row.get("id")
    if not isinstance(row_id, str) or not row_id:
        raise _RowError("id", "expected a non-empty string")
    if row_id.split(":")[0].rsplit("_", 1)[0] != category:
        raise _RowError("id", f"{row_id!r} is not an id of the category {category}")
    question = _question(row.get("question"))
    truth = truths.get(row_id) if truths is not None else None
    if category.startswith("multi_turn"):
        return _multi_turn_item(row, row_id, category, shown, line, question, truth, docs)
    functions = _docs(row.get("function"), "function")
    if category != "live_irrelevance" and not functions:
        raise _RowError("function", "expected at least one function doc")
    if len(question) != 1:
        raise _RowError("question", f"a single-turn item has one turn, not {len(question)}")
    if truth is not None and not isinstance(truth, list):
        raise _RowError("ground_truth", "expected a list of calls")
    return BfclItem(
        id=row_id,
        category=category,
        path=shown,
        line=line,
        question=question,
        functions=functions,
        ground_truth=truth,
    )


def _multi_turn_item(
    row: dict[str, Any],
    row_id: str,
    category: str,
    shown: str,
    line: int,
    question: list[list[dict[str, Any]]],
    truth: Any,
    docs: _DocCache,
) -> BfclItem:
    classes = row.get("involved_classes")
    if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
        raise _RowError("involved_classes", "expected a non-empty list of class names")
    config = row.get("initial_config", {})
    if not isinstance(config, dict):
        raise _RowError("initial_config", "expected an object keyed by class name")
    functions: list[dict[str, Any]] = []
    for name in classes:
        functions.extend(docs.get(name))
    missed = _held_out(row.get("missed_function", {}), functions)
    if not isinstance(truth, list) or not all(isinstance(turn, list) for turn in truth):
        raise _RowError("ground_truth", "expected a list of turns, each a list of call strings")
    if len(truth) != len(question):
        raise _RowError(
            "ground_truth", f"{len(truth)} turns of ground truth for {len(question)} turns"
        )
    return BfclItem(
        id=row_id,
        category=category,
        path=shown,
        line=line,
        question=question,
        functions=functions,
        ground_truth=truth,
        involved_classes=classes,
        initial_config=config,
        missed_function=missed,
    )


def _held_out(value: Any, functions: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Move each held-out doc from ``functions`` to its turn (the official order: per turn,
    per name, the first doc of that name)."""
    if not isinstance(value, dict):
        raise _RowError("missed_function", "expected an object: turn index -> function names")
    missed: dict[str, list[dict[str, Any]]] = {}
    for turn, names in value.items():
        if not str(turn).isdigit() or not isinstance(names, list):
            raise _RowError("missed_function", f"turn {turn!r}: expected a list of names")
        missed[str(turn)] = []
        for name in names:
            index = next((i for i, doc in enumerate(functions) if doc["name"] == name), None)
            if index is None:
                raise _RowError("missed_function", f"no doc of the involved classes is {name!r}")
            missed[str(turn)].append(functions.pop(index))
    return missed


def _question(value: Any) -> list[list[dict[str, Any]]]:
    if not isinstance(value, list) or not value:
        raise _RowError("question", "expected a non-empty list of turns")
    for t, turn in enumerate(value):
        if not isinstance(turn, list):
            raise _RowError(f"question[{t}]", "expected a list of messages")
        for m, message in enumerate(turn):
            ok = (
                isinstance(message, dict)
                and isinstance(message.get("role"), str)
                and isinstance(message.get("content"), str)
            )
            if not ok:
                raise _RowError(f"question[{t}][{m}]", "expected {role: str, content: str}")
    return value


def _docs(value: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise _RowError(where, "expected a list of function docs")
    for k, doc in enumerate(value):
        problem = _doc_problem(doc)
        if problem:
            raise _RowError(f"{where}[{k}]", problem)
    return value


def _doc_problem(doc: Any) -> str | None:
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
        return "expected a function doc with a string name"
    if not isinstance(doc.get("description"), str):
        return f"{doc['name']}: expected a string description"
    params = doc.get("parameters")
    if not isinstance(params, dict) or not isinstance(params.get("properties"), dict):
        return f"{doc['name']}: expected parameters with a properties object"
    for name, prop in params["properties"].items():
        if not isinstance(prop, dict):
            return f"{doc['name']}: parameter {name!r} is not an object"
    return None


class _Truths:
    """A ground-truth file, read once on first use: id -> ground truth."""

    def __init__(self, path: Path, root: Path | None) -> None:
        self.path = path
        self.shown = _shown(path, root)
        self._by_id: dict[str, Any] | None = None
        self._broken: list[str] = []

    def get(self, row_id: str) -> Any:
        if self._by_id is None:
            self._by_id = self._load()
        if row_id not in self._by_id:
            more = f" ({'; '.join(self._broken[:3])})" if self._broken else ""
            raise _RowError("ground_truth", f"no row with this id in {self.shown}{more}")
        return self._by_id[row_id]

    def _load(self) -> dict[str, Any]:
        by_id: dict[str, Any] = {}
        if not self.path.is_file():
            self._broken.append("the file is missing")
            return by_id
        for record in iter_jsonl(self.path, self.shown):
            value = record.value
            if record.error is not None:
                self._broken.append(str(record.error))
            elif not isinstance(value.get("id"), str) or "ground_truth" not in value:
                self._broken.append(f"{self.shown}:{record.line}: expected {{id, ground_truth}}")
            else:
                by_id[value["id"]] = value["ground_truth"]
        return by_id


class _DocCache:
    """The multi-turn doc files, each read once per read: class name -> docs (fresh copies)."""

    def __init__(self, data_dir: Path, root: Path | None) -> None:
        self.folder = data_dir / "multi_turn_func_doc"
        self.root = root
        self._docs: dict[str, list[dict[str, Any]] | str] = {}

    def get(self, class_name: str) -> list[dict[str, Any]]:
        if class_name not in self._docs:
            self._docs[class_name] = self._load(class_name)
        found = self._docs[class_name]
        if isinstance(found, str):
            raise _RowError("involved_classes", found)
        return [dict(doc) for doc in found]

    def _load(self, class_name: str) -> list[dict[str, Any]] | str:
        file_name = FUNC_DOC_FILES.get(class_name)
        if file_name is None:
            return f"unknown class {class_name!r}; expected one of {', '.join(FUNC_DOC_FILES)}"
        path = self.folder / file_name
        shown = _shown(path, self.root)
        if not path.is_file():
            return f"{class_name}: the doc file {shown} is missing"
        docs: list[dict[str, Any]] = []
        for record in list(iter_jsonl(path, shown)):  # read whole: the file closes at once
            if record.error is not None:
                return f"{class_name}: {record.error}"
            problem = _doc_problem(record.value)
            if problem:
                return f"{class_name}: {shown}:{record.line}: {problem}"
            docs.append(record.value)
        return docs
