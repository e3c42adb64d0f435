"""Prompt templates: readable Markdown files under ``prompts/``, rendered with Jinja2.

A template is a sequence of role sections, each opened by a line ``## system``, ``## user`` or
``## assistant``. The messages hold the template's text and nothing else: the stage travels
beside them (the client's ``X-Envmill-Stage`` header and the cache key's ``stage``), never inside
a prompt a model reads. ``prompt_hash`` is the hash of the template file, so every artifact can
record which prompt made it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

PROMPTS_DIR = Path(__file__).with_name("prompts")
_ROLE_LINE = re.compile(r"^## (system|user|assistant)[ \t]*$", re.MULTILINE)
_JINJA = jinja2.Environment(
    undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False
)


class PromptError(ValueError):
    """A template that does not exist, is malformed, or lacks a variable it uses."""


@dataclass(frozen=True)
class RenderedPrompt:
    """Chat messages ready to send, and the hash of the template that made them."""

    stage: str
    messages: list[dict[str, str]]
    prompt_hash: str


def list_prompts() -> list[str]:
    """Names of the shipped templates (file stems), sorted."""
    return sorted(path.stem for path in PROMPTS_DIR.glob("*.md"))


def render(name: str, **variables: Any) -> RenderedPrompt:
    """Render template ``name`` into messages (its stage is ``name``)."""
    sections, prompt_hash = _load(name)
    messages = []
    for role, template in sections:
        try:
            content = template.render(**variables).strip()
        except jinja2.UndefinedError as exc:
            raise PromptError(f"prompt '{name}': {exc.message}") from None
        messages.append({"role": role, "content": content})
    return RenderedPrompt(stage=name, messages=messages, prompt_hash=prompt_hash)


@lru_cache(maxsize=64)
def _load(name: str) -> tuple[list[tuple[str, jinja2.Template]], str]:
    path = PROMPTS_DIR / f"{name}.md"
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or not path.is_file():
        raise PromptError(f"prompt '{name}': no such template (known: {', '.join(list_prompts())})")
    text = path.read_text(encoding="utf-8")
    heads = list(_ROLE_LINE.finditer(text))
    if not heads or heads[0].group(1) != "system":
        raise PromptError(f"prompt '{name}': must open with a '## system' section")
    sections = []
    for head, following in zip(heads, [*heads[1:], None], strict=True):
        body = text[head.end() : following.start() if following else len(text)]
        try:
            sections.append((head.group(1), _JINJA.from_string(body)))
        except jinja2.TemplateSyntaxError as exc:
            raise PromptError(
                f"prompt '{name}', {head.group(1)} section line {exc.lineno}: {exc.message}"
            ) from None
    return sections, hashlib.sha256(text.encode()).hexdigest()[:16]
