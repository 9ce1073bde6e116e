// Claude Code (`claude -p`, npm @anthropic-ai/claude-code, pinned) as the agent, pointed at
// the proxy by ANTHROPIC_BASE_URL, in a temporary project whose Bash tool really runs. The
// scripted upstream answers call 1 with a Bash tool_use that creates a file, call 2 with
// one that appends to it and prints it, call 3 with the text "done". Side calls (a small
// model without tools, count_tokens, anything else) get a harmless answer.
// Under MISSY_CLIENTS_DIRECT=1 Claude Code talks to the fake directly.
// MISSY_CLIENTS_OBSERVE=DIR writes what the upstream received to DIR/claude_code.json.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startFakeUpstream, anthropic } from './fake_upstream.mjs';
import { startTarget, binDir, tempDir, removeDir } from './missyd.mjs';
import { assertJsonEqual, runCli, cleanEnv, findSession } from './common.mjs';

const CLAUDE = path.join(binDir, 'claude');
let upstream;
let target;

const toolResults = (req) => req.body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
  .filter((b) => b.type === 'tool_result');

// The agent's main loop: a request carrying the Bash tool. Others are side calls.
const isMain = (req) => req.api === 'anthropic.messages' && req.body?.tools?.some((t) => t.name === 'Bash');

function script(req) {
  if (!isMain(req)) {
    if (req.api === 'anthropic.messages') return anthropic.reply(req, { content: [anthropic.text('Creating a file')] });
    return undefined; // count_tokens, HEAD, GET ...: the default harmless answers
  }
  const done = toolResults(req).length;
  if (done === 0) {
    return anthropic.reply(req, { content: [
      anthropic.thinking(''), // display: "omitted" gives an empty thinking with its signature
      anthropic.text('I will create the file.'),
      anthropic.toolUse('Bash', { command: 'echo hello > made.txt', description: 'Create made.txt' }),
    ] });
  }
  if (done === 1) {
    return anthropic.reply(req, { content: [
      anthropic.thinking(''),
      anthropic.toolUse('Bash', { command: 'echo world >> made.txt && cat made.txt', description: 'Append and show' }),
    ] });
  }
  return anthropic.reply(req, { content: [anthropic.text('done')] });
}

before(async () => {
  assert.ok(fs.existsSync(CLAUDE), `${CLAUDE} missing: run scripts/install-test-clients`);
  upstream = await startFakeUpstream({ script, delayMs: 1 });
  target = await startTarget(upstream);
});

after(async () => {
  if (process.env.MISSY_CLIENTS_OBSERVE && upstream) {
    fs.mkdirSync(process.env.MISSY_CLIENTS_OBSERVE, { recursive: true });
    fs.writeFileSync(path.join(process.env.MISSY_CLIENTS_OBSERVE, 'claude_code.json'), JSON.stringify(upstream.requests, null, 1));
  }
  await target?.stop();
  await upstream?.close();
});

test('claude -p runs its Bash tool loop through the proxy', { timeout: 150000 }, async () => {
  const home = tempDir('missy-claude-home-');
  const project = tempDir('missy-claude-project-');
  const tmp = path.join(home, 'tmp'); // Claude Code keeps per-project files under $TMPDIR/claude-UID
  fs.mkdirSync(tmp);
  try {
    const r = await runCli(CLAUDE, ['-p', 'Create a file named made.txt that contains hello, then append world.',
                                    '--allowedTools', 'Bash'], {
      cwd: project,
      timeoutMs: 120000,
      env: cleanEnv({
        HOME: home,
        TMPDIR: tmp,
        ANTHROPIC_BASE_URL: target.anthropicBaseURL,
        ANTHROPIC_API_KEY: 'sk-test',
        DISABLE_TELEMETRY: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_ERROR_REPORTING: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      }),
    });
    const why = `exit ${r.code} ${r.signal ?? ''}${r.timedOut ? ' (timed out)' : ''}\nstdout: ${r.stdout}\nstderr: ${r.stderr}\n${target.describe()}`;
    assert.equal(r.code, 0, why);
    assert.equal(r.stdout.trim(), 'done', why);
    assert.equal(fs.readFileSync(path.join(project, 'made.txt'), 'utf8'), 'hello\nworld\n', 'the tools really ran');

    const main = upstream.requests.filter(isMain);
    assert.equal(main.length, 3, `three calls of the agent's loop\n${why}`);
    main.forEach((req, i) => {
      assert.equal(req.path, '/v1/messages');
      assert.equal(req.query.beta, 'true', 'Claude Code calls /v1/messages?beta=true');
      assert.equal(req.headers['x-api-key'], 'sk-test');
      assert.ok(req.headers['anthropic-version'], 'anthropic-version');
      assert.match(req.headers['anthropic-beta'] ?? '', /claude-code-20250219/);
      assert.ok(req.headers['x-claude-code-session-id'], 'the conversation header');
      assert.equal(req.body.stream, true);
      assert.equal(toolResults(req).length, i, `call ${i + 1} carries ${i} tool results`);
    });
    const sessionId = main[0].headers['x-claude-code-session-id'];
    assert.ok(main.every((q) => q.headers['x-claude-code-session-id'] === sessionId), 'one session id for the loop');

    // Each answer comes back in the next request exactly as the upstream sent it (the agent
    // rebuilt it from the relayed stream), followed by the tool's result for its tool_use.
    for (let i = 0; i < 2; i++) {
      const answer = main[i].reply.message;
      const next = main[i + 1].body.messages;
      const k = next.findIndex((m) => m.role === 'assistant' && m.content.some((b) => b.id === answer.content.at(-1).id));
      assert.ok(k > 0, `answer ${i + 1} is in request ${i + 2}`);
      assertJsonEqual(next[k].content, answer.content, `answer ${i + 1} comes back unchanged, thinking signature included`);
      const result = next[k + 1].content.find((b) => b.type === 'tool_result');
      assert.equal(result.tool_use_id, answer.content.at(-1).id);
    }
    const last = toolResults(main[2]).at(-1);
    assert.match(JSON.stringify(last.content), /hello\\nworld/, 'the upstream saw the tool output');

    if (!target.direct) {
      const s = await findSession(target, sessionId);
      const text = JSON.stringify(s.messages);
      assert.ok(s.messages.length >= main[2].body.messages.length + 1,
        `the stored session ${s.id} holds every turn: ${s.messages.length} messages`);
      assert.match(text, /hello\\nworld/, 'the stored session holds the tool output');
      assert.match(text, /"done"/, 'the stored session holds the final answer');
    }
  } finally {
    removeDir(home);
    removeDir(project);
  }
});
