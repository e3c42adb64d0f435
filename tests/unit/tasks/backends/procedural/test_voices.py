"""Who speaks in a conversation, and how a namesake is told apart (round 28: 84 % of the
conversations were staff relaying a task; "the one whose stock is 19")."""

from __future__ import annotations

from envmill.tasks.backends.procedural.scenarios.chains import ArgMention
from envmill.tasks.backends.procedural.scenarios.generate import talk_share
from envmill.tasks.backends.procedural.scenarios.namesakes import _telling_fields


def test_a_client_speaking_for_themself_talks_more_often_than_staff():
    assert talk_share(0.3, "self") == 0.6
    assert talk_share(0.3, "staff") == 0.3 and talk_share(0.3, None) == 0.3
    assert talk_share(0.7, "self") == 1.0  # a share, never above one


def test_a_namesake_is_told_apart_by_what_a_person_knows_not_a_count_or_an_amount():
    target = {"name": "Cast Iron Skillet", "stock": 19, "price": 34.5, "size": "12 inch"}
    other = {"name": "Cast Iron Skillet", "stock": 4, "price": 29.0, "size": "10 inch"}
    mention = ArgMention("product_id", "P-1", "entity_id", "product", "Cast Iron Skillet", "name",
                         by_label=True)  # fmt: skip
    assert _telling_fields({"P-1": target, "P-2": other}, target, mention, "P-2") == ["size"]
