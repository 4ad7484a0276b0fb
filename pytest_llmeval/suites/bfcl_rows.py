"""One BFCL row into a typed item: the item model, the row checks, ground truth, doc files.

:func:`item_from_row` is what the official loader makes of a row (``load_dataset_entry`` with
no language hint, the form its checker reads): a multi-turn item's ``functions`` are its
involved classes' docs in ``involved_classes`` order, minus the held-out ones, which move to
``missed_function`` (turn index -> docs), as ``populate_test_cases_with_predefined_functions``
does. A row that cannot be used raises :class:`RowError` naming the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_llmeval.inputs.loading import iter_jsonl

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


def has_truth(category: str) -> bool:
    return "relevance" not in category


class RowError(Exception):
    """A row that cannot be turned into an item: the field and why."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def item_from_row(
    row: dict[str, Any],
    category: str,
    shown: str,
    line: int,
    truths: Truths | None,
    docs: DocCache,
) -> BfclItem:
    row_id = row.get("id")
    if not isinstance(row_id, str) or not row_id:
        raise RowError("id", "expected a non-empty string")
    if row_id.split(":")[0].rsplit("_", 1)[0] != category:
        raise RowError("id", f"{row_id!r} is not an id of the category {category}")
    question = _question(row.get("question"))
    truth = truths.get(row_id) if truths is not None else None
    if category.startswith("multi_turn"):
        return _multi_turn_item(row, row_id, category, shown, line, question, truth, docs)
    functions = _docs(row.get("function"), "function")
    if category != "live_irrelevance" and not functions:
        raise RowError("function", "expected at least one function doc")
    if len(question) != 1:
        raise RowError("question", f"a single-turn item has one turn, not {len(question)}")
    if truth is not None and not isinstance(truth, list):
        raise RowError("ground_truth", "expected a list of calls")
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
    docs: DocCache,
) -> BfclItem:
    classes = row.get("involved_classes")
    if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
        raise RowError("involved_classes", "expected a non-empty list of class names")
    config = row.get("initial_config", {})
    if not isinstance(config, dict):
        raise RowError("initial_config", "expected an object keyed by class name")
    for name in classes:  # the official executor loads each involved class's part as a dict
        if not isinstance(config.get(name, {}), dict):
            raise RowError(f"initial_config.{name}", "expected an object (the class's state)")
    functions: list[dict[str, Any]] = []
    for name in classes:
        functions.extend(docs.get(name))
    missed = _held_out(row.get("missed_function", {}), functions)
    if not isinstance(truth, list) or not all(isinstance(turn, list) for turn in truth):
        raise RowError("ground_truth", "expected a list of turns, each a list of call strings")
    if len(truth) != len(question):
        raise RowError(
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
        raise RowError("missed_function", "expected an object: turn index -> function names")
    missed: dict[str, list[dict[str, Any]]] = {}
    for turn, names in value.items():
        if not str(turn).isdigit() or not isinstance(names, list):
            raise RowError("missed_function", f"turn {turn!r}: expected a list of names")
        missed[str(turn)] = []
        for name in names:
            index = next((i for i, doc in enumerate(functions) if doc["name"] == name), None)
            if index is None:
                raise RowError("missed_function", f"no doc of the involved classes is {name!r}")
            missed[str(turn)].append(functions.pop(index))
    return missed


def _question(value: Any) -> list[list[dict[str, Any]]]:
    if not isinstance(value, list) or not value:
        raise RowError("question", "expected a non-empty list of turns")
    for t, turn in enumerate(value):
        if not isinstance(turn, list):
            raise RowError(f"question[{t}]", "expected a list of messages")
        for m, message in enumerate(turn):
            ok = (
                isinstance(message, dict)
                and isinstance(message.get("role"), str)
                and isinstance(message.get("content"), str)
            )
            if not ok:
                raise RowError(f"question[{t}][{m}]", "expected {role: str, content: str}")
    return value


def _docs(value: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise RowError(where, "expected a list of function docs")
    for k, doc in enumerate(value):
        problem = _doc_problem(doc)
        if problem:
            raise RowError(f"{where}[{k}]", problem)
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


class Truths:
    """A ground-truth file, read once on first use: id -> ground truth."""

    def __init__(self, path: Path, root: Path | None) -> None:
        self.path = path
        self.shown = shown_path(path, root)
        self._by_id: dict[str, Any] | None = None
        self._broken: list[str] = []

    def get(self, row_id: str) -> Any:
        if self._by_id is None:
            self._by_id = self._load()
        if row_id not in self._by_id:
            more = f" ({'; '.join(self._broken[:3])})" if self._broken else ""
            raise RowError("ground_truth", f"no row with this id in {self.shown}{more}")
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


class DocCache:
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
            raise RowError("involved_classes", found)
        return [dict(doc) for doc in found]

    def _load(self, class_name: str) -> list[dict[str, Any]] | str:
        file_name = FUNC_DOC_FILES.get(class_name)
        if file_name is None:
            return f"unknown class {class_name!r}; expected one of {', '.join(FUNC_DOC_FILES)}"
        path = self.folder / file_name
        shown = shown_path(path, self.root)
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


def shown_path(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.as_posix()
