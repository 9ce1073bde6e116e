// LangChain's trimMessages (@langchain/core, strategy "last") on the same 10k-message
// history and budget as missyd's assembler, counting tokens the same way (our cached
// per-message counts). Reports time and how many tool pairs each output breaks.
// Usage: node trim_compare.mjs DIR   (DIR/history10k.json written by assembler_bench --export)
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "package.json"));
const core = require("@langchain/core/messages");
const { trimMessages, HumanMessage, AIMessage, ToolMessage, SystemMessage } = core;
const version = require("@langchain/core/package.json").version;

const data = JSON.parse(readFileSync(path.join(process.argv[2], "history10k.json"), "utf8"));
const counts = data.tokens;

const messages = data.messages.map((m, i) => {
  const id = String(i);
  const content = m.content ?? "";
  switch (m.role) {
    case "system": return new SystemMessage({ content, id });
    case "user": return new HumanMessage({ content, id });
    case "tool": return new ToolMessage({ content, id, tool_call_id: m.tool_call_id, name: m.name });
    default: return new AIMessage({
      content, id,
      tool_calls: (m.tool_calls ?? []).map((c) => ({
        id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments || "{}"), type: "tool_call",
      })),
    });
  }
});

// Same counts as missyd: the per-message count cached on append.
const tokenCounter = (msgs) => msgs.reduce((n, m) => n + counts[Number(m.id)], 0);

// Broken pairs: results with no call right before them, and calls without their result.
function brokenPairs(msgs) {
  let broken = 0;
  let open = new Set();
  for (const m of msgs) {
    const type = m._getType();
    if (type === "tool") {
      if (open.has(m.tool_call_id)) open.delete(m.tool_call_id); else broken++;
    } else {
      broken += open.size;
      open = new Set((m.tool_calls ?? []).map((c) => c.id));
    }
  }
  return broken + open.size;
}

function pct(sorted, p) { return sorted[Math.min(sorted.length - 1, Math.round(p * (sorted.length - 1)))]; }

const RUNS = Number(process.env.TRIM_RUNS || 5);  // each call takes seconds on 10k messages

async function run(label, options) {
  const times = [], cpu = [];
  let out;
  for (let i = 0; i < RUNS; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    out = await trimMessages(messages, options);
    times.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  times.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return { label, p50: pct(times, 0.5), p99: pct(times, 0.99), cpu50: pct(cpu, 0.5), messages: out.length,
           tokens: tokenCounter(out), broken: brokenPairs(out) };
}

const base = { maxTokens: data.budget, strategy: "last", tokenCounter, includeSystem: true };
const lc = `trimMessages (@langchain/core ${version})`;
const rows = [
  await run(`${lc}, defaults`, base),
  await run(`${lc}, startOn "human"`, { ...base, startOn: "human" }),
];
const o = data.ours;
console.log(`## missyd vs LangChain trimMessages (same 10,000-message history, budget ${data.budget}, same token counts)\n`);
console.log(`Time: in-process, ${RUNS} runs of trimMessages (it re-creates all 10,000 messages on every call), 50 of ours; CPU = process CPU time (node) / thread CPU time (ours), robust to machine load.\n`);
console.log("| implementation | p50 ms | p99 ms | CPU p50 ms | messages kept | tokens | broken tool pairs |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
console.log(`| missyd AssembleContext (C++, in-process) | ${o.p50_ms.toFixed(3)} | ${o.p99_ms.toFixed(3)} | ${o.cpu_p50_ms.toFixed(3)} | ${o.messages} | ${o.tokens} | ${o.broken_pairs} |`);
for (const r of rows) {
  console.log(`| ${r.label} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.cpu50.toFixed(1)} | ${r.messages} | ${r.tokens} | ${r.broken} |`);
}

// Budget sweep: where the cut lands depends on the budget; count broken pairs for each.
console.log(`\n### Budget sweep (${data.sweep.length} budgets, ${data.sweep[0].budget}..${data.sweep[data.sweep.length - 1].budget})\n`);
console.log("| implementation | budgets with a broken pair | broken pairs in total |");
console.log("|---|---:|---:|");
const ourBad = data.sweep.filter((s) => s.broken_pairs > 0).length;
const ourTotal = data.sweep.reduce((n, s) => n + s.broken_pairs, 0);
console.log(`| missyd AssembleContext | ${ourBad} | ${ourTotal} |`);
for (const [label, opts] of [[`${lc}, defaults`, {}], [`${lc}, startOn "human"`, { startOn: "human" }]]) {
  let bad = 0, total = 0;
  for (const s of data.sweep) {
    const out = await trimMessages(messages, { ...base, ...opts, maxTokens: s.budget });
    const b = brokenPairs(out);
    bad += b > 0;
    total += b;
  }
  console.log(`| ${label} | ${bad} | ${total} |`);
}
