"""Methods are written a few per call, an entity's together, and each kept as its own part, so a
finding after assembly still names one method to rewrite."""

from __future__ import annotations

from envmill.schemas.skeleton import CodeReply, OperationSpec
from envmill.tasks.backends.llm.skelbuilder.assemble import (
    assemble_module,
    method_problems,
    split_methods,
)
from envmill.tasks.backends.llm.skelbuilder.skeleton import defines_methods, method_groups


def op(name: str, entity: str) -> OperationSpec:
    return OperationSpec(name=name, kind="query", entity=entity, summary=f"{name}.")


def test_an_entity_stays_together_and_small_entities_share_a_call():
    ops = [op(f"loan_{i}", "loan") for i in range(7)] + [op("get_member", "member")]
    ops += [op("get_fine", "Fine"), op("pay_fine", "fine ")]
    groups = method_groups(ops, 6)
    assert sorted(len(g) for g in groups) == [4, 6]  # 7 loans as 4 + 3, and 3 others with them
    assert all(len(g) <= 6 for g in groups)
    loans = [[int(o.name[-1]) for o in g if o.entity == "loan"] for g in groups]
    assert sorted(map(len, loans)) == [3, 4]
    assert all(numbers == list(range(numbers[0], numbers[0] + len(numbers))) for numbers in loans)
    fines = [g for g in groups if any(o.name == "get_fine" for o in g)]
    assert any(o.name == "pay_fine" for o in fines[0])  # "Fine" and "fine " are one entity
    assert sorted(o.name for g in groups for o in g) == sorted(o.name for o in ops)
    assert [len(g) for g in method_groups(ops, 1)] == [1] * 10


ANSWER = '''from datetime import datetime
import json

def get_loan(self, loan_id: str) -> dict:
    """Get a loan."""
    return {"success": True, "data": self._find(loan_id)}

def _find(self, loan_id):
    return dict(self.loans[loan_id])

@staticmethod
def renew_loan(self, loan_id: str) -> dict
    """Renew a loan (this line lacks its colon)."""
    due = datetime.fromisoformat(self.current_time)
    return {"success": True, "message": str(due)}
'''


def test_an_answer_splits_into_one_part_per_method_helpers_and_used_imports_kept():
    parts = split_methods(ANSWER, ["get_loan", "renew_loan"])
    assert list(parts) == ["get_loan", "renew_loan"]
    assert "def _find(self, loan_id)" in parts["get_loan"]  # the helper after its method
    assert "datetime" not in parts["get_loan"] and "import json" not in parts["get_loan"]
    renew = parts["renew_loan"]
    assert renew.startswith("from datetime import datetime\n") and "@staticmethod" in renew
    assert split_methods("no methods here", ["get_loan"]) == {}


def test_a_syntax_error_stays_in_the_method_that_has_it():
    parts = split_methods(ANSWER, ["get_loan", "renew_loan"])
    assert method_problems("get_loan", parts["get_loan"]) == []
    (problem,) = method_problems("renew_loan", parts["renew_loan"])
    assert problem.part == "renew_loan" and "syntax error" in problem.message
    state = "class Desk:\n    def __init__(self):\n        self.loans = {}\n"
    fixed = {**parts, "renew_loan": parts["renew_loan"].replace("-> dict\n", "-> dict:\n", 1)}
    module = assemble_module(state, fixed)
    assert module.source.count("from datetime import datetime") == 1
    assert module.part_of(
        module.source.splitlines().index("    def _find(self, loan_id):") + 1
    ) == ("get_loan")


def test_an_answer_missing_a_method_is_asked_again_naming_it():
    check = defines_methods(["get_loan", "renew_loan", "close_loan"])
    said = check(CodeReply(code=ANSWER))
    assert said is not None and "`def close_loan(self, ...)`" in said and "get_loan" not in said
    assert defines_methods(["get_loan", "renew_loan"])(CodeReply(code=ANSWER)) is None


def test_an_answer_may_not_write_a_method_twice_or_one_it_was_not_asked_for():
    """Breaker: a group that also wrote another call's operation (a stub) replaced the real
    one in the module; a method written twice ran its second copy."""
    extra = defines_methods(["get_loan"])(CodeReply(code=ANSWER))
    assert extra is not None and extra.startswith("`renew_loan` was not asked for")
    twice = ANSWER + "\ndef get_loan(self, loan_id: str) -> dict:\n    return {}\n"
    said = defines_methods(["get_loan", "renew_loan"])(CodeReply(code=twice))
    assert said == "`get_loan` is defined twice; define each method once"


def test_methods_in_a_class_wrapper_with_a_top_level_helper_still_split():
    code = (
        "def _shared(x):\n    return x\n\n"
        "class Desk:\n"
        "    def get_loan(self, loan_id):\n        return {}\n\n"
        "    def renew_loan(self, loan_id):\n        return {}\n"
    )
    names = ["get_loan", "renew_loan"]
    assert defines_methods(names)(CodeReply(code=code)) is None
    assert list(split_methods(code, names)) == names


def test_a_parenthesised_import_is_one_statement_and_indented_lines_are_not_imports():
    code = (
        "from typing import (\n    Any,\n)\n\n"
        "def get_loan(self, loan_id: str) -> dict:\n"
        '    """Get a loan.\n\n    import this docstring line is prose\n    """\n'
        "    if loan_id:\n        import json\n    data: Any = json.dumps({})\n"
        "    return {'success': True, 'data': data}\n"
    )
    (part,) = split_methods(code, ["get_loan"]).values()
    assert part.startswith("from typing import ( Any, )\n")
    assert "    import this docstring line is prose" in part and "        import json" in part
    assert method_problems("get_loan", part) == []


def test_a_helper_two_calls_define_is_sent_back_to_the_later_one():
    from envmill.tasks.backends.llm.skelbuilder.assemble import defined_twice

    state = "class Desk:\n    def __init__(self):\n        self.loans = {}\n"
    helper = "\n\ndef _find(self):\n    return {}\n"
    parts = {
        "get_loan": "def get_loan(self):\n    return self._find()" + helper.format(1),
        "renew_loan": "def renew_loan(self):\n    return self._find()" + helper.format(2),
    }
    (problem,) = defined_twice(assemble_module(state, parts))
    assert problem.part == "renew_loan" and "`_find` is also defined by the method get_loan" in (
        problem.message
    )
    assert defined_twice(assemble_module(state, {"get_loan": parts["get_loan"]})) == []


def test_a_helper_a_repair_dropped_is_named_in_each_method_that_still_calls_it():
    """Breaker: a repair rewrote the part a helper lived in without it; four queries then
    raised AttributeError on every call and the environment was still accepted."""
    from envmill.tasks.backends.llm.skelbuilder.assemble import undefined_helpers

    state = "class Base:\n    def _shared(self):\n        return 0\n\n"
    state += "class Desk(Base):\n    def __init__(self):\n        self.loans = {}\n"
    parts = {
        "get_loan": "def get_loan(self):\n    return self._ok(self._shared())\n",
        "renew_loan": "def renew_loan(self):\n    return self.__class__\n",
    }
    (problem,) = undefined_helpers(assemble_module(state, parts))
    assert problem.part == "get_loan" and problem.message.startswith("calls self._ok(), which no")
    parts["get_loan"] += "\ndef _ok(self, value):\n    return value\n"
    assert undefined_helpers(assemble_module(state, parts)) == []
