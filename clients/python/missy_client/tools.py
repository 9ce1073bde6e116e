"""The missy_recall tool: its definition for the model and the handler of its calls.

A context's summary headers read ``[Conversation Summary — ...; id sum_..., originals
via missy_recall]``. Hand the model the tool (OpenAI ``tools`` entry or Anthropic
``tools`` entry, exactly as docs/API.md documents them), and answer its calls with
:func:`handle_recall`, which calls ``POST /v1/sessions/{id}/recall`` and returns the
answer's ``text`` as the tool result.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Optional, Union

from .errors import ConnectionError as MissyConnectionError
from .errors import MissyError

RECALL_TOOL_NAME = "missy_recall"

RECALL_TOOL_DESCRIPTION = (
    "Recall the original messages of this conversation that were summarized. Give "
    "summary_id (from a [Conversation Summary ... id sum_...] header) to read what that "
    "summary replaced, page by page with after_seq; or give query to search this "
    "conversation's earlier messages for exact details (file paths, error text, commands).")

RECALL_TOOL_PARAMETERS: dict = {
    "type": "object",
    "properties": {
        "summary_id": {"type": "string", "description": "id from a Conversation Summary header"},
        "query": {"type": "string", "description": "words to search this conversation for"},
        "after_seq": {"type": "integer",
                      "description": "continue a summary after this seq (next_after_seq)"},
    },
    "additionalProperties": False,
}

DEFAULT_RECALL_MAX_TOKENS = 4000  # the daemon's default too

_RECALL_FIELDS = ("summary_id", "query", "after_seq", "max_tokens")


def openai_recall_tool() -> dict:
    """The OpenAI ``tools`` entry (a fresh copy: callers may modify it)."""
    return {"type": "function", "function": {
        "name": RECALL_TOOL_NAME,
        "description": RECALL_TOOL_DESCRIPTION,
        "parameters": copy.deepcopy(RECALL_TOOL_PARAMETERS),
    }}


def anthropic_recall_tool() -> dict:
    """The Anthropic ``tools`` entry: the same name and description, the parameters as
    ``input_schema``."""
    return {
        "name": RECALL_TOOL_NAME,
        "description": RECALL_TOOL_DESCRIPTION,
        "input_schema": copy.deepcopy(RECALL_TOOL_PARAMETERS),
    }


def handle_recall(client: Any, session_id: str, arguments: Union[str, dict, None],
                  max_tokens: Optional[int] = DEFAULT_RECALL_MAX_TOKENS) -> str:
    """Answers one missy_recall call: the text to return as the tool result.

    ``arguments`` is the call's arguments as the provider gives them: JSON text (OpenAI
    ``function.arguments``) or a dict (Anthropic ``input``). Null or empty values are
    treated as absent (models often fill every parameter); ``max_tokens`` bounds the
    answer unless the arguments set it. A call the daemon refuses (both or neither of
    summary_id and query, an unknown summary id, a bad value) is answered with an error
    text the model can act on; an unreachable daemon or a daemon fault raises.
    """
    parsed = _parse_arguments(arguments)
    if isinstance(parsed, str):
        return parsed
    unknown = sorted(set(parsed) - set(_RECALL_FIELDS))
    if unknown:
        return _error_text(f"unknown argument {', '.join(unknown)} "
                           f"(expected summary_id or query, and after_seq)")
    fields = {k: v for k, v in parsed.items() if v is not None and v != ""}
    for key in ("after_seq", "max_tokens"):  # some models send numbers as strings
        if isinstance(fields.get(key), str) and fields[key].strip().isdigit():
            fields[key] = int(fields[key])
    if max_tokens is not None:
        fields.setdefault("max_tokens", max_tokens)
    try:
        answer = client.recall(session_id, **fields)
    except MissyConnectionError:
        raise
    except MissyError as e:
        if e.status >= 500 or e.status == 0:
            raise
        field = f" ({e.field})" if e.field else ""
        return _error_text(f"{e.message}{field}")
    text = answer.get("text", "")
    return text if text else "missy_recall: nothing found."


def handle_tool_call(client: Any, session_id: str, name: str,
                     arguments: Union[str, dict, None], **kwargs: Any) -> Optional[str]:
    """The dispatcher: the tool result for a missy_recall call, None for other tools."""
    if name != RECALL_TOOL_NAME:
        return None
    return handle_recall(client, session_id, arguments, **kwargs)


def _parse_arguments(arguments: Union[str, dict, None]) -> Union[dict, str]:
    """The arguments as a dict, or an error text for the model."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, dict):
        return dict(arguments)
    if isinstance(arguments, (bytes, bytearray)):
        arguments = arguments.decode("utf-8", "replace")
    if not isinstance(arguments, str):
        return _error_text("arguments must be a JSON object")
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError as e:
        return _error_text(f"arguments are not valid JSON ({e.msg})")
    if not isinstance(value, dict):
        return _error_text("arguments must be a JSON object")
    return value


def _error_text(message: str) -> str:
    return f"missy_recall error: {message}"
