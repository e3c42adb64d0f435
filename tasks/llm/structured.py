"""Structured output: ask for JSON that fits a pydantic model, read it strictly, explain errors.

Two ways to ask: an endpoint that supports it gets the model's JSON Schema as ``response_format``;
any other gets the schema in the system message (text mode). Either way the reply is read by
:func:`parse_reply`: the JSON itself must be valid (nothing is guessed or patched), but the prose,
```json fences and ``<think>`` blocks models put around it are tolerated. A reply that fails gets
one repair turn (:func:`repair_messages`) that shows the model its answer and the exact error.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ValidationError

SCHEMA_LINE = "JSON Schema of the answer: "
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)```", re.DOTALL)
_MAX_STARTS = 64  # brace positions tried before giving up on a long prose reply


class ReplyError(ValueError):
    """A reply that is not a valid answer; the message says exactly why, for the repair turn."""


@lru_cache(maxsize=256)
def json_schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema (built once per model: pydantic rebuilds it on every ask)."""
    return schema.model_json_schema()


def response_format_for(schema: type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` that asks for ``schema``; strict only where strict mode allows."""
    document = json_schema_of(schema)
    name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64]
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": document, "strict": _strict_compatible(document)},
    }


def _strict_compatible(node: Any) -> bool:
    """OpenAI strict mode needs every object closed and every property required."""
    if isinstance(node, list):
        return all(_strict_compatible(item) for item in node)
    if not isinstance(node, dict):
        return True
    if "properties" in node and (
        node.get("additionalProperties") is not False
        or set(node.get("required", [])) != set(node["properties"])
    ):
        return False
    return all(_strict_compatible(value) for value in node.values())


def with_schema_instruction(
    messages: list[dict[str, Any]], schema: type[BaseModel]
) -> list[dict[str, Any]]:
    """Text mode: the system message (a new one if there is none) ends with the schema."""
    instruction = (
        "Reply with one JSON object and nothing else.\n"
        f"{SCHEMA_LINE}{json.dumps(json_schema_of(schema), separators=(',', ':'))}"
    )
    if messages and messages[0].get("role") == "system":
        first = {**messages[0], "content": f"{messages[0].get('content') or ''}\n\n{instruction}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def parse_reply(text: str, schema: type[BaseModel]) -> BaseModel:
    """The reply's JSON object validated as ``schema``, or ReplyError naming the problem."""
    data = extract_json(text)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise ReplyError(f"the JSON does not match the schema: {describe_errors(exc)}") from None


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object in a reply: inside a fence if there is one, else the first that parses."""
    body = _THINK.sub("", text or "")
    if "</think>" in body.lower():
        body = body[body.lower().rindex("</think>") + len("</think>") :]
    if "<think>" in body.lower():
        raise ReplyError("the reply ends inside a <think> block, before any answer")
    if not body.strip():
        raise ReplyError("the reply is empty")
    candidates = [block for block in _FENCE.findall(body)] or [body]
    first_error = None
    for candidate in candidates:
        found, error = _first_object(candidate)
        if found is not None:
            return found
        first_error = first_error or error
    raise ReplyError(first_error or "no JSON object in the reply")


def _first_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    decoder = json.JSONDecoder()
    first_error = None
    starts = [match.start() for match in re.finditer(r"\{", text)][:_MAX_STARTS]
    for start in starts:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            first_error = first_error or f"invalid JSON: {exc.msg} at char {exc.pos - start}"
            continue
        except RecursionError:  # nested past the interpreter's limit: no answer anyone wants
            return None, "invalid JSON: nested too deeply"
        except ValueError as exc:  # an integer of thousands of digits, say
            return None, f"invalid JSON: {str(exc)[:120]}"
        if isinstance(value, dict):
            return value, None
    return None, first_error


def describe_errors(exc: ValidationError, limit: int = 8) -> str:
    """Pydantic's errors on one line: ``field: message (got value)``, at most ``limit``."""
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(part) for part in error["loc"]) or "(root)"
        got = "" if error["type"] == "missing" else f" (got {_short(error.get('input'))})"
        parts.append(f"{where}: {error['msg']}{got}")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def repair_messages(
    messages: list[dict[str, Any]], bad_reply: str, error: str
) -> list[dict[str, Any]]:
    """The conversation plus the bad answer and a user turn that shows the exact error."""
    return [
        *messages,
        {"role": "assistant", "content": bad_reply},
        {
            "role": "user",
            "content": (
                f"Your answer could not be used: {error}.\n"
                "Reply again with only the corrected JSON object."
            ),
        },
    ]
