"""What the sandbox hands back: one typed outcome per kind of request.

A host's wire reply (``client.HostReply``) stays inside this package, because its shape depends
on the request (``{"result", "state"}`` for a call, ``{"succeeded", "state"}`` for a replay,
``{"results", "unstable"}`` for checks). Callers read these records instead. Each says whether
the host served the request (``ok``) and, when it did not, why: ``error_class`` is one of
``timeout``, ``killed``, ``too_large``, ``protocol``, ``dead``, ``host`` or ``program``.
A failed host is a value, never a raise (DESIGN §5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class SandboxOutcome:
    """``error`` and ``error_class`` are set when the host did not serve the request."""

    error: str | None = None
    error_class: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_class is None


@dataclass(frozen=True)
class LoadOutcome(SandboxOutcome):
    """An environment instance loaded (or a state set): the state the host then reported."""

    state: dict[str, Any] | None = None


@dataclass(frozen=True)
class ToolOutcome(SandboxOutcome):
    """One tool call: the tool's result object and the state after it.

    When the host failed, ``result`` is ``{"success": False, "error": "<class>: <error>"}``,
    what an agent is shown, and ``state`` is None (the episode keeps its last good state).
    """

    result: dict[str, Any]
    state: dict[str, Any] | None = None

    @classmethod
    def host_failed(cls, error: str | None, error_class: str | None) -> ToolOutcome:
        """A failed host as the agent sees it: a tool call that failed, with the reason."""
        result = {"success": False, "error": f"{error_class}: {error}"}
        return cls(result=result, error=error, error_class=error_class)

    @property
    def succeeded(self) -> bool:
        """The host served the call and the tool reported ``success: True``."""
        return self.ok and self.result.get("success") is True


@dataclass(frozen=True)
class ReplayOutcome(SandboxOutcome):
    """Several calls run from one state in one round trip: whether each reported success, and
    the end state (None, with no step succeeded, when the host failed)."""

    succeeded: list[bool]
    state: dict[str, Any] | None = None
    results: list[dict[str, Any]] | None = None  # traced: what each step returned
    states: list[dict[str, Any]] | None = None  # traced: the state after each step


@dataclass(frozen=True)
class CheckCell:
    """One check evaluated on one (initial, final) pair.

    ``value`` is None when the check raised, returned a non-bool, ran out of time, ended its
    process or was not evaluated (``error`` says which); ``mutated``: it changed its arguments;
    ``late``: it gave no answer in time, so the cell proves nothing either way.
    """

    value: bool | None
    error: str | None = None
    mutated: bool = False
    late: bool = False  # no answer in time: evidence of nothing

    @classmethod
    def from_wire(cls, cell: dict[str, Any]) -> CheckCell:
        """A cell as the check runner sends it (the shape ``client.reply_problem`` accepted)."""
        late = cell.get("late") is True
        return cls(value=cell["value"], error=cell["error"], mutated=cell["mutated"], late=late)


@dataclass(frozen=True)
class ChecksOutcome(SandboxOutcome):
    """Checks run on pairs of states: ``cells[i][j]`` is check i on pair j; ``unstable[i]``:
    check i answered differently when run again (it remembers, or reads addresses)."""

    cells: list[list[CheckCell]] = field(default_factory=list)
    unstable: list[bool] = field(default_factory=list)
