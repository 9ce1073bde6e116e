"""MissyClient against the real daemon: every method, with the values it must return."""

from __future__ import annotations

import os
import sqlite3
import time
import unittest

from missy_client import MissyClient, anthropic_messages, default_socket_path, errors
from missyd_fixture import DaemonTestCase

EXAMPLE_BATCH = [
    {"role": "user", "content": "List the files."},
    {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "README.md\nMakefile"},
]


def steps(n: int) -> list:
    """n user/assistant turns that name a file each (2n messages)."""
    out = []
    for i in range(1, n + 1):
        out.append({"role": "user", "content": f"step {i}: check lib/part_{i}.py for the error"})
        out.append({"role": "assistant",
                    "content": f"Checked lib/part_{i}.py: nothing in step {i}."})
    return out


class HealthAndConfigTest(DaemonTestCase):
    def test_health_reports_this_daemon(self):
        h = self.client.health()
        self.assertEqual(h["status"], "ok")
        self.assertEqual(h["version"], "0.1.0")
        self.assertEqual(h["socket"], self.daemon.socket_path)
        self.assertEqual(h["audit_socket"], os.path.join(self.daemon.home, "audit.sock"))
        self.assertEqual(h["memory"]["limit_mb"], 256)
        # requests counts this one too: two calls on the keep-alive connection differ by 1.
        self.assertEqual(self.client.health()["requests"], h["requests"] + 1)

    def test_config_is_the_file_given(self):
        c = self.client.get_config()
        self.assertEqual(c["missy_home"], self.daemon.home)
        self.assertEqual(c["context"]["socket"], self.daemon.socket_path)
        self.assertEqual(c["context"]["budget"]["fresh_tail_count"], 4)
        self.assertEqual(c["context"]["budget"]["system_reserve"], 200)


    def test_reload_config_reports_the_changed_keys_and_refuses_a_bad_file(self):
        with open(self.daemon.config_path, encoding="utf-8") as f:
            original = f.read()
        self.assertIn("fresh_tail_count: 4", original)
        with open(self.daemon.config_path, "w", encoding="utf-8") as f:
            f.write(original.replace("fresh_tail_count: 4", "fresh_tail_count: 6"))
        r = self.client.reload_config()
        self.assertEqual(r, {"reloaded": True, "changed": ["context.budget.fresh_tail_count"],
                             "restart_required": []})
        self.assertEqual(self.client.get_config()["context"]["budget"]["fresh_tail_count"], 6)
        with open(self.daemon.config_path, "w", encoding="utf-8") as f:
            f.write(original.replace("fresh_tail_count: 4", "fresh_tail_count: -1"))
        with self.assertRaises(errors.Unprocessable) as cm:
            self.client.reload_config()
        self.assertEqual(cm.exception.field, "context.budget.fresh_tail_count")
        self.assertEqual(self.client.get_config()["context"]["budget"]["fresh_tail_count"], 6)

    def test_metrics_is_prometheus_text(self):
        line = 'missyd_http_requests_total{method="GET",route="/v1/health",status="200"} '

        def health_count(text: str) -> int:
            at = text.index("\n" + line) + 1 + len(line)
            return int(text[at:text.index("\n", at)])

        before = self.client.metrics()
        self.assertTrue(before.startswith("# HELP "), before[:100])
        self.assertIn("\nmissyd_sessions 0\n", before)
        self.client.health()
        self.client.create_session("m")
        after = self.client.metrics()
        self.assertEqual(health_count(after), health_count(before) + 1)
        self.assertIn("\nmissyd_sessions 1\n", after)


