// checkGbnf against llama.cpp's own grammar parser (the harness's grammar.check runs
// llama_grammar_init_impl): for every grammar our plans produce over the vendored templates and
// for random grammars across the whole syntax, checkGbnf accepts exactly what llama.cpp accepts.
// (Grammars llama.cpp would hang or crash on are never sent to it: test/unit/gbnf/gbnf-check.test.ts.)
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { applyChatTemplate } from "../../lib/chat/apply/index.js";
import { checkGbnf } from "../../lib/gbnf/index.js";
import { randomGbnf } from "../fuzz/gbnf-gen.js";
import { getHarness, type Harness } from "../support/harness.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const TEMPLATES = path.join(ROOT, "vendor/llama.cpp/models/templates");
const conversation = JSON.parse(fs.readFileSync(path.join(ROOT, "test/fixtures/conversations/tool-call.json"), "utf8")) as { messages: unknown[]; tools: unknown[] };

let h: Harness;
beforeAll(async () => {
  h = await getHarness();
});
afterAll(async () => {
  await h?.close();
});

function ours(gbnf: string): { valid: boolean; error?: string } {
  try {
    checkGbnf(gbnf);
    return { valid: true };
  } catch (e) {
    return { valid: false, error: (e as Error).message };
  }
}

async function reference(gbnf: string): Promise<{ valid: boolean; error?: string }> {
  const r = (await h.call("grammar.check", { gbnf, inputs: [] })) as { valid: boolean; error?: string };
  return r.error !== undefined ? { valid: r.valid, error: r.error } : { valid: r.valid };
}

describe("checkGbnf agrees with llama.cpp's grammar parser", () => {
  it("on every plan grammar of the vendored templates", async () => {
    const grammars = new Set<string>();
    const shapes = [
      { tools: conversation.tools },
      { tools: conversation.tools, tool_choice: "required" as const },
      { tools: conversation.tools, parallel_tool_calls: true },
      { json_schema: { type: "object", properties: { a: { type: "string" }, n: { type: "integer", minimum: 0 } }, required: ["a"] } },
    ];
    for (const f of fs.readdirSync(TEMPLATES).filter((x) => x.endsWith(".jinja"))) {
      const src = fs.readFileSync(path.join(TEMPLATES, f), "utf8");
      for (const shape of shapes) {
        try {
          const plan = applyChatTemplate(src, { messages: conversation.messages, ...shape });
          if (plan.grammar !== null) grammars.add(plan.grammar.gbnf);
        } catch {
          // templates that reject the request
        }
      }
    }
    expect(grammars.size).toBeGreaterThan(100);
    let invalid = 0;
    for (const g of grammars) {
      const [a, b] = [ours(g), await reference(g)];
      expect(a.valid, `${g.slice(0, 200)}\nours: ${a.error}\nllama.cpp: ${b.error}`).toBe(b.valid);
      if (!a.valid) invalid++;
    }
    // the few llama.cpp rejects are the reference's own (its Nemotron tools + schema plan has an empty root)
    expect(invalid).toBeLessThan(grammars.size / 20);
  });

  it("on 1500 random grammars (syntax errors, undefined rules, left recursion, every repetition form)", async () => {
    let accepted = 0;
    let vocabDependent = 0;
    for (let seed = 1; seed <= 1500; seed++) {
      const g = randomGbnf({ seed });
      const [a, b] = [ours(g), await reference(g)];
      // `<text>` names a token of the model's vocabulary, which the harness does not load
      if (b.error?.includes("no vocab to parse token")) {
        vocabDependent++;
        continue;
      }
      expect(a.valid, `seed ${seed}: ${JSON.stringify(g)}\nours: ${a.error}\nllama.cpp: ${b.error}`).toBe(b.valid);
      if (a.valid) accepted++;
    }
    // both verdicts are common, so the comparison says something
    expect(vocabDependent).toBeLessThan(50);
    expect(accepted).toBeGreaterThan(100);
    expect(accepted).toBeLessThan(1400);
  });
});
