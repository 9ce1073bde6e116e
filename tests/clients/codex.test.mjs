// Codex CLI (`codex exec`, npm @openai/codex, pinned) as the agent, its model provider
// pointed at the proxy in a temporary CODEX_HOME's config.toml (wire_api = "responses"),
// in a temporary project whose shell tool really runs. The scripted upstream answers call
// 1 with a reasoning item and an exec_command call that creates a file, call 2 with one
// that appends to it and prints it, call 3 with the text "done".
// Under MISSY_CLIENTS_DIRECT=1 Codex talks to the fake directly.
// MISSY_CLIENTS_OBSERVE=DIR writes what the upstream received to DIR/codex.json.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startFakeUpstream, openai } from './fake_upstream.mjs';
import { startTarget, binDir, tempDir, removeDir } from './missyd.mjs';
import { assertJsonEqual, runCli, cleanEnv, findSession } from './common.mjs';

const CODEX = path.join(binDir, 'codex');
let upstream;
let target;

const outputs = (req) => req.body.input.filter((i) => i.type === 'function_call_output');
const isMain = (req) => req.api === 'openai.responses';

// Codex's shell tool: exec_command {cmd} in 0.169 (older versions: shell {command: [argv]}).
function shellCall(req, command) {
  const names = (req.body.tools ?? []).map((t) => t.name);
  if (names.includes('exec_command')) return openai.functionCall('exec_command', { cmd: command });
  if (names.includes('shell_command')) return openai.functionCall('shell_command', { command });
  return openai.functionCall('shell', { command: ['bash', '-lc', command] });
}

function script(req) {
  if (!isMain(req)) return undefined; // GET /v1/models and the like: harmless defaults
  const done = outputs(req).length;
  if (done === 0) return openai.responsesReply(req, { output: [openai.reasoning(), shellCall(req, 'echo hello > made.txt')] });
  if (done === 1) return openai.responsesReply(req, { output: [openai.reasoning(), shellCall(req, 'echo world >> made.txt && cat made.txt')] });
  return openai.responsesReply(req, { output: [openai.outputText('done')] });
}

before(async () => {
  assert.ok(fs.existsSync(CODEX), `${CODEX} missing: run scripts/install-test-clients`);
  upstream = await startFakeUpstream({ script, delayMs: 1 });
  target = await startTarget(upstream);
});

after(async () => {
  if (process.env.MISSY_CLIENTS_OBSERVE && upstream) {
    fs.mkdirSync(process.env.MISSY_CLIENTS_OBSERVE, { recursive: true });
    fs.writeFileSync(path.join(process.env.MISSY_CLIENTS_OBSERVE, 'codex.json'), JSON.stringify(upstream.requests, null, 1));
  }
  await target?.stop();
  await upstream?.close();
});

function codexConfig(baseUrl) {
  return [
    'model = "gpt-5"',
    'model_provider = "missy"',
    'check_for_update_on_startup = false',
    '',
    '[model_providers.missy]',
    'name = "missy"',
    `base_url = "${baseUrl}"`,
    'wire_api = "responses"',
    'env_key = "OPENAI_API_KEY"',
    '',
    '[analytics]',
    'enabled = false',
    '',
    // Without these Codex looks up api.github.com and chatgpt.com (the curated plugin
    // marketplace) at start: nothing may leave 127.0.0.1.
    '[features]',
    'plugins = false',
    'remote_plugin = false',
    'apps = false',
    '',
  ].join('\n');
}

test('codex exec runs its shell tool loop through the proxy', { timeout: 150000 }, async () => {
  const home = tempDir('missy-codex-home-');
  const codexHome = path.join(home, '.codex');
  const project = tempDir('missy-codex-project-');
  const tmp = path.join(home, 'tmp');
  fs.mkdirSync(codexHome);
  fs.mkdirSync(tmp);
  fs.writeFileSync(path.join(codexHome, 'config.toml'), codexConfig(target.openaiBaseURL));
  try {
    const r = await runCli(CODEX, ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox',
                                   '--color', 'never',
                                   'Create a file named made.txt that contains hello, then append world.'], {
      cwd: project,
      timeoutMs: 120000,
      env: cleanEnv({ HOME: home, TMPDIR: tmp, CODEX_HOME: codexHome, OPENAI_API_KEY: 'sk-test' }),
    });
    const why = `exit ${r.code} ${r.signal ?? ''}${r.timedOut ? ' (timed out)' : ''}\nstdout: ${r.stdout}\nstderr: ${r.stderr}\n${target.describe()}`;
    assert.equal(r.code, 0, why);
    assert.equal(r.stdout.trim(), 'done', why);
    assert.equal(fs.readFileSync(path.join(project, 'made.txt'), 'utf8'), 'hello\nworld\n', 'the tools really ran');

    const main = upstream.requests.filter(isMain);
    assert.equal(main.length, 3, `three calls of the agent's loop\n${why}`);
    const sessionId = main[0].headers['session-id'];
    assert.ok(sessionId, 'Codex names its conversation in a session-id header');
    main.forEach((req, i) => {
      assert.equal(req.path, '/v1/responses');
      assert.equal(req.headers.authorization, 'Bearer sk-test');
      assert.equal(req.headers['session-id'], sessionId, 'one session id for the loop');
      assert.equal(req.body.store, false);
      assert.equal(req.body.stream, true);
      assert.equal(req.body.previous_response_id, undefined, 'the whole input each turn, no chaining');
      assert.equal(outputs(req).length, i, `call ${i + 1} carries ${i} tool outputs`);
    });

    // The whole input each turn: call k+1's input starts with call k's input, then k's output
    // items (ids, call_ids, arguments and encrypted reasoning as the upstream sent them),
    // then the tool outputs.
    for (let i = 0; i < 2; i++) {
      const prev = main[i].body.input;
      const next = main[i + 1].body.input;
      assertJsonEqual(next.slice(0, prev.length), prev, `call ${i + 2} resends call ${i + 1}'s input unchanged`);
      const sent = main[i].reply.response.output;
      const back = next.slice(prev.length, prev.length + sent.length);
      sent.forEach((item, j) => {
        assert.equal(back[j].type, item.type);
        assert.equal(back[j].id, item.id, `${item.type} id kept`);
        if (item.type === 'reasoning') assert.equal(back[j].encrypted_content, item.encrypted_content);
        if (item.type === 'function_call') {
          for (const k of ['call_id', 'name', 'arguments']) assert.equal(back[j][k], item[k], `function_call ${k} kept`);
        }
      });
      const out = next[prev.length + sent.length];
      assert.equal(out.type, 'function_call_output');
      assert.equal(out.call_id, sent.find((x) => x.type === 'function_call').call_id);
    }
    assert.match(JSON.stringify(outputs(main[2]).at(-1).output), /hello\\nworld/, 'the upstream saw the tool output');

    if (!target.direct) {
      const s = await findSession(target, sessionId);
      const text = JSON.stringify(s.messages);
      const items = main[2].body.input.filter((x) => x.type !== 'reasoning').length;
      assert.ok(s.messages.length >= items + 1 - 2, // the developer messages may be the session's system prompt
        `the stored session ${s.id} holds every turn: ${s.messages.length} messages`);
      assert.match(text, /hello\\nworld/, 'the stored session holds the tool output');
      assert.match(text, /"done"/, 'the stored session holds the final answer');
    }
  } finally {
    removeDir(home);
    removeDir(project);
  }
});
