/**
 * Values and order of per-argument (XML-style) tool calls as the templates print them, where
 * llama.cpp's generators (`common_chat_params_init_qwen3_coder`, the autoparser's tagged arguments)
 * admit only JSON values in required-then-optional order.
 *
 * Values: these templates print a non-string argument with Jinja's `| string` (Python's `str`):
 * `True`, `False`, `None`, and for some (Seed-OSS) dicts and lists as Python repr
 * (`{'a': True}`). A model trained on that history writes them so; the reference's JSON-only value
 * fails the whole call. Here such a value is admitted beside the schema's JSON: booleans and null
 * by the schema's type, containers (where `containers`) as any Python literal. The mapper turns
 * Python literals into JSON (chat/normalize.ts `pythonToJson`).
 *
 * Order: the templates print arguments in the call's order, which models write in the schema's
 * declaration order; the reference forces required arguments first. Here both orders are admitted.
 */
import type { PegParser } from "../../peg/builder.js";
import type { ChatPegBuilder } from "./builder.js";

/** The JSON types a schema allows, shallowly (type, enum/const values, anyOf/oneOf branches); null: any. */
function schemaTypes(schema: Record<string, unknown>, depth = 0): Set<string> | null {
  if (depth > 4) return null;
  const out = new Set<string>();
  const t = schema.type;
  if (typeof t === "string") out.add(t);
  else if (Array.isArray(t)) for (const x of t) if (typeof x === "string") out.add(x);
  const values = Array.isArray(schema.enum) ? schema.enum : "const" in schema ? [schema.const] : [];
  for (const v of values) out.add(v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "object" ? "object" : typeof v);
  for (const key of ["anyOf", "oneOf"]) {
    const branches = schema[key];
    if (!Array.isArray(branches)) continue;
    for (const b of branches) {
      if (typeof b !== "object" || b === null) return null;
      const sub = schemaTypes(b as Record<string, unknown>, depth + 1);
      if (sub === null) return null;
      for (const x of sub) out.add(x);
    }
  }
  return out.size === 0 ? null : out;
}

/**
 * The Python spellings a template prints for a value of `schema` that JSON spells otherwise, or
 * null when there are none: `True | False` for booleans, `None` for null, and with `containers` a
 * Python literal for objects and arrays (and for schemas that do not say their type).
 */
export function pythonLiteralValue(p: ChatPegBuilder, schema: Record<string, unknown>, containers: boolean): PegParser | null {
  const types = schemaTypes(schema);
  if (types === null) return containers ? p.pythonValue() : p.choice([p.pythonBool(), p.pythonNull()]);
  const alts: PegParser[] = [];
  if (containers && (types.has("object") || types.has("array"))) alts.push(p.pythonValue());
  else {
    if (types.has("boolean")) alts.push(p.pythonBool());
    if (types.has("null")) alts.push(p.pythonNull());
  }
  return alts.length === 0 ? null : alts.length === 1 ? alts[0]! : p.choice(alts);
}

/**
 * A non-string argument's value then its close: the schema's JSON, or (`python` set) a Python
 * literal; each alternative carries the close, so a JSON prefix of a Python value (`[1, True]`)
 * does not commit the choice.
 *   S -> json close | python close
 */
export function argumentValue(p: ChatPegBuilder, json: PegParser, close: () => PegParser, python: PegParser | null): PegParser {
  const jsonArg = p.seq(p.toolArgJsonValue(json), close());
  return python === null ? jsonArg : p.choice([jsonArg, p.seq(p.toolArgJsonValue(python), close())]);
}

/**
 * The declaration order (whitespace between arguments, each optional one may be left out), or null
 * where it adds nothing to required-then-optional (`extended` off, or no optional argument before a
 * required one).
 *   S -> d1 (space d2)? space d3 ...
 */
export function declaredOrder(p: ChatPegBuilder, declared: readonly { parser: PegParser; required: boolean }[], extended: boolean): PegParser | null {
  if (!extended || !optionalBeforeRequired(declared)) return null;
  let seq = p.eps();
  declared.forEach((d, i) => {
    const item = i > 0 ? p.seq(p.space(), d.parser) : d.parser;
    seq = p.seq(seq, d.required ? item : p.optional(item));
  });
  return seq;
}

function optionalBeforeRequired(declared: readonly { required: boolean }[]): boolean {
  const firstOptional = declared.findIndex((d) => !d.required);
  return firstOptional !== -1 && declared.slice(firstOptional).some((d) => d.required);
}

/**
 * The arguments of one call: the reference's order (required ones in any order, then optional ones)
 * (`reference`, already wrapped) and, where `declared` differs from it, the declaration order (each
 * optional one may be left out, the sequence wrapped by `wrap`); `rest` follows either.
 *   S -> permute(required) optional* | d1 d2? d3 ...
 */
export function argumentOrders(
  p: ChatPegBuilder,
  reference: PegParser,
  declared: readonly { parser: PegParser; required: boolean }[] | null,
  rest: () => PegParser,
  wrap: (args: PegParser) => PegParser = (args) => args,
): PegParser {
  const ref = p.seq(reference, rest());
  if (declared === null) return ref;
  // Declaration order is already the reference's when no optional argument precedes a required one.
  if (!optionalBeforeRequired(declared)) return ref;
  let seq = p.eps();
  for (const d of declared) seq = p.seq(seq, d.required ? d.parser : p.optional(d.parser));
  return p.choice([ref, p.seq(wrap(seq), rest())]);
}
