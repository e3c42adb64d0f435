"""How a status change is said (core/status_words.py): the verb for what the agent did, "marked"
for what happened, "now" for a state; the status word itself always stays."""

from __future__ import annotations

from envmill.tasks.core.status_words import status_kind, status_news


def test_each_kind_of_status_reads_as_a_person_says_it():
    assert status_kind("cancelled") == "action"
    assert status_kind("withdrawn") == "action"
    assert status_kind("delivered") == "recorded"
    assert status_kind("on hold") == "state"
    assert status_kind("available") == "state"
    said = {status_news("booking B1", "checked in", pick) for pick in range(6)}
    assert "I've checked in booking B1" in said and "booking B1 has been checked in" in said
    assert status_news("item I1", "returned to stock", 0) == "I've returned item I1 to stock"
    marked = {status_news("order O1", "delivered", pick) for pick in range(4)}
    assert marked == {"I've marked order O1 as delivered", "order O1 is now marked delivered"}
    assert all("on hold" in status_news("matter M1", "on hold", p) for p in range(6))
