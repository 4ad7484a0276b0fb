"""The gates a ``*.llmeval.yaml`` manifest declares, each parse error placed at its line.

A manifest's ``gates:`` may be one gate or a list of them (strings, ``{metric, op, value}``
mappings, mappings of METRIC to ``"OP VALUE"``: :func:`~pytest_llmeval.report.gates.parse_gate_spec`
reads every form). Read as a whole, a bad entry would be named only by the manifest; read here
entry by entry, the error says which one, where: ``m.llmeval.yaml:4: gates[1]: bad gate
'golden.pass_rate >= 90%': ...``. The checks before any case (a bad gate is a usage error
there) and the verdict of a run dir read without a session (``merge``, ``summarize``: a gate
problem) give the same text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_llmeval.core.errors import ConfigError
from pytest_llmeval.inputs import schemas
from pytest_llmeval.inputs.manifest import Manifest
from pytest_llmeval.report.gates import parse_gate_spec
from pytest_llmeval.rundir.models import Gate

__all__ = ["GateSpecError", "located_gates", "manifest_gates"]

GATES_KEY = "gates"
"""The manifest key that holds its gates."""


class GateSpecError(ConfigError):
    """A manifest's gate that does not parse, with where it is written apart."""

    def __init__(self, source: str, detail: str):
        self.source = source
        """The manifest and the gate's line: ``m.llmeval.yaml:4`` (the manifest alone when the
        line is not known)."""
        super().__init__(f"{source}: {detail}")


def manifest_gates(manifest: Manifest) -> list[Gate]:
    """The gates ``manifest`` declares, in the order written (none when it has no ``gates``).

    Raises :class:`ConfigError` for the first entry that does not parse, its text as
    ``path:line: gates[i]: bad gate ...`` (the line of that entry when it is known).
    """
    return [gate for _, gate in located_gates(manifest)]


def located_gates(manifest: Manifest) -> list[tuple[str, Gate]]:
    """:func:`manifest_gates`, each gate with where it is written (``m.llmeval.yaml:4:
    gates[1]``), for messages about it."""
    spec = manifest.gates
    if spec is None:
        return []
    return _entries(manifest, spec, (GATES_KEY,))


def _entries(manifest: Manifest, spec: Any, path: schemas.DocPath) -> list[tuple[str, Gate]]:
    """``spec`` read entry by entry: the items of a list, the pairs of a METRIC to ``"OP
    VALUE"`` mapping, else ``spec`` as one gate."""
    if isinstance(spec, list | tuple):
        return [
            found for i, item in enumerate(spec) for found in _entries(manifest, item, (*path, i))
        ]
    if isinstance(spec, Mapping) and "metric" not in spec and len(spec) > 1:
        return [
            found
            for key, value in spec.items()
            for found in _one(manifest, {key: value}, (*path, str(key)))
        ]
    return _one(manifest, spec, path)


def _one(manifest: Manifest, spec: Any, path: schemas.DocPath) -> list[tuple[str, Gate]]:
    line = manifest.line_of(path) if len(path) > 1 else manifest.line(GATES_KEY)
    source = f"{manifest.display}:{line}" if line else manifest.display
    where = f"{source}: {schemas.field_name(path)}"
    try:
        gates = parse_gate_spec(spec, "manifest", default_suite=manifest.suite)
    except ValueError as exc:
        raise GateSpecError(source, f"{schemas.field_name(path)}: {exc}") from None
    return [(where, gate) for gate in gates]
