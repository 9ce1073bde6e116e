// Writes the token goldens of tests/data/tokens/ using tiktoken (npm, the oracle).
// Usage: node gen-token-goldens.mjs NODE_MODULES_DIR OUT_DIR  (see gen-token-goldens)
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const [modules, outDir] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'x.js'));
const { get_encoding } = require('tiktoken');
const tiktokenVersion = JSON.parse(fs.readFileSync(path.join(modules, 'tiktoken/package.json'), 'utf8')).version;
const ENCODINGS = ['o200k_base', 'cl100k_base'];
const enc = Object.fromEntries(ENCODINGS.map((n) => [n, get_encoding(n)]));
const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

// FNV-1a (32-bit) over the ids as little-endian uint32: used where the ids are too
// many to store. tests/core/bpe_encoding_test.cpp computes the same.
function fnv1a(ids) {
  let h = 0x811c9dc5;
  for (const id of ids) {
    for (let s = 0; s < 32; s += 8) {
      h ^= (id >>> s) & 0xff;
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  }
  return h;
}
const ids = (name, text) => Array.from(enc[name].encode_ordinary(text));
function withIds(c) {
  for (const n of ENCODINGS) c[n] = ids(n, c.text);
  return c;
}
function withDigest(c, text) {
  for (const n of ENCODINGS) {
    const t = ids(n, text);
    c[n] = { count: t.length, fnv1a: fnv1a(t), head: t.slice(0, 16) };
  }
  return c;
}
// GOLDENS_ONLY=heuristic.json,goldens.json regenerates only those files.
const only = process.env.GOLDENS_ONLY ? process.env.GOLDENS_ONLY.split(',') : null;
const want = (file) => !only || only.includes(file);
function write(file, header, cases) {
  if (!want(file)) return;
  const body = cases.map((c) => '  ' + JSON.stringify(c)).join(',\n');
  const json = `{"oracle": "tiktoken@${tiktokenVersion}", ${header}"cases": [\n${body}\n]}\n`;
  fs.writeFileSync(path.join(outDir, file), json);
  console.log(`gen-token-goldens: ${file}: ${cases.length} cases`);
}
const read = (p) => (fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : '');

// Translated messages (msgstr) of a gettext .mo file: real CJK text on Debian.
function moStrings(file) {
  if (!fs.existsSync(file)) return [];
  const b = fs.readFileSync(file);
  const le = b.readUInt32LE(0) === 0x950412de;
  const u32 = (o) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
  const n = u32(8), tt = u32(16);
  const out = [];
  for (let i = 1; i < n; ++i) {
    const len = u32(tt + 8 * i), off = u32(tt + 8 * i + 4);
    out.push(b.subarray(off, off + len).toString('utf8').split('\0')[0]);
  }
  return out;
}

// Hand-written CJK prose (the .mo strings are UI messages; this is running text).
const ZH = '上下文窗口是大语言模型一次能够处理的全部文本。代理在长时间的会话中不断积累消息、工具调用和工具输出，' +
  '很快就会超过模型的限制。守护进程负责在每次调用模型之前，把历史记录压缩成摘要，保留最近的对话，' +
  '并确保每一个工具调用都有对应的结果。所有的决定都会被记录下来，以便之后审计。' +
  '如果令牌计数不准确，预算就会出错：估计过低会导致请求被拒绝，估计过高则会浪费宝贵的上下文空间。';
const JA = 'コンテキストウィンドウとは、大規模言語モデルが一度に扱えるテキストの総量のことです。' +
  'エージェントは長いセッションの中でメッセージやツールの呼び出し、その出力を積み重ねていきます。' +
  'デーモンはモデルを呼び出す前に古い履歴を要約し、最新の会話を残し、ツール呼び出しと結果の組を常に正しく保ちます。' +
  'トークン数が正確でなければ、予算の計算はすべて狂ってしまいます。東京都渋谷区で２０２６年に開発されました。';
const KO = '컨텍스트 창은 대규모 언어 모델이 한 번에 처리할 수 있는 전체 텍스트의 양입니다. ' +
  '에이전트는 긴 세션 동안 메시지와 도구 호출, 도구 출력을 계속 쌓아 갑니다. ' +
  '데몬은 모델을 호출하기 전에 오래된 기록을 요약하고, 최근 대화를 유지하며, 모든 도구 호출에 결과가 있도록 보장합니다. ' +
  '토큰 수가 정확하지 않으면 예산 계산이 모두 틀어집니다.';

// ---------------------------------------------------------------- goldens.json
const gpl = read('/usr/share/common-licenses/GPL-3');
const apache = read('/usr/share/common-licenses/Apache-2.0');
const statusH = read(path.join(repo, 'core/status.h'));
const trajectory = read(path.join(repo, '../shared/data/trajectories/openai__codex-1.jsonl'));
const trajLines = trajectory.split('\n').filter(Boolean);
const toolOutputs = trajLines.map((l) => JSON.parse(l)).filter((m) => m.role === 'tool').map((m) => m.content);

const golden = [
  ['basic', 'hello world'], ['basic', ''], ['basic', ' '], ['basic', 'Hello, World!'],
  ['basic', "I'm sure they'LL say we'VE done it, can't you? It's John's"],
  ['basic', "'s 'S 'ſ ſ 'ſt DON'T WON'T"], ['basic', 'HTTPServer camelCaseWords snake_case_words XMLHttpRequest'],
  ['special', '<|endoftext|>'], ['special', 'before<|endoftext|>after <|fim_prefix|>x<|fim_middle|>y<|fim_suffix|>z<|endofprompt|>'],
  ['special', '<|im_start|>user\nhi<|im_end|>'],
  ['prose', gpl.slice(0, 3000)], ['prose', apache.slice(0, 2000)],
  ['prose', 'The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs!'],
  ['code', statusH.slice(0, 3000)],
  ['code', 'def f(x):\n    return [i ** 2 for i in range(x) if i % 3 == 0]\n\n\nclass A:\n\tpass\n'],
  ['code', 'for f in *.txt; do\n  grep -n "TODO" "$f" | awk -F: \'{print $1}\' >> /tmp/out.log 2>&1\ndone\n'],
  ['code', 'fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * 2).collect();\n    println!("{:?}", v);\n}\n'],
  ['json', trajLines.slice(0, 3).join('\n').slice(0, 4000)],
  ['json', '{"a":1,"b":[true,false,null],"c":{"d":"e\\n\\"f\\""},"num":-1.5e+10}'],
  ['json', JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } }] }, null, 2)],
  ['logs', (toolOutputs[0] || '').slice(0, 3000)],
  ['logs', '2026-11-21T16:38:12.123Z INFO  [worker-3] GET /v1/sessions/abc123/context 200 12.3ms\n' +
    '2026-11-21T16:38:12.456Z WARN  [worker-1] retrying provider call (attempt 2/5): HTTP 429\n' +
    'E1121 16:38:13.000001  4242 server.cc:88] Check failed: fd >= 0 (-1 vs. 0)\n' +
    'drwxr-xr-x  2 root root    4096 Nov 21 16:38 .\n-rw-r--r--  1 root root 3613922 Nov 21 16:38 o200k_base.tiktoken\n' +
    'Traceback (most recent call last):\n  File "/usr/lib/python3/x.py", line 12, in <module>\n    main()\nValueError: bad value\n'],
  ['logs', '[ 12%] Building CXX object core/CMakeFiles/missy_core.dir/bpe_encoding.cpp.o\n/work/main/core/x.cpp:10:5: error: expected \';\' before \'}\' token\n'],
  ['cjk', ZH], ['cjk', JA], ['cjk', KO], ['cjk', '中文English混合123测试，标点。「引号」（括号）'],
  ['emoji', '👍 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇩🇪 ❤️ 😀😀😀 🤖:robot: ✅ done'],
  ['mixed', 'Ελληνικά και Русский текст, עברית, العربية ٣٤٥, हिन्दी में, ภาษาไทย, ქართული'],
  ['mixed', 'e\u0301 a\u0308 n\u0303 \u0915\u093f \u0928\u0940\u0902 x\u20dd ǅungla ǈ ʰʲ ˈ ² ³ ½ Ⅻ ⅻ ① 𝐀𝐁𝐂 𝟏𝟐 １２３ ＡＢＣ'],
  ['mixed', 'Straße ÜBER Öl café naïve façade ĲSSEL Ǆ ﬁ ﬀ ﬃ'],
  ['mixed', 'ʕBa xʕBa ʕ•ᴥ•ʔ Aʕ ʕa ʕʕB'],
  ['unicode16', '𑼄𑼅 𑽐𑽑 𞓐𞓑 𝋀𝋁 𐵐𐵑 𐗀𐗁 𑎀𑎁 𓑠𓑡 𱍐𱍑 Kaktovik𝋂 x𞗐y'],
  ['numbers', '1234567890 3.14159 1,000,000 -42 0x1F 1e-9 ٣٤٥٦ ١٢٣ ５６７'],
  ['whitespace', '\n\n\n'], ['whitespace', 'a \n b'], ['whitespace', '  \t\n  x'], ['whitespace', 'abc   '],
  ['whitespace', 'line1\r\nline2\r\n\r\n'], ['whitespace', 'end\n'], ['whitespace', '   leading'], ['whitespace', 'a\n\n \n\tb  \n'],
  ['slashes', 'path/to/file//x\n/ http://example.com/a/b?c=d#e ./a/../b/ \\\\server\\share //\n//\r\n'],
  ['apostrophes', "''' 'a 'll 'LL 'Ll 'lL 're 'RE 'Re 'vE 'm 'M 'd 'D x's X'S 中's"],
].map(([category, text], i) => withIds({ name: `${category}-${i}`, category, text }));
write('goldens.json', '', golden);

