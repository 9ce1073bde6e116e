"""Error answers of the real daemon mapped to MissyError subclasses, code and field."""

from __future__ import annotations

import os
import socket
import unittest

from missy_client import MissyClient, errors
from missyd_fixture import DEFAULT_CONFIG_YAML, DaemonTestCase, short_temp_dir


class ErrorMappingTest(DaemonTestCase):
    CONFIG_YAML = DEFAULT_CONFIG_YAML + "  limits:\n    max_body_bytes: 400000\n"

    def assertError(self, ctx, cls, status, code, field):
        e = ctx.exception
        self.assertIs(type(e), cls, repr(e))
        self.assertEqual((e.status, e.code, e.field), (status, code, field), repr(e))
        self.assertTrue(e.message)
        return e

    def test_invalid_argument_names_the_field(self):
        self.client.create_session("demo")
        with self.assertRaises(errors.InvalidArgument) as c:
            self.client.append_messages("demo", [{"role": "user", "content": "ok"},
                                                 {"role": "robot", "content": "x"}])
        e = self.assertError(c, errors.InvalidArgument, 400, "invalid_argument", "messages[1].role")
        self.assertEqual(e.message,
                         "unknown role 'robot' (expected system, developer, user, assistant or tool)")
        self.assertIn("[messages[1].role]", str(e))
        self.assertEqual(self.client.get_session("demo")["message_count"], 0)  # nothing stored

        with self.assertRaises(errors.InvalidArgument) as c:
            self.client.create_session("bad id")
        self.assertError(c, errors.InvalidArgument, 400, "invalid_argument", "id")
        with self.assertRaises(errors.InvalidArgument) as c:
            self.client.list_sessions(limit=0)
        self.assertError(c, errors.InvalidArgument, 400, "invalid_argument", "limit")
        with self.assertRaises(errors.InvalidArgument) as c:
            self.client.recall("demo", query="x", summary_id="sum_0000000000000000")
        self.assertError(c, errors.InvalidArgument, 400, "invalid_argument", "summary_id")
        with self.assertRaises(errors.InvalidArgument) as c:
            self.client.recall("demo")
        e = self.assertError(c, errors.InvalidArgument, 400, "invalid_argument", "query")
        self.assertEqual(e.message, "give exactly one of query and summary_id")
        with self.assertRaises(errors.InvalidArgument) as c:
            self.client.recall("demo", query="x", max_tokens=0)
        self.assertError(c, errors.InvalidArgument, 400, "invalid_argument", "max_tokens")
        with self.assertRaises(errors.InvalidArgument) as c:  # an unknown field, via request()
            self.client.request("POST", "/v1/sessions", {"idd": "x"})
        self.assertError(c, errors.InvalidArgument, 400, "invalid_argument", "idd")
        with self.assertRaises(errors.InvalidArgument) as c:
            self.client.search_memory("")
        self.assertError(c, errors.InvalidArgument, 400, "invalid_argument", "q")

    def test_not_found_already_exists_and_method_not_allowed(self):
        with self.assertRaises(errors.NotFound) as c:
            self.client.context("nope")
        e = self.assertError(c, errors.NotFound, 404, "not_found", "")
        self.assertEqual(e.message, "session 'nope' not found")
        self.client.create_session("demo")
        with self.assertRaises(errors.AlreadyExists) as c:
            self.client.create_session("demo")
        self.assertError(c, errors.AlreadyExists, 409, "already_exists", "id")
        with self.assertRaises(errors.NotFound) as c:
            self.client.report_usage("demo", "ctx_0000000000000000", prompt_tokens=10)
        self.assertError(c, errors.NotFound, 404, "not_found", "context_id")
        with self.assertRaises(errors.NotFound) as c:
            self.client.get_summary("sum_0000000000000000")
        self.assertError(c, errors.NotFound, 404, "not_found", "id")
        with self.assertRaises(errors.NotFound) as c:
            self.client.recall("demo", summary_id="sum_0000000000000000")
        self.assertError(c, errors.NotFound, 404, "not_found", "summary_id")
        with self.assertRaises(errors.NotFound) as c:
            self.client.delete_memory("mem_0000000000000000")
        self.assertError(c, errors.NotFound, 404, "not_found", "id")
        with self.assertRaises(errors.NotFound) as c:
            self.client.request("GET", "/v1/nope")
        self.assertError(c, errors.NotFound, 404, "not_found", "")
        with self.assertRaises(errors.MethodNotAllowed) as c:  # sessions are not replaced
            self.client.request("PUT", "/v1/sessions/demo")
        e = self.assertError(c, errors.MethodNotAllowed, 405, "method_not_allowed", "")
        self.assertIn("allowed: GET, DELETE", e.message)

    def test_unprocessable_in_strict_mode_carries_the_warnings(self):
        self.client.create_session("demo")
        batch = [{"role": "user", "content": "hi"},
                 {"role": "tool", "tool_call_id": "call_9", "content": "x"}]
        with self.assertRaises(errors.Unprocessable) as c:
            self.client.append_messages("demo", batch, strict=True)
        e = self.assertError(c, errors.Unprocessable, 422, "unprocessable", "messages[1]")
        self.assertEqual([(w["index"], w["problem"]) for w in e.warnings], [(1, "orphan_result")])
        self.assertEqual(self.client.get_session("demo")["message_count"], 0)

    def test_context_overflow_is_unprocessable(self):
        # A last turn larger than the room is cut to fit; only one that cannot fit even
        # cut (40 tokens of room) is refused.
        self.client.create_session("demo", model="gpt-4o")
        with self.assertRaises(errors.Unprocessable) as c:
            self.client.context("demo", context_window=540, max_output_tokens=100,
                                message={"role": "user", "content": "word " * 3000})
        e = self.assertError(c, errors.ContextOverflow, 422, "context_overflow", "")
        self.assertIn("tokens but only 40 are available", e.message)

    def test_a_last_turn_larger_than_the_room_is_cut_not_refused(self):
        self.client.create_session("demo", model="gpt-4o")
        ctx = self.client.context("demo", context_window=600, max_output_tokens=100,
                                  message={"role": "user", "content": "word " * 3000})
        self.assertTrue(ctx["budget"]["fresh_tail"]["last_turn_truncated"])
        self.assertIn("[...truncated ", ctx["messages"][-1]["content"])
        self.assertLessEqual(ctx["budget"]["used_tokens"], ctx["budget"]["total"])

    def test_payload_too_large(self):
        self.client.create_session("demo")
        many = [{"role": "user", "content": "x"}] * 10001  # under the body limit
        with self.assertRaises(errors.PayloadTooLarge) as c:
            self.client.append_messages("demo", many)
        e = self.assertError(c, errors.PayloadTooLarge, 413, "payload_too_large", "")
        self.assertEqual(e.message, "at most 10000 messages per append")
        # A body over context.limits.max_body_bytes is refused by the connection layer,
        # which closes the connection: the answer is still read, and the client goes on.
        with self.assertRaises(errors.PayloadTooLarge) as c:
            self.client.add_memory("y" * 500000)
        e = self.assertError(c, errors.PayloadTooLarge, 413, "payload_too_large", "")
        self.assertEqual(e.message, "request body exceeds 400000 bytes")
        self.assertEqual(self.client.get_session("demo")["message_count"], 0)


class UnreachableTest(unittest.TestCase):
    def test_no_socket_and_stale_socket(self):
        home = short_temp_dir()
        self.addCleanup(os.rmdir, home)
        path = os.path.join(home, "missyd.sock")
        with self.assertRaises(errors.ConnectionError) as c:
            MissyClient(path).list_sessions()
        self.assertEqual(str(c.exception).split(" (is missyd")[0],
                         f"cannot reach missyd at {path}: no such socket")
        # A socket file nobody listens on (a daemon that was killed).
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.close()
        self.addCleanup(os.unlink, path)
        with self.assertRaises(errors.MissyConnectionError) as c:
            MissyClient(path).health()
        self.assertIn("connection refused", str(c.exception))

    def test_error_from_an_unexpected_body(self):
        e = errors.error_from_response(503, None, b"<html>busy</html>")
        self.assertIs(type(e), errors.Unavailable)
        self.assertEqual((e.status, e.code, e.message), (503, "", "<html>busy</html>"))
        e = errors.error_from_response(500, {"error": {"code": "corruption", "message": "m",
                                                       "field": ""}})
        self.assertIs(type(e), errors.InternalError)
        self.assertEqual(e.code, "corruption")


if __name__ == "__main__":
    unittest.main()
