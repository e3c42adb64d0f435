"""The export stage: selected trajectories as files a trainer reads (OpenAI fine-tuning JSONL,
LlamaFactory ShareGPT, Parquet for TRL), split by environment, validated before they are
written.

Names load from their modules when first used, so the CLI can read the format list
(``FORMATS``) without loading every format's writer (Parquet's is pyarrow).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envmill.tasks.export.build import ExportInvalid, ExportPlan, build_export
    from envmill.tasks.export.conversation import Unexportable, read_conversation
    from envmill.tasks.export.folder import MANIFEST, ExportFolderError, write_export
    from envmill.tasks.export.format import ExportFormat
    from envmill.tasks.export.formats import FORMATS, format_help
    from envmill.tasks.export.split import split_of

_HOME = {
    "ExportInvalid": "build",
    "ExportPlan": "build",
    "build_export": "build",
    "Unexportable": "conversation",
    "read_conversation": "conversation",
    "MANIFEST": "folder",
    "ExportFolderError": "folder",
    "write_export": "folder",
    "ExportFormat": "format",
    "FORMATS": "formats",
    "format_help": "formats",
    "split_of": "split",
}
__all__ = [
    "FORMATS",
    "MANIFEST",
    "ExportFolderError",
    "ExportFormat",
    "ExportInvalid",
    "ExportPlan",
    "Unexportable",
    "build_export",
    "format_help",
    "read_conversation",
    "split_of",
    "write_export",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
