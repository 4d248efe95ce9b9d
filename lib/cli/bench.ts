/**
 * `llamapeg bench`: the grammar on / off / lazy A/B for benchmark users. Same prompt, tools and
 * seeds in every mode:
 * - on:     tool_choice "required", calls only: the grammar constrains every token, each sampled
 *           in a step of its own (fast_forward false: llama.cpp's way);
 * - forced: the same with fast-forward (the default of chat completions): text the grammar forces
 *           is decoded as a batch (docs/grammar-engine.md);
 * - speculative: forced plus prompt-lookup drafts (docs/speculative.md; pays where the output
 *           repeats the prompt, costs a little where it does not);
 * - off:    the same request sampled without the grammar (the output is still parsed);
 * - lazy:   tool_choice "auto": the grammar waits for its trigger (a random-weight model never writes
 *           it, so this measures the cost of an attached, untriggered grammar).
 * Reports tokens/s, sampling ms/token, time to first token and to the first tool-call delta, and the
 * share of outputs that are complete tool calls whose arguments validate against their schemas.
 * `--lengths` adds long runs (tools attached, lazy) to show how tokens/s changes with output length.
 */
import type { ChatTool } from "../chat/tools.js";
import { loadModel, type Context } from "../llama/index.js";
import { SAMPLING_FIELDS } from "../llama/sampling-params.js";
import { createChatCompletion, validateJson, type ChatCompletion, type ChatCompletionRequest } from "../openai/index.js";
import { ensureTestModel, type TestModelSize } from "../test-model/index.js";
import { intFlag, parseFlags, stringFlag } from "./args.js";
import { DEMO_PROMPT, DEMO_TOOLS } from "./demo-tools.js";
import { loadedModelFacts, summarizeModel } from "./model-summary.js";
import { progressBar } from "./progress.js";
import { readToolsFile } from "./tools-file.js";
import { UsageError } from "./usage-error.js";

export const BENCH_SUMMARY = "grammar on / forced / speculative / off / lazy A/B: tokens/s, sampling cost, latency, valid tool calls";

export const BENCH_USAGE = `llamapeg bench [options]
  --model PATH          a GGUF model (default: the test model of --size)
  --size tiny|small     test model size (default tiny)
  --tools FILE          OpenAI tools JSON array (default: the demo set)
  --prompt TEXT         default: the demo prompt
  --modes LIST          comma-separated of on, forced, speculative, off, lazy (default on,forced,off,lazy)
  --seeds N             runs per mode, seeds 0..N-1 (default 4)
  --max-tokens N        per run (default 128)
  --lengths LIST        extra long runs with tools attached (lazy), e.g. 1024,8192 (default none)
  --threads N           compute threads (default: all cores)
  --json                machine-readable output`;

export type BenchMode = "on" | "forced" | "speculative" | "off" | "lazy";
const MODES: readonly BenchMode[] = ["on", "forced", "speculative", "off", "lazy"];

export interface BenchRun {
  seed: number;
  tokens: number;
  generationMs: number;
  samplingMs: number;
  timeToFirstTokenMs: number | null;
  timeToFirstToolCallMs: number | null;
  finishReason: string;
  validToolCalls: boolean;
  /** Of tokens: forced by the grammar (fast-forward), drafted and kept (speculative). */
  forcedTokens: number;
  draftTokens: number;
  draftAcceptedTokens: number;
}

export interface BenchSummary {
  mode: BenchMode;
  runs: BenchRun[];
  tokensPerSecond: number;
  samplingMsPerToken: number;
  medianTimeToFirstTokenMs: number | null;
  medianTimeToFirstToolCallMs: number | null;
  validToolCallShare: number;
  /** Shares of all the mode's tokens: forced, and drafted tokens kept. */
  forcedShare: number;
  draftAcceptedShare: number;
}

function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Complete (not cut by max_tokens) tool calls, each naming a known tool with arguments valid against its schema. */
export function validToolCalls(c: ChatCompletion, tools: readonly ChatTool[]): boolean {
  const calls = c.choices[0].message.tool_calls ?? [];
  if (calls.length === 0 || c.choices[0].finish_reason === "length") return false;
  return calls.every((call) => {
    const tool = tools.find((t) => t.function.name === call.function.name);
    if (tool === undefined) return false;
    try {
      return validateJson(JSON.parse(call.function.arguments), tool.function.parameters ?? {}).length === 0;
    } catch {
      return false;
    }
  });
}

