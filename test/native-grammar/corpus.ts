/**
 * Grammars and trigger sets for the differential tests: every distinct grammar of the chat plans of
 * the vendored templates (tools, tool choices, parallel calls, response schemas), JSON schemas,
 * random PEG trees, llama.cpp's sample grammars, and edge cases of llama.cpp's matching rules.
 */
import fc from "fast-check";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

import { applyChatTemplate } from "../../lib/chat/apply/index.js";
import type { GrammarTrigger } from "../../lib/chat/plan.js";
import { jsonSchemaToGbnf } from "../../lib/json-schema/index.js";
import { escapeRegex } from "../../lib/llama/generate-options.js";
import { pegExpr } from "../conformance/peg-arbitrary.js";
import { buildFromExpr } from "../conformance/peg-expr.js";
import { ROOT } from "./program.js";

export interface CorpusGrammar {
  name: string;
  gbnf: string;
  lazy?: boolean;
  /** llama.cpp trigger patterns (words escaped, pattern_full anchored), as common/sampling.cpp builds them. */
  patterns?: string[];
}

const TEMPLATES = join(ROOT, "vendor", "llama.cpp", "models", "templates");

/** llama.cpp's trigger kinds as patterns (common_sampler_init). */
export function triggerPatterns(triggers: GrammarTrigger[]): string[] {
  const out: string[] = [];
  for (const t of triggers) {
    if (t.type === "word" || t.type === "token") out.push(escapeRegex(t.value));
    else if (t.type === "pattern") out.push(t.value);
    else out.push(`${t.value.startsWith("^") ? "" : "^"}${t.value}${t.value.endsWith("$") ? "" : "$"}`);
  }
  return out;
}

let plans: CorpusGrammar[] | null = null;

/** Every distinct (grammar, triggers) of the vendored templates' plans, in a stable order. */
export function chatPlanGrammars(): CorpusGrammar[] {
  if (plans) return plans;
  const conversations = JSON.parse(readFileSync(join(ROOT, "test", "fixtures", "apply", "conversations.json"), "utf8")) as Array<
    Record<string, any>
  >;
  const seen = new Map<string, CorpusGrammar>();
  for (const file of readdirSync(TEMPLATES).filter((f) => f.endsWith(".jinja")).sort()) {
    const source = readFileSync(join(TEMPLATES, file), "utf8");
    for (const c of conversations) {
      const request = {
        messages: c.messages,
        ...(c.tools ? { tools: c.tools, tool_choice: c.tool_choice ?? "auto", parallel_tool_calls: c.parallel_tool_calls ?? false } : {}),
        ...(c.response_format ? { response_format: c.response_format } : {}),
        reasoning_format: c.reasoning_format,
      };
      let plan;
      try {
        plan = applyChatTemplate(source, { ...request, bos_token: "<s>", eos_token: "</s>" } as never);
      } catch {
        continue;
      }
      const g = plan.grammar;
      if (g === null) continue;
      const patterns = g.lazy ? triggerPatterns(g.triggers) : undefined;
      const key = `${g.gbnf}\u0000${g.lazy}\u0000${(patterns ?? []).join("\u0000")}`;
      if (!seen.has(key)) {
        seen.set(key, {
          name: `${file.replace(/\.jinja$/, "")}/${c.name}`,
          gbnf: g.gbnf,
          ...(g.lazy ? { lazy: true, patterns } : {}),
        });
      }
    }
  }
  plans = [...seen.values()];
  return plans;
}

export function schemaGrammars(): CorpusGrammar[] {
  const lines = readFileSync(join(ROOT, "test", "fixtures", "json-schema", "hand.jsonl"), "utf8").split("\n").filter(Boolean);
  const out: CorpusGrammar[] = [];
  for (const line of lines) {
    const { id, schema } = JSON.parse(line) as { id: string; schema: unknown };
    try {
      out.push({ name: id, gbnf: jsonSchemaToGbnf(schema) });
    } catch {
      // schemas the converter rejects are its own tests' business
    }
  }
  return out;
}

export function sampleGrammars(): CorpusGrammar[] {
  const dir = join(ROOT, "vendor", "llama.cpp", "grammars");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".gbnf"))
    .sort()
    .map((f) => ({ name: `grammars/${f}`, gbnf: readFileSync(join(dir, f), "utf8") }));
}

/** Random PEG trees (the conformance generator) exported to GBNF, lazy and not. */
export function randomPegGrammars(seed: number, count: number): CorpusGrammar[] {
  const exprs = fc.sample(pegExpr, { seed, numRuns: count });
  const out: CorpusGrammar[] = [];
  exprs.forEach((expr, i) => {
    try {
      const arena = buildFromExpr(expr);
      out.push({ name: `peg#${seed}/${i}`, gbnf: arena.toGbnf({ lazy: i % 2 === 1 }) });
    } catch {
      // an expression the builder rejects
    }
  });
  return out;
}