// ------------------------------------------------------------- whitespace.json
// Every Unicode White_Space character, plus look-alikes that are not White_Space in
// Unicode 6.3+ (U+180E) or not in Rust's \s (U+001C..U+001F, U+200B, U+FEFF ...).
const WS = [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
  0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000];
const NOT_WS = [0x180e, 0x200b, 0x200c, 0x200d, 0x2060, 0xfeff, 0x1c, 0x1d, 0x1e, 0x1f, 0x00];
const contexts = [(c) => c, (c) => c + c + c, (c) => 'a' + c + 'b', (c) => 'a' + c + c + 'b', (c) => c + '\n',
  (c) => '\n' + c, (c) => 'x' + c, (c) => c + 'x', (c) => '1' + c + '2', (c) => '!' + c + '!', (c) => c + ' a',
  (c) => ' ' + c + 'a', (c) => 'a' + c + '\n\nb', (c) => c + c + 'hello', (c) => 'hello' + c + c + c,
  (c) => c + '\r\n' + c, (c) => 'A' + c + "'s", (c) => '中' + c + '文', (c) => '/' + c + '/'];
const wsCases = [];
for (const cp of [...WS, ...NOT_WS]) {
  const c = String.fromCodePoint(cp);
  const hex = cp.toString(16).toUpperCase().padStart(4, '0');
  contexts.forEach((f, k) => wsCases.push(withIds({ name: `U+${hex}/${k}`, category: WS.includes(cp) ? 'white_space' : 'not_white_space', text: f(c) })));
}
write('whitespace.json', '', wsCases);

