#!/usr/bin/env python3
"""An agent loop on missyd: the daemon keeps the conversation, the model gets contexts.

Each user turn: append the user's message, ask missyd for the context, call the model
with the missy_recall tool, report the provider's usage (calibration), store the
model's answer, answer its missy_recall calls and call it again. When the provider
refuses a context for its length, the loop asks missyd to compact the session and
retries once with the compacted context.

The model is a plain function ``model(messages, tools) -> ModelReply``. The default is
an offline stub (it echoes, and turns "/recall WORDS" into a missy_recall call);
``--openai-base-url`` uses any OpenAI-compatible chat completions endpoint instead.

    PYTHONPATH=clients/python python3 clients/python/examples/agent_loop.py \\
        --socket ~/.missy/missyd.sock --message "hello" --message "/recall hello"
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Callable, Optional

try:
    import missy_client  # noqa: F401
except ImportError:  # run from a checkout without PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import missy_client  # noqa: F401

from missy_client import MissyClient, errors, handle_tool_call, openai_recall_tool


class ContextLengthExceeded(Exception):
    """The provider refused the request for its length."""


@dataclass
class ModelReply:
    message: dict  # the assistant message, OpenAI shape (content, optional tool_calls)
    prompt_tokens: int  # as the provider counted them
    completion_tokens: int = 0


Model = Callable[[list, list], ModelReply]


class EchoModel:
    """Offline stand-in for a model. ``overflow_on_call``: that call (1-based) raises
    ContextLengthExceeded, as a provider would for a context too long."""

    def __init__(self, overflow_on_call: int = 0) -> None:
        self.calls = 0
        self.overflow_on_call = overflow_on_call

    def __call__(self, messages: list, tools: list) -> ModelReply:
        self.calls += 1
        if self.calls == self.overflow_on_call:
            raise ContextLengthExceeded("stub: this model's maximum context length is exceeded")
        prompt_tokens = sum(len(_text(m)) for m in messages) // 4 + 3 * len(messages) + 1
        last = messages[-1] if messages else {"role": "user", "content": ""}
        text = _text(last)
        if last.get("role") == "tool":
            first_line = text.strip().splitlines()[0] if text.strip() else ""
            reply = {"role": "assistant", "content": f"Recalled: {first_line[:200]}"}
        elif last.get("role") == "user" and text.startswith("/recall ") and _has_tool(tools):
            what = text[len("/recall "):].strip()
            args = {"summary_id": what} if what.startswith("sum_") else {"query": what}
            reply = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{self.calls}", "type": "function",
                "function": {"name": "missy_recall", "arguments": json.dumps(args)}}]}
        else:
            reply = {"role": "assistant", "content": f"echo: {text}"}
        return ModelReply(reply, prompt_tokens, len(_text(reply)) // 4 + 1)


def openai_compatible_model(base_url: str, model: str, api_key: str = "",
                            timeout: float = 120.0) -> Model:
    """A model function calling ``{base_url}/chat/completions`` (OpenAI, vLLM, Ollama,
    llama.cpp...). A 400 that names the context length becomes ContextLengthExceeded."""

    def call(messages: list, tools: list) -> ModelReply:
        body = {"model": model, "messages": messages}
        if tools:
            body["tools"] = tools
        request = urllib.request.Request(
            base_url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json",
                     **({"Authorization": f"Bearer {api_key}"} if api_key else {})})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                answer = json.load(response)
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")
            if e.code in (400, 413) and ("context_length" in detail or "context length" in detail
                                         or "too long" in detail):
                raise ContextLengthExceeded(detail[:300]) from None
            raise RuntimeError(f"model endpoint answered {e.code}: {detail[:300]}") from None
        message = dict(answer["choices"][0]["message"])
        message["role"] = "assistant"
        usage = answer.get("usage") or {}
        return ModelReply({k: v for k, v in message.items()
                           if k in ("role", "content", "tool_calls")},
                          int(usage.get("prompt_tokens") or 1),
                          int(usage.get("completion_tokens") or 0))

    return call


def run_turn(client: MissyClient, session_id: str, text: str, model: Model,
             out: Callable[[str], None] = print, max_tool_rounds: int = 4) -> str:
    """One user turn; returns the model's final answer text."""
    client.append_messages(session_id, [{"role": "user", "content": text}])
    tools = [openai_recall_tool()]
    for _ in range(max_tool_rounds + 1):
        context, reply = _call_model(client, session_id, model, tools, out)
        usage = client.report_usage(session_id, context["context_id"], reply.prompt_tokens,
                                    reply.completion_tokens)
        out(f"[usage] {context['context_id']} prompt_tokens={reply.prompt_tokens} "
            f"estimated={usage['estimated_tokens']} ratio={usage['ratio']:.4f} "
            f"samples={usage['samples']}")
        message = reply.message
        client.append_messages(session_id, [message])
        calls = message.get("tool_calls") or []
        if not calls:
            answer = _text(message)
            out(f"assistant: {answer}")
            return answer
        results = []
        for call in calls:
            name = call.get("function", {}).get("name", "")
            arguments = call.get("function", {}).get("arguments")
            result = handle_tool_call(client, session_id, name, arguments)
            if result is None:
                result = f"error: unknown tool {name!r}"
            out(f"[tool] {name}({arguments}) -> {len(result)} chars")
            results.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": result})
        client.append_messages(session_id, results)
    out("assistant: (stopped: too many tool rounds)")
    return ""


