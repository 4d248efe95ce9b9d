// Grammars: hostile GBNF (what llama.cpp's parser underflows, recurses or allocates on), the plan
// grammars of the vendored templates, and random GBNF across the syntax, each used to sample a few
// tokens through context.generate (checkGbnf first). `raw` gives them to the addon unchecked.
import fs from "node:fs";
import path from "node:path";

import { applyChatTemplate } from "../../lib/chat/apply/index.js";
import type { FuzzClass } from "./classes.js";
import { fuzzContext } from "./fuzz-model.js";
import { randomGbnf } from "./gbnf-gen.js";
import { rawGenerate } from "./native-raw.js";

interface GrammarCase {
  name: string;
  gbnf: string;
}

const chain = (n: number): string => Array.from({ length: n }, (_, i) => `r${i} ::= r${i + 1}\n`).join("") + `r${n} ::= "a"\nroot ::= r0\n`;

export const HOSTILE_GRAMMARS: [string, string][] = [
  ["{5,2}: min > max", 'root ::= "a"{5,2}\n'],
  ["{100,1} on a class", "root ::= [a-z]{100,1}\n"],
  ["{1999,2} on a group", 'root ::= ("ab" | "c"){1999,2}\n'],
  ["count 10^20", 'root ::= "a"{100000000000000000000}\n'],
  ["count 2001", 'root ::= "a"{2001}\n'],
  ["chained repetitions", 'root ::= "a"{40}{40}{40}\n'],
  ["20k nested groups", `root ::= ${"(".repeat(20_000)}"a"${")".repeat(20_000)}\n`],
  ["2k nested groups", `root ::= ${"(".repeat(2000)}"a"${")".repeat(2000)}\n`],
  ["70k chained rules", chain(70_000)],
  ["10k chained rules", chain(10_000)],
  ["direct left recursion", 'root ::= root "a" | "b"\n'],
  ["indirect left recursion", 'root ::= a\na ::= b "x"\nb ::= a | "y"\n'],
  ["left recursion through an empty rule", 'root ::= e root "a" | "b"\ne ::= "x" |\n'],
  ["undefined rule", 'root ::= "a" missing\n'],
  ["no root", 'start ::= "a"\n'],
  ["empty", ""],
  ["only a comment", "# nothing\n"],
  ["1 MB literal", `root ::= "${"x".repeat(1 << 20)}"\n`],
  ["1 MB literal repeated 1999 times", `root ::= "${"x".repeat(1 << 20)}"{1999}\n`],
  // 100k alternatives pass (600k elements) but cost llama.cpp seconds per token: native work
  ["10k alternatives", `root ::= ${Array.from({ length: 10_000 }, (_, i) => `"${i}"`).join(" | ")}\n`],
  ["NUL in a literal", 'root ::= "a\\x00b"\n'],
  ["raw NUL", 'root ::= "a\u0000b"\n'],
  ["lone surrogate", 'root ::= "\ud800"\n'],
  ["unterminated class", "root ::= [a-\n"],
  ["bad escape", 'root ::= "\\q"\n'],
  ["empty alternatives everywhere", "root ::= | | a\na ::= |\n"],
  ["self loop through star", "root ::= (a)*\na ::= |\n"],
  ["token ids past the vocabulary", "root ::= <[99999999]>\n"],
  ["unknown token text", "root ::= <|nonexistent|>\n"],
];

let planGrammars: string[] | undefined;
function plans(): string[] {
  if (planGrammars) return planGrammars;
  const root = path.resolve(import.meta.dirname, "../..");
  const dir = path.join(root, "vendor/llama.cpp/models/templates");
  const conv = JSON.parse(fs.readFileSync(path.join(root, "test/fixtures/conversations/tool-call.json"), "utf8")) as { messages: unknown[]; tools: unknown[] };
  const out = new Set<string>();
  for (const f of fs.readdirSync(dir).filter((x) => x.endsWith(".jinja")).sort()) {
    for (const shape of [{ tools: conv.tools, tool_choice: "required" as const }, { json_schema: { type: "object", properties: { a: { type: "string" } }, required: ["a"] } }]) {
      try {
        const g = applyChatTemplate(fs.readFileSync(path.join(dir, f), "utf8"), { messages: conv.messages, ...shape }).grammar;
        if (g !== null) out.add(g.gbnf);
      } catch {
        // a template that rejects the request
      }
    }
  }
  return (planGrammars = [...out]);
}

export const fuzzClass: FuzzClass<GrammarCase> = {
  cases(seed, size) {
    const out: GrammarCase[] = HOSTILE_GRAMMARS.map(([name, gbnf]) => ({ name: `hostile: ${name}`, gbnf }));
    const p = plans();
    const planCount = size === "long" ? p.length : Math.min(p.length, 40);
    for (let i = 0; i < planCount; i++) out.push({ name: `plan grammar ${i}`, gbnf: p[i]! });
    const random = size === "long" ? 3000 : 150;
    for (let i = 0; i < random; i++) out.push({ name: `random ${seed}/${i}`, gbnf: randomGbnf({ seed: seed * 100_000 + i, safe: false }) });
    return out;
  },
  describe: (c) => c.name,
  async run(c, o) {
    if (o.raw) return rawGenerate(c.gbnf);
    const { model, context } = await fuzzContext();
    await context.generate(model.tokenize("Hello"), { grammar: { gbnf: c.gbnf }, maxTokens: 4, temperature: 0 }).result();
  },
};
