"""The missy_recall tool: definitions as docs/API.md states them, and handle_recall."""

from __future__ import annotations

import json
import os
import re
import unittest

from missy_client import (anthropic_recall_tool, errors, handle_recall, handle_tool_call,
                          openai_recall_tool)
from missyd_fixture import REPO_ROOT, DaemonTestCase


def documented_tool() -> dict:
    """The OpenAI tools entry in docs/API.md (the json block after "The tool to hand")."""
    with open(os.path.join(REPO_ROOT, "docs", "API.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index("The tool to hand the model")
    block = re.search(r"```json\n(.*?)\n```", text[start:], re.S)
    return json.loads(block.group(1))


class ToolDefinitionTest(unittest.TestCase):
    def test_openai_shape_is_the_documented_one(self):
        self.assertEqual(openai_recall_tool(), documented_tool())

    def test_anthropic_shape_uses_the_same_name_description_and_schema(self):
        doc = documented_tool()["function"]
        self.assertEqual(anthropic_recall_tool(), {
            "name": "missy_recall", "description": doc["description"],
            "input_schema": doc["parameters"]})

    def test_definitions_are_fresh_copies(self):
        tool = openai_recall_tool()
        tool["function"]["parameters"]["properties"].clear()
        self.assertEqual(len(openai_recall_tool()["function"]["parameters"]["properties"]), 3)


class HandleRecallTest(DaemonTestCase):
    def setUp(self):
        super().setUp()
        self.client.create_session("s", model="gpt-4o")
        batch = []
        for i in range(1, 11):
            batch.append({"role": "user", "content": f"step {i}: open src/mod_{i}.py"})
            batch.append({"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{i}", "type": "function",
                "function": {"name": "bash",
                             "arguments": f"{{\"command\":\"cat src/mod_{i}.py\"}}"}}]})
            batch.append({"role": "tool", "tool_call_id": f"call_{i}",
                          "content": f"def f{i}(): return {i}"})
        self.client.append_messages("s", batch)  # 30 messages; the fresh tail is 4
        self.client.compact("s", reason="test")
        [self.summary] = self.client.list_summaries("s")

    def test_summary_id_pages_as_a_model_would_follow_them(self):
        text = handle_recall(self.client, "s", json.dumps({"summary_id": self.summary["id"]}),
                             max_tokens=120)
        self.assertTrue(text.startswith("[seq 1 · user]\nstep 1: open src/mod_1.py\n\n"
                                        "[seq 2 · assistant]\n→ bash("), text)
        m = re.search(r"\[more: recall again with after_seq (\d+)\]$", text)
        self.assertIsNotNone(m, text)
        after = int(m.group(1))
        # The model passes after_seq back (OpenAI JSON text, or an Anthropic dict).
        more = handle_recall(self.client, "s", {"summary_id": self.summary["id"],
                                                "after_seq": after}, max_tokens=120)
        self.assertTrue(more.startswith(f"[seq {after + 1} · "), more)
        direct = self.client.recall("s", summary_id=self.summary["id"], max_tokens=120,
                                    after_seq=after)
        self.assertEqual(more, direct["text"])

    def test_query_and_the_arguments_models_send(self):
        text = handle_recall(self.client, "s", '{"query": "mod_3.py", "summary_id": null}')
        self.assertIn("[seq 7 · user]\nstep 3: open src/mod_3.py", text)
        # Empty strings are absent too; numbers may come as strings.
        same = handle_recall(self.client, "s", {"query": "mod_3.py", "summary_id": "",
                                                "max_tokens": "4000"})
        self.assertEqual(same, text)
        self.assertEqual(handle_tool_call(self.client, "s", "missy_recall",
                                          '{"query":"mod_3.py"}'), text)
        self.assertIsNone(handle_tool_call(self.client, "s", "bash", '{"command":"ls"}'))

    def test_refused_calls_become_error_text_for_the_model(self):
        self.assertEqual(handle_recall(self.client, "s", "{not json"),
                         "missy_recall error: arguments are not valid JSON "
                         "(Expecting property name enclosed in double quotes)")
        self.assertEqual(handle_recall(self.client, "s", "[1]"),
                         "missy_recall error: arguments must be a JSON object")
        self.assertEqual(handle_recall(self.client, "s", {"q": "x"}),
                         "missy_recall error: unknown argument q "
                         "(expected summary_id or query, and after_seq)")
        self.assertEqual(handle_recall(self.client, "s", "{}"),
                         "missy_recall error: give exactly one of query and summary_id (query)")
        self.assertEqual(handle_recall(self.client, "s", {"summary_id": "sum_0000000000000000"}),
                         "missy_recall error: summary 'sum_0000000000000000' not found in "
                         "session 's' (summary_id)")

    def test_an_unreachable_daemon_raises(self):
        self.daemon.stop()
        with self.assertRaises(errors.ConnectionError):
            handle_recall(self.client, "s", {"query": "mod_3.py"})


if __name__ == "__main__":
    unittest.main()
