"""Writing an export into a folder the user may share with other files, without losing any.

envmill writes only the files of the export (``train.*``, ``validation.*``), its manifest
``envmill-export.json`` (what was exported, and each file's SHA-256) and, for LlamaFactory, its
own entries (``envmill_*``) merged into ``dataset_info.json``, whose other entries stay as
they are. A file of the export that is already there is replaced only if the manifest says
envmill wrote it and it is unchanged since; otherwise the export is refused unless ``force``.
Files of the earlier export that this one does not write (``validation.*`` of an export that
had a split, another format's files) are removed when unchanged, so the folder holds one export.
Other files are never touched.

Each file is written under a temporary name and renamed. The manifest is written first with the
old and new SHA-256 of every file it replaces, and again at the end: an export that dies midway
leaves files the next export still recognizes as its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envmill.tasks.export.build import DATASET_INFO, ExportPlan
from envmill.tasks.export.llamafactory import ENTRY_PREFIX, validate_dataset_info

MANIFEST = "envmill-export.json"


class ExportFolderError(ValueError):
    """The folder cannot take the export; the message is one line a user can act on."""


@dataclass
class Written:
    """The files an export wrote (the manifest last) and those of the earlier one it removed."""

    files: list[str]
    removed: list[str]


def write_export(folder: Path, plan: ExportPlan, about: dict[str, Any], force: bool) -> Written:
    """Write ``plan``'s files into ``folder`` (created if missing), with the manifest.

    Args:
        folder: the export folder.
        plan: the rendered, validated files.
        about: what the manifest records besides the files (format, selection, split, counts).
        force: replace files of the export's names that envmill did not write.

    Raises:
        ExportFolderError: the folder is not a directory, a file of the export's names is not
            envmill's (without ``force``), or ``dataset_info.json`` is not a JSON object.
    """
    _make_folder(folder)
    owned = _owned(folder)
    conflicts = [n for n in [*plan.files, MANIFEST] if (folder / n).exists() and n not in owned]
    if conflicts and not force:
        raise ExportFolderError(
            f"{folder / conflicts[0]} exists and is not an unchanged file of an earlier envmill "
            "export; move it, choose another --to, or pass --force to replace it"
        )
    info = _merged_dataset_info(folder, plan)
    new = {name: _sha256(data) for name, data in plan.files.items()}
    replacing = {name: sha for name, sha in owned.items() if name != MANIFEST}
    _write_manifest(folder, about, plan, new, replacing)
    for name, data in plan.files.items():
        write_atomically(folder / name, data)
    if info is not None:
        write_atomically(folder / DATASET_INFO, _dump_info(info))
    removed = sorted(name for name in replacing if name not in new)
    for name in removed:
        (folder / name).unlink(missing_ok=True)
    _write_manifest(folder, about, plan, new, {})
    written = [*plan.files, *([DATASET_INFO] if info is not None else []), MANIFEST]
    return Written(files=written, removed=removed)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` under a temporary name beside ``path`` and rename it into place."""
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ExportFolderError(f"{folder} is not a directory") from None
    except OSError as exc:
        raise ExportFolderError(f"cannot create {folder}: {exc.strerror}") from None


def _owned(folder: Path) -> dict[str, str]:
    """The files an earlier export wrote and nobody changed since: name -> SHA-256 (the
    manifest's own entry has none)."""
    manifest = _read_json(folder / MANIFEST)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return {}
    known: dict[str, set[str]] = {}
    for name, entry in manifest["files"].items():
        known.setdefault(name, set()).add(entry.get("sha256") if isinstance(entry, dict) else "")
    replacing = manifest.get("replacing")
    for name, sha in (replacing if isinstance(replacing, dict) else {}).items():
        known.setdefault(name, set()).add(sha)
    owned = {MANIFEST: ""}
    for name, shas in known.items():
        path = folder / name
        if Path(name).name == name and path.is_file() and (sha := _sha256_file(path)) in shas:
            owned[name] = sha
    return owned


def _merged_dataset_info(folder: Path, plan: ExportPlan) -> dict[str, Any] | None:
    """``dataset_info.json`` with envmill's entries set to this export's (other entries kept),
    or None when the file needs no change."""
    path = folder / DATASET_INFO
    if not path.exists() and not plan.dataset_info:
        return None
    current = _read_json(path) if path.exists() else {}
    if not isinstance(current, dict):
        raise ExportFolderError(f"{path} is not a JSON object; move it or fix it first")
    kept = {k: v for k, v in current.items() if not k.startswith(ENTRY_PREFIX)}
    merged = kept | plan.dataset_info
    problems = validate_dataset_info(merged, set(plan.files))
    if problems:
        raise ExportFolderError(f"{path}: {problems[0]}")
    return None if merged == current else merged


def _write_manifest(
    folder: Path,
    about: dict[str, Any],
    plan: ExportPlan,
    new: dict[str, str],
    replacing: dict[str, str],
) -> None:
    files = {name: {"sha256": sha, "rows": plan.rows[name]} for name, sha in new.items()}
    manifest = {**about, "files": files}
    if replacing:
        manifest["replacing"] = replacing
    text = json.dumps(manifest, ensure_ascii=False, indent=2) + "\n"
    write_atomically(folder / MANIFEST, text.encode("utf-8"))


def _dump_info(info: dict[str, Any]) -> bytes:
    return (json.dumps(info, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
