// Claude Code on a task longer than its window, through the proxy: `claude -p --model
// claude-small-window`, a model missyd's table gives a 48k window, runs eight Bash tool
// turns that each print ~14k tokens (seq), then answers. The agent keeps resending its
// whole history; missyd fits every request (pruning, cutting and evicting old tool
// output, summaries in their place), stores every turn, and the agent finishes.
// Proxied only: direct, the fake upstream would just receive everything.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startFakeUpstream, anthropic } from './fake_upstream.mjs';
import { startTarget, binDir, tempDir, removeDir, direct } from './missyd.mjs';
import { runCli, cleanEnv, findSession } from './common.mjs';

const CLAUDE = path.join(binDir, 'claude');
const MODEL = 'claude-small-window';
const WINDOW = 48000;
const TURNS = 8;
let upstream;
let target;

const isMain = (req) => req.api === 'anthropic.messages' && req.body?.tools?.some((t) => t.name === 'Bash');
const toolResults = (req) => req.body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
  .filter((b) => b.type === 'tool_result');
// Which turn the agent is on: the ids of the tool_use blocks it has answered (the
// proxy may have left the oldest ones out of what the upstream sees).
const turnOf = (req) => Math.max(0, ...toolResults(req).map((b) => Number(/^toolu_turn(\d+)_/.exec(b.tool_use_id)?.[1] ?? -1) + 1));

function script(req) {
  if (!isMain(req)) {
    return req.api === 'anthropic.messages' ? anthropic.reply(req, { content: [anthropic.text('Counting')] }) : undefined;
  }
  const turn = turnOf(req);
  if (turn < TURNS) {
    const use = anthropic.toolUse('Bash', { command: `seq ${turn * 100000} ${turn * 100000 + 4000}`, description: `count, part ${turn}` });
    use.id = `toolu_turn${turn}_${use.id.slice(-8)}`;
    return anthropic.reply(req, { content: [anthropic.text(`Part ${turn}.`), use] });
  }
  return anthropic.reply(req, { content: [anthropic.text('all counted')] });
}

before(async () => {
  if (direct) return;
  upstream = await startFakeUpstream({ script, delayMs: 0 });
  target = await startTarget(upstream, {
    extraConfig: `  models:\n    - {pattern: "${MODEL}", context_window: ${WINDOW}, max_output_tokens: 8000, encoding: o200k_base}\n`,
  });
});

after(async () => {
  await target?.stop();
  await upstream?.close();
});

test('claude -p on a task longer than its window: every request fits, every turn is stored',
  { timeout: 240000, skip: direct && 'proxied only' }, async () => {
    const home = tempDir('missy-claude-long-home-');
    const project = tempDir('missy-claude-long-project-');
    const tmp = path.join(home, 'tmp');
    fs.mkdirSync(tmp);
    try {
      const r = await runCli(CLAUDE, ['-p', 'Count through all eight parts with seq, then say "all counted".',
                                      '--model', MODEL, '--allowedTools', 'Bash'], {
        cwd: project,
        timeoutMs: 200000,
        env: cleanEnv({
          HOME: home, TMPDIR: tmp, ANTHROPIC_BASE_URL: target.anthropicBaseURL, ANTHROPIC_API_KEY: 'sk-test',
          DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', DISABLE_ERROR_REPORTING: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        }),
      });
      const why = `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr.slice(-2000)}\n${target.describe()}`;
      assert.equal(r.code, 0, why);
      assert.equal(r.stdout.trim(), 'all counted', why);
      const main = upstream.requests.filter(isMain);
      assert.equal(main.length, TURNS + 1, why);

      // What the proxy sent, as it counted it: never over the window less the output.
      const audit = await target.api('GET', '/v1/audit?type=proxy.request&limit=1000');
      const sessionId = main[0].headers['x-claude-code-session-id'];
      const s = await findSession(target, sessionId);
      const events = audit.json.events.filter((e) => e.session_id === s.id);
      assert.equal(events.length, TURNS + 1);
      for (const e of events) {
        assert.equal(e.detail.window, WINDOW);
        assert.ok(e.detail.sent_tokens <= WINDOW - 8000,
          `request sent ${e.detail.sent_tokens} tokens for a budget of ${WINDOW - 8000}`);
      }
      console.log(`# claude long task: sent tokens per request ${events.map((e) => e.detail.sent_tokens).join(', ')}; ` +
        `last request: ${events.at(-1).detail.agent_messages} agent messages, ${events.at(-1).detail.sent_messages} sent, ` +
        `dropped ${events.at(-1).detail.dropped}, summarized ${events.at(-1).detail.summarized}`);
      // The agent resent every output whole each turn (what seq printed, ~215 KB by the
      // last one); the upstream got far less: old outputs pruned or cut to fit.
      let printed = 0;
      for (let turn = 0; turn < TURNS; turn++) {
        for (let n = turn * 100000; n <= turn * 100000 + 4000; n++) printed += String(n).length + 1;
      }
      const last = main.at(-1);
      const received = toolResults(last)
        .map((b) => (typeof b.content === 'string' ? b.content : JSON.stringify(b.content)).length)
        .reduce((a, b) => a + b, 0);
      assert.ok(received < printed / 2,
        `the last request carried ${received} characters of tool output of the ${printed} the agent sent`);
      // Every turn stored whole: the prompt, 8 x (answer + tool result), the last answer.
      assert.ok(s.messages.length >= 2 * TURNS + 2, `${s.messages.length} messages stored`);
      const stored = JSON.stringify(s.messages);
      for (let turn = 0; turn < TURNS; turn++) {
        assert.ok(stored.includes(`${turn * 100000 + 4000}`), `turn ${turn}'s whole output is stored`);
      }
    } finally {
      removeDir(home);
      removeDir(project);
    }
  });
