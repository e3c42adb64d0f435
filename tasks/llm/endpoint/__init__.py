"""A local OpenAI-compatible endpoint for tests and benchmarks (DESIGN §8); never used in runs.

``serve_endpoint()`` serves on a thread; ``python -m envmill.tasks.llm.endpoint --port 0`` serves
in its own process and prints its URL on the first line. Responders are registered per stage.
"""

from envmill.tasks.llm.endpoint.control import Endpoint, serve_endpoint, start_server
from envmill.tasks.llm.endpoint.faults import Fault
from envmill.tasks.llm.endpoint.responders import (
    ChatReply,
    ChatRequest,
    embed_text,
    example_value,
    generic,
    register,
)
from envmill.tasks.llm.endpoint.server import EndpointConfig
from envmill.tasks.llm.endpoint.topics import respond_topics, warm_topics

register("topics", respond_topics, warm_topics)

__all__ = [
    "ChatReply",
    "ChatRequest",
    "Endpoint",
    "EndpointConfig",
    "Fault",
    "embed_text",
    "example_value",
    "generic",
    "register",
    "respond_topics",
    "serve_endpoint",
    "start_server",
]
