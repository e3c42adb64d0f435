"""The warehouse's write side: a data folder of Parquet parts, one validated batch per file.

Every batch is built with its table's explicit Arrow schema, validated by the table's pandera model,
written under a temporary name and renamed, so no reader ever sees a partial file and a rerun with
the same key replaces its part instead of duplicating it (DESIGN §3.5). A part becomes visible
only when a commit record lists it (``warehouse.commits``).
"""

from __future__ import annotations

import json
import numbers
import os
import re
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from envmill.schemas.ids import canonical_json, sha256_hex
from envmill.schemas.tables import TABLES, TableSpec
from envmill.tasks.core.regular_file import MiB, read_regular
from envmill.warehouse.commits import Commit, PartInfo, describe_part, part_name, publish

MARKER_LIMIT = MiB  # the folder's marker: a format name and version

if TYPE_CHECKING:
    from pandera.errors import SchemaErrors

FORMAT_NAME = "envmill-warehouse"
# 1.1: failures.code, failures.details_json; 1.2: topics; 1.3: scenarios.repairs;
# 2.0: a part is read only when its commit record (_commits/) lists it
# 2.1: scenarios.expected_answer_json, refusal_json; 2.2: environments.warnings_json
# 2.3: scenarios.turns_json, withheld_tools_json, expected_results_json, source, split;
# environments.origin (NULL in older parts: readers take the defaults)
FORMAT_VERSION = "2.3"
MARKER = "envmill.json"
ROW_GROUP_SIZE = 50_000
_OWN_TRANSIENTS = (f"{MARKER}.tmp-", ".envmill-probe-")
_PY_TYPES: dict[str, type | tuple[type, ...]] = {
    "int64": numbers.Integral,
    "double": numbers.Real,
    "bool": bool,
    "string": str,
}


_VALIDATION_LOCK = threading.Lock()


class WarehouseError(ValueError):
    """A refused folder or batch; the message is one line a user can act on."""


def resolve_data_dir(out: str | None = None) -> Path:
    """Pick the data folder: ``--out``, else ``ENVMILL_HOME``, else ``./envmill-data``."""
    chosen = out or os.environ.get("ENVMILL_HOME") or "envmill-data"
    return Path(chosen).expanduser().absolute()


class Warehouse:
    """An opened data folder; opening checks (or creates) its format marker.

    Args:
        root: the data folder; created with its ``envmill.json`` if missing or empty.

    Raises:
        WarehouseError: the folder holds another major format version, is not an envmill
            folder, has an unreadable marker, or cannot be written.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).absolute()
        self._open()

    def _open(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WarehouseError(f"cannot create data folder {self.root}: {exc.strerror}") from exc
        if not self.root.is_dir():
            raise WarehouseError(f"data folder {self.root} is not a directory")
        marker = self.root / MARKER
        if marker.exists():
            check_format(marker)
            probe_writable(self.root)
        elif _has_foreign_entries(self.root):
            raise WarehouseError(
                f"{self.root} is not empty and has no {MARKER}: not an envmill data folder; "
                "choose another --out"
            )
        else:
            _write_marker(marker)

    def table_dir(self, table: str) -> Path:
        return self.root / spec_of(table).name

    def write(self, table: str, rows: list[dict[str, Any]], key: str | None = None) -> Path:
        """Validate ``rows``, write them as one part of ``table`` and commit it, atomically.

        Args:
            table: a name in ``TABLES``.
            rows: one dict per row; ``*_json`` values may be objects (serialized as canonical
                JSON) or JSON text; timestamps may be datetimes or ISO 8601 text.
            key: names the part within the table; the same key replaces the earlier part.
                Defaults to a hash of the batch content, so writing the same batch twice writes
                one part.

        Returns:
            The path of the written part.

        Raises:
            WarehouseError: the batch does not fit the table's schema; nothing is written.
        """
        spec = spec_of(table)
        own_key = sanitize_key(key) if key is not None else content_key(rows)
        commit_key = sanitize_key(f"{spec.name}-{own_key}")
        arrow = checked_table(spec, rows)
        info = self.write_part(spec.name, arrow, commit_key)
        publish(self.root, Commit(key=commit_key, parts={spec.name: info}))
        return self.table_dir(spec.name) / info.file

    def write_part(self, table: str, arrow: pa.Table, key: str) -> PartInfo:
        """Write a checked batch (:func:`checked_table`) as ``<table>/part-<key>.parquet``; it
        stays unread until a commit lists it."""
        folder = self.table_dir(table)
        folder.mkdir(exist_ok=True)
        target = _write_atomic(arrow, folder / part_name(key))
        return describe_part(target, arrow.num_rows)


def checked_table(spec: TableSpec, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows as an Arrow table of the table's schema, validated; WarehouseError if they do not
    fit."""
    arrow = build_table(spec, rows)
    validate_table(spec, arrow)
    return arrow


