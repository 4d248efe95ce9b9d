#!/usr/bin/env node
// What the template budgets cost and bound (docs/security.md):
//  1. a large prompt: every vendored template renders a ~1 MB conversation; ms per MB and steps;
//  2. the attack templates: CPU time until ERR_TEMPLATE_LIMIT (each in this process, in turn);
//  3. tokenizing that prompt with prompt segments (the fast path, and cut in TypeScript) vs plain.
// Uses dist/ (npm run bench:templates builds it first). Figures are of one run; give `uptime`.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { loadavg } from "node:os";

const root = join(import.meta.dirname, "..");
const dist = (p) => import(join(root, "dist", p));
const { prepareChatContext, renderChatPrompt } = await dist("chat/apply/render.js");
const { renderTemplateMarked } = await dist("jinja/render.js");
const { segmentsFromMarks, tokenizeChatPrompt } = await dist("chat/prompt.js");
const { loadModel } = await dist("llama/index.js");
const { ensureTestModel } = await dist("test-model/index.js");

const dir = join(root, "vendor/llama.cpp/models/templates");
const tools = JSON.parse(readFileSync(join(root, "test/fixtures/conversations/tool-call.json"), "utf8")).tools;
const messages = [{ role: "system", content: "S".repeat(1000) }];
for (let i = 0; i < 100; i++) messages.push({ role: "user", content: `${"word ".repeat(1000)}${i}` }, { role: "assistant", content: "answer ".repeat(700) });

console.log(`load ${loadavg().map((l) => l.toFixed(1)).join(" ")}`);
const rows = [];
for (const f of readdirSync(dir).filter((x) => x.endsWith(".jinja")).sort()) {
  const src = readFileSync(join(dir, f), "utf8");
  let prep;
  try {
    prep = prepareChatContext(src, { messages, tools });
  } catch {
    continue;
  }
  const vars = { ...prep.variables, add_generation_prompt: true };
  let usage;
  try {
    renderTemplateMarked(prep.source, vars, { inputVariables: ["messages", "tools"] }); // warm up
    const t = process.hrtime.bigint();
    const out = renderTemplateMarked(prep.source, vars, { inputVariables: ["messages", "tools"], onUsage: (u) => (usage = u) });
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    rows.push({ f, ms, mb: out.text.length / 1e6, steps: usage.steps });
  } catch (e) {
    // templates that reject this conversation
  }
}
rows.sort((a, b) => a.ms / a.mb - b.ms / b.mb);
const perMb = rows.map((r) => r.ms / r.mb);
console.log(`1. a ~1 MB conversation on ${rows.length} templates: median ${perMb[perMb.length >> 1].toFixed(0)} ms/MB, max ${perMb.at(-1).toFixed(0)} ms/MB (${rows.at(-1).f}), most steps ${Math.max(...rows.map((r) => r.steps))} of 5,000,000`);

const attacks = [
  ["nested loops", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"],
  ["loop printing", "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}"],
  ["macro recursion per item", "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{% for i in range(1000000) %}{{ f(50) }}{% endfor %}"],
  ["tojson of a big list", "{% set a = range(900000) | list %}{% for i in range(100) %}{% set b = a | tojson %}{% endfor %}"],
  ["DAG of 2^60 paths", "{% set ns = namespace(x=[1]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x | tojson }}"],
  ["sort in a loop", "{% set a = range(900000) | list %}{% for i in range(100) %}{% set b = a | sort %}{% endfor %}"],
  ["strftime bomb", "{% for i in range(1000000) %}{{ strftime_now('%c' * 1000) }}{% endfor %}"],
  ["'a' * 2^27 | replace", "{{ ('a' * 134217729) | replace('a', 'b') }}"],
];
console.log("2. attack templates, CPU until ERR_TEMPLATE_LIMIT:");
for (const [name, src] of attacks) {
  const c0 = process.cpuUsage();
  let limit = "rendered";
  try {
    renderChatPrompt(src, { messages: [{ role: "user", content: "hi" }] });
  } catch (e) {
    limit = e.limit ?? e.code;
  }
  const c = process.cpuUsage(c0);
  console.log(`   ${name}: ${((c.user + c.system) / 1000).toFixed(0)} ms CPU (${limit})`);
}

const model = await loadModel(await ensureTestModel("tiny"), { vocabOnly: true });
const src = readFileSync(join(dir, "Qwen-Qwen2.5-7B-Instruct.jinja"), "utf8");
const p = renderChatPrompt(src, { messages, tools });
const segs = segmentsFromMarks(p.inputMarks);
const time = (f) => {
  f();
  const t = process.hrtime.bigint();
  const n = f().length;
  return [Number(process.hrtime.bigint() - t) / 1e6, n];
};
const [plain, n0] = time(() => model.tokenize(p.prompt, { addSpecial: true, parseSpecial: true }));
const [fast, n1] = time(() => tokenizeChatPrompt(model, p.prompt, segs));
const [cut, n2] = time(() => tokenizeChatPrompt(model, p.prompt, segs, { forcePartition: true }));
console.log(`3. tokenizing the ${(p.prompt.length / 1e6).toFixed(2)} MB Qwen2.5 prompt (${segs.length} segments): plain ${plain.toFixed(0)} ms (${n0} tokens), with segments ${fast.toFixed(0)} ms (${n1}), cut in TypeScript ${cut.toFixed(0)} ms (${n2})`);
model.dispose();
console.log(`load ${loadavg().map((l) => l.toFixed(1)).join(" ")}`);