function requestFor(mode: BenchMode, base: ChatCompletionRequest): ChatCompletionRequest {
  switch (mode) {
    case "on":
      return { ...base, tool_choice: "required", calls_only: true, fast_forward: false };
    case "forced":
      return { ...base, tool_choice: "required", calls_only: true, fast_forward: true };
    case "speculative":
      return { ...base, tool_choice: "required", calls_only: true, fast_forward: true, speculative: { type: "ngram" } };
    case "off":
      return { ...base, tool_choice: "required", calls_only: true, grammar: false };
    case "lazy":
      return { ...base, tool_choice: "auto" };
  }
}

export async function benchRun(context: Context, request: ChatCompletionRequest, tools: readonly ChatTool[], seed: number): Promise<BenchRun> {
  const t0 = performance.now();
  let first: number | null = null;
  let firstCall: number | null = null;
  const stream = createChatCompletion(context, { ...request, seed, stream: true });
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta;
    if (d === undefined || d.role !== undefined) continue;
    if (first === null && (d.content || d.reasoning_content || d.tool_calls)) first = performance.now() - t0;
    if (firstCall === null && d.tool_calls !== undefined) firstCall = performance.now() - t0;
  }
  const c = await stream.completion;
  return {
    seed,
    tokens: c.usage.completion_tokens,
    generationMs: c.llamapeg.timings.generation_ms,
    samplingMs: c.llamapeg.timings.sampling_ms,
    timeToFirstTokenMs: first,
    timeToFirstToolCallMs: firstCall,
    finishReason: c.choices[0].finish_reason,
    validToolCalls: validToolCalls(c, tools),
    forcedTokens: c.llamapeg.decoding?.forced_tokens ?? 0,
    draftTokens: c.llamapeg.decoding?.draft_tokens ?? 0,
    draftAcceptedTokens: c.llamapeg.decoding?.draft_accepted_tokens ?? 0,
  };
}

export function summarize(mode: BenchMode, runs: BenchRun[]): BenchSummary {
  const tokens = runs.reduce((n, r) => n + r.tokens, 0);
  const ms = runs.reduce((n, r) => n + r.generationMs, 0);
  const sampling = runs.reduce((n, r) => n + r.samplingMs, 0);
  return {
    mode,
    runs,
    tokensPerSecond: ms > 0 ? (tokens / ms) * 1000 : 0,
    samplingMsPerToken: tokens > 0 ? sampling / tokens : 0,
    medianTimeToFirstTokenMs: median(runs.flatMap((r) => (r.timeToFirstTokenMs === null ? [] : [r.timeToFirstTokenMs]))),
    medianTimeToFirstToolCallMs: median(runs.flatMap((r) => (r.timeToFirstToolCallMs === null ? [] : [r.timeToFirstToolCallMs]))),
    validToolCallShare: runs.length > 0 ? runs.filter((r) => r.validToolCalls).length / runs.length : 0,
    forcedShare: tokens > 0 ? runs.reduce((n, r) => n + r.forcedTokens, 0) / tokens : 0,
    draftAcceptedShare: tokens > 0 ? runs.reduce((n, r) => n + r.draftAcceptedTokens, 0) / tokens : 0,
  };
}

const fmt = (x: number | null, digits = 1): string => (x === null ? "-" : x.toFixed(digits));

