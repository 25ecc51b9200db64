"""Stream the rows of a local data set in batches, with bounded memory.

Parquet is read row group by row group (pyarrow ``iter_batches``), CSV block by block
(``pyarrow.csv.open_csv``), JSONL line by line, and a saved Hugging Face ``datasets`` folder through
its memory-mapped Arrow files (``Dataset.iter``). Only a JSON *array* file has to be parsed whole
(the format has no streaming form); it is refused above ``MAX_JSON_ARRAY_BYTES`` with the fix.
Rows come out as plain dicts, as the frameworks' loaders see them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

from advisor.errors import AdvisorError

BATCH_ROWS = 1024
MAX_JSON_ARRAY_BYTES = 512 << 20
FILE_TYPES = ("parquet", "jsonl", "json", "csv", "hf_disk")


def file_type(path: Path) -> str:
    """parquet | jsonl | json | csv | hf_disk, from the suffix or the folder's contents."""
    if path.is_dir():
        if any((path / n).exists() for n in ("dataset_info.json", "state.json", "dataset_dict.json")):
            return "hf_disk"
        if any(path.glob("*.parquet")):
            return "parquet"
        raise AdvisorError("a folder that is neither a saved datasets folder nor parquet files", field="path",
                           value=str(path), allowed="a .parquet/.jsonl/.json/.csv file, a folder of parquet files, "
                           "or a folder written by datasets' save_to_disk")
    suffix = path.suffix.lower()
    kind = {".parquet": "parquet", ".jsonl": "jsonl", ".json": "json", ".csv": "csv"}.get(suffix)
    if kind is None:
        raise AdvisorError(f"unsupported file type {suffix or '(none)'}", field="path", value=str(path),
                           allowed="parquet, JSON/JSONL, CSV, or a saved datasets folder")
    return kind


def iter_batches(path: Path, kind: str | None = None, *, batch_rows: int = BATCH_ROWS, max_rows: int | None = None,
                 split: str = "train") -> Iterator[list[dict[str, Any]]]:
    """Batches of row dicts, at most ``max_rows`` rows in all."""
    kind = kind or file_type(path)
    reader = {"parquet": _parquet, "jsonl": _jsonl, "json": _json, "csv": _csv, "hf_disk": _hf_disk}[kind]
    left = max_rows
    try:
        for batch in reader(path, batch_rows, split):
            if left is not None:
                batch = batch[:left]
                left -= len(batch)
            if batch:
                yield batch
            if left is not None and left <= 0:
                return
    except AdvisorError:
        raise
    except OSError as exc:
        raise AdvisorError(f"cannot read: {exc.strerror or exc}", field="path", value=str(path)) from None
    except Exception as exc:  # noqa: BLE001 - pyarrow/datasets raise many types; all mean "unreadable"
        raise AdvisorError(f"cannot read as {kind}: {type(exc).__name__}: {str(exc)[:300]}", field="path",
                           value=str(path)) from None


def _parquet(path: Path, batch_rows: int, split: str) -> Iterator[list[dict[str, Any]]]:
    import pyarrow.parquet as pq

    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    for f in files:
        pf = pq.ParquetFile(f)
        # one row group at a time: ParquetFile.iter_batches reads ahead and its Arrow memory grows
        # with the file (measured: 760 MB peak for a 614 MB file); this keeps one group resident
        for i in range(pf.num_row_groups):
            table = pf.read_row_group(i)
            for rb in table.to_batches(max_chunksize=batch_rows):
                yield rb.to_pylist()
            del table


def _jsonl(path: Path, batch_rows: int, split: str) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise AdvisorError(f"line {line_no} is not JSON: {exc.msg}", field="path",
                                   value=f"{path}:{line_no}", allowed="one JSON object per line") from None
            if not isinstance(row, dict):
                raise AdvisorError(f"line {line_no} is a JSON {type(row).__name__}, not an object", field="path",
                                   value=f"{path}:{line_no}", allowed="one JSON object per line")
            batch.append(row)
            if len(batch) >= batch_rows:
                yield batch
                batch = []
    if batch:
        yield batch


def _json(path: Path, batch_rows: int, split: str) -> Iterator[list[dict[str, Any]]]:
    with open(path, encoding="utf-8") as fh:
        head = fh.read(4096).lstrip()
    if not head.startswith("["):
        yield from _jsonl(path, batch_rows, split)  # datasets' json loader reads JSON Lines in .json files too
        return
    if os.path.getsize(path) > MAX_JSON_ARRAY_BYTES:
        raise AdvisorError(f"a JSON array over {MAX_JSON_ARRAY_BYTES >> 20} MiB cannot be streamed", field="path",
                           value=str(path), allowed="JSON Lines (one object per line) or parquet")
    with open(path, encoding="utf-8") as fh:
        rows = json.load(fh)
    for i in range(0, len(rows), batch_rows):
        yield [r if isinstance(r, dict) else {"value": r} for r in rows[i:i + batch_rows]]


def _csv(path: Path, batch_rows: int, split: str) -> Iterator[list[dict[str, Any]]]:
    import pyarrow.csv as pacsv

    reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=1 << 20))
    for rb in reader:
        rows = rb.to_pylist()
        for i in range(0, len(rows), batch_rows):
            yield rows[i:i + batch_rows]


def _hf_disk(path: Path, batch_rows: int, split: str) -> Iterator[list[dict[str, Any]]]:
    import datasets

    ds = datasets.load_from_disk(str(path))
    if isinstance(ds, datasets.DatasetDict):
        if split not in ds:
            raise AdvisorError(f"no split {split!r} in this DatasetDict", field="split", value=split,
                               allowed=", ".join(ds.keys()))
        ds = ds[split]
    for cols in ds.iter(batch_size=batch_rows):
        keys = list(cols)
        n = len(cols[keys[0]]) if keys else 0
        yield [{k: cols[k][i] for k in keys} for i in range(n)]


def first_rows(path: Path, kind: str, n: int, split: str = "train") -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for batch in iter_batches(path, kind, batch_rows=max(1, n), max_rows=n, split=split):
        rows.extend(batch)
    return rows
