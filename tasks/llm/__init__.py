"""The LLM layer: an OpenAI-compatible client with a content cache, structured output, retries
under a deadline, global concurrency and rate limits, and a record of every call.

Nothing here runs unless a caller builds an :class:`LlmClient` (the CLI's ``--backend llm``).
The local test endpoint lives in :mod:`envmill.tasks.offline_llm`.
"""

from envmill.schemas.llm import LlmCallRecord, LlmSettings, Price, StageModel
from envmill.tasks.llm.accounting import CallCollector, estimate_cost, summarize
from envmill.tasks.llm.cache import ResponseCache, request_key
from envmill.tasks.llm.client import LlmClient
from envmill.tasks.llm.limits import CallLimits, Gate, GateTimeout, local_gate, local_limits
from envmill.tasks.llm.prompts import (
    PromptError,
    RenderedPrompt,
    list_prompts,
    render,
)
from envmill.tasks.llm.reply import (
    LlmCallError,
    LlmConfigError,
    LlmError,
    LlmFallbackError,
    LlmGateError,
    LlmReply,
    LlmUnreachableError,
    ToolCall,
)
from envmill.tasks.llm.structured import ReplyError, parse_reply
from envmill.tasks.llm.transport import STAGE_HEADER

__all__ = [
    "CallCollector",
    "CallLimits",
    "Gate",
    "GateTimeout",
    "LlmCallError",
    "LlmCallRecord",
    "LlmClient",
    "LlmConfigError",
    "LlmError",
    "LlmFallbackError",
    "LlmGateError",
    "LlmReply",
    "LlmSettings",
    "LlmUnreachableError",
    "Price",
    "PromptError",
    "RenderedPrompt",
    "ReplyError",
    "STAGE_HEADER",
    "ResponseCache",
    "StageModel",
    "ToolCall",
    "estimate_cost",
    "list_prompts",
    "local_gate",
    "local_limits",
    "parse_reply",
    "render",
    "request_key",
    "summarize",
]
