"""Every export format, each declared by its own module: the one list the exporter and the CLI's
``--format`` choices take theirs from (``schemas/`` names none: only ``tasks/`` and above need
them)."""

from __future__ import annotations

from envmill.tasks.export import llamafactory, openai, parquet
from envmill.tasks.export.format import ExportFormat

FORMATS: dict[str, ExportFormat] = {
    module.FORMAT.name: module.FORMAT for module in (openai, llamafactory, parquet)
}


def format_help() -> str:
    """The formats for a command's help: ``openai (OpenAI fine-tuning JSONL), …``."""
    return ", ".join(f"{name} ({spec.about})" for name, spec in FORMATS.items())
