"""Near-duplicate detection of environments, tasks and initial states (plain functions)."""

from envmill.tasks.dedupe.detect import find_duplicates, pairs_above

__all__ = ["find_duplicates", "pairs_above"]
