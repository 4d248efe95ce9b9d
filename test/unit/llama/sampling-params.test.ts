/** The one table of sampling fields and the one trigger mapping (lib/llama/sampling-params.ts, triggers.ts). */
import { describe, expect, it } from "vitest";

import { pickSampling, resolveSampling, SAMPLING_FIELDS, samplingFromRequest, serverSampling } from "../../../lib/llama/sampling-params.js";
import { mapTriggers, mapTriggersAsync, type GrammarTrigger } from "../../../lib/llama/triggers.js";

describe("sampling fields", () => {
  it("defaults are llama.cpp's, the same in-process and on llama-server", () => {
    expect(resolveSampling({})).toEqual({ temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, repeatPenalty: 1, frequencyPenalty: 0, presencePenalty: 0, penaltyLastN: 64, seed: -1 });
    expect(serverSampling({ minP: 0.2 })).toEqual({ temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.2, repeat_penalty: 1, frequency_penalty: 0, presence_penalty: 0, repeat_last_n: 64, seed: -1 });
  });

  it("range-checks each field with its name; pickSampling copies only what is set", () => {
    expect(() => resolveSampling({ topK: 1.5 })).toThrow(/topK must be an integer/);
    expect(() => resolveSampling({ minP: 2 })).toThrow(/minP must be between 0 and 1/);
    expect(pickSampling({ topK: 3, minP: undefined, logprobs: true, other: 1 } as never)).toEqual({ topK: 3, logprobs: true });
  });

  it("reads a request under the OpenAI keys with the request's ranges", () => {
    const seen: string[] = [];
    const r = samplingFromRequest((key, min, max) => {
      seen.push(`${key}:${min}..${max}`);
      return key === "min_p" ? 0.3 : undefined;
    });
    expect(r).toEqual({ minP: 0.3 });
    expect(seen).toContain("temperature:0..2");
    expect(seen.some((s) => s.startsWith("repeat_last_n"))).toBe(false);
    expect(Object.keys(SAMPLING_FIELDS)).toContain("penaltyLastN");
  });
});

describe("trigger mapping", () => {
  const triggers: GrammarTrigger[] = [
    { type: "word", value: "<|tool|>" },
    { type: "word", value: "<call>" },
    { type: "word", value: "a.b" },
    { type: "pattern", value: "x+" },
    { type: "pattern_full", value: "y" },
    { type: "token", value: "<|tool|>" },
    { type: "token", value: "zz", token: 5 },
    { type: "token", value: "no" },
  ];
  const ids: Record<string, number> = { "<|tool|>": 9, "<call>": 8 };
  const vocab = { singleToken: (t: string) => ids[t] ?? null, isControl: (id: number) => id === 9 };

  it("control words become tokens kept whole, other words escaped patterns, in the plan's order", () => {
    const m = mapTriggers(triggers, vocab);
    expect(m.triggers).toEqual([{ token: 9, text: "<|tool|>" }, { pattern: "<call>" }, { pattern: "a\\.b" }, { pattern: "x+" }, { pattern: "^y$" }, { token: 9, text: "<|tool|>" }, { token: 5, text: "zz" }, { pattern: "no" }]);
    expect(m.patterns).toEqual(["<call>", "a\\.b", "x+", "^y$", "no"]);
    expect(m.tokens).toEqual([9, 9, 5]);
    expect(m.preserve).toEqual([{ text: "<|tool|>", id: 9 }]);
  });

  it("the asynchronous vocabulary gives the same mapping, each text looked up once", async () => {
    const asked: string[] = [];
    const m = await mapTriggersAsync(triggers, {
      singleToken: async (t) => (asked.push(t), vocab.singleToken(t)),
      isControl: async (id) => vocab.isControl(id),
    });
    expect(m).toEqual(mapTriggers(triggers, vocab));
    expect(asked.sort()).toEqual(["<call>", "<|tool|>", "a.b", "no"]);
  });
});
