// The llamapeg commands run in-process on the tiny model, their output captured.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterEach, describe, expect, it, vi } from "vitest";

import { analyzeCommand } from "../../lib/cli/analyze.js";
import { benchCommand } from "../../lib/cli/bench.js";
import { chatCommand, chatContextOptions } from "../../lib/cli/chat.js";
import { UsageError } from "../../lib/cli/usage-error.js";
import { createChatCompletion, replayCompletion, validateJson, type ChatCompletion, type CompletionRecord } from "../../lib/openai/index.js";
import { DEMO_TOOLS } from "../../lib/cli/demo-tools.js";
import { ensureTestModel } from "../../lib/test-model/index.js";
import { loadTestModel } from "../support/models.js";

async function capture(run: () => Promise<void>): Promise<string> {
  let out = "";
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    out += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
    return true;
  });
  const log = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
    out += `${args.join(" ")}\n`;
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
    log.mockRestore();
  }
  return out;
}

afterEach(() => vi.restoreAllMocks());

describe("llamapeg chat", () => {
  it("--json on the test model: a streamed demo tool call, valid against its schema; --record replays to the same completion", async () => {
    const dir = mkdtempSync(join(tmpdir(), "llamapeg-cli-"));
    const record = join(dir, "run.json");
    const out = await capture(() => chatCommand(["--prompt", "Weather in Paris?", "--tool-choice", "get_weather", "--json", "--seed", "3", "--max-tokens", "80", "--threads", "2", "--record", record]));
    const c = JSON.parse(out) as ChatCompletion;
    const call = c.choices[0].message.tool_calls![0]!;
    expect(call.function.name).toBe("get_weather");
    if (c.choices[0].finish_reason !== "length") {
      expect(validateJson(JSON.parse(call.function.arguments), DEMO_TOOLS[0]!.function.parameters!)).toEqual([]);
    }
    const replay = replayCompletion(JSON.parse(readFileSync(record, "utf8")) as CompletionRecord);
    expect(JSON.stringify(replay.completion)).toBe(JSON.stringify(c));
  });

  it("--json --stream prints one chunk per line", async () => {
    const out = await capture(() => chatCommand(["--prompt", "hi", "--tools", "none", "--json", "--stream", "--seed", "1", "--max-tokens", "6", "--threads", "2"]));
    const lines = out.trim().split("\n").map((l) => JSON.parse(l) as { object: string; choices: { finish_reason: string | null }[] });
    expect(lines.every((l) => l.object === "chat.completion.chunk")).toBe(true);
    expect(lines[lines.length - 1]!.choices[0]!.finish_reason).toBe("length");
  });
});

describe("llamapeg analyze", () => {
  it("reads the GGUF's template without native code and prints the analysis and grammar", async () => {
    const path = await ensureTestModel("tiny");
    const out = await capture(() => analyzeCommand([path, "--json", "--tool-choice", "required", "--calls-only"]));
    const r = JSON.parse(out) as { analysis: { preservedTokens: string[] }; plan: { grammar: { gbnf: string; lazy: boolean; prefill: string } } };
    expect(r.analysis.preservedTokens).toContain("<tool_call>");
    expect(r.plan.grammar.lazy).toBe(false);
    // calls only: after the generation prompt (which the sampler prefills), the calls
    expect(r.plan.grammar.prefill).toBe("<|im_start|>assistant\n");
    expect(r.plan.grammar.gbnf).toMatch(/^root ::= "<\|im_start\|>assistant\\n" tool-calls$/m);
    const text = await capture(() => analyzeCommand([path]));
    expect(text).toMatch(/tool calls\s+json_native/);
    expect(text).toMatch(/grammar\s+lazy, triggers/);
  });
});

describe("--calls-only", () => {
  it("is --tool-choice required (the same plan); with auto or none it is a usage error", async () => {
    const path = await ensureTestModel("tiny");
    const grammar = async (...flags: string[]) => (JSON.parse(await capture(() => analyzeCommand([path, "--json", ...flags]))) as { plan: { grammar: unknown } }).plan.grammar;
    const required = await grammar("--tool-choice", "required");
    expect(await grammar("--calls-only")).toEqual(required);
    expect(await grammar("--calls-only")).not.toEqual(await grammar());
    for (const choice of ["auto", "none"]) {
      const e = await analyzeCommand([path, "--calls-only", "--tool-choice", choice]).then(() => null, (x: unknown) => x);
      expect(e).toBeInstanceOf(UsageError);
      expect((e as Error).message).toMatch(/--calls-only means --tool-choice required/);
    }
  });
});

describe("--resume", () => {
  it("is for the interactive chat: with --prompt it is a usage error, before the model loads", async () => {
    const e = await chatCommand(["--prompt", "hi", "--resume", "/nonexistent/chat.json"]).then(() => null, (x: unknown) => x);
    expect(e).toBeInstanceOf(UsageError);
    expect((e as Error).message).toMatch(/--resume is for the interactive chat/);
  });
});

describe("the chat's context", () => {
  it("interactive: context shift on, so a reply goes on past a full context; one-shot: off", async () => {
    expect(chatContextOptions(256, 2, true)).toEqual({ contextSize: 256, contextShift: true, threads: 2 });
    expect(chatContextOptions(256, undefined, false)).toEqual({ contextSize: 256 });
    const model = await loadTestModel();
    try {
      const request = { messages: [{ role: "user", content: "Tell me a long story" }], temperature: 0, max_tokens: 400 };
      const shifting = await createChatCompletion(model.createContext(chatContextOptions(256, 2, true)), request);
      expect(shifting.usage.completion_tokens).toBe(400);
      const plain = await createChatCompletion(model.createContext(chatContextOptions(256, 2, false)), request);
      expect(plain.usage.completion_tokens).toBeLessThan(256);
      expect(plain.choices[0].finish_reason).toBe("length");
    } finally {
      model.dispose();
    }
  });
});

describe("llamapeg bench", () => {
  it("--json reports every mode with the same seeds, with the forced and drafted shares", async () => {
    const out = await capture(() => benchCommand(["--json", "--seeds", "2", "--max-tokens", "12", "--modes", "off,lazy,on,forced,speculative", "--threads", "2"]));
    type Mode = { mode: string; runs: { seed: number; tokens: number; forcedTokens: number; draftTokens: number }[]; tokensPerSecond: number; validToolCallShare: number; forcedShare: number };
    const r = JSON.parse(out) as { modes: Mode[] };
    expect(r.modes.map((m) => m.mode)).toEqual(["off", "lazy", "on", "forced", "speculative"]);
    for (const m of r.modes) {
      expect(m.runs.map((x) => x.seed)).toEqual([0, 1]);
      expect(m.tokensPerSecond).toBeGreaterThan(0);
      expect(m.validToolCallShare).toBeGreaterThanOrEqual(0);
    }
    const by = Object.fromEntries(r.modes.map((m) => [m.mode, m]));
    // one token per step in "on"; the tool call's opening is forced text in "forced"
    expect(by.on!.runs.every((x) => x.forcedTokens === 0)).toBe(true);
    expect(by.forced!.forcedShare).toBeGreaterThan(0);
    expect(by.off!.runs.every((x) => x.forcedTokens === 0 && x.draftTokens === 0)).toBe(true);
  });
});
