#!/usr/bin/env node
// What a plan costs (issue 9 section 4): applyChatTemplate cold (a tool set seen for the first time;
// the template's analysis cached, and, apart, nothing cached at all) and warm (the same template,
// tools, tool_choice and schema with new messages, as an agent loop sends them), with 10 and 250
// tools, on several templates, in one run. Goals: warm <= 1 ms with 10 tools, <= 20 ms with 250;
// cold 250 tools <= 100 ms. Needs dist/ (npm run build:ts). Usage: node scripts/bench-plan.mjs [--runs N]
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { loadavg } from "node:os";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => pathToFileURL(join(root, "dist", p)).href;
const { applyChatTemplate } = await import(dist("chat/apply/index.js"));
const { clearPlanCache } = await import(dist("chat/apply/cache.js"));
const { clearTemplateAnalysisCache } = await import(dist("chat/analysis/index.js"));
const { normalizeApplyRequest } = await import(dist("chat/apply/request.js"));
const { renderInput } = await import(dist("chat/apply/render.js"));
const { templateInput, shownTools } = await import(dist("chat/apply/template-input.js"));
const { templateFacts } = await import(dist("chat/template-facts.js"));

const runsArg = process.argv.indexOf("--runs");
// 200 warm runs: with 30 the worst template's median moved 0.87-1.53 ms between runs of the script
// (V8 still tiering the interpreter up); with 200 it is steady (0.47-0.52), what a long-running
// agent process sees after its first turns.
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 200;
const TEMPLATES = [
  ["Qwen 2.5", "Qwen-Qwen2.5-7B-Instruct.jinja"],
  ["Qwen3-Coder", "Qwen3-Coder.jinja"],
  ["gpt-oss", "openai-gpt-oss-120b.jinja"],
  ["Hermes 3", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"],
  ["Mistral Small 3.2", "Mistral-Small-3.2-24B-Instruct-2506.jinja"],
  ["DeepSeek V3.1", "deepseek-ai-DeepSeek-V3.1.jinja"],
  ["GLM 4.6", "GLM-4.6.jinja"],
];

/** A tool set of `n` realistic tools (string, bounded integer, enum, array, nested object). */
function tools(n, salt) {
  return Array.from({ length: n }, (_, i) => ({
    type: "function",
    function: {
      name: `tool_${salt}_${i}`,
      description: `Tool number ${i}: does something useful with a city and a date range.`,
      parameters: {
        type: "object",
        properties: {
          city: { type: "string", description: "the city" },
          days: { type: "integer", minimum: 1, maximum: 14 },
          unit: { enum: ["celsius", "fahrenheit"] },
          tags: { type: "array", items: { type: "string" }, maxItems: 5 },
          window: { type: "object", properties: { from: { type: "string" }, to: { type: "string" } }, required: ["from"] },
        },
        required: ["city"],
      },
    },
  }));
}

const turn = (k) => [
  { role: "system", content: "You are a helpful assistant." },
  ...Array.from({ length: k }, (_, j) => [
    { role: "user", content: `Question ${j}: what is the weather in city ${j}?` },
    { role: "assistant", content: `It is sunny in city ${j}.` },
  ]).flat(),
  { role: "user", content: `Question ${k}: and tomorrow?` },
];

/** Wall and CPU milliseconds of one call (CPU: this process's user + system time, less disturbed by other processes). */
const ms = (f) => {
  const c = process.cpuUsage();
  const t = process.hrtime.bigint();
  f();
  const wall = Number(process.hrtime.bigint() - t) / 1e6;
  const cpu = process.cpuUsage(c);
  return { wall, cpu: (cpu.user + cpu.system) / 1000 };
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const medians = (xs) => ({ wall: median(xs.map((x) => x.wall)), cpu: median(xs.map((x) => x.cpu)) });
const fmt = (x) => (x < 10 ? x.toFixed(2) : x.toFixed(1));

let salt = 0;
const rows = { wall: [], cpu: [] };
for (const [label, file] of TEMPLATES) {
  const source = readFileSync(join(root, "vendor/llama.cpp/models/templates", file), "utf8");
  const row = { wall: [label], cpu: [label] };
  for (const n of [10, 250]) {
    // nothing cached: a template and tools never seen
    clearTemplateAnalysisCache();
    clearPlanCache();
    const set = tools(n, salt++);
    const request = (k) => ({ messages: turn(k), tools: set, tool_choice: "auto", now: new Date("2026-01-31T12:00:00Z") });
    const first = ms(() => applyChatTemplate(source, request(0)));
    // cold: a new tool set on a template whose analysis is cached
    const cold = [];
    for (let r = 0; r < Math.min(RUNS, 8); r++) {
      const other = tools(n, salt++);
      cold.push(ms(() => applyChatTemplate(source, { ...request(0), tools: other })));
    }
    // warm: the same tools, new messages every turn
    applyChatTemplate(source, request(0));
    const warm = [];
    for (let r = 0; r < RUNS; r++) warm.push(ms(() => applyChatTemplate(source, request(1 + (r % 6)))));
    // of which the prompt's render (the part a warm plan cannot skip)
    const render = [];
    for (let r = 0; r < RUNS; r++) {
      const req = normalizeApplyRequest(request(1 + (r % 6)));
      // the template input is built per request too: part of what a warm plan cannot skip
      render.push(ms(() => renderInput(templateFacts(source), templateInput(templateFacts(source), req, shownTools(req)), req)));
    }
    const c = medians(cold);
    const w = medians(warm);
    const rr = medians(render);
    for (const k of ["wall", "cpu"]) row[k].push(fmt(first[k]), fmt(c[k]), fmt(w[k]), fmt(rr[k]));
  }
  rows.wall.push(row.wall);
  rows.cpu.push(row.cpu);
}

const head = ["template", "10: first", "10: cold", "10: warm", "(render)", "250: first", "250: cold", "250: warm", "(render)"];
for (const k of ["cpu", "wall"]) {
  const width = head.map((h, i) => Math.max(h.length, ...rows[k].map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(width[i]) : c.padStart(width[i]))).join("  ");
  console.log(`\napplyChatTemplate, ${k === "cpu" ? "CPU" : "wall"} ms (median of ${RUNS} warm, 8 cold runs); first = nothing cached, cold = a new tool set (template analysis cached), warm = same tools, new messages; (render) = of a warm plan, the prompt's render alone`);
  console.log(line(head));
  for (const r of rows[k]) console.log(line(r));
  const worst = (col) => Math.max(...rows[k].map((r) => Number(r[col])));
  console.log(`goals (${k}): warm 10 tools <= 1 ms: worst ${fmt(worst(3))}; warm 250 tools <= 20 ms: worst ${fmt(worst(7))}; cold 250 tools <= 100 ms: worst ${fmt(worst(6))}`);
  if (k === "wall") {
    for (const [col, goal, what] of [[3, 1, "warm 10 tools"], [7, 20, "warm 250 tools"], [6, 100, "cold 250 tools"]]) {
      console.log(`${worst(col) <= goal ? "PASS" : "FAIL"}  ${what} <= ${goal} ms (wall, worst template): ${fmt(worst(col))}`);
    }
  }
}
console.log(`\nload average ${loadavg().map((x) => x.toFixed(2)).join(" ")} (the machine's; CPU time counts only this process)`);
