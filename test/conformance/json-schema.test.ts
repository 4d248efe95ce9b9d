// JSON Schema -> GBNF against the reference converter (json_schema_to_grammar via the harness).
// Every fixture case must come out one of:
//   identical      same GBNF text as the reference;
//   both-reject    both sides refuse the schema;
//   unsupported    we refuse with ERR_SCHEMA_UNSUPPORTED where the reference silently drops a
//                  keyword: then our `unsupported: "ignore"` output must equal the reference's text
//                  and the error's pointer must name a place in the schema;
//   documented     one of the deliberate differences of docs/json-schema.md, recognised and
//                  checked below (each also has a unit test showing ours is right).
import { readFileSync, readdirSync } from "node:fs";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { LlamapegError } from "../../lib/errors.js";
import { SchemaInfo, buildGrammar, compileJsonSchema, jsonSchemaToGbnf } from "../unit/json-schema/json-schema-reference-mode.js";
import { getHarness, type Harness } from "../support/harness.js";

interface Case {
  id: string;
  schema: unknown;
  expect_error?: { code: string; where?: string };
}

const dir = new URL("../fixtures/json-schema/", import.meta.url);
const cases: Case[] = readdirSync(dir)
  .filter((f) => f.endsWith(".jsonl"))
  .sort()
  .flatMap((f) =>
    readFileSync(new URL(f, dir), "utf8")
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as Case),
  );

type Outcome = "identical" | "both-reject" | "unsupported" | "documented";
const outcomes = new Map<Outcome, string[]>();

let h: Harness;
beforeAll(async () => {
  h = await getHarness();
});
afterAll(async () => {
  const line = [...outcomes].map(([k, v]) => `${k} ${v.length}`).join(", ");
  console.log(`json-schema conformance: ${cases.length} cases: ${line}`);
  if (process.env.JSON_SCHEMA_VERBOSE) console.log((outcomes.get("documented") ?? []).join("\n"));
  await h?.close();
});