/** llama.cpp's matching rules at their corners. */
export function edgeGrammars(): CorpusGrammar[] {
  return [
    { name: "any char", gbnf: 'root ::= .* "!"' },
    { name: "negated non-ASCII", gbnf: 'root ::= [^é€😀]{0,4} "x"' },
    { name: "non-ASCII ranges", gbnf: 'root ::= ([\\u0100-\\u07FF] | [\\u0800-\\uFFFF] | [\\U00010000-\\U0010FFFF] | "a")+' },
    { name: "partial at boundaries", gbnf: 'root ::= "é" ("ü" | "€")* "😀"? [a-z]*' },
    { name: "empty alternatives", gbnf: 'root ::= a b c\na ::= "" | "x"\nb ::= | "y" a\nc ::= "z"?' },
    { name: "nested optional", gbnf: 'root ::= ("(" root? ")")* "."' },
    { name: "control chars", gbnf: 'root ::= [\\x01-\\x1F]+ | [\\t\\n ]* "end"' },
    { name: "big alternation", gbnf: `root ::= ${Array.from({ length: 300 }, (_, i) => `"tool_${i}"`).join(" | ")} "(" [0-9]* ")"` },
    { name: "repetitions", gbnf: 'root ::= "a"{2,5} [bc]{0,3} ("d" "e"?){1,} "f"' },
    { name: "whole output done", gbnf: 'root ::= "yes" | "no"' },
    // Loops the mask walk skips whole subtrees in (mask.cpp): a JSON string's characters, loops
    // past ASCII with a hole in them, two negations that together admit everything (llama.cpp's
    // partial check still rejects a character cut short inside either hole), and a loop only on
    // some letters.
    { name: "string loop", gbnf: String.raw`root ::= "\"" ([^"\\\x00-\x1F] | "\\" ["\\/bfnrt])* "\"" "."` },
    { name: "loop with a non-ASCII hole", gbnf: String.raw`root ::= [^"\u0100\u4E00]* "\""` },
    { name: "two negations", gbnf: String.raw`root ::= ([^\u00E9] | [^\u00E8])*` },
    { name: "loop on some letters", gbnf: 'root ::= [a-m ]* [n-z]+' },
  ];
}

/**
 * Long counted repetitions around the longest piece (128 spaces in Llama 3 and Qwen 2): the mask
 * engine's shared keys (shared-entries.h) leave out what lies further than the longest piece
 * reaches, so the positions of `[ ]{0,N}` with more than that left share entries and nearer ones
 * must not (the 128-space token is admitted exactly where 128 more spaces may come). Run one after
 * another in one program, so the later ones find the earlier ones' entries.
 */
export function horizonGrammars(): CorpusGrammar[] {
  const counts = [200, 140, 131, 130, 129, 128, 127, 126, 120, 64];
  return [
    ...counts.map((n) => ({ name: `spaces {0,${n}}`, gbnf: `root ::= [ ]{0,${n}} "x"` })),
    ...counts.map((n) => ({ name: `spaces {0,${n}} in a rule`, gbnf: `root ::= "<" pad ">"\npad ::= [ ]{0,${n}}` })),
    { name: "two chains of 70", gbnf: 'root ::= [ ]{0,70} "-"? [ ]{0,70} "x"' },
    { name: "two chains of 60", gbnf: 'root ::= [ ]{0,60} "-"? [ ]{0,60} "x"' },
    { name: "a nullable rule between", gbnf: 'root ::= [ ]{0,100} opt [ ]{0,27} "x"\nopt ::= "-" [ ]{0,5} | ""' },
    { name: "a nullable rule between, one more", gbnf: 'root ::= [ ]{0,100} opt [ ]{0,28} "x"\nopt ::= "-" [ ]{0,5} | ""' },
    // what follows the chain is too large to write out (300 names), and the chain's letters reach
    // it from thousands of trie nodes (so keys take it as a frame): keys below it go by address
    ...[300, 131, 129, 127].map((n) => ({
      name: `letters {0,${n}} before 300 names`,
      gbnf: `root ::= [a-z ]{0,${n}} names\nnames ::= ${Array.from({ length: 300 }, (_, i) => `"tool_${i}"`).join(" | ")}`,
    })),
    { name: "a rule of one or two characters between", gbnf: 'root ::= [ ]{0,3} dash [ ]{0,125} "x"\ndash ::= "-" "-"?' },
    { name: "a rule of one or two characters between, one more", gbnf: 'root ::= [ ]{0,3} dash [ ]{0,126} "x"\ndash ::= "-" "-"?' },
  ];
}

/** Grammars with TOKEN elements (llama.cpp decides those by id); built for a vocabulary's ids. */
export function tokenGrammars(ids: { a: number; b: number; c: number }): CorpusGrammar[] {
  return [
    { name: "token then text", gbnf: `root ::= <[${ids.a}]> [a-z]+ | "x" <[${ids.b}]>` },
    { name: "not-token", gbnf: `root ::= !<[${ids.a}]> "y" | <[${ids.c}]>` },
    { name: "tokens loop", gbnf: `root ::= (<[${ids.a}]> | <[${ids.b}]> | "q")+ "." ` },
  ];
}

export const TRIGGER_SNIPPETS = [
  "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>",
  "<|start|>assistant to=self<|message|>",
  "<|start|>assistant to=user<|message|>hi",
  "<|start|>assistant<|channel|>commentary to=functions.f",
  "<|start|>assistant<|channel|>analysis  to=x",
  "<|start|>assistant   to",
  "<|channel|>commentary to=functions",
  "<|channel|>analysis to=functions",
  ">>>get_weather\n{",
  ">>>all\nhello",
  " to",
  "\n to",
];
