"""MissyClient: one method per endpoint of missyd's /v1 API (docs/API.md).

Standard library only: HTTP/1.1 + JSON over the daemon's Unix socket. Keyword
arguments mirror the request's JSON fields; an argument left at ``None`` is not sent
(so the daemon's default applies). Methods return the decoded JSON answer as dicts;
list endpoints return the list itself. Error answers raise the matching subclass of
``missy_client.errors.MissyError``; a daemon that cannot be reached raises
``missy_client.errors.ConnectionError`` naming the socket path.

A client keeps one keep-alive connection and is not thread-safe: use one per thread.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
from typing import Any, Iterable, Optional
from urllib.parse import quote, urlencode

from . import errors

DEFAULT_TIMEOUT = 120.0  # seconds; forced compaction and imports may take a while


def default_socket_path() -> str:
    """$MISSY_SOCKET, else $MISSY_HOME/missyd.sock, else ~/.missy/missyd.sock; when that
    socket does not exist but systemd's socket-activated one does
    ($XDG_RUNTIME_DIR/missy/missyd.sock, systemd/missyd.socket), that one.

    These are missyd's defaults (``context.socket: missyd.sock`` under the Missy home);
    a config that moves the socket elsewhere needs MISSY_SOCKET or ``socket_path``.
    """
    explicit = os.environ.get("MISSY_SOCKET")
    if explicit:
        return os.path.expanduser(explicit)
    home = os.environ.get("MISSY_HOME") or "~/.missy"
    path = os.path.join(os.path.abspath(os.path.expanduser(home)), "missyd.sock")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and not _is_socket(path):
        activated = os.path.join(runtime, "missy", "missyd.sock")
        if _is_socket(activated):
            return activated
    return path


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


class _UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over an AF_UNIX stream socket."""

    def __init__(self, socket_path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def _segment(value: str) -> str:
    return quote(str(value), safe="")


def _fields(**kwargs: Any) -> dict:
    """The JSON body or query: every argument that is not None."""
    return {k: v for k, v in kwargs.items() if v is not None}


class MissyClient:
    """A client of missyd. ``socket_path`` defaults to :func:`default_socket_path`."""

    def __init__(self, socket_path: Optional[str] = None,
                 timeout: Optional[float] = DEFAULT_TIMEOUT) -> None:
        self.socket_path = socket_path or default_socket_path()
        self.timeout = timeout
        self._conn: Optional[_UnixHTTPConnection] = None
        self._requests_on_conn = 0

    # -- plumbing -----------------------------------------------------------------

    def close(self) -> None:
        """Closes the keep-alive connection (the next call opens a new one)."""
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._requests_on_conn = 0

    def __enter__(self) -> "MissyClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(self, method: str, path: str, body: Optional[dict] = None,
                query: Optional[dict] = None, text: bool = False) -> Any:
        """One request; the decoded answer, or a MissyError. The typed methods use this;
        it is public for endpoints newer than this client. ``text``: the answer is text
        (GET /metrics), returned as a str; errors are still JSON."""
        target = path
        params = {k: v for k, v in (query or {}).items() if v is not None}
        if params:
            target += "?" + urlencode({k: _query_value(v) for k, v in params.items()})
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Accept": "text/plain" if text else "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        # A reused connection may have been closed by the daemon while idle (its read
        # timeout). A request that could not be sent, or a GET, is then sent once more on
        # a new connection; a POST the daemon may have received is never sent twice.
        for attempt in range(2):
            reused = self._conn is not None and self._requests_on_conn > 0
            try:
                status, raw, will_close = self._exchange(method, target, data, headers)
            except _Retryable as e:
                self.close()
                if reused and attempt == 0 and (e.unsent or method == "GET"):
                    continue
                raise errors.ConnectionError(self.socket_path, e.reason) from None
            if will_close:
                self.close()
            if text and status < 400:
                return raw.decode("utf-8", errors="replace")
            return _decode(status, raw)
        raise AssertionError("unreachable")

    def _exchange(self, method: str, target: str, data: Optional[bytes],
                  headers: dict) -> tuple[int, bytes, bool]:
        if self._conn is None:
            self._conn = _UnixHTTPConnection(self.socket_path, self.timeout)
            try:
                self._conn.connect()
            except OSError as e:
                self.close()
                raise errors.ConnectionError(self.socket_path, _reason(e)) from None
        conn = self._conn
        self._requests_on_conn += 1
        unsent = False
        try:
            try:
                conn.request(method, target, body=data, headers=headers)
            except (BrokenPipeError, ConnectionResetError):
                # The daemon answers some requests (413: body too large) before reading
                # the whole body, then closes: its answer may be waiting to be read.
                unsent = True
            response = conn.getresponse()
            raw = response.read()
        except (http.client.RemoteDisconnected, http.client.IncompleteRead,
                ConnectionResetError, BrokenPipeError) as e:
            raise _Retryable(_reason(e), unsent) from None
        except socket.timeout:
            self.close()
            raise errors.ConnectionError(
                self.socket_path, f"no answer within {self.timeout} s") from None
        except OSError as e:
            self.close()
            raise errors.ConnectionError(self.socket_path, _reason(e)) from None
        return response.status, raw, response.will_close

    def _get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query)

    def _post(self, path: str, body: dict) -> Any:
        return self.request("POST", path, body=body)

    # -- health and configuration --------------------------------------------------

    def health(self) -> dict:
        """GET /v1/health: status, version, uptime, sockets, memory and storage figures."""
        return self._get("/v1/health")

    def get_config(self) -> dict:
        """GET /v1/config: the effective configuration (provider api_keys as "***")."""
        return self._get("/v1/config")

    def reload_config(self) -> dict:
        """POST /v1/config/reload: re-reads the config file, as SIGHUP does.
        ``{"reloaded": True, "changed": [key paths], "restart_required": [key paths]}``;
        an invalid file raises Unprocessable naming the key (the running config stays)."""
        return self._post("/v1/config/reload", {})

    def metrics(self) -> str:
        """GET /metrics: the daemon's counters in the Prometheus text format."""
        return self.request("GET", "/metrics", text=True)

    # -- sessions and messages -----------------------------------------------------

    def create_session(self, id: Optional[str] = None, *, model: Optional[str] = None,
                       system_prompt: Optional[str] = None, tools: Optional[list] = None,
                       metadata: Optional[dict] = None, context_window: Optional[int] = None,
                       strict: Optional[bool] = None,
                       summarizer: Optional[dict] = None) -> dict:
        """POST /v1/sessions: the new session (AlreadyExists, field "id", if taken)."""
        return self._post("/v1/sessions", _fields(
            id=id, model=model, system_prompt=system_prompt, tools=tools, metadata=metadata,
            context_window=context_window, strict=strict, summarizer=summarizer))

    def delete_session(self, session_id: str) -> dict:
        """DELETE /v1/sessions/{id}: removes the session with its messages, summaries,
        scoped memory and jobs; ``{"deleted": id, "messages": n, ...}`` (NotFound when
        absent)."""
        return self.request("DELETE", f"/v1/sessions/{_segment(session_id)}")

    def list_sessions(self, limit: Optional[int] = None, offset: Optional[int] = None) -> list:
        """GET /v1/sessions: sessions, oldest first."""
        return self._get("/v1/sessions", limit=limit, offset=offset)["sessions"]

    def get_session(self, session_id: str) -> dict:
        """GET /v1/sessions/{id}."""
        return self._get(f"/v1/sessions/{_segment(session_id)}")

    def append_messages(self, session_id: str, messages: Iterable[dict], *,
                        strict: Optional[bool] = None) -> dict:
        """POST /v1/sessions/{id}/messages: stores the batch atomically; the answer has
        each message's seq and tokens, and ``warnings`` for flagged tool-call problems."""
        return self._post(f"/v1/sessions/{_segment(session_id)}/messages",
                          _fields(messages=list(messages), strict=strict))

    def get_messages(self, session_id: str, after: Optional[int] = None,
                     limit: Optional[int] = None) -> list:
        """GET /v1/sessions/{id}/messages: stored messages with seq > after, oldest first."""
        return self._get(f"/v1/sessions/{_segment(session_id)}/messages",
                         after=after, limit=limit)["messages"]

    # -- contexts ------------------------------------------------------------------

    def context(self, session_id: str, *, message: Optional[dict] = None,
                context_window: Optional[int] = None, max_output_tokens: Optional[int] = None,
                query: Optional[str] = None) -> dict:
        """POST /v1/sessions/{id}/context: ``messages`` to send (system first),
        ``system``, ``context_id`` and the ``budget`` report. ``message`` is sent last
        but not stored. ContextOverflow when even the newest turn cannot fit."""
        return self._post(f"/v1/sessions/{_segment(session_id)}/context", _fields(
            message=message, context_window=context_window,
            max_output_tokens=max_output_tokens, query=query))

    def compact(self, session_id: str, *, reason: Optional[str] = None,
                context_window: Optional[int] = None,
                max_output_tokens: Optional[int] = None) -> dict:
        """POST /v1/sessions/{id}/compact: summarizes now, then answers the next
        context (the shape of :meth:`context`) plus ``compaction``."""
        return self._post(f"/v1/sessions/{_segment(session_id)}/compact", _fields(
            reason=reason, context_window=context_window, max_output_tokens=max_output_tokens))

    def report_usage(self, session_id: str, context_id: str, prompt_tokens: int,
                     completion_tokens: Optional[int] = None) -> dict:
        """POST /v1/sessions/{id}/usage: what the provider counted for a context, so
        later budgets are calibrated. Answers the model's ratio before and after."""
        return self._post(f"/v1/sessions/{_segment(session_id)}/usage", _fields(
            context_id=context_id, prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens))

    def recall(self, session_id: str, *, summary_id: Optional[str] = None,
               query: Optional[str] = None, max_tokens: Optional[int] = None,
               after_seq: Optional[int] = None) -> dict:
        """POST /v1/sessions/{id}/recall: exactly one of ``summary_id`` (the messages it
        covers, paged by ``after_seq`` = the answer's ``next_after_seq``) and ``query``.
        ``text`` is the rendering for a tool result (see missy_client.tools)."""
        return self._post(f"/v1/sessions/{_segment(session_id)}/recall", _fields(
            summary_id=summary_id, query=query, max_tokens=max_tokens, after_seq=after_seq))

    # -- summaries and jobs --------------------------------------------------------

    def list_summaries(self, session_id: str) -> list:
        """GET /v1/sessions/{id}/summaries: the session's summaries, oldest first."""
        return self._get(f"/v1/sessions/{_segment(session_id)}/summaries")["summaries"]

    def get_summary(self, summary_id: str) -> dict:
        """GET /v1/summaries/{id}: the summary with ``children`` and the original
        ``messages`` of its range."""
        return self._get(f"/v1/summaries/{_segment(summary_id)}")

    def list_jobs(self, state: Optional[str] = None, limit: Optional[int] = None,
                  offset: Optional[int] = None) -> list:
        """GET /v1/jobs: background jobs (state: queued, running, done or failed)."""
        return self._get("/v1/jobs", state=state, limit=limit, offset=offset)["jobs"]

    # -- memory and learnings ------------------------------------------------------

    def add_memory(self, text: str, *, tags: Optional[list] = None,
                   session_id: Optional[str] = None, pinned: Optional[bool] = None) -> dict:
        """POST /v1/memory: the stored item with its ``id`` (mem_...) and created_at."""
        return self._post("/v1/memory", _fields(text=text, tags=tags, session_id=session_id,
                                                pinned=pinned))

    def list_memory(self, limit: Optional[int] = None, offset: Optional[int] = None,
                    session_id: Optional[str] = None) -> list:
        """GET /v1/memory: items, newest first (with session_id: its items and global ones)."""
        return self._get("/v1/memory", limit=limit, offset=offset,
                         session_id=session_id)["items"]

    def get_memory(self, memory_id: str) -> dict:
        """GET /v1/memory/{id}."""
        return self._get(f"/v1/memory/{_segment(memory_id)}")

    def delete_memory(self, memory_id: str) -> dict:
        """DELETE /v1/memory/{id}: ``{"deleted": id}`` (NotFound when absent)."""
        return self.request("DELETE", f"/v1/memory/{_segment(memory_id)}")

    def search_memory(self, q: str, *, limit: Optional[int] = None,
                      session_id: Optional[str] = None,
                      exclude_session_id: Optional[str] = None) -> list:
        """GET /v1/memory/search: full-text hits ``{source, id, text, score}`` over
        memory items, summaries and messages. Any text is accepted."""
        return self._get("/v1/memory/search", q=q, limit=limit, session_id=session_id,
                         exclude_session_id=exclude_session_id)["results"]

    def add_learning(self, lesson: str, *, task_type: Optional[str] = None,
                     outcome: Optional[str] = None, approach: Optional[list] = None,
                     session_id: Optional[str] = None) -> dict:
        """POST /v1/learnings: the stored learning with its ``id`` (lrn_...)."""
        return self._post("/v1/learnings", _fields(
            lesson=lesson, task_type=task_type, outcome=outcome, approach=approach,
            session_id=session_id))

    def list_learnings(self, limit: Optional[int] = None, offset: Optional[int] = None,
                       task_type: Optional[str] = None) -> list:
        """GET /v1/learnings."""
        return self._get("/v1/learnings", limit=limit, offset=offset,
                         task_type=task_type)["learnings"]

    # -- audit and import ----------------------------------------------------------

    def audit(self, since: Optional[int] = None, limit: Optional[int] = None,
              type: Optional[str] = None) -> list:
        """GET /v1/audit: persisted events with seq > since, oldest first."""
        return self._get("/v1/audit", since=since, limit=limit, type=type)["events"]

    def audit_verify(self) -> dict:
        """GET /v1/audit/verify: ``ok``, ``checked``, ``broken_seq`` of the hash chain."""
        return self._get("/v1/audit/verify")

    def import_missy(self, path: Optional[str] = None) -> dict:
        """POST /v1/import/missy: imports Missy's memory.db (default
        $MISSY_HOME/memory.db); the counts of rows added and ``skipped``."""
        return self._post("/v1/import/missy", _fields(path=path))


