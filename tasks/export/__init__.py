"""The export stage: selected trajectories as files a trainer reads (OpenAI fine-tuning JSONL,
LlamaFactory ShareGPT, Parquet for TRL), split by environment, validated before they are
written."""

from envmill.tasks.export.build import FORMATS, ExportInvalid, ExportPlan, build_export
from envmill.tasks.export.conversation import Unexportable, read_conversation
from envmill.tasks.export.folder import MANIFEST, ExportFolderError, write_export
from envmill.tasks.export.split import split_of

__all__ = [
    "FORMATS",
    "MANIFEST",
    "ExportFolderError",
    "ExportInvalid",
    "ExportPlan",
    "Unexportable",
    "build_export",
    "read_conversation",
    "split_of",
    "write_export",
]