// ------------------------------------------------------------------- random.json
let seed = 0x2545f491;
const rnd = (n) => {
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed % n;
};
const POOL = [
  'a', 'Z', 'hello', 'World', 'HTTP', 'camelCase', 'ünï', 'ß', 'ǅ', 'ʰ', 'Ω', 'ж', 'Ж', '中', 'あ', 'ア', '한', 'ا', 'א', 'ก',
  '\u0301', '\u0903', '\u20dd', '\u064b', '0', '7', '123', '٣', 'Ⅻ', '½', '²', '１', "'", "'s", "'S", "'ll", "'LL", "'ſ",
  '/', '\\', '.', ',', '!', '?', '-', '_', '"', '(', ')', '{', '}', '<|', '|>', '<|endoftext|>', '@', '#', '$', '%', '😀', '👍🏽',
  '👨‍👩‍👧', '\u200d', '\ufe0f', ' ', ' ', ' ', '  ', '\t', '\n', '\r', '\r\n', '\n\n', '\u000b', '\u000c', '\u0085', '\u00a0',
  '\u1680', '\u2003', '\u2009', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\u180e', '\u200b', '\ufeff',
  '\u001c', '\u001f', '\u0000', '\ufffd', '\ud83d\ude00',
];
const randomCases = [];
for (let i = 0; i < 600; ++i) {
  let s = '';
  const len = 1 + rnd(30);
  for (let k = 0; k < len; ++k) s += POOL[rnd(POOL.length)];
  randomCases.push(withIds({ name: `random-${i}`, category: 'random', text: s }));
}
write('random.json', '', randomCases);