def anthropic_messages(context: dict) -> tuple[str, list]:
    """(system, messages) of a context for Anthropic-style APIs: the enriched system
    prompt alone, and the messages without the leading system message."""
    messages = list(context.get("messages", []))
    if messages and messages[0].get("role") == "system":
        messages = messages[1:]
    return context.get("system", ""), messages


class _Retryable(Exception):
    """The connection failed without an answer; ``unsent``: the request was not sent whole."""

    def __init__(self, reason: str, unsent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.unsent = unsent


def _reason(e: BaseException) -> str:
    if isinstance(e, FileNotFoundError):
        return "no such socket"
    if isinstance(e, ConnectionRefusedError):
        return "connection refused (a stale socket: the daemon is not running)"
    if isinstance(e, PermissionError):
        return "permission denied (the socket belongs to another user)"
    if isinstance(e, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)):
        return "the daemon closed the connection without answering"
    return str(e) or type(e).__name__


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _decode(status: int, raw: bytes) -> Any:
    try:
        body = json.loads(raw.decode("utf-8")) if raw else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        body = None
    if status >= 400:
        raise errors.error_from_response(status, body, raw)
    if body is None:
        raise errors.MissyError(f"answer is not JSON: {raw[:200]!r}", status=status,
                                code="bad_response")
    return body
