// JSON schemas an API client may send: the hostile ones (min > max, huge counts, deep nesting,
// huge objects and enums), the vendored JSON-schema fixtures, and random keyword soup; each
// compiled and, when it compiles, used to sample a few tokens through context.generate.
import fs from "node:fs";
import path from "node:path";

import { compileJsonSchema } from "../../lib/json-schema/index.js";
import { mulberry32 } from "../../lib/test-model/random.js";
import type { FuzzClass } from "./classes.js";
import { fuzzContext } from "./fuzz-model.js";

interface SchemaCase {
  name: string;
  schema: unknown;
}

const nest = (n: number, wrap: (s: unknown) => unknown): unknown => {
  let s: unknown = { type: "string" };
  for (let i = 0; i < n; i++) s = wrap(s);
  return s;
};

const HOSTILE: [string, unknown][] = [
  ["pattern ^a{5,2}$", { type: "string", pattern: "^a{5,2}$" }],
  ["pattern ^(ab){9,3}$", { type: "string", pattern: "^(ab){9,3}$" }],
  ["pattern ^a{1000000}$", { type: "string", pattern: "^a{1000000}$" }],
  ["pattern ^a{0,99999999}$", { type: "string", pattern: "^a{0,99999999}$" }],
  ["pattern ^((a{1,50}){1,50}){1,50}$", { type: "string", pattern: "^((a{1,50}){1,50}){1,50}$" }],
  ["pattern with 5000 nested groups", { type: "string", pattern: `^${"(".repeat(5000)}a${")".repeat(5000)}$` }],
  ["minLength 10^9", { type: "string", minLength: 1e9 }],
  ["maxLength 10^9", { type: "string", maxLength: 1e9 }],
  ["minLength > maxLength", { type: "string", minLength: 5, maxLength: 2 }],
  ["minItems 10^9", { type: "array", items: { type: "integer" }, minItems: 1e9 }],
  ["minItems > maxItems", { type: "array", items: { type: "integer" }, minItems: 5, maxItems: 2 }],
  ["integer range 10^300", { type: "integer", minimum: -1e300, maximum: 1e300 }],
  ["1,000 nested objects", nest(1000, (s) => ({ type: "object", properties: { a: s }, required: ["a"] }))],
  ["1,000 nested arrays", nest(1000, (s) => ({ type: "array", items: s }))],
  ["1,000 nested anyOf", nest(1000, (s) => ({ anyOf: [s, { type: "null" }] }))],
  ["20,000 nested objects", nest(20_000, (s) => ({ type: "object", properties: { a: s } }))],
  ["$ref loop", { $ref: "#/$defs/a", $defs: { a: { $ref: "#/$defs/b" }, b: { $ref: "#/$defs/a" } } }],
  ["recursive tree", { $ref: "#/$defs/n", $defs: { n: { type: "object", properties: { c: { type: "array", items: { $ref: "#/$defs/n" } } } } } }],
  ["10,000 optional properties", { type: "object", properties: Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`p${i}`, { type: "string" }])) }],
  ["2,000 required properties", { type: "object", properties: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`p${i}`, { type: "integer" }])), required: Array.from({ length: 2000 }, (_, i) => `p${i}`) }],
  ["100,000-value enum", { enum: Array.from({ length: 100_000 }, (_, i) => `v${i}`) }],
  ["5,000 prefixItems", { type: "array", prefixItems: Array.from({ length: 5000 }, () => ({ type: "integer" })) }],
  ["property names with every escape", { type: "object", properties: { '"\\\n\t\u0000<|im_start|>': { type: "string" } }, required: ['"\\\n\t\u0000<|im_start|>'] }],
];

const KEYWORDS = ["type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "$defs", "not", "uniqueItems"];
const LEAVES: unknown[] = ["string", "integer", "number", "object", "array", "boolean", "null", "^a+$", "^[a-z]{2,5}$", "^(x|y)*$", "#/$defs/x", "#/properties/a", "date", "date-time", "uuid", 0, 1, 3, -1, 2.5, 1e9, true, false, null, [], {}];

function randomSchema(rng: () => number, depth: number): unknown {
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rng() * a.length)]!;
  if (depth === 0 || rng() < 0.25) return pick(LEAVES);
  const r = rng();
  if (r < 0.15) return Array.from({ length: Math.floor(rng() * 3) }, () => randomSchema(rng, depth - 1));
  const out: Record<string, unknown> = {};
  for (let i = Math.floor(rng() * 4); i >= 0; i--) {
    const k = pick(KEYWORDS);
    out[k] = k === "properties" || k === "$defs" ? { a: randomSchema(rng, depth - 1), x: randomSchema(rng, depth - 1) } : randomSchema(rng, depth - 1);
  }
  return out;
}

export const fuzzClass: FuzzClass<SchemaCase> = {
  cases(seed, size) {
    const out: SchemaCase[] = HOSTILE.map(([name, schema]) => ({ name: `hostile: ${name}`, schema }));
    const fixtures = path.resolve(import.meta.dirname, "../fixtures/json-schema");
    for (const f of fs.readdirSync(fixtures).filter((x) => x.endsWith(".jsonl")).sort()) {
      const lines = fs.readFileSync(path.join(fixtures, f), "utf8").split("\n").filter((l) => l.trim() !== "");
      for (const line of lines.slice(0, size === "long" ? undefined : 15)) {
        const entry = JSON.parse(line) as { id?: string; schema?: unknown };
        out.push({ name: `fixture ${entry.id ?? f}`, schema: entry.schema });
      }
    }
    const rng = mulberry32(seed);
    const random = size === "long" ? 3000 : 150;
    for (let i = 0; i < random; i++) out.push({ name: `random ${i}`, schema: randomSchema(rng, 4) });
    return out;
  },
  describe: (c) => c.name,
  async run(c) {
    const { gbnf } = compileJsonSchema(c.schema);
    const { model, context } = await fuzzContext();
    await context.generate(model.tokenize("{"), { grammar: { gbnf }, maxTokens: 8, temperature: 0 }).result();
  },
};