/** Walk a JSON pointer (`#/a/b/0`); true when every token but the last exists. */
function pointsIntoSchema(schema: unknown, where: string): boolean {
  const tokens = where
    .replace(/^#/, "")
    .split("/")
    .slice(1)
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
  let node = schema;
  for (const t of tokens.slice(0, -1)) {
    if (typeof node !== "object" || node === null || !Object.hasOwn(node, t)) return false;
    node = (node as Record<string, unknown>)[t];
  }
  return true;
}

async function reference(schema: unknown): Promise<Result> {
  const r = await h.request<{ gbnf: string }>("json_schema.to_grammar", { schema_text: JSON.stringify(schema), force_gbnf: true });
  return r.ok ? { ok: true, gbnf: r.result!.gbnf } : { ok: false, error: r.error ?? "" };
}

function ours(schema: unknown): { ok: true; gbnf: string } | { ok: false; error: LlamapegError } {
  try {
    return { ok: true, gbnf: jsonSchemaToGbnf(schema) };
  } catch (e) {
    if (e instanceof LlamapegError) return { ok: false, error: e };
    throw e;
  }
}

type Result = { ok: true; gbnf: string } | { ok: false; error: string } | { ok: false; error: LlamapegError };

const rulesOf = (gbnf: string): Map<string, string> =>
  new Map(gbnf.split("\n").filter((l) => l.includes(" ::= ")).map((l) => [l.slice(0, l.indexOf(" ::= ")), l.slice(l.indexOf(" ::= ") + 5)]));

/** Every schema object in the document (depth first). */
function* schemaObjects(node: unknown): Generator<Record<string, unknown>> {
  if (Array.isArray(node)) for (const x of node) yield* schemaObjects(x);
  else if (typeof node === "object" && node !== null) {
    yield node as Record<string, unknown>;
    for (const v of Object.values(node)) yield* schemaObjects(v);
  }
}

/** An integer with only one bound, which the reference expands wrongly when its digits hold a 0 or 1 after the first. */
const hasOpenIntegerBound = (schema: unknown): boolean =>
  [...schemaObjects(schema)].some(
    (o) => o.type === "integer" && ["minimum", "exclusiveMinimum"].some((k) => k in o) !== ["maximum", "exclusiveMaximum"].some((k) => k in o),
  );

const INTEGER_RANGE_BODY = /^\((?:[-"[\]0-9{},| ()])*\)$/;

function stripClosedTuples(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(stripClosedTuples);
  if (typeof node !== "object" || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "items" && v === false && Array.isArray((node as Record<string, unknown>).prefixItems)) continue;
    out[k] = stripClosedTuples(v);
  }
  return out;
}

/**
 * Which deliberate difference explains a mismatch, after checking it; undefined when none does.
 */
async function documentedDifference(c: Case, ref: Result, mine: Result): Promise<string | undefined> {
  // stricter validation: a hand-written invalid schema the reference compiles anyway
  if (!mine.ok && mine.error instanceof LlamapegError && mine.error.code === "ERR_SCHEMA_INVALID" && c.expect_error?.code === "ERR_SCHEMA_INVALID") {
    return "invalid schema rejected";
  }
  // prefixItems + items: false is a closed tuple; the same schema without `items: false` must then match exactly
  if (!ref.ok && /Unrecognized schema: false/.test(String(ref.error)) && mine.ok) {
    const stripped = stripClosedTuples(c.schema);
    const refStripped = await reference(stripped);
    if (refStripped.ok && refStripped.gbnf === mine.gbnf && jsonSchemaToGbnf(stripped) === mine.gbnf) return "closed tuple";
    return undefined;
  }
  if (!ref.ok || !mine.ok) return undefined;
  // otherwise only whole rules may differ, each of a documented kind
  const a = rulesOf(ref.gbnf);
  const b = rulesOf(mine.gbnf);
  if ([...a.keys()].join() !== [...b.keys()].join()) return undefined;
  const kinds = new Set<string>();
  for (const [name, body] of a) {
    const ours = b.get(name)!;
    if (ours === body) continue;
    if (hasOpenIntegerBound(c.schema) && INTEGER_RANGE_BODY.test(body) && INTEGER_RANGE_BODY.test(ours)) kinds.add("integer bound digits");
    // the reference cut a multi-byte character into bytes (the harness shows them as U+FFFD): not UTF-8, not a grammar
    else if (body.includes("\uFFFD") && !ours.includes("\uFFFD")) kinds.add("non-ASCII per character");
    else if (name.endsWith("-k") && /\\x(2D|5C|5D|5E)/.test(ours) && ours.replace(/\\x(2D|5C|5D|5E)/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))) === body) {
      kinds.add("key class escapes");
    } else return undefined;
  }
  return [...kinds].join(", ");
}

function record(outcome: Outcome, id: string): void {
  outcomes.set(outcome, [...(outcomes.get(outcome) ?? []), id]);
}

describe("json_schema_to_grammar conformance", () => {
  it("the corpus has at least 150 schemas", () => {
    expect(cases.length).toBeGreaterThanOrEqual(150);
  });

  it.each(cases.map((c) => [c.id, c] as const))("%s", async (_id, c) => {
    const ref = await reference(c.schema);
    const mine = ours(c.schema);
    if (ref.ok && mine.ok && ref.gbnf === mine.gbnf) {
      record("identical", c.id);
      return;
    }
    if (!ref.ok && !mine.ok) {
      expect(mine.error).toBeInstanceOf(LlamapegError);
      record("both-reject", c.id);
      return;
    }
    const why = await documentedDifference(c, ref, mine);
    if (why !== undefined) {
      record("documented", `${c.id}: ${why}`);
      return;
    }
    if (mine.ok) {
      expect(ref.ok, `the reference rejected it: ${ref.ok ? "" : ref.error}`).toBe(true);
      expect(mine.gbnf).toBe((ref as { gbnf: string }).gbnf);
      return;
    }
    if (!ref.ok) throw new Error("unreachable: both-reject is handled above");
    expect(mine.error.code, mine.error.message).toBe("ERR_SCHEMA_UNSUPPORTED");
    expect(pointsIntoSchema(c.schema, mine.error.where ?? ""), `pointer ${mine.error.where}`).toBe(true);
    const degraded = compileJsonSchema(c.schema, { unsupported: "ignore" });
    expect(degraded.warnings.length).toBeGreaterThan(0);
    if (degraded.gbnf !== ref.gbnf) {
      const why = await documentedDifference(c, ref, { ok: true, gbnf: degraded.gbnf });
      expect(why, "ignore-mode output differs from the reference").toBeDefined();
    }
    record("unsupported", c.id);
  });
});

describe("grammar builder conformance", () => {
  // the same add_rule/add_schema/resolve_refs calls through the reference's build_grammar
  type Op = ["add_rule", string, string] | ["add_schema", string, unknown] | ["resolve_refs", unknown];
  const scenarios: Array<[string, Op[]]> = [
    [
      "rule clashes and sanitizing",
      [
        ["add_rule", "x", '"1"'],
        ["add_rule", "x", '"2"'],
        ["add_rule", "x", '"3"'],
        ["add_rule", "x", '"2"'],
        ["add_rule", "my rule!", '"4"'],
        ["add_rule", "root", "x x0 x1 my-rule"],
      ],
    ],
    [
      "tool-call style grammar",
      [
        ["resolve_refs", { $defs: { loc: { type: "string", minLength: 1 } }, type: "object", properties: { where: { $ref: "#/$defs/loc" } }, required: ["where"] }],
        ["add_schema", "get-weather-args", { $defs: { loc: { type: "string", minLength: 1 } }, type: "object", properties: { where: { $ref: "#/$defs/loc" } }, required: ["where"] }],
        ["add_schema", "search-args", { type: "object", properties: { q: { type: "string" }, n: { type: "integer", minimum: 1, maximum: 10 } }, required: ["q"] }],
        ["add_rule", "tool-call", '"<call>" space ( "get_weather" space get-weather-args | "search" space search-args ) "</call>"'],
        ["add_rule", "root", "tool-call+"],
      ],
    ],
    [
      "schema named like a built-in and a clash with a schema rule",
      [
        ["add_schema", "string", { type: "string", maxLength: 3 }],
        ["add_schema", "root", { type: "object", properties: { a: { type: "boolean" } } }],
        ["add_rule", "a-kv", '"a"'],
        ["add_schema", "value", { enum: [1, 2] }],
      ],
    ],
  ];

  it.each(scenarios)("%s", async (_name, ops) => {
    const ref = await h.call<{ gbnf: string; returns: unknown[] }>("grammar.build", { ops });
    const returns: unknown[] = [];
    const gbnf = buildGrammar((b) => {
      for (const op of ops) {
        if (op[0] === "add_rule") returns.push(b.addRule(op[1], op[2]));
        else if (op[0] === "add_schema") returns.push(b.addSchema(op[1], op[2]));
        else {
          b.resolveRefs(op[1]);
          returns.push(op[1]);
        }
      }
    });
    expect(gbnf).toBe(ref.gbnf);
    expect(returns).toEqual(ref.returns);
  });
});

describe("differential fuzz: random schema-shaped values (seeded)", () => {
  // Keywords the converter reads, with values of every JSON type. Where both sides compile, our
  // `unsupported: "ignore"` text must be the reference's (or a documented difference); where one
  // side refuses, nothing crashes.
  const KEYWORDS = ["type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems", "minLength",
    "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum", "const", "anyOf", "oneOf",
    "allOf", "$ref", "$defs", "title"];
  const leaf = fc.oneof(
    fc.constantFrom("string", "integer", "object", "array", "null", "number", "boolean", "^a+$", "^[a-z]{2}(x|y)$", "#/$defs/x", "#/properties/a", "date", "uuid", "x"),
    fc.integer({ min: -5, max: 30 }),
    fc.boolean(),
    fc.constant(null),
  );
  const schemaAt = (d: number): fc.Arbitrary<Record<string, unknown>> => fc.dictionary(fc.constantFrom(...KEYWORDS), anyAt(d), { maxKeys: 4 });
  const anyAt = (d: number): fc.Arbitrary<unknown> =>
    d === 0
      ? leaf
      : fc.oneof(schemaAt(d - 1), schemaAt(d - 1), leaf, fc.array(anyAt(d - 1), { maxLength: 3 }), fc.dictionary(fc.constantFrom("a", "b", "x"), schemaAt(d - 1), { maxKeys: 3 }));

  it("600 random schemas", async () => {
    const samples = fc.sample(schemaAt(3), { numRuns: 600, seed: 4242 });
    const tally = { same: 0, documented: 0, refRejects: 0, weReject: 0 };
    const refs = await Promise.all(samples.map((s) => reference(s)));
    for (const [i, schema] of samples.entries()) {
      const ref = refs[i]!;
      let mine: Result;
      try {
        mine = { ok: true, gbnf: compileJsonSchema(schema, { unsupported: "ignore" }).gbnf };
      } catch (e) {
        expect(e).toBeInstanceOf(LlamapegError);
        mine = { ok: false, error: e as LlamapegError };
      }
      if (ref.ok && mine.ok) {
        if (ref.gbnf === mine.gbnf) tally.same++;
        else {
          expect(await documentedDifference({ id: `fuzz/${i}`, schema }, ref, mine), JSON.stringify(schema)).toBeDefined();
          tally.documented++;
        }
      } else if (!ref.ok) tally.refRejects++;
      else tally.weReject++;
    }
    console.log(`json-schema differential fuzz: ${JSON.stringify(tally)}`);
    expect(tally.same).toBeGreaterThan(100);
  });
});

describe("common_schema_info conformance", () => {
  it("resolvesToString agrees with the reference on every corpus schema", async () => {
    let compared = 0;
    for (const c of cases) {
      const r = await h.request<{ resolves_to_string: boolean }>("json_schema.info", { schema_text: JSON.stringify(c.schema) });
      if (!r.ok) continue; // e.g. a ref the reference cannot resolve
      const info = new SchemaInfo();
      info.resolveRefs(c.schema);
      expect(info.resolvesToString(c.schema), c.id).toBe(r.result!.resolves_to_string);
      compared++;
    }
    expect(compared).toBeGreaterThan(300);
  });
});