// -------------------------------------------------------------------- ascii.json
// ASCII-only mixes: they exercise the hand-written fast path of the pre-tokenizer
// (core/bpe_ascii_split.h) on every branch: contractions in any case, letter case runs,
// digit runs, punctuation with a leading space, slashes, every ASCII blank and newline.
const ASCII_POOL = ['a', 'b', 'Z', 'Q', 'abc', 'ABC', 'AbC', 'aBc', 'HTTPServer', 'don', "'", "'s", "'S", "'t",
  "'re", "'RE", "'rE", "'ve", "'m", "'ll", "'LL", "'lL", "'d", "'D", "'x", "'", '0', '1', '12', '123', '1234', ' ', ' ',
  '  ', '   ', '\t', '\t\t', '\n', '\n\n', '\r\n', '\r', '\u000b', '\u000c', '/', '//', '.', ',', '!', '?', '-', '_',
  '"', '(', ')', '{', '}', '[', ']', '<|', '|>', '#', '$', '%', '&', '*', '+', '=', ':', ';', '@', '\\', '^', '`', '|',
  '~', '\u0000', '\u001b', '\u001f', '\u007f'];
const asciiCases = [];
for (let i = 0; i < 1500; ++i) {
  let s = '';
  const len = 1 + rnd(24);
  for (let k = 0; k < len; ++k) s += ASCII_POOL[rnd(ASCII_POOL.length)];
  asciiCases.push(withIds({ name: `ascii-${i}`, category: 'ascii', text: s }));
}
write('ascii.json', '', asciiCases);

// --------------------------------------------------------------------- long.json
// Long runs: one pre-tokenizer piece of 100 KB (the heap merge) or many pieces.
// tiktoken's own merge is quadratic (about a minute per 100 KB piece), so only a few
// runs are 100 KB long; the others are 10 KB.
const LONG = [['a', 100000], [' ', 100000], ['中', 34000], ['1', 100000], ['a b ', 25000],
  ['ab', 5000], ['\n', 10000], ['\t', 10000], ['!', 10000], ['😀', 2500], ['\u3000', 5000],
  ['\u00a0', 5000], ['é', 5000], ['-=', 5000], ['/', 10000], ['\u0301', 5000], ['Aa', 5000]];
const longCases = !want('long.json') ? [] : LONG.map(([repeat, times]) => withDigest({ name: `${JSON.stringify(repeat)}x${times}`, repeat, times }, repeat.repeat(times)));
write('long.json', '', longCases);