class SessionsTest(DaemonTestCase):
    def test_create_get_list(self):
        created = self.client.create_session(
            "demo", model="gpt-4o", system_prompt="You are careful.",
            tools=[{"type": "function", "function": {"name": "bash"}}],
            metadata={"owner": "tests", "n": 3}, context_window=50000, strict=True,
            summarizer={"backend": "extractive"})
        self.assertEqual(created["id"], "demo")
        self.assertEqual(created["model"], "gpt-4o")
        self.assertEqual(created["system_prompt"], "You are careful.")
        self.assertEqual(created["tools"], [{"type": "function", "function": {"name": "bash"}}])
        self.assertEqual(created["metadata"], {"owner": "tests", "n": 3})
        self.assertEqual(created["context_window"], 50000)
        self.assertIs(created["strict"], True)
        self.assertEqual(created["summarizer"]["backend"], "extractive")
        self.assertEqual((created["message_count"], created["total_tokens"], created["last_seq"]),
                         (0, 0, 0))
        self.assertRegex(created["created_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

        self.assertEqual(self.client.get_session("demo"), created)
        generated = self.client.create_session()
        self.assertRegex(generated["id"], r"^ses_[0-9a-f]{16}$")
        self.assertEqual(generated["model"], "")
        self.assertIs(generated["strict"], False)

        ids = [s["id"] for s in self.client.list_sessions()]
        self.assertEqual(ids, ["demo", generated["id"]])  # oldest first
        self.assertEqual([s["id"] for s in self.client.list_sessions(limit=1, offset=1)],
                         [generated["id"]])
        self.assertEqual(self.client.list_sessions(offset=2), [])

        self.client.append_messages("demo", EXAMPLE_BATCH)
        deleted = self.client.delete_session("demo")
        self.assertEqual(deleted["deleted"], "demo")
        self.assertEqual(deleted["messages"], 3)
        with self.assertRaises(errors.NotFound):
            self.client.get_session("demo")
        with self.assertRaises(errors.NotFound) as cm:
            self.client.delete_session("demo")
        self.assertEqual(cm.exception.field, "session_id")
        self.assertEqual([s["id"] for s in self.client.list_sessions()], [generated["id"]])

    def test_append_and_read_messages(self):
        self.client.create_session("demo", model="gpt-4o")
        a = self.client.append_messages("demo", EXAMPLE_BATCH)
        self.assertEqual(a["session_id"], "demo")
        self.assertEqual(a["appended"], 3)
        self.assertEqual([m["seq"] for m in a["messages"]], [1, 2, 3])
        self.assertEqual([m["tokens"] for m in a["messages"]], [8, 21, 12])  # o200k_base
        self.assertEqual(a["total_tokens"], 41)
        self.assertEqual((a["message_count"], a["last_seq"], a["warnings"]), (3, 3, []))

        # An orphan tool result is stored but flagged, with a warning naming it.
        b = self.client.append_messages("demo", [
            {"role": "user", "content": "and then?", "pin": True},
            {"role": "tool", "tool_call_id": "call_9", "content": "stray"}])
        self.assertEqual([m["seq"] for m in b["messages"]], [4, 5])
        self.assertEqual(b["messages"][1]["flags"], ["orphan_result"])
        self.assertEqual(b["warnings"], [{
            "index": 1, "tool_call_id": "call_9", "problem": "orphan_result",
            "message": "tool result for call_9 answers no open call"}])

        stored = self.client.get_messages("demo")
        self.assertEqual([m["seq"] for m in stored], [1, 2, 3, 4, 5])
        self.assertEqual(stored[1]["tool_calls"], EXAMPLE_BATCH[1]["tool_calls"])
        self.assertEqual(stored[2]["tool_call_id"], "call_1")
        self.assertEqual(stored[4]["flags"], ["orphan_result"])
        page = self.client.get_messages("demo", after=1, limit=2)
        self.assertEqual([(m["seq"], m["role"]) for m in page], [(2, "assistant"), (3, "tool")])
        self.assertEqual(self.client.get_session("demo")["message_count"], 5)


class ContextTest(DaemonTestCase):
    def test_context_usage_and_calibration(self):
        self.client.create_session("demo", model="gpt-4o", system_prompt="You are careful.")
        self.client.append_messages("demo", EXAMPLE_BATCH)
        new = {"role": "user", "content": "Now read the Makefile."}
        ctx = self.client.context("demo", message=new)
        self.assertRegex(ctx["context_id"], r"^ctx_[0-9a-f]{16}$")
        self.assertEqual(ctx["session_id"], "demo")
        self.assertEqual([m["role"] for m in ctx["messages"]],
                         ["system", "user", "assistant", "tool", "user"])
        self.assertEqual(ctx["messages"][0]["content"], "You are careful.")
        self.assertEqual(ctx["messages"][-1], new)
        self.assertEqual(ctx["system"], "You are careful.")
        budget = ctx["budget"]
        self.assertEqual((budget["context_window"], budget["max_output_tokens"]), (128000, 16384))
        self.assertEqual(budget["total"], 128000 - 16384)
        self.assertEqual(budget["zone"], "safe")
        self.assertEqual(budget["history"]["kept_messages"], 3)
        self.assertEqual(budget["encoding"], "o200k_base")
        self.assertEqual(budget["calibration"]["samples"], 0)
        # The new message is not stored.
        self.assertEqual(self.client.get_session("demo")["message_count"], 3)
        system, rest = anthropic_messages(ctx)
        self.assertEqual(system, "You are careful.")
        self.assertEqual(rest, ctx["messages"][1:])

        estimated = budget["calibration"]["estimated_tokens"]
        usage = self.client.report_usage("demo", ctx["context_id"],
                                         prompt_tokens=estimated * 11 // 10, completion_tokens=7)
        self.assertEqual(usage["context_id"], ctx["context_id"])
        self.assertEqual(usage["model"], "gpt-4o")
        self.assertEqual(usage["estimated_tokens"], estimated)
        self.assertEqual((usage["prompt_tokens"], usage["completion_tokens"]),
                         (estimated * 11 // 10, 7))
        self.assertEqual(usage["ratio_before"], 1.0)
        self.assertAlmostEqual(usage["ratio"], (estimated * 11 // 10) / estimated, places=3)
        self.assertEqual(usage["samples"], 1)
        later = self.client.context("demo", context_window=20000, max_output_tokens=1000)
        self.assertEqual(later["budget"]["calibration"]["samples"], 1)
        self.assertEqual(later["budget"]["calibration"]["raw_total"], 19000)
        self.assertAlmostEqual(later["budget"]["total"], 19000 / usage["ratio"], delta=1)

    def test_compact_summaries_and_recall(self):
        self.client.create_session("long", model="gpt-4o")
        self.client.append_messages("long", steps(20))  # 40 messages; the fresh tail is 4
        ctx = self.client.compact("long", reason="context_length_exceeded")
        c = ctx["compaction"]
        self.assertEqual((c["leaves"], c["messages_covered"], c["backend"]), (1, 36, "extractive"))
        self.assertLess(c["tokens_after"], c["tokens_before"])
        self.assertEqual(ctx["session_id"], "long")
        self.assertEqual(ctx["budget"]["summaries"]["included"], 1)

        summaries = self.client.list_summaries("long")
        self.assertEqual(len(summaries), 1)
        s = summaries[0]
        self.assertRegex(s["id"], r"^sum_[0-9a-f]{16}$")
        self.assertEqual((s["session_id"], s["depth"], s["first_seq"], s["last_seq"]),
                         ("long", 0, 1, 36))
        self.assertIn("lib/part_3.py", s["artifacts"]["files"])
        self.assertEqual(ctx["budget"]["summaries"]["included_ids"], [s["id"]])
        headers = [m["content"] for m in ctx["messages"]
                   if "[Conversation Summary" in str(m["content"])]
        self.assertEqual(len(headers), 1)
        self.assertIn(f"id {s['id']}, originals via missy_recall", headers[0])

        expanded = self.client.get_summary(s["id"])
        self.assertEqual(expanded["id"], s["id"])
        self.assertEqual(expanded["children"], [])
        self.assertEqual([m["seq"] for m in expanded["messages"]], list(range(1, 37)))

        # Paged recall by summary id: every covered message once, in order.
        seen, after, pages = [], 0, 0
        while True:
            r = self.client.recall("long", summary_id=s["id"], max_tokens=100, after_seq=after)
            self.assertEqual((r["summary_id"], r["max_tokens"]), (s["id"], 100))
            self.assertLessEqual(r["tokens"], 100)
            seen += [m["seq"] for m in r["messages"]]
            pages += 1
            if r["next_after_seq"] is None:
                self.assertFalse(r["truncated"])
                break
            self.assertIn(f"[more: recall again with after_seq {r['next_after_seq']}]", r["text"])
            after = r["next_after_seq"]
        self.assertEqual(seen, list(range(1, 37)))
        self.assertGreater(pages, 3)

        found = self.client.recall("long", query="part_7.py")
        self.assertEqual(found["query"], "part_7.py")
        self.assertIn(13, [m["seq"] for m in found["messages"]])
        self.assertIn("[seq 13 · user]\nstep 7: check lib/part_7.py for the error", found["text"])


class JobsTest(DaemonTestCase):
    # Appends queue a summarize job once a session is over message_threshold and a leaf
    # chunk's worth of history lies outside the fresh tail.
    CONFIG_YAML = """\
context:
  log_level: warn
  message_threshold: 5
  budget:
    fresh_tail_count: 2
  summarizer:
    leaf_chunk_tokens: 500
"""

    def test_jobs_list_the_summarization_an_append_queued(self):
        self.client.create_session("j", model="gpt-4o")
        self.assertEqual(self.client.list_jobs(), [])
        self.client.append_messages("j", steps(40))  # 80 messages, about 1,500 tokens
        deadline = time.monotonic() + 5
        while not self.client.list_jobs(state="done") and time.monotonic() < deadline:
            time.sleep(0.05)
        [job] = self.client.list_jobs()
        self.assertEqual((job["kind"], job["session_id"], job["state"], job["attempts"]),
                         ("summarize", "j", "done", 1))
        self.assertEqual(job["last_error"], "")
        self.assertEqual(self.client.list_jobs(state="done", limit=10), [job])
        self.assertEqual(self.client.list_jobs(state="queued"), [])
        self.assertEqual(self.client.list_jobs(offset=1), [])
        # The job wrote the session's first summaries, from seq 1 on.
        summaries = self.client.list_summaries("j")
        self.assertGreaterEqual(len(summaries), 1)
        self.assertEqual(summaries[0]["first_seq"], 1)
        self.assertEqual(summaries[0]["session_id"], "j")


class MemoryTest(DaemonTestCase):
    def test_memory_add_get_list_search_delete(self):
        self.client.create_session("demo")
        item = self.client.add_memory("The staging database listens on port 6543.",
                                      tags=["db"], session_id="demo", pinned=True)
        self.assertRegex(item["id"], r"^mem_[0-9a-f]{16}$")
        self.assertEqual((item["text"], item["tags"], item["session_id"], item["pinned"]),
                         ("The staging database listens on port 6543.", ["db"], "demo", True))
        glob = self.client.add_memory("Deploys happen on Tuesdays.")
        self.assertEqual((glob["session_id"], glob["pinned"], glob["tags"]), ("", False, []))

        self.assertEqual(self.client.get_memory(item["id"]), item)
        self.assertEqual([m["id"] for m in self.client.list_memory()], [glob["id"], item["id"]])
        self.assertEqual([m["id"] for m in self.client.list_memory(limit=1)], [glob["id"]])
        self.assertEqual(len(self.client.list_memory(session_id="demo")), 2)  # plus global

        hits = self.client.search_memory("staging port")
        self.assertEqual([(h["source"], h["id"]) for h in hits], [("memory", item["id"])])
        self.assertEqual(hits[0]["text"], item["text"])
        self.assertEqual(self.client.search_memory('NEAR( "* ) OR; DROP TABLE', limit=5), [])

        self.assertEqual(self.client.delete_memory(item["id"]), {"deleted": item["id"]})
        with self.assertRaises(errors.NotFound) as e:
            self.client.get_memory(item["id"])
        self.assertEqual((e.exception.status, e.exception.field), (404, "id"))
        self.assertEqual(self.client.search_memory("staging port"), [])

    def test_learnings(self):
        self.client.create_session("demo")
        l1 = self.client.add_learning("Check the port first.", task_type="ops", outcome="success",
                                      approach=["grep", "ss -ltn"], session_id="demo")
        self.assertRegex(l1["id"], r"^lrn_[0-9a-f]{16}$")
        self.assertEqual((l1["lesson"], l1["task_type"], l1["outcome"], l1["approach"],
                          l1["session_id"]),
                         ("Check the port first.", "ops", "success", ["grep", "ss -ltn"], "demo"))
        l2 = self.client.add_learning("Run the tests twice.", task_type="ci")
        self.assertEqual({l["id"] for l in self.client.list_learnings()}, {l1["id"], l2["id"]})
        self.assertEqual([l["id"] for l in self.client.list_learnings(task_type="ops")], [l1["id"]])
        self.assertEqual(len(self.client.list_learnings(limit=1)), 1)


class AuditAndImportTest(DaemonTestCase):
    def test_audit_events_and_verify(self):
        self.client.create_session("demo", model="gpt-4o", system_prompt="x")
        events = self.client.audit(type="session.created")
        self.assertEqual(len(events), 1)
        e = events[0]
        self.assertEqual((e["event_type"], e["session_id"], e["category"], e["result"]),
                         ("session.created", "demo", "context", "allow"))
        self.assertEqual(e["detail"],
                         {"model": "gpt-4o", "strict": False, "has_system_prompt": True})
        self.assertRegex(e["prev_chain_hash"], r"^[0-9a-f]{64}$")
        everything = self.client.audit(limit=10000)
        self.assertEqual([x["seq"] for x in everything], sorted(x["seq"] for x in everything))
        self.assertEqual(everything[0]["event_type"], "daemon.started")
        self.assertEqual(self.client.audit(since=e["seq"], type="session.created"), [])
        self.assertEqual(len(self.client.audit(limit=1)), 1)

        with self.assertRaises(errors.NotFound):
            self.client.get_session("nope")
        rejected = self.client.audit(type="request.rejected")
        self.assertEqual(rejected[-1]["detail"]["status"], 404)

        v = self.client.audit_verify()
        self.assertIs(v["ok"], True)
        self.assertEqual((v["broken_seq"], v["reason"]), (0, ""))
        self.assertEqual(v["checked"], v["last_seq"] - v["first_seq"] + 1)
        self.assertGreaterEqual(v["last_seq"], rejected[-1]["seq"])

    def test_import_missy(self):
        path = os.path.join(self.daemon.home, "memory.db")
        db = sqlite3.connect(path)
        db.executescript("""
          CREATE TABLE sessions (session_id TEXT PRIMARY KEY, name TEXT, created_at TEXT,
                                 updated_at TEXT, turn_count INTEGER, provider TEXT, channel TEXT);
          CREATE TABLE turns (id TEXT PRIMARY KEY, session_id TEXT, timestamp TEXT, role TEXT,
                              content TEXT, provider TEXT, metadata TEXT DEFAULT '{}');
          CREATE TABLE summaries (id TEXT PRIMARY KEY, session_id TEXT, depth INTEGER, content TEXT,
                                  token_estimate INTEGER, source_turn_ids TEXT,
                                  source_summary_ids TEXT, parent_id TEXT, time_range_start TEXT,
                                  time_range_end TEXT, descendant_count INTEGER, file_refs TEXT,
                                  created_at TEXT);
          CREATE TABLE learnings (id INTEGER PRIMARY KEY AUTOINCREMENT, task_type TEXT,
                                  outcome TEXT, lesson TEXT, approach TEXT, timestamp TEXT);
          INSERT INTO sessions VALUES ('s1', 'refactor', '2025-03-01T10:00:00Z',
                                       '2025-03-01T11:00:00Z', 2, 'anthropic', 'cli');
          INSERT INTO turns VALUES ('t1', 's1', '2025-03-01T10:00:01Z', 'user', 'rename Foo to Bar',
                                    'anthropic', '{}');
          INSERT INTO turns VALUES ('t2', 's1', '2025-03-01T10:00:05Z', 'assistant',
                                    'renamed in 3 files', 'anthropic', '{}');
          INSERT INTO summaries VALUES ('sum_aaaaaaaaaaaaaaaa', 's1', 0, 'Renamed Foo to Bar.', 6,
                                        '["t1","t2"]', '[]', NULL, '2025-03-01T10:00:01Z',
                                        '2025-03-01T10:00:05Z', 2, '["src/foo.py"]',
                                        '2025-03-01T10:05:00Z');
          INSERT INTO learnings (task_type, outcome, lesson, approach, timestamp)
            VALUES ('refactor', 'success', 'grep before renaming', '["grep"]',
                    '2025-03-01T10:07:00Z');
        """)
        db.commit()
        db.close()
        first = self.client.import_missy()  # the default: $MISSY_HOME/memory.db
        self.assertEqual(first, {"path": path, "sessions": 1, "messages": 2, "summaries": 1,
                                 "learnings": 1, "skipped": 0})
        again = self.client.import_missy(path)
        self.assertEqual((again["sessions"], again["messages"], again["summaries"],
                          again["learnings"]), (0, 0, 0, 0))
        self.assertEqual(again["skipped"], 5)
        [session] = self.client.list_sessions()
        self.assertEqual(session["message_count"], 2)
        texts = [m["content"] for m in self.client.get_messages(session["id"])]
        self.assertEqual(texts, ["rename Foo to Bar", "renamed in 3 files"])
        self.assertEqual([l["lesson"] for l in self.client.list_learnings()],
                         ["grep before renaming"])
        with self.assertRaises(errors.NotFound) as e:
            self.client.import_missy(os.path.join(self.daemon.home, "absent.db"))
        self.assertEqual(e.exception.field, "path")


class ConnectionTest(DaemonTestCase):
    CONFIG_YAML = DaemonTestCase.CONFIG_YAML + "  limits:\n    read_timeout_ms: 200\n"

    def test_idle_connection_closed_by_the_daemon_is_reopened(self):
        self.client.create_session("demo")
        time.sleep(0.5)  # the daemon closes the idle keep-alive connection meanwhile
        a = self.client.append_messages("demo", [{"role": "user", "content": "hi"}])
        self.assertEqual(a["last_seq"], 1)
        time.sleep(0.5)
        self.assertEqual(self.client.get_session("demo")["message_count"], 1)

    def test_missing_daemon_names_the_socket(self):
        self.daemon.stop()
        with self.assertRaises(errors.ConnectionError) as e:
            self.client.health()
        err = e.exception
        self.assertIn(f"cannot reach missyd at {self.daemon.socket_path}", str(err))
        self.assertEqual((err.status, err.code, err.socket_path), (0, "unreachable",
                                                                    self.daemon.socket_path))
        self.assertIsInstance(err, ConnectionError)  # the built-in one too
        self.assertIsInstance(err, errors.MissyError)
        self.daemon.start()  # the same client works again once the daemon is back
        self.assertEqual(self.client.health()["status"], "ok")


class DefaultSocketTest(unittest.TestCase):
    def setUp(self):
        self.saved = {k: os.environ.get(k) for k in ("MISSY_SOCKET", "MISSY_HOME", "HOME",
                                                    "XDG_RUNTIME_DIR")}
        self.addCleanup(self.restore)

    def restore(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def test_socket_path_resolution(self):
        os.environ["MISSY_SOCKET"] = "/run/x/api.sock"
        os.environ["MISSY_HOME"] = "/srv/missy"
        self.assertEqual(default_socket_path(), "/run/x/api.sock")
        self.assertEqual(MissyClient().socket_path, "/run/x/api.sock")
        del os.environ["MISSY_SOCKET"]
        self.assertEqual(MissyClient().socket_path, "/srv/missy/missyd.sock")
        del os.environ["MISSY_HOME"]
        os.environ["HOME"] = "/home/someone"
        self.assertEqual(default_socket_path(), "/home/someone/.missy/missyd.sock")
        self.assertEqual(MissyClient("/tmp/given.sock").socket_path, "/tmp/given.sock")

    def test_the_socket_activated_socket_when_the_home_has_none(self):
        import socket as socket_module
        import tempfile
        with tempfile.TemporaryDirectory(dir="/tmp") as runtime, \
                tempfile.TemporaryDirectory(dir="/tmp") as home:
            os.environ.pop("MISSY_SOCKET", None)
            os.environ["MISSY_HOME"] = home
            os.environ["XDG_RUNTIME_DIR"] = runtime
            self.assertEqual(default_socket_path(), os.path.join(home, "missyd.sock"))
            os.mkdir(os.path.join(runtime, "missy"))
            activated = os.path.join(runtime, "missy", "missyd.sock")
            listener = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
            try:
                listener.bind(activated)
                self.assertEqual(default_socket_path(), activated)
                # A socket in the home still comes first.
                own = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
                try:
                    own.bind(os.path.join(home, "missyd.sock"))
                    self.assertEqual(default_socket_path(), os.path.join(home, "missyd.sock"))
                finally:
                    own.close()
            finally:
                listener.close()


if __name__ == "__main__":
    unittest.main()