def _call_model(client: MissyClient, session_id: str, model: Model, tools: list,
                out: Callable[[str], None]) -> tuple[dict, ModelReply]:
    """The context and the model's reply; compacts and retries once on a length refusal."""
    context = client.context(session_id)
    budget = context["budget"]
    out(f"[context] {context['context_id']} messages={len(context['messages'])} "
        f"used={budget['used_tokens']}/{budget['total']} zone={budget['zone']}")
    try:
        return context, model(context["messages"], tools)
    except ContextLengthExceeded as e:
        out(f"[compact] the provider refused the context: {e}")
    context = client.compact(session_id, reason="context_length_exceeded")
    c = context["compaction"]
    out(f"[compact] leaves={c['leaves']} messages_covered={c['messages_covered']} "
        f"tokens {c['tokens_before']} -> {c['tokens_after']}; "
        f"retrying with {context['context_id']} ({len(context['messages'])} messages)")
    return context, model(context["messages"], tools)  # a second refusal propagates


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _has_tool(tools: list) -> bool:
    return any(t.get("function", {}).get("name") == "missy_recall" for t in tools)


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket", help="missyd's API socket (default: $MISSY_SOCKET, "
                        "else $MISSY_HOME/missyd.sock)")
    parser.add_argument("--session", default="agent-loop-demo", help="session id (created "
                        "if absent)")
    parser.add_argument("--session-model", default="gpt-4o", help="model of a new session")
    parser.add_argument("--system", default="You are a helpful agent.", help="system prompt "
                        "of a new session")
    parser.add_argument("--message", action="append", default=[], help="a user message "
                        "(repeatable); without any, lines are read from stdin")
    parser.add_argument("--overflow-on-call", type=int, default=0, metavar="N",
                        help="the stub's Nth model call fails with a context-length error")
    parser.add_argument("--openai-base-url", help="use this OpenAI-compatible endpoint "
                        "(key from $OPENAI_API_KEY) instead of the offline stub")
    parser.add_argument("--openai-model", default="gpt-4o", help="model name for the endpoint")
    args = parser.parse_args(argv)

    if args.openai_base_url:
        model = openai_compatible_model(args.openai_base_url, args.openai_model,
                                        os.environ.get("OPENAI_API_KEY", ""))
    else:
        model = EchoModel(args.overflow_on_call)

    client = MissyClient(args.socket)
    try:
        try:
            client.create_session(args.session, model=args.session_model,
                                  system_prompt=args.system)
            print(f"[session] created {args.session}")
        except errors.AlreadyExists:
            print(f"[session] continuing {args.session}")
        messages = args.message or (line.rstrip("\n") for line in sys.stdin)
        for text in messages:
            if not text.strip():
                continue
            print(f"user: {text}")
            run_turn(client, args.session, text, model)
        session = client.get_session(args.session)
        print(f"[session] {session['id']} message_count={session['message_count']} "
              f"total_tokens={session['total_tokens']}")
    except errors.MissyError as e:
        print(f"agent_loop: {e}", file=sys.stderr)
        return 1
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