// ------------------------------------------------------------------ unicode.json
// Every code point in a few contexts, by blocks of 256 (planes 0-3 and 14 in full, the
// first block of the other planes). tests/core/bpe_encoding_test.cpp builds the same
// text: for each code point c (surrogates skipped) the snippet below; "'s" after c and
// "Ba" after c make letters, marks and numbers split differently from other characters.
const snippet = (c) => 'x' + c + 'y ' + c + c + 'Z' + c + "1'" + c + 's\n' + c + "'s a" + c + "'s A" + c + 'a ' + c + 'Ba\n';
const uniCases = [];
for (let plane = 0; want('unicode.json') && plane <= 16; ++plane) {
  const full = plane <= 3 || plane === 14;
  for (let b = 0; b < (full ? 256 : 1); ++b) {
    const first = plane * 0x10000 + b * 256;
    if (first >= 0xd800 && first <= 0xdfff) continue;
    let text = '';
    for (let cp = first; cp < first + 256; ++cp) text += snippet(String.fromCodePoint(cp));
    uniCases.push(withDigest({ first, last: first + 255 }, text));
    for (const n of ENCODINGS) delete uniCases[uniCases.length - 1][n].head;
  }
}
write('unicode.json', '"snippet": "x{c}y {c}{c}Z{c}1\'{c}s\\n{c}\'s a{c}\'s A{c}a {c}Ba\\n", ', uniCases);

// ---------------------------------------------------------------- heuristic.json
// Samples of each corpus category with exact counts, for the heuristic's error bound.
const samples = [];
const add = (category, name, text) => {
  if (!text) return;
  const c = { category, name, text };
  for (const n of ENCODINGS) c[n] = ids(n, text).length;
  samples.push(c);
};
add('prose', 'GPL-3', gpl.slice(0, 8000));
add('prose', 'Apache-2.0', apache.slice(0, 8000));
add('code', 'core/status.h', statusH);
add('code', 'scripts/gen-token-goldens.mjs', read(path.join(repo, 'scripts/gen-token-goldens.mjs')).slice(0, 6000));
for (const f of ['openai__codex-1.jsonl', 'gruckion__mini-swe-agent-1.jsonl', 'marot__spotter-1.jsonl']) {
  const lines = read(path.join(repo, '../shared/data/trajectories', f)).split('\n').filter(Boolean);
  add('json', f, lines.slice(0, 40).join('\n').slice(0, 8000));
  const outs = lines.map((l) => JSON.parse(l)).filter((m) => m.role === 'tool' && typeof m.content === 'string');
  add('logs', f + ' tool outputs', outs.map((m) => m.content).join('\n').slice(0, 8000));
}
// Dense synthetic logs: timestamps, levels, ids, IPs, paths, durations.
const levels = ['INFO', 'WARN', 'ERROR', 'DEBUG'];
const synthLines = [];
for (let i = 0; i < 120; ++i) {
  const ts = `2026-11-${String(1 + (i % 28)).padStart(2, '0')}T${String(i % 24).padStart(2, '0')}:${String((i * 7) % 60).padStart(2, '0')}:${String((i * 13) % 60).padStart(2, '0')}.${String((i * 37) % 1000).padStart(3, '0')}Z`;
  const id = ((i * 2654435761) >>> 0).toString(16);
  const kinds = [
    `${ts} ${levels[i % 4]} [worker-${i % 8}] GET /v1/sessions/${id}/context 200 ${(i * 1.7).toFixed(1)}ms`,
    `${ts} ${levels[i % 4]} conn from 10.0.${i % 256}.${(i * 3) % 256}:${40000 + i} closed after ${i * 3}s (bytes=${i * 1024})`,
    `E${1100 + (i % 30)} ${ts.slice(11, 23)} ${4000 + i} server.cc:${i + 10}] Check failed: fd >= 0 (${-i} vs. 0)`,
    `-rw-r--r--  1 root root ${(i * 98765) % 10000000} Nov ${1 + (i % 28)} 16:${String(i % 60).padStart(2, '0')} file_${id}.log`,
  ];
  synthLines.push(kinds[i % kinds.length]);
}
add('logs', 'synthetic service logs', synthLines.join('\n') + '\n');
add('logs', 'golden log lines', golden.filter((c) => c.category === 'logs').map((c) => c.text).join('\n'));
add('cjk', 'zh prose', ZH);
add('cjk', 'ja prose', JA);
add('cjk', 'ko prose', KO);
for (const lang of ['zh_CN', 'ja', 'ko']) {
  add('cjk', `${lang} coreutils.mo`, moStrings(`/usr/share/locale/${lang}/LC_MESSAGES/coreutils.mo`).join('\n').slice(0, 6000));
}
write('heuristic.json', '', samples);
