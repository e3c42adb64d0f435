"""A tool name a template leaked becomes words, matched as the case-insensitive pattern matches
it (a breaker's: a casefold shortcut missed a dotless ı and a dotted İ)."""

from envmill.tasks.backends.procedural.phrasing.task import scrub_tool_names


def test_tool_names_become_words_in_any_case_the_pattern_matches():
    assert scrub_tool_names("Please call fınd_ıtem", ["find_item"]) == "Please call find item"
    assert scrub_tool_names("FİND_ITEM now", ["find_item"]) == "find item now"
    assert scrub_tool_names("use Cancel_Order, not cancel_orders", ["cancel_order"]) == (
        "use cancel order, not cancel_orders"
    )
