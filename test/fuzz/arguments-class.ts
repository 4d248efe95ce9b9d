// Wrong arguments to the public API (issue 28.9): random values of every JSON and JS type in the
// places of options, paths, targets and requests. Each call either works or throws an error that
// is `instanceof LlamapegError` with a code (argument errors too, though they are also TypeError /
// RangeError); anything else is an uncoded error for the parent.
import { createLlamapeg } from "../../lib/ai-sdk/index.js";
import { applyChatTemplate } from "../../lib/chat/apply/index.js";
import { LlamapegError } from "../../lib/errors.js";
import { checkGbnf } from "../../lib/gbnf/index.js";
import { loadModel, type Context } from "../../lib/llama/index.js";
import { createChatCompletion } from "../../lib/openai/index.js";
import { startServer } from "../../lib/server/index.js";
import { mulberry32 } from "../../lib/test-model/random.js";
import type { FuzzClass } from "./classes.js";
import { fuzzContext, miniModelPath } from "./fuzz-model.js";

const ODD: unknown[] = [undefined, null, 0, -1, 1.5, NaN, Infinity, 2 ** 40, "", "x", "\u0000", true, [], [1], {}, { a: 1 }, () => 1, Symbol("s"), 10n, new Date(0), Object.create(null), { __proto__: { threads: 2 } }, { constructor: 1 }, { toString: 5 }];
const CALLS = ["loadModel path", "loadModel options", "createContext", "generate", "tokenize", "applyChatTemplate", "createChatCompletion target", "createChatCompletion request", "startServer", "createLlamapeg", "checkGbnf", "detokenize", "tokenPiece", "chatTemplate"] as const;

interface ArgCase {
  call: (typeof CALLS)[number];
  value: number;
  /** A second odd value, for calls that take an object: used as a field's value. */
  field: number;
  key: string;
}

/** The context the "generate" cases take sequences of (see there). */
let sequenceContext: Context | undefined;

const KEYS = ["threads", "contextSize", "sequences", "batchSize", "seed", "maxTokens", "temperature", "grammar", "signal", "messages", "tools", "gpuLayers", "port", "host", "apiKey", "cors", "constructor", "__proto__"];

export const fuzzClass: FuzzClass<ArgCase> = {
  cases(seed, size) {
    const rng = mulberry32(seed);
    const n = size === "long" ? 3000 : 200;
    return Array.from({ length: n }, (_, i) => ({ call: CALLS[i % CALLS.length]!, value: Math.floor(rng() * ODD.length), field: Math.floor(rng() * ODD.length), key: KEYS[Math.floor(rng() * KEYS.length)]! }));
  },
  describe: (c) => `${c.call}(${String(typeof ODD[c.value] === "symbol" ? "Symbol" : typeof ODD[c.value] === "bigint" ? "10n" : JSON.stringify(ODD[c.value]) ?? typeof ODD[c.value])}; ${c.key}=#${c.field})`,
  async run(c) {
    const v = ODD[c.value];
    const obj = { [c.key]: ODD[c.field] } as never;
    const { model, context } = await fuzzContext();
    try {
      switch (c.call) {
        case "loadModel path":
          (await loadModel(v as never)).dispose();
          break;
        case "loadModel options":
          (await loadModel(miniModelPath(), c.value % 2 ? (v as never) : obj)).dispose();
          break;
        case "createContext":
          model.createContext(c.value % 2 ? (v as never) : { contextSize: 256, ...(obj as object) }).dispose();
          break;
        case "detokenize":
          model.detokenize(v as never, obj);
          break;
        case "tokenPiece":
          model.tokenPiece(v as never, obj);
          break;
        case "chatTemplate":
          model.chatTemplate(v as never);
          break;
        case "generate": {
          // Not `context`: the cases that use it as a completion target take its own sequence
          // for good (Context's one-conversation mode), and then getSequence() is ERR_NO_SEQUENCE.
          const sequence = (sequenceContext ??= model.createContext({ contextSize: 256, threads: 1, seed: 1 })).getSequence();
          try {
            const g = sequence.generate(c.value % 2 ? (v as never) : ({ prompt: { text: "hi" }, maxTokens: 2, ...(obj as object) } as never));
            for await (const _ of g as AsyncIterable<unknown>) void _;
          } finally {
            sequence.dispose();
          }
          break;
        }
        case "tokenize":
          model.tokenize(v as never, obj);
          break;
        case "applyChatTemplate":
          applyChatTemplate(c.value % 2 ? (v as never) : "{{ messages[0].content }}", c.value % 2 ? { messages: [] } : (obj as never));
          break;
        case "createChatCompletion target":
          await createChatCompletion(v as never, { messages: [{ role: "user", content: "hi" }], max_tokens: 1 });
          break;
        case "createChatCompletion request":
          await createChatCompletion(context, c.value % 2 ? (v as never) : { messages: [{ role: "user", content: "hi" }], max_tokens: 1, ...(obj as object) });
          break;
        case "startServer":
          await (await startServer(context, c.value % 2 ? (v as never) : { port: 0, ...(obj as object) })).close();
          break;
        case "createLlamapeg":
          createLlamapeg(c.value % 2 ? (v as never) : obj);
          break;
        case "checkGbnf":
          checkGbnf(v as never, obj);
          break;
      }
    } catch (e) {
      if (e instanceof LlamapegError) throw e; // coded, and an instance: what the parent wants
      const code = (e as { code?: unknown } | null)?.code;
      throw new Error(`not a LlamapegError (${(e as Error)?.name}, code ${String(code)}): ${String((e as Error)?.message ?? e).slice(0, 200)}`);
    }
  },
};
