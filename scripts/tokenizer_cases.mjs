// Writes the expected token ids of Hugging Face's JavaScript tokenizer port
// (@huggingface/tokenizers) for a few thousand varied strings, so swan's C++
// tokenizer can be compared with it string by string.
//
// usage: node scripts/tokenizer_cases.mjs TOKENIZERS_JS_DIR TOKENIZER_DIR OUT.json [COUNT]
//   TOKENIZER_DIR holds tokenizer.json (and tokenizer_config.json if present).
// Output JSON: {"count": N, "cases": [{"text": T, "ids": [...], "decoded": D}, ...]}
//   ids: encode(text) with the post-processor's special tokens (add_special_tokens = true).
//   decoded: decode(ids) keeping special tokens, without clean-up of spaces.
//   Generated strings may hold lone surrogates; they are made well-formed
//   (each becomes U+FFFD) before encoding, since UTF-8 text cannot hold them.
// The strings are generated from a fixed seed, so every run writes the same file.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [jsDir, tokDir, outPath, countArg] = process.argv.slice(2);
if (!jsDir || !tokDir || !outPath) {
  console.error("usage: node tokenizer_cases.mjs TOKENIZERS_JS_DIR TOKENIZER_DIR OUT.json [COUNT]");
  process.exit(2);
}
const count = Number(countArg ?? 3000);
const { Tokenizer } = await import(pathToFileURL(path.join(jsDir, "dist", "tokenizers.mjs")).href);

const tokenizerJson = JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer.json"), "utf8"));
const configPath = path.join(tokDir, "tokenizer_config.json");
const config = fs.existsSync(configPath) ? JSON.parse(fs.readFileSync(configPath, "utf8")) : {};
const tokenizer = new Tokenizer(tokenizerJson, config);

// mulberry32: a small deterministic generator.
let seed = 0x5eed1234;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const words = `the a of and to in is was that it for on with as his they at be this from I have
or by one had not but what all were when we there can an your which their said if do will each about
how up out them then she many some so these would other into has more her two like him see time could
no make than first been its who now people my made over did down only way find use may water long
little very after words called just where most know get through back much before go good new write
our used me man too any day same right look think also around another came come work three word must
because does part even place well such here take why things help put years different away again off
went old number great tell men say small every found still between name should home big give air line
set own under read last never us left end along while might next sound below saw something thought both
few those always looked show large often together asked house don't world going want school important
until form food keep children feet land side without boy once animal life enough took sometimes four
head above kind began almost live page got earth need far hand high year mother light parts country
father let night following picture being study second eyes soon times story boys since white days ever
paper hard near sentence better best across during today others sure means knew it's try told young
miles sun ways thing whole hear example heard several change answer room sea against top turned learn
point city play toward five using himself usually Lily Tom Mr. Mrs. Dr. U.S.A. e.g. i.e. etc. OpenAI
naïve café résumé coöperate Zürich São Paulo Москва Ελλάδα`.split(/\s+/);
const contractions = ["I'm", "don't", "can't", "won't", "it's", "we're", "they've", "you'll", "he'd",
  "she's", "THEY'RE", "We'Ve", "I'M", "y'all", "o'clock", "rock'n'roll", "'tis", "isn't", "'s", "'",
  "''", "'''", "it’s", "don’t"];
const punct = [".", ",", "!", "?", ";", ":", "...", "—", "–", "-", "(", ")", "[", "]", "{", "}", "\"",
  "“", "”", "«", "»", "/", "\\", "@", "#", "$", "%", "^", "&", "*", "+", "=", "<", ">", "|", "~", "`",
  "§", "¶", "•", "…", "¿", "¡", "。", "、", "！", "？"];
const emoji = ["😀", "😂", "🤖", "👍", "👍🏽", "❤️", "🇫🇷", "🇯🇵", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🧑🏿‍💻", "✨", "🔥",
  "🎉", "☕", "⌚", "🦀", "🐍", "🫠", "🥲", "1️⃣", "#️⃣", "©", "®", "™"];
