/**
 * Every vendored template's plans (x the apply conversations): a ChatSession streaming the output the
 * template renders for the expected reply gives, for several chunkings, exactly the frames a session
 * that re-parses, re-maps and re-diffs from scratch on every piece gives. No reference needed: the
 * outputs come from our own renderer.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { applyChatTemplate, type ApplyChatRequest } from "../../../lib/chat/apply/index.js";
import type { ChatPlan } from "../../../lib/chat/plan.js";
import { ChatSession, type ChatFrame } from "../../../lib/chat/session.js";
import { LlamapegError } from "../../../lib/errors.js";

const ROOT = path.resolve(import.meta.dirname, "../../..");
const TEMPLATES = path.join(ROOT, "vendor/llama.cpp/models/templates");
const conversations = JSON.parse(fs.readFileSync(path.join(ROOT, "test/fixtures/apply/conversations.json"), "utf8")) as {
  name: string;
  messages: unknown[];
  tools?: unknown[];
  tool_choice?: string;
  parallel_tool_calls?: boolean;
  reasoning_format: string;
  response_format?: unknown;
  expected: Record<string, unknown>;
}[];
const templates = fs.readdirSync(TEMPLATES).filter((f) => f.endsWith(".jinja")).sort();
const encoder = new TextEncoder();
const NOW = new Date("2026-01-31T12:00:00Z");

function request(conv: (typeof conversations)[number], messages: unknown[], addGenerationPrompt: boolean): ApplyChatRequest {
  return {
    messages,
    ...(conv.tools ? { tools: conv.tools, tool_choice: conv.tool_choice ?? "auto", parallel_tool_calls: conv.parallel_tool_calls ?? false } : {}),
    ...(conv.response_format ? { response_format: conv.response_format } : {}),
    reasoning_format: conv.reasoning_format,
    add_generation_prompt: addGenerationPrompt,
    bos_token: "<s>",
    eos_token: "</s>",
    now: NOW,
  } as never;
}

/** What the template renders as the reply after the generation prompt (end-of-turn suffix dropped), or null. */
function renderedOutput(source: string, conv: (typeof conversations)[number], plan: ChatPlan): string | null {
  const render = (messages: unknown[]): string | null => {
    try {
      return applyChatTemplate(source, request(conv, messages, false)).prompt;
    } catch {
      return null;
    }
  };
  const base = render(conv.messages);
  const full = render([...conv.messages, { role: "assistant", ...conv.expected }]);
  const other = render([...conv.messages, { role: "assistant", content: "Zq" }]);
  if (base === null || full === null || other === null || !full.startsWith(base)) return null;
  let turn = full.slice(base.length);
  if (!turn.startsWith(plan.generationPrompt)) return null;
  turn = turn.slice(plan.generationPrompt.length);
  let suffix = 0;
  while (suffix < turn.length && suffix < other.length && turn[turn.length - 1 - suffix] === other[other.length - 1 - suffix]) suffix++;
  return turn.slice(0, turn.length - suffix);
}

/** xorshift32 */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}

function frames(plan: ChatPlan, bytes: Uint8Array, sizes: number[]): ChatFrame[] {
  const s = new ChatSession(plan, { generateToolCallId: (i) => `id${i}` });
  const out: ChatFrame[] = [];
  let at = 0;
  for (let i = 0; at < bytes.length; i++) {
    const n = sizes[i % sizes.length]!;
    out.push(structuredClone(s.feed(bytes.subarray(at, at + n))));
    at += n;
  }
  out.push(structuredClone(s.finish()));
  return out;
}

describe("streaming over every template's plans: incremental = from scratch", () => {
  let compared = 0;
  for (const file of templates) {
    it(file.replace(/\.jinja$/, ""), () => {
      const source = fs.readFileSync(path.join(TEMPLATES, file), "utf8");
      for (const [k, conv] of conversations.entries()) {
        let plan: ChatPlan;
        try {
          plan = applyChatTemplate(source, request(conv, conv.messages, true));
        } catch (e) {
          if (e instanceof LlamapegError) continue;
          throw e;
        }
        if (plan.parser === null) continue;
        const arena = plan.parser;
        const fresh: ChatPlan = { ...plan, parser: { parse: (input, options) => arena.parse(input, options) } };
        const text = renderedOutput(source, conv, plan);
        if (text === null || text === "") continue;
        const clean = encoder.encode(text);
        // the output, and the output with a stray byte in the middle
        const mid = clean.length >> 1;
        const stray = Uint8Array.from([...clean.subarray(0, mid), 0xff, ...clean.subarray(mid)]);
        const rand = rng(k * 7919 + file.length);
        for (const bytes of [clean, stray]) {
          for (const sizes of [[1], [7], Array.from({ length: 16 }, () => 1 + Math.floor(rand() * 9))]) {
            expect(frames(plan, bytes, sizes), `${conv.name}, pieces ${sizes.join(",")}`).toEqual(frames(fresh, bytes, sizes));
            compared++;
          }
        }
      }
    });
  }
  it("compared a good share of the plans", () => {
    expect(compared).toBeGreaterThan(1500);
  });
});
