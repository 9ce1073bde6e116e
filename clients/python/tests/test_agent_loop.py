"""examples/agent_loop.py end to end against the real daemon."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
import unittest
from unittest import mock
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from missyd_fixture import PACKAGE_ROOT, DaemonTestCase

EXAMPLE = os.path.join(PACKAGE_ROOT, "examples", "agent_loop.py")
TURNS = ["step one: edit src/app.py to add the retry loop",
         "step two: run make test and read the failures",
         "step three: fix tests/test_retry.py",
         "step four: run make again",
         "step five: commit the change",
         "/recall src/app.py"]


def load_example():
    spec = importlib.util.spec_from_file_location("agent_loop", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["agent_loop"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


class AgentLoopScriptTest(DaemonTestCase):
    def run_example(self, *args: str) -> list:
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)  # the example finds missy_client from its checkout
        done = subprocess.run([sys.executable, EXAMPLE, "--socket", self.daemon.socket_path,
                               *args], env=env, capture_output=True, text=True, timeout=8)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return done.stdout.splitlines()

    def test_turns_usage_compaction_and_recall(self):
        args = ["--session", "demo", "--overflow-on-call", "5"]
        for t in TURNS:
            args += ["--message", t]
        out = self.run_example(*args)
        self.assertEqual(out[0], "[session] created demo")
        answers = [line for line in out if line.startswith("assistant: ")]
        self.assertEqual(answers[:5], [f"assistant: echo: {t}" for t in TURNS[:5]])
        self.assertRegex(answers[5], r"^assistant: Recalled: \[")
        compact = [line for line in out if line.startswith("[compact] leaves=")]
        self.assertEqual(len(compact), 1, out)
        self.assertRegex(compact[0], r"^\[compact\] leaves=1 messages_covered=5 tokens \d+ -> \d+; "
                                     r"retrying with ctx_[0-9a-f]{16} \(\d+ messages\)$")
        tool = [line for line in out if line.startswith("[tool] ")]
        self.assertEqual(len(tool), 1, out)
        self.assertRegex(tool[0],
                         r'^\[tool\] missy_recall\(\{"query": "src/app.py"\}\) -> \d+ chars$')
        usage = [line for line in out if line.startswith("[usage] ")]
        self.assertEqual(len(usage), 7)  # 5 echo turns, the tool call and the answer to it
        self.assertTrue(usage[-1].endswith("samples=7"), usage[-1])
        self.assertEqual(out[-1].split(" total_tokens=")[0], "[session] demo message_count=14")

        # What the daemon holds: every turn stored in order, the recall answered from it.
        stored = self.client.get_messages("demo")
        self.assertEqual([m["role"] for m in stored],
                         ["user", "assistant"] * 5 + ["user", "assistant", "tool", "assistant"])
        self.assertEqual(stored[0]["content"], TURNS[0])
        self.assertEqual(stored[11]["tool_calls"][0]["function"]["name"], "missy_recall")
        self.assertIn(f"[seq 1 · user]\n{TURNS[0]}", stored[12]["content"])
        self.assertEqual(stored[12]["tool_call_id"], stored[11]["tool_calls"][0]["id"])
        [forced] = self.client.audit(type="compaction.forced")
        self.assertEqual(forced["detail"]["reason"], "context_length_exceeded")
        self.assertEqual(len(self.client.audit(type="calibration.updated")), 7)

        again = self.run_example("--session", "demo", "--message", "one more")
        self.assertEqual(again[0], "[session] continuing demo")
        self.assertIn("assistant: echo: one more", again)
        self.assertEqual(self.client.get_session("demo")["message_count"], 16)


class FakeProvider(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions: refuses the first request for its length,
    then asks for missy_recall, then answers with what the tool returned."""

    requests: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeProvider.requests.append(body)
        n = len(FakeProvider.requests)
        if n == 1:
            return self.reply(400, {"error": {"code": "context_length_exceeded",
                                              "message": "maximum context length is 8192"}})
        last = body["messages"][-1]
        if last["role"] == "tool":
            message = {"role": "assistant", "content": "found: " + last["content"][:40]}
        else:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_x", "type": "function",
                "function": {"name": "missy_recall", "arguments": "{\"query\":\"staging\"}"}}]}
        self.reply(200, {"choices": [{"message": message}],
                         "usage": {"prompt_tokens": 100 + n, "completion_tokens": 5}})

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class OpenAICompatibleModelTest(DaemonTestCase):
    def test_run_turn_with_a_provider_that_refuses_once(self):
        agent_loop = load_example()
        local = "127.0.0.1,localhost"  # urllib must not send the fake provider's calls to a proxy
        no_proxy = mock.patch.dict(os.environ, {"no_proxy": local, "NO_PROXY": local})
        no_proxy.start()
        self.addCleanup(no_proxy.stop)
        server = ThreadingHTTPServer(("127.0.0.1", 0), FakeProvider)
        FakeProvider.requests = []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        model = agent_loop.openai_compatible_model(
            f"http://127.0.0.1:{server.server_address[1]}/v1", "test-model", "sk-test")

        self.client.create_session("s", model="gpt-4o", system_prompt="Be brief.")
        self.client.append_messages("s", [
            {"role": "user", "content": "the staging database listens on 6543"},
            {"role": "assistant", "content": "noted"}])
        lines = []
        answer = agent_loop.run_turn(self.client, "s", "which port?", model, out=lines.append)
        self.assertEqual(answer, "found: [seq 1 · user]\nthe staging database list")
        self.assertEqual(len(FakeProvider.requests), 3)
        first, retry, after_tool = FakeProvider.requests
        self.assertEqual(first["model"], "test-model")
        self.assertEqual([t["function"]["name"] for t in first["tools"]], ["missy_recall"])
        self.assertEqual(first["messages"][0], {"role": "system", "content": "Be brief."})
        self.assertEqual(first["messages"][-1], {"role": "user", "content": "which port?"})
        self.assertEqual(retry["messages"][-1], {"role": "user", "content": "which port?"})
        self.assertEqual(after_tool["messages"][-1]["role"], "tool")
        self.assertTrue(any(line.startswith("[compact] leaves=") for line in lines), lines)
        # The provider's counts were reported: the second and third requests' usage.
        [forced] = self.client.audit(type="compaction.forced")
        self.assertEqual(forced["detail"]["reason"], "context_length_exceeded")
        calibrations = self.client.audit(type="calibration.updated")
        self.assertEqual(len(calibrations), 2)
        self.assertEqual([m["role"] for m in self.client.get_messages("s")],
                         ["user", "assistant", "user", "assistant", "tool", "assistant"])


if __name__ == "__main__":
    unittest.main()
