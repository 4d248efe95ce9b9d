// The AI SDK provider left early: a caller that breaks out of textStream / fullStream (no abort
// signal), aborts at a random moment (before the call, while it waits for the target, during the
// prompt, mid-stream), cancels the reader, or aborts generateText. After each, a follow-up call on
// the same context must start and finish (no deadlock), never meet ERR_BUSY, and the process must
// see no unhandled rejection (Node's default then ends the child: a crash for the parent).
import { generateText, streamText } from "ai";

import { createLlamapeg } from "../../lib/ai-sdk/index.js";
import { mulberry32 } from "../../lib/test-model/random.js";
import type { FuzzClass } from "./classes.js";
import { fuzzContext } from "./fuzz-model.js";

type Mode = "break-text" | "break-full" | "abort-before" | "abort-at" | "cancel-reader" | "generate-abort" | "two-then-break";

interface AiSdkCase {
  mode: Mode;
  /** Parts read before leaving, or milliseconds before the abort. */
  at: number;
  seed: number;
}

const MODES: Mode[] = ["break-text", "break-full", "abort-before", "abort-at", "cancel-reader", "generate-abort", "two-then-break"];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function leave(c: AiSdkCase, model: ReturnType<ReturnType<typeof createLlamapeg>>): Promise<void> {
  const controller = new AbortController();
  const common = { model, prompt: "a long story", maxOutputTokens: 400, seed: c.seed };
  switch (c.mode) {
    case "break-text": {
      let n = 0;
      for await (const _ of streamText(common).textStream) if (++n >= c.at) break;
      return;
    }
    case "break-full": {
      let n = 0;
      for await (const _ of streamText(common).fullStream) if (++n >= c.at) break;
      return;
    }
    case "abort-before": {
      controller.abort();
      const r = streamText({ ...common, abortSignal: controller.signal });
      for await (const _ of r.fullStream) void _;
      return;
    }
    case "abort-at": {
      setTimeout(() => controller.abort(), c.at);
      const r = streamText({ ...common, abortSignal: controller.signal });
      for await (const _ of r.fullStream) void _;
      return;
    }
    case "cancel-reader": {
      const r = streamText(common);
      const reader = r.fullStream.getReader();
      for (let i = 0; i < c.at; i++) if ((await reader.read()).done) break;
      await reader.cancel();
      return;
    }
    case "generate-abort": {
      setTimeout(() => controller.abort(), c.at);
      await generateText({ ...common, abortSignal: controller.signal }).catch((e: unknown) => {
        if ((e as { name?: string }).name !== "AbortError" && !controller.signal.aborted) throw e;
      });
      return;
    }
    case "two-then-break": {
      // a second call queued behind one that is left early
      const a = streamText(common);
      const b = generateText({ model, prompt: "q", maxOutputTokens: 3, seed: c.seed });
      let n = 0;
      for await (const _ of a.textStream) if (++n >= c.at) break;
      await b;
      return;
    }
  }
}

export const fuzzClass: FuzzClass<AiSdkCase> = {
  cases(seed, size) {
    const rng = mulberry32(seed);
    const n = size === "long" ? 400 : 21;
    return Array.from({ length: n }, (_, i) => ({ mode: MODES[i % MODES.length]!, at: 1 + Math.floor(rng() * 30), seed: i }));
  },
  describe: (c) => `${c.mode} at ${c.at}`,
  async run(c) {
    const { context } = await fuzzContext();
    const model = createLlamapeg({ context })();
    await leave(c, model).catch((e: unknown) => {
      // an abort is what these cases ask for; anything else is a finding
      if (!(e instanceof Error && (e.name === "AbortError" || /abort/i.test(e.message)))) throw e;
    });
    // The follow-up: the context must be free for the next call, not taken and not ERR_BUSY.
    const next = await generateText({ model, prompt: "next", maxOutputTokens: 3, seed: 1 });
    if (next.usage.outputTokens === undefined || next.usage.outputTokens < 1) throw new Error(`follow-up generated ${next.usage.outputTokens} tokens`);
    await sleep(0);
    return { followUpTokens: next.usage.outputTokens };
  },
};
