// createChatCompletion on sequences: a Sequence is a completion target like a Context, chats on
// the sequences of one context run at once, and a chat that fills its sequence finishes with
// finish_reason "length".
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Model } from "../../lib/llama/index.js";
import { createChatCompletion, validateJson } from "../../lib/openai/index.js";
import { loadTestModel } from "../support/models.js";

let model: Model;

beforeAll(async () => {
  model = await loadTestModel();
});

afterAll(() => model?.dispose());

const TOOL = {
  type: "function" as const,
  function: { name: "pick", parameters: { type: "object", properties: { n: { type: "integer", minimum: 0, maximum: 9 } }, required: ["n"], additionalProperties: false } },
};

describe("createChatCompletion(sequence, request)", () => {
  it("four chats on four sequences at once equal the same chats on one-sequence contexts (greedy)", async () => {
    const requests = [0, 1, 2, 3].map((i) => ({ messages: [{ role: "user", content: `Question ${i}: how are you?` }], temperature: 0, max_tokens: 24 }));
    const alone = [];
    for (const r of requests) {
      const c = model.createContext({ contextSize: 512, threads: 1 });
      alone.push(await createChatCompletion(c, r));
      c.dispose();
    }
    const context = model.createContext({ contextSize: 512, sequences: 4, threads: 1 });
    try {
      const seqs = requests.map(() => context.getSequence());
      const together = await Promise.all(seqs.map((s, i) => createChatCompletion(s, requests[i]!)));
      for (let i = 0; i < 4; i++) {
        expect(together[i]!.choices[0].message).toEqual(alone[i]!.choices[0].message);
        expect(together[i]!.usage).toEqual(alone[i]!.usage);
      }
    } finally {
      context.dispose();
    }
  });

  it("tool calls on concurrent sequences are schema-valid, and streaming works on a sequence", async () => {
    const context = model.createContext({ contextSize: 2048, sequences: 3, threads: 1 });
    try {
      const seqs = [0, 1, 2].map(() => context.getSequence());
      const results = await Promise.all(
        seqs.map((s, seed) =>
          createChatCompletion(s, { messages: [{ role: "user", content: "Pick a number" }], tools: [TOOL], tool_choice: "required", seed, max_tokens: 60 }),
        ),
      );
      for (const c of results) {
        if (c.choices[0].finish_reason === "length") continue; // the random model kept adding calls
        for (const call of c.choices[0].message.tool_calls ?? []) {
          expect(validateJson(JSON.parse(call.function.arguments), TOOL.function.parameters)).toEqual([]);
        }
        expect(c.choices[0].finish_reason).toBe("tool_calls");
      }
      let chunks = 0;
      for await (const _ of createChatCompletion(seqs[0]!, { messages: [{ role: "user", content: "Hi" }], stream: true, max_tokens: 8 })) chunks++;
      expect(chunks).toBeGreaterThan(1);
    } finally {
      context.dispose();
    }
  });

  it("a generation that ends with stopReason context_full (a full sequence) finishes the chat with finish_reason length", async () => {
    // The sequence's own generation, with its end reported as context_full, behind the same
    // adapter createChatCompletion uses for a Sequence.
    const context = model.createContext({ contextSize: 256, threads: 1 });
    try {
      const s = context.getSequence();
      const full = {
        model,
        generate(prompt: ArrayLike<number>, options?: Parameters<typeof s.generate>[1]) {
          const g = s.generate(prompt, { ...options, maxTokens: 4 });
          return {
            [Symbol.asyncIterator]: () => g[Symbol.asyncIterator](),
            abort: () => g.abort(),
            result: async () => ({ stats: { ...(await g.result()).stats, stopReason: "context_full" as const } }),
          };
        },
      };
      const c = await createChatCompletion(full, { messages: [{ role: "user", content: "Write." }], temperature: 1, seed: 3 });
      expect(c.choices[0].finish_reason).toBe("length");
    } finally {
      context.dispose();
    }
  });
});
