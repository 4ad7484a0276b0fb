"""Write ``2023/validation/metadata.parquet`` from ``metadata.jsonl``, shaped like the hub's.

The rows are synthetic (real GAIA rows are gated and must never be committed). Like the
hub's Parquet files, the copy has a ``file_path`` column: the attachment's path relative to
the dataset root (this folder), or ``""``. Needs pyarrow (``pip install
'pytest-llmeval[gaia]'``)::

    python evals/gaia/make_parquet.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SPLIT = Path(__file__).parent / "2023" / "validation"


def main() -> None:
    source = SPLIT / "metadata.jsonl"
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line]
    for row in rows:
        name = row["file_name"]
        row["file_path"] = f"2023/validation/{name}" if name else ""
    table = pa.Table.from_pylist(rows)
    pq.write_table(table, SPLIT / "metadata.parquet")
    print(f"wrote {len(rows)} rows to {SPLIT / 'metadata.parquet'}")


if __name__ == "__main__":
    main()