export async function benchCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, {
    model: { type: "string" },
    size: { type: "string" },
    tools: { type: "string" },
    prompt: { type: "string" },
    modes: { type: "string" },
    seeds: { type: "string" },
    "max-tokens": { type: "string" },
    lengths: { type: "string" },
    threads: { type: "string" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  }, "bench");
  if (values.help) {
    console.log(BENCH_USAGE);
    return;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`, "bench");
  const size = ((values.size as string | undefined) ?? "tiny") as TestModelSize;
  if (size !== "tiny" && size !== "small") throw new UsageError(`--size must be tiny or small (got ${JSON.stringify(size)})`);
  const modes = ((values.modes as string | undefined) ?? "on,forced,off,lazy").split(",") as BenchMode[];
  for (const m of modes) if (!MODES.includes(m)) throw new UsageError(`--modes: unknown mode ${JSON.stringify(m)} (${MODES.join(", ")})`);
  const lengths = ((values.lengths as string | undefined) ?? "").split(",").filter((s) => s !== "").map((s) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--lengths: ${JSON.stringify(s)} is not a positive integer`);
    return n;
  });
  const toolsPath = stringFlag(values, "tools");
  const tools = toolsPath === undefined ? DEMO_TOOLS : readToolsFile(toolsPath);
  if (tools.length === 0) throw new UsageError("--tools: the bench needs at least one tool", "bench");
  const seeds = intFlag(values, "seeds", 4, 1, 10_000);
  const maxTokens = intFlag(values, "max-tokens", 128, 1, 1 << 20);
  const json = values.json === true;
  const modelPath = (values.model as string | undefined) ?? (await ensureTestModel(size));
  const bar = progressBar("loading model");
  const model = await loadModel(modelPath, { onProgress: (p: number) => bar.update(p) });
  bar.done();
  try {
    const context = model.createContext({
      contextSize: Math.max(4096, Math.max(maxTokens, ...lengths) + 1024),
      ...(values.threads === undefined ? {} : { threads: intFlag(values, "threads", 1, 1, 1024) }),
    });
    const base: ChatCompletionRequest = { messages: [{ role: "user", content: (values.prompt as string | undefined) ?? DEMO_PROMPT }], tools, max_tokens: maxTokens, temperature: SAMPLING_FIELDS.temperature.default };
    await createChatCompletion(context, { ...base, max_tokens: 1 }); // warm-up: the prompt is in the KV cache for every mode
    const summaries: BenchSummary[] = [];
    for (const mode of modes) {
      const runs: BenchRun[] = [];
      for (let seed = 0; seed < seeds; seed++) {
        runs.push(await benchRun(context, requestFor(mode, base), tools, seed));
        if (!json) process.stderr.write(`\r${mode}: ${seed + 1}/${seeds}`);
      }
      if (!json) process.stderr.write("\n");
      summaries.push(summarize(mode, runs));
    }
    const long: { maxTokens: number; tokens: number; tokensPerSecond: number; samplingMsPerToken: number }[] = [];
    for (const n of lengths) {
      const r = await benchRun(context, { ...requestFor("lazy", base), max_tokens: n }, tools, 0);
      long.push({ maxTokens: n, tokens: r.tokens, tokensPerSecond: r.generationMs > 0 ? (r.tokens / r.generationMs) * 1000 : 0, samplingMsPerToken: r.tokens > 0 ? r.samplingMs / r.tokens : 0 });
      if (!json) process.stderr.write(`lazy ${n} tokens done\n`);
    }
    const facts = loadedModelFacts(model);
    const result = { model: summarizeModel(facts), modelFacts: facts, modelPath, threads: context.threads, seeds, maxTokens, modes: summaries, lengths: long };
    if (json) {
      console.log(JSON.stringify(result, null, 2));
      return;
    }
    console.log(`model ${summarizeModel(facts)} · ${context.threads} threads · ${seeds} seeds · max ${maxTokens} tokens`);
    console.log("mode           tok/s   sampling ms/tok   TTFT ms   first call ms   valid calls   forced   drafts kept");
    const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
    for (const s of summaries) {
      console.log(
        `${s.mode.padEnd(11)} ${fmt(s.tokensPerSecond).padStart(8)} ${fmt(s.samplingMsPerToken, 2).padStart(17)} ${fmt(s.medianTimeToFirstTokenMs).padStart(9)} ${fmt(s.medianTimeToFirstToolCallMs).padStart(15)} ${pct(s.validToolCallShare).padStart(13)} ${pct(s.forcedShare).padStart(8)} ${pct(s.draftAcceptedShare).padStart(13)}`,
      );
    }
    for (const l of long) console.log(`lazy, ${l.tokens} tokens: ${fmt(l.tokensPerSecond)} tok/s, sampling ${fmt(l.samplingMsPerToken, 2)} ms/token`);
  } finally {
    model.dispose();
  }
}
