"""The model-style answers to SkelBuilder's writing stages: the design's plan, state code,
operation list, the methods asked for, a part rewritten, and the initial state."""

from __future__ import annotations

import re

from envmill.tasks.offline_llm.model_style.choice import design_of, topic_seed
from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest
from envmill.tasks.offline_llm.skeleton import answer, topic_of

_OPERATIONS = re.compile(r"^Operations to implement: ([\w, ]+)$", re.MULTILINE)
_PART = re.compile(r"^Part to rewrite: (?:the method (\w+)|the state code)", re.MULTILINE)


def _prompt(request: ChatRequest) -> str:
    return (request.texts("user") or [""])[0]


def respond_plan(request: ChatRequest) -> ChatReply:
    return answer(design_of(request).plan)


def respond_state(request: ChatRequest) -> ChatReply:
    return answer({"code": design_of(request).state_code})


def respond_operations(request: ChatRequest) -> ChatReply:
    return answer({"operations": design_of(request).operations})


def respond_method(request: ChatRequest) -> ChatReply:
    """The methods asked for, one after another, the imports they use first."""
    methods = design_of(request).methods
    found = _OPERATIONS.search(_prompt(request))
    names = [n.strip() for n in found.group(1).split(",")] if found else []
    imports: dict[str, None] = {}
    bodies = []
    for name in names:
        code = methods.get(name) or _not_planned(name)
        lines = code.splitlines()
        imports.update(
            dict.fromkeys(line for line in lines if line.startswith(("from ", "import ")))
        )
        bodies.append("\n".join(line for line in lines if line not in imports).strip())
    head = ["\n".join(imports)] if imports else []
    return answer({"code": "\n\n\n".join([*head, *bodies]) + "\n"})


def _not_planned(name: str) -> str:
    """An operation the design never had (a prompt that asks for more): said plainly."""
    return (
        f"def {name}(self) -> dict:\n"
        f'    """{name.replace("_", " ").capitalize()} (not supported by this system)."""\n'
        f'    return {{"success": False, "error": "{name} is not supported"}}\n'
    )


def respond_repair(request: ChatRequest) -> ChatReply:
    """The part named, as the model wrote it: it sees nothing to change in its own design, so a
    repair that envmill asks for shows up as the same refusal again."""
    design = design_of(request)
    found = _PART.search(_prompt(request))
    if found is None or found.group(1) is None:
        return answer({"code": design.state_code})
    return answer({"code": design.methods.get(found.group(1)) or _not_planned(found.group(1))})


def respond_initial_state(request: ChatRequest) -> ChatReply:
    design = design_of(request)
    return answer({"state": design.build_state(topic_seed(topic_of(request)), -1, "change")})
