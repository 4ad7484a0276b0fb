"""BFCL's multi-turn backends: the official simulator classes, loaded without the package.

The Berkeley Function Calling Leaderboard's multi-turn categories run the model's calls against
simulated services (a file system, a trading bot, a travel agency, a car, ...). Their classes
live in the installed ``bfcl-eval`` package, under
``bfcl_eval/eval_checker/multi_turn_eval/func_source_code/``. Importing the package the usual way
is what this module avoids: its model handlers pull a 6 GB dependency tree. Instead each backend
module is found without importing the package (:func:`importlib.util.find_spec` of a top-level
name only locates it), its imports are read with :mod:`ast` and must be the standard library,
``mpmath`` or the sibling ``long_context`` data module, and it is loaded from its file under a
private module name. The one absolute import the backends make (``long_context``) passes
through the package's ``__init__`` files, which are checked to be empty first.

Loaded *classes* are kept for the process (they are code); *instances* are never shared:
:func:`new_instances` builds a fresh set, loaded with its item's ``initial_config``, every time
it is called (the official harness caches instances in a module global instead).
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_llmeval.core.ast_parse import parse
from pytest_llmeval.core.clip import clip
from pytest_llmeval.core.errors import ConfigError

__all__ = [
    "BACKEND_MODULES",
    "INSTALL_HINT",
    "STATELESS_CLASSES",
    "BackendsMissing",
    "ScenarioError",
    "backend_class",
    "is_long_context",
    "new_instances",
]

INSTALL_HINT = "pip install --no-deps bfcl-eval==2026.3.23"
"""The command that installs the official data and backends (and nothing they would pull)."""

BACKEND_MODULES: dict[str, str] = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
"""The multi-turn classes by name, and the module under ``func_source_code/`` defining each
(the package's ``constants/executable_backend_config.py``; the agentic web search and memory
backends need the network and are left out)."""

STATELESS_CLASSES = frozenset({"MathAPI"})
"""Classes built without ``_load_scenario`` (they have no state to load)."""

_SOURCE_DIR = ("eval_checker", "multi_turn_eval", "func_source_code")
_PACKAGE_PREFIX = "bfcl_eval." + ".".join(_SOURCE_DIR)
_ALLOWED_THIRD_PARTY = frozenset({"mpmath"})
_PRIVATE_PREFIX = "_pytest_llmeval_bfcl_backend_"


class BackendsMissing(ConfigError):
    """The ``bfcl-eval`` package (or one of its backends) cannot be loaded."""


class ScenarioError(ConfigError):
    """An item's ``initial_config`` that its official backend class cannot load (a broken
    data row: the official harness would crash on it)."""


def _package_root() -> Path:
    """The installed ``bfcl_eval`` folder, found without importing it."""
    try:
        spec = importlib.util.find_spec("bfcl_eval")
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise BackendsMissing(
            "BFCL multi-turn needs the official backends: the bfcl-eval package is not "
            f"installed; run `{INSTALL_HINT}`"
        )
    return Path(locations[0])


def _check_empty_inits(root: Path) -> None:
    """The package ``__init__`` files the backends' own import passes through must be empty."""
    folders = [root.joinpath(*_SOURCE_DIR[:depth]) for depth in range(len(_SOURCE_DIR) + 1)]
    for init in (folder / "__init__.py" for folder in folders):
        if init.is_file() and init.read_text(encoding="utf-8").strip():
            raise BackendsMissing(
                f"{init} is not empty: this is not the bfcl-eval release the suite reads; "
                f"run `{INSTALL_HINT}`"
            )


def _check_imports(path: Path, source: str) -> None:
    """Refuse a backend module importing anything but the standard library, mpmath and
    ``long_context`` (so loading it can never pull the model handlers)."""
    for node in ast.walk(parse(source, filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise BackendsMissing(f"{path}: a relative import; run `{INSTALL_HINT}`")
            names = [node.module or ""]
        for name in names:
            top = name.split(".")[0]
            allowed = (
                top in sys.stdlib_module_names
                or top in _ALLOWED_THIRD_PARTY
                or name == f"{_PACKAGE_PREFIX}.long_context"
            )
            if not allowed:
                raise BackendsMissing(
                    f"{path} imports {name!r}, which the BFCL backends are not known to need; "
                    f"run `{INSTALL_HINT}`"
                )


@functools.cache
def backend_class(class_name: str) -> type[Any]:
    """The official class named ``class_name``, loaded from its file (module docstring)."""
    stem = BACKEND_MODULES.get(class_name)
    if stem is None:
        known = ", ".join(BACKEND_MODULES)
        raise BackendsMissing(f"unknown BFCL backend class {class_name!r} (known: {known})")
    root = _package_root()
    _check_empty_inits(root)
    path = root.joinpath(*_SOURCE_DIR, f"{stem}.py")
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BackendsMissing(f"cannot read {path}: {exc}; run `{INSTALL_HINT}`") from exc
    _check_imports(path, source)
    if class_name == "MathAPI" and importlib.util.find_spec("mpmath") is None:
        raise BackendsMissing(
            "the BFCL MathAPI backend needs mpmath: pip install 'pytest-llmeval-harness[bfcl]'"
        )
    spec = importlib.util.spec_from_file_location(_PRIVATE_PREFIX + stem, path)
    if spec is None or spec.loader is None:
        raise BackendsMissing(f"cannot load {path}; run `{INSTALL_HINT}`")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise BackendsMissing(f"{path} defines no class {class_name}; run `{INSTALL_HINT}`")
    return cls


def is_long_context(entry_id: str) -> bool:
    """Whether the official harness loads this item's backends with ``long_context=True``.

    It reads the category from the id (everything before the last ``_``)."""
    category = entry_id.rsplit("_", 1)[0]
    return "long_context" in category or "composite" in category


def new_instances(
    involved_classes: Sequence[str],
    initial_config: Mapping[str, Any],
    *,
    long_context: bool,
) -> dict[str, Any]:
    """A fresh instance of each involved class, in order, loaded with (a deep copy of) its
    part of ``initial_config``, as the official executor builds them."""
    instances: dict[str, Any] = {}
    for class_name in involved_classes:
        instance = backend_class(class_name)()
        if class_name not in STATELESS_CLASSES:
            scenario = copy.deepcopy(initial_config.get(class_name, {}))
            try:
                instance._load_scenario(scenario, long_context=long_context)
            except Exception as exc:  # the row's state, not the model: say which and why
                raise ScenarioError(
                    f"initial_config.{class_name}: the official {class_name} cannot load it "
                    f"({type(exc).__name__}: {clip(str(exc), 200)}); fix the data row"
                ) from None
        instances[class_name] = instance
    return instances