const scripts = ["你好世界", "我们今天去公园玩。", "机器学习是人工智能的一个分支", "日本語のテキストです",
  "カタカナとひらがな", "東京都", "한국어 텍스트", "안녕하세요", "ᄒᆞᆫ글", "Привет, мир!", "Здравствуйте",
  "Γειά σου Κόσμε", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "Xin chào thế giới",
  "Tiếng Việt", "ăâêôơư", "ﬁ ﬂ ﬀ", "Ａ Ｂ Ｃ １２３", "ⅷ Ⅻ ½ ¾ ²³", "ǅ ǈ ǋ", "ſ ß ẞ", "İstanbul ıi",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝟘𝟙𝟚", "𠀀𠀁 𪚥", "ꓘ", "ᚠᛇᚻ", "ⴰⵣⵓⵍ"];
const combining = ["e\u0301", "a\u0300", "o\u0308", "n\u0303", "u\u0308\u0304", "\u0301", "A\u030A",
  "\u1100\u1161\u11A8", "\u1100\u1161", "c\u0327", "i\u0307", "\u0915\u093C", "z\u0336\u0335",
  "Z\u0351\u036B\u0343\u036A\u0302\u036B\u033D", "\u212B", "\u2126", "\u00C5", "\u0041\u030A"];
const whitespace = [" ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r", " \n",
  "\n ", " \t \n", "\u00A0", "\u2009", "\u3000", "\u2028", "\u200B", "\uFEFF", "\u000B", "\u000C",
  "\u0085", "                ", "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"];
const specials = ["<s>", "</s>", "<unk>", "<pad>", "<bos>", "<eos>", "<|endoftext|>", "<|im_start|>",
  "<|im_end|>", "<start_of_turn>", "<end_of_turn>", "<|begin_of_text|>", "<|end_of_text|>",
  "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|start|>", "<|end|>", "<|message|>",
  "<|channel|>", "<|return|>", "<think>", "</think>", "<|fim_prefix|>", "<tool_call>", "<image>",
  "<start_of_image>", "<mask>", "<|reserved_special_token_5|>", "<s", "s>", "<|endoftext", "<<s>>"];
const code = [
  "def f(x):\n    return x * 2\n",
  "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
  "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }",
  "const x = await fetch(`/api/${id}`);",
  "if __name__ == \"__main__\":\n    main()\n",
  "SELECT * FROM users WHERE id = 42;",
  "    # comment with trailing spaces   \n\n    pass",
  "x+=1;y-=2;z*=3;w/=4;",
  "<div class=\"a\">Hello</div>",
  "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
  "λx.x → ∀y∈ℝ: y² ≥ 0",
  "http://example.com/path?q=1&r=two#frag",
  "user@example.org",
  "C:\\Windows\\System32\\drivers",
  "~/.config/swan/tokenizer.json",
  "a_b_c snake_case camelCase PascalCase SCREAMING_CASE kebab-case",
  "0x1F 0b1010 1e-9 3.14159 -0.5 1,000,000 2024-01-15 12:30:45",
];

function number() {
  switch (int(0, 5)) {
    case 0: return String(int(0, 9));
    case 1: return String(int(0, 99999));
    case 2: return String(Math.floor(rand() * 1e15));
    case 3: return (rand() * 1000).toFixed(int(1, 6));
    case 4: return int(1, 999).toLocaleString("en-US") + "," + String(int(100, 999));
    default: return "1234567890".slice(0, int(1, 10)).repeat(int(1, 3));
  }
}
function randomCodePoint() {
  const ranges = [[0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff],
    [0x590, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0x1100, 0x11ff], [0x2000, 0x206f],
    [0x2100, 0x27bf], [0x3000, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0xf900, 0xfaff],
    [0xff00, 0xffef], [0x1f300, 0x1faff], [0x10000, 0x1007f], [0x1d400, 0x1d7ff], [0x0, 0x1f]];
  const [lo, hi] = pick(ranges);
  return String.fromCodePoint(int(lo, hi));
}
function wordLike() {
  let w = pick(words);
  const r = rand();
  if (r < 0.1) w = w.toUpperCase();
  else if (r < 0.25) w = w[0].toUpperCase() + w.slice(1);
  return w;
}
function prose() {
  const n = int(3, 25);
  const parts = [];
  for (let i = 0; i < n; ++i) {
    const r = rand();
    if (r < 0.7) parts.push(wordLike());
    else if (r < 0.8) parts.push(pick(contractions));
    else if (r < 0.9) parts.push(number());
    else parts.push(pick(punct));
  }
  let s = parts.join(" ");
  if (rand() < 0.5) s += pick([".", "!", "?", "...", ""]);
  return s;
}
function mixed() {
  const pools = [() => wordLike(), () => pick(contractions), () => pick(punct), () => pick(emoji),
    () => pick(scripts), () => pick(combining), () => pick(whitespace), () => number(),
    () => pick(specials), () => randomCodePoint(), () => pick(code), () => "\u2581",
    () => pick(["\uD800", "\uDC00", "\uDBFF", "a\uD83D", "\uDE00b"])];
  const n = int(1, 12);
  let s = "";
  for (let i = 0; i < n; ++i) {
    s += pick(pools)();
    if (rand() < 0.4) s += pick([" ", "", "\n", "  "]);
  }
  return s;
}
function randomChars() {
  const n = int(1, 40);
  let s = "";
  for (let i = 0; i < n; ++i) s += randomCodePoint();
  return s;
}
function withSpecials() {
  const n = int(1, 5);
  let s = "";
  for (let i = 0; i < n; ++i) {
    s += pick([prose, () => pick(specials), () => " " + pick(specials) + " ", () => pick(whitespace)])();
  }
  return s;
}
function whitespaceRun() {
  const n = int(1, 8);
  let s = "";
  for (let i = 0; i < n; ++i) s += rand() < 0.6 ? pick(whitespace) : wordLike();
  return s;
}

const fixed = ["", " ", "  ", "\n", "a", "I", "Hello", "Hello world", " Hello world", "Hello  world",
  "hello\n\nworld", "Once upon a time, there was a little girl named Lily.", "<s>", "<s>hello",
  "hello</s>", " <s> ", "\u2581", "\u2581\u2581hi", "🤖", "e\u0301", "\uD800", "1234567", "don't",
  "   leading", "trailing   ", "\t\ttabs", "ＡＢＣ", "\u0000", "\u0085", "\uFEFFbom"];
const generators = [prose, prose, mixed, mixed, randomChars, withSpecials, whitespaceRun,
  () => pick(code), () => pick(scripts) + " " + pick(combining) + pick(emoji),
  () => { let s = ""; const n = int(5, 40); for (let i = 0; i < n; ++i) s += prose() + pick(["\n", " ", "\n\n"]); return s; }];

// Long inputs (2-6 KB): SentencePiece-style files encode each as one piece.
function long() {
  let s = "";
  const n = int(2000, 6000);
  while (s.length < n) s += pick(generators)() + pick(["\n", " ", "", "\n\n"]);
  return s;
}

const cases = [];
for (let i = 0; i < count; ++i) {
  const text = (i < fixed.length ? fixed[i] : i % 50 === 0 ? long() : pick(generators)()).toWellFormed();
  const ids = tokenizer.encode(text).ids;
  const decoded = ids.length ? tokenizer.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }) : "";
  cases.push({ text, ids, decoded });
}
fs.writeFileSync(outPath, JSON.stringify({ count: cases.length, cases }));
console.log(`tokenizer_cases: wrote ${cases.length} cases to ${outPath}`);
