// JSON Schema -> GBNF against the reference converter (json_schema_to_grammar via the harness).
// Every fixture case must come out one of:
//   identical      same GBNF text as the reference;
//   both-reject    both sides refuse the schema;
//   unsupported    we refuse with ERR_SCHEMA_UNSUPPORTED where the reference silently drops a
//                  keyword: then our `unsupported: "ignore"` output must equal the reference's text
//                  and the error's pointer must name a place in the schema;
//   documented     a deliberate difference listed in the case's `differs` field (and
//                  docs/json-schema.md), each with a unit test showing ours is right.
import { readFileSync, readdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { LlamapegError } from "../../lib/errors.js";
import { buildGrammar, compileJsonSchema, jsonSchemaToGbnf } from "../../lib/json-schema/index.js";
import { getHarness, type Harness } from "../support/harness.js";

interface Case {
  id: string;
  schema: unknown;
  differs?: string;
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

async function reference(schema: unknown): Promise<{ ok: true; gbnf: string } | { ok: false; error: string }> {
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
    if (c.differs !== undefined) {
      // a documented difference must still be a difference (else drop the note)
      const same = ref.ok && mine.ok && ref.gbnf === mine.gbnf;
      expect(same, `case marked 'differs' but matches the reference: ${c.differs}`).toBe(false);
      record("documented", c.id);
      return;
    }
    if (mine.ok) {
      expect(ref.ok, `the reference rejected it: ${ref.ok ? "" : ref.error}`).toBe(true);
      expect(mine.gbnf).toBe((ref as { gbnf: string }).gbnf);
      record("identical", c.id);
      return;
    }
    if (!ref.ok) {
      record("both-reject", c.id);
      return;
    }
    expect(mine.error.code, mine.error.message).toBe("ERR_SCHEMA_UNSUPPORTED");
    expect(pointsIntoSchema(c.schema, mine.error.where ?? ""), `pointer ${mine.error.where}`).toBe(true);
    const degraded = compileJsonSchema(c.schema, { unsupported: "ignore" });
    expect(degraded.warnings.length).toBeGreaterThan(0);
    expect(degraded.gbnf).toBe(ref.gbnf);
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
