"""What an export format is: its name, the file it writes, how a conversation becomes one of the
file's items, how items become the file, and the validator that reads the file back.

Each format's module (``openai``, ``llamafactory``, ``parquet``) declares one of these as
``FORMAT``; :mod:`envmill.tasks.export.formats` lists them, and every list of formats (the
exporter's, the CLI's ``--format`` choices) is that one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envmill.schemas.export import ExportRecord
    from envmill.tasks.export.conversation import Conversation


@dataclass
class ShareGptStats:
    """What a conversion had to change, summed over an export (only LlamaFactory's ShareGPT
    changes turns today)."""

    dropped_texts: int = 0
    joined_turns: int = 0
    cut_turns: int = 0

    def add(self, other: ShareGptStats) -> None:
        self.dropped_texts += other.dropped_texts
        self.joined_turns += other.joined_turns
        self.cut_turns += other.cut_turns


@dataclass(frozen=True)
class ExportFormat:
    """One format a trainer reads.

    ``convert`` may change a conversation to fit the format (``changes_turns``), counting what it
    changed in the stats it is handed; ``dataset_info`` makes the entries a format's loader needs
    beside the files (LlamaFactory's ``dataset_info.json``), from the split files' names.
    """

    name: str
    about: str  # a phrase for --help, e.g. "OpenAI fine-tuning JSONL"
    extension: str
    convert: Callable[[ExportRecord, Conversation, ShareGptStats], Any]
    render: Callable[[list[Any]], bytes]
    validate: Callable[[bytes], list[str]]
    dataset_info: Callable[[dict[str, str]], dict[str, dict[str, Any]]] | None = None
    changes_turns: bool = False
