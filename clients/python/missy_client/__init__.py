"""Python client of missyd (standard library only). See clients/python/README.md."""

from .client import MissyClient, anthropic_messages, default_socket_path
from .errors import (AlreadyExists, Conflict, ConnectionError, ContextOverflow,
                     HeadersTooLarge, InternalError, InvalidArgument, MethodNotAllowed,
                     MissyConnectionError, MissyError, NotFound, PayloadTooLarge,
                     Unavailable, Unprocessable)
from .tools import (RECALL_TOOL_NAME, anthropic_recall_tool, handle_recall, handle_tool_call,
                    openai_recall_tool)

__all__ = [
    "MissyClient", "anthropic_messages", "default_socket_path",
    "MissyError", "InvalidArgument", "NotFound", "MethodNotAllowed", "AlreadyExists",
    "Conflict", "PayloadTooLarge", "HeadersTooLarge", "Unprocessable", "ContextOverflow",
    "InternalError", "Unavailable", "MissyConnectionError",  # errors.ConnectionError: same class
    "RECALL_TOOL_NAME", "openai_recall_tool", "anthropic_recall_tool", "handle_recall",
    "handle_tool_call",
]