def spec_of(table: str) -> TableSpec:
    try:
        return TABLES[table]
    except KeyError:
        raise WarehouseError(f"unknown table {table!r}; known: {', '.join(TABLES)}") from None


def check_format(marker: Path) -> None:
    """Refuse a marker this code cannot read: storage formats change only with the major version."""
    try:
        info = json.loads(read_regular(marker, MARKER_LIMIT).decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WarehouseError(f"{marker} is not readable JSON ({exc}); fix or remove it") from exc
    if not isinstance(info, dict) or info.get("format") != FORMAT_NAME:
        raise WarehouseError(f"{marker} does not describe an {FORMAT_NAME} folder")
    version = str(info.get("version", ""))
    if version.split(".")[0] != FORMAT_VERSION.split(".")[0]:
        raise WarehouseError(
            f"{marker.parent} holds warehouse format {version or '?'}; this envmill reads "
            f"{FORMAT_VERSION.split('.')[0]}.x; use a matching envmill or another --out"
        )


def probe_writable(root: Path) -> None:
    """Try a real write: ``os.access`` says yes to root even on read-only mounts."""
    probe = root / f".envmill-probe-{uuid.uuid4().hex}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise WarehouseError(f"data folder {root} is not writable: {exc.strerror}") from exc


def _has_foreign_entries(root: Path) -> bool:
    """True if the folder holds anything but the transients of a concurrent opener of it."""
    return any(not p.name.startswith(_OWN_TRANSIENTS) for p in root.iterdir())


def _write_marker(marker: Path) -> None:
    text = json.dumps({"format": FORMAT_NAME, "version": FORMAT_VERSION}, indent=2) + "\n"
    tmp = marker.with_name(f"{MARKER}.tmp-{uuid.uuid4().hex}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, marker)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise WarehouseError(
            f"data folder {marker.parent} is not writable: {exc.strerror}"
        ) from exc


def sanitize_key(key: str) -> str:
    """Make a part key a safe file name; an altered or long key gets a hash to stay distinct."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", key)
    if not safe or safe != key or len(safe) > 96:
        safe = f"{safe[:80]}-{sha256_hex(key)[:12]}".lstrip("-")
    return safe


def content_key(rows: list[dict[str, Any]]) -> str:
    """A part key from the batch content: the same batch always lands in the same part."""
    return sha256_hex(json.dumps(rows, sort_keys=True, default=str, ensure_ascii=False))[:16]


def build_table(spec: TableSpec, rows: list[dict[str, Any]]) -> pa.Table:
    """Convert rows to an Arrow table of the table's exact schema (pandera will not coerce)."""
    now = datetime.now(UTC)
    converted = [_convert_row(spec, i, row, now) for i, row in enumerate(rows)]
    try:
        return pa.Table.from_pylist(converted, schema=spec.arrow_schema)
    except (pa.ArrowException, OverflowError) as exc:
        raise WarehouseError(f"table {spec.name}: {_one_line(exc)}") from exc


def _convert_row(spec: TableSpec, index: int, row: dict[str, Any], now: datetime) -> dict:
    schema = spec.arrow_schema
    unknown = sorted(set(row) - set(schema.names))
    missing = [
        f.name
        for f in schema
        if not f.nullable and f.name not in row and f.name not in spec.defaults_now
    ]
    if unknown or missing:
        problems = [
            f"{what} columns {cols}"
            for what, cols in (("unknown", unknown), ("missing", missing))
            if cols
        ]
        raise WarehouseError(f"table {spec.name} row {index}: {', '.join(problems)}")
    out = {}
    for f in schema:
        value = row.get(f.name, now if f.name in spec.defaults_now else None)
        out[f.name] = _convert_value(spec.name, index, f, value)
    return out


# A state keeps its key order: an environment lists its records in the order they were added
# (``for order in self.orders.values()``), so the order is behaviour, and a rollout must start
# from the state its reference started from, not from one re-sorted on the way through here.
ORDERED_JSON = frozenset({"initial_state_json"})


def _convert_value(table: str, index: int, f: pa.Field, value: Any) -> Any:
    """Turn one Python value into what the Arrow type expects, refusing silent casts."""
    if value is None:
        return None
    where = f"table {table} row {index} column {f.name}"
    if f.name.endswith("_json"):
        return _to_json_text(where, value, ordered=f.name in ORDERED_JSON)
    if pa.types.is_timestamp(f.type):
        return _to_utc(where, value)
    if not _fits_type(f.type, value):
        raise WarehouseError(f"{where}: expected {f.type}, got {type(value).__name__}")
    return value


def _fits_type(arrow_type: pa.DataType, value: Any) -> bool:
    """Arrow would cast 1.5 into an int64 column as 1; refuse such values instead."""
    expected = _PY_TYPES.get(str(arrow_type))
    if expected is None:
        return True
    return isinstance(value, expected) and (expected is bool or not isinstance(value, bool))


def _to_json_text(where: str, value: Any, ordered: bool = False) -> str:
    """Objects become canonical JSON; text must already be JSON, and is re-canonicalized. An
    ``ordered`` column keeps its objects' key order (compact, not sorted)."""
    try:
        obj = json.loads(value) if isinstance(value, str) else value
        if ordered:
            return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return canonical_json(obj)
    except (TypeError, ValueError) as exc:
        raise WarehouseError(f"{where}: not JSON ({_one_line(exc)})") from exc


def _to_utc(where: str, value: Any) -> datetime:
    """Timestamps are stored in UTC; naive values are taken as UTC."""
    try:
        stamp = datetime.fromisoformat(value) if isinstance(value, str) else value
    except ValueError as exc:
        raise WarehouseError(f"{where}: not an ISO 8601 timestamp: {value!r}") from exc
    if not isinstance(stamp, datetime):
        raise WarehouseError(f"{where}: expected a timestamp, got {type(value).__name__}")
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


def validate_table(spec: TableSpec, table: pa.Table) -> None:
    """Run the table's pandera model lazily and report the first failure cases in one line.

    pandera is imported here, the one place that needs it: with pandas under it, it takes about
    a second of CPU to import, which a process that only reads never pays.

    One validation at a time per process: pandera imports its engines on first use, and two
    threads racing there (llm tasks share a worker process) saw a half-imported module.
    Validation is CPU work under the GIL, so the lock costs no parallelism.
    """
    from pandera.errors import SchemaError, SchemaErrors

    from envmill.schemas.table_models import MODELS

    try:
        with _VALIDATION_LOCK:
            MODELS[spec.name].validate(table, lazy=True)
    except SchemaErrors as exc:
        raise WarehouseError(f"table {spec.name}: invalid batch: {_summarize(exc)}") from exc
    except SchemaError as exc:
        raise WarehouseError(f"table {spec.name}: invalid batch: {_one_line(exc)}") from exc


def _summarize(exc: SchemaErrors, limit: int = 5) -> str:
    cases = exc.failure_cases
    if not isinstance(cases, pa.Table) or cases.num_rows == 0:
        return "; ".join(_one_line(e) for e in exc.schema_errors[:limit])
    rows = cases.select(["column", "check", "failure_case"]).to_pylist()[:limit]
    more = f" (+{cases.num_rows - limit} more)" if cases.num_rows > limit else ""
    text = [f"{r['column']}: {r['check']} failed for {_clip(r['failure_case'])}" for r in rows]
    return "; ".join(text) + more


def _clip(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def _write_atomic(table: pa.Table, target: Path) -> Path:
    """Write to ``<target>.tmp-<uuid>`` then rename: readers glob ``*.parquet`` and never see it."""
    tmp = target.with_name(f"{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        pq.write_table(table, tmp, compression="zstd", row_group_size=ROW_GROUP_SIZE)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
