// The completion target seam with no model: a scripted CompletionTarget (sync and async), and the
// prompt tokenization of the local adapter over a stand-in model.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import type { Model } from "../../../lib/llama/model.js";
import { createChatCompletion } from "../../../lib/openai/completion.js";
import { completionTarget, tokenizePrompt, type CompletionTarget, type TargetChatInfo, type TargetGeneration, type TargetRequest } from "../../../lib/openai/target.js";

const template = readFileSync(join(import.meta.dirname, "..", "..", "..", "vendor", "llama.cpp", "models", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja"), "utf8");
const tools = [{ type: "function" as const, function: { name: "pick", parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } } }];
const encoder = new TextEncoder();

/** A target that records what it was asked and answers with `pieces`. */
function scripted(pieces: string[], asynchronous: boolean) {
  const seen: { requests: TargetRequest[]; aborted: number } = { requests: [], aborted: 0 };
  const info: TargetChatInfo = { name: "scripted", chatTemplate: template, bos: "", eos: "<|im_end|>" };
  const generation = (): TargetGeneration => {
    let finished = false;
    return {
      async *[Symbol.asyncIterator]() {
        for (let i = 0; i < pieces.length && !finished; i++) yield { token: i, piece: encoder.encode(pieces[i]!) };
        finished = true;
      },
      abort() {
        if (!finished) seen.aborted++;
        finished = true;
      },
      async result() {
        return { stats: { promptTokens: 7, reusedTokens: 2, generatedTokens: pieces.length, promptMs: 1, generateMs: 2, sampleMs: 0.5, stopReason: "eog" as const } };
      },
    };
  };
  const target: CompletionTarget = {
    chatInfo: () => (asynchronous ? Promise.resolve(info) : info),
    generate(request) {
      seen.requests.push(request);
      return asynchronous ? Promise.resolve(generation()) : generation();
    },
  };
  return { target, seen };
}

describe("CompletionTarget", () => {
  for (const asynchronous of [false, true]) {
    it(`${asynchronous ? "async" : "sync"} target: gets the plan's prompt, grammar and markers; its pieces become the completion`, async () => {
      const { target, seen } = scripted(["<tool_call>", '\n{"name": "pick", "arguments": {"n": 4}}\n', "</tool_call>"], asynchronous);
      const c = await createChatCompletion(target, { messages: [{ role: "user", content: "hi" }], tools, tool_choice: "required", max_tokens: 9, seed: 3 });
      expect(seen.requests).toHaveLength(1);
      const r = seen.requests[0]!;
      expect(r.prompt.text).toContain("<|im_start|>user\nhi<|im_end|>");
      expect(r.grammar).not.toBeNull();
      expect(r.grammar!.gbnf).toContain('"pick"');
      expect(r.preservedTokens).toContain("<tool_call>");
      expect(r).toMatchObject({ maxTokens: 9, seed: 3 });
      expect(c.model).toBe("scripted");
      expect(c.choices[0].message.tool_calls?.[0]?.function).toEqual({ name: "pick", arguments: '{"n": 4}' });
      expect(c.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 2 } });
    });
  }

  it("a stream left early aborts the generation", async () => {
    const { target, seen } = scripted(["a", "b", "c", "d"], true);
    const stream = createChatCompletion(target, { messages: [{ role: "user", content: "hi" }], stream: true });
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content === "a") break;
    }
    expect(seen.aborted).toBe(1);
    await expect(stream.completion).rejects.toMatchObject({ code: "ERR_ABORTED" });
  });

  it("a target without templates is a request error; a non-target an argument error", async () => {
    const { target } = scripted([], true);
    const bare: CompletionTarget = { chatInfo: async () => ({ ...(await target.chatInfo()), chatTemplate: null }), generate: target.generate };
    await expect(createChatCompletion(bare, { messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({ code: "ERR_INVALID_REQUEST", where: "chat_template" });
    expect(() => completionTarget({} as never)).toThrow(LlamapegError);
  });
});

describe("tokenizePrompt", () => {
  // A stand-in tokenizer: one id per character, BOS = 1, and the control token `<s>` (id 2) as one
  // id only when special-token parsing is on.
  const CONTROL = 1 << 3; // LLAMA_TOKEN_ATTR_CONTROL
  const model = {
    vocabSize: 3,
    tokenAttributes: (id: number) => (id === 2 ? CONTROL : 1 << 2),
    tokenPiece: (id: number) => encoder.encode(id === 2 ? "<s>" : id === 1 ? "" : "?"),
    tokenize(text: string, o: { addSpecial?: boolean; parseSpecial?: boolean }) {
      const ids: number[] = o.addSpecial ? [1] : [];
      for (let i = 0; i < text.length; i++) {
        if (o.parseSpecial && text.startsWith("<s>", i)) {
          ids.push(2);
          i += 2;
        } else ids.push(text.charCodeAt(i));
      }
      return Int32Array.from(ids);
    },
  } as unknown as Model;
  const chars = (t: string) => Array.from(t, (c) => c.charCodeAt(0));

  it("parses special-token text only outside message segments (byte ranges, non-ASCII included); BOS once", () => {
    const text = "<s>user: <s>é<s>";
    const start = encoder.encode("<s>user: ").length;
    const end = start + encoder.encode("<s>é").length;
    expect(tokenizePrompt(model, { text, segments: [{ start, end }] })).toEqual([1, 2, ...chars("user: "), ...chars("<s>é"), 2]);
    expect(tokenizePrompt(model, { text: "<s>x" })).toEqual([1, 2, 120]);
  });

  it("rejects segments outside the prompt, out of order or inside a character", () => {
    expect(() => tokenizePrompt(model, { text: "abc", segments: [{ start: 2, end: 9 }] })).toThrow(/segment/);
    expect(() => tokenizePrompt(model, { text: "abcd", segments: [{ start: 2, end: 3 }, { start: 0, end: 1 }] })).toThrow(/segments/);
    expect(() => tokenizePrompt(model, { text: "é", segments: [{ start: 1, end: 2 }] })).toThrow(/character boundaries/);
  });
});
