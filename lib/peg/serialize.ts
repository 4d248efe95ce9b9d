/**
 * Arena <-> JSON in exactly the shape of llama.cpp's `common_peg_arena::to_json()` / `from_json()`:
 * `{parsers: [{type, ...}], rules: {name: id}, root: id}`, with each parser's keys in the reference's
 * order, so `JSON.stringify(arena.toJSON())` matches the reference's `dump()` byte for byte except for
 * the order of `rules` (an unordered_map there; ours is insertion order).
 */
import { LlamapegError } from "../errors.js";
import { type PegNode, type PegNodeId, INVALID_NODE_ID, assertNeverNode, childIds } from "./nodes.js";

export type PegParserJson = { type: string; [field: string]: unknown };

export interface PegArenaJson {
  parsers: PegParserJson[];
  rules: Record<string, number>;
  root: number;
}

/** `size_t(-1)` as the reference writes it; JS reads it back as 18446744073709552000. */
const CPP_INVALID_ID = 18446744073709551615;

export function nodeToJson(node: PegNode): PegParserJson {
  switch (node.kind) {
    case "epsilon":
    case "start":
    case "end":
    case "any":
    case "space":
      return { type: node.kind };
    case "literal":
      return { type: "literal", literal: node.text };
    case "sequence":
    case "choice":
      return { type: node.kind, children: [...node.children] };
    case "repetition":
      return { type: "repetition", child: node.child, min_count: node.min, max_count: node.max };
    case "and":
    case "not":
    case "atomic":
      return { type: node.kind, child: node.child };
    case "chars":
      return {
        type: "chars",
        pattern: node.pattern,
        ranges: node.ranges.map((r) => ({ start: r.start, end: r.end })),
        negated: node.negated,
        min_count: node.min,
        max_count: node.max,
      };
    case "string":
      return { type: "string", delimiter: node.delimiter };
    case "until":
      return { type: "until", delimiters: [...node.delimiters] };
    case "schema":
      return { type: "schema", child: node.child, name: node.name, schema: node.schema ?? null, raw: node.raw };
    case "rule":
      return { type: "rule", name: node.name, child: node.child, trigger: node.trigger };
    case "ref":
      return { type: "ref", name: node.name };
    case "tag":
      return { type: "tag", child: node.child, tag: node.tag };
    case "gbnf":
      return { type: "gbnf", child: node.child, grammar: node.grammar };
    case "ac":
      return { type: "ac", child: node.child, delimiters: [...node.delimiters] };
    default:
      return assertNeverNode(node);
  }
}

export function arenaToJson(nodes: readonly PegNode[], rules: ReadonlyMap<string, PegNodeId>, root: PegNodeId): PegArenaJson {
  const r: Record<string, number> = {};
  for (const [name, id] of rules) r[name] = id;
  return { parsers: nodes.map(nodeToJson), rules: r, root: root === INVALID_NODE_ID ? CPP_INVALID_ID : root };
}

function bad(message: string, where: string): never {
  throw new LlamapegError("ERR_PEG_INVALID", message, { where });
}

function field(j: PegParserJson, name: string, where: string): unknown {
  if (!(name in j)) bad(`${j.type} parser is missing '${name}'`, where);
  return j[name];
}

function str(j: PegParserJson, name: string, where: string): string {
  const v = field(j, name, where);
  if (typeof v !== "string") bad(`${j.type} parser: '${name}' must be a string`, `${where}/${name}`);
  return v;
}

function bool(j: PegParserJson, name: string, where: string): boolean {
  const v = field(j, name, where);
  if (typeof v !== "boolean") bad(`${j.type} parser: '${name}' must be a boolean`, `${where}/${name}`);
  return v;
}

function int(j: PegParserJson, name: string, where: string): number {
  const v = field(j, name, where);
  if (typeof v !== "number" || !Number.isInteger(v)) bad(`${j.type} parser: '${name}' must be an integer`, `${where}/${name}`);
  return v;
}

function strings(j: PegParserJson, name: string, where: string): string[] {
  const v = field(j, name, where);
  if (!Array.isArray(v) || !v.every((s) => typeof s === "string")) {
    bad(`${j.type} parser: '${name}' must be an array of strings`, `${where}/${name}`);
  }
  return [...(v as string[])];
}

function ids(j: PegParserJson, name: string, where: string): number[] {
  const v = field(j, name, where);
  if (!Array.isArray(v) || !v.every((s) => typeof s === "number" && Number.isInteger(s))) {
    bad(`${j.type} parser: '${name}' must be an array of parser ids`, `${where}/${name}`);
  }
  return [...(v as number[])];
}

export function nodeFromJson(j: unknown, where: string): PegNode {
  if (typeof j !== "object" || j === null || typeof (j as PegParserJson).type !== "string") {
    bad("parser JSON is missing or has an invalid 'type' field", where);
  }
  const p = j as PegParserJson;
  switch (p.type) {
    case "epsilon":
    case "start":
    case "end":
    case "any":
    case "space":
      return { kind: p.type };
    case "literal":
      return { kind: "literal", text: str(p, "literal", where) };
    case "sequence":
    case "choice":
      return { kind: p.type, children: ids(p, "children", where) };
    case "repetition":
      return { kind: "repetition", child: int(p, "child", where), min: int(p, "min_count", where), max: int(p, "max_count", where) };
    case "and":
    case "not":
    case "atomic":
      return { kind: p.type, child: int(p, "child", where) };
    case "chars": {
      const rangesJson = field(p, "ranges", where);
      if (!Array.isArray(rangesJson)) bad("chars parser: 'ranges' must be an array", `${where}/ranges`);
      const ranges = rangesJson.map((r: unknown, i) => {
        const rr = r as { start?: unknown; end?: unknown } | null;
        if (rr === null || typeof rr !== "object" || typeof rr.start !== "number" || typeof rr.end !== "number") {
          bad("char range is missing 'start' or 'end'", `${where}/ranges/${i}`);
        }
        return { start: rr.start as number, end: rr.end as number };
      });
      return {
        kind: "chars",
        pattern: str(p, "pattern", where),
        ranges,
        negated: bool(p, "negated", where),
        min: int(p, "min_count", where),
        max: int(p, "max_count", where),
      };
    }
    case "string": {
      const d = str(p, "delimiter", where);
      if (d.length === 0) bad("string parser delimiter is empty", `${where}/delimiter`);
      // The reference keeps only the first byte; an ASCII delimiter is the only sensible one.
      return { kind: "string", delimiter: d[0]! };
    }
    case "until":
      return { kind: "until", delimiters: strings(p, "delimiters", where) };
    case "schema": {
      field(p, "schema", where);
      // JSON null loads as "no schema" (the reference's from_json leaves the pointer empty)
      return { kind: "schema", child: int(p, "child", where), name: str(p, "name", where), schema: p.schema === null ? undefined : p.schema, raw: bool(p, "raw", where) };
    }
    case "rule":
      return { kind: "rule", name: str(p, "name", where), child: int(p, "child", where), trigger: bool(p, "trigger", where) };
    case "ref":
      return { kind: "ref", name: str(p, "name", where) };
    case "tag":
      return { kind: "tag", child: int(p, "child", where), tag: str(p, "tag", where) };
    case "gbnf":
      return { kind: "gbnf", child: int(p, "child", where), grammar: str(p, "grammar", where) };
    case "ac": {
      const delimiters = strings(p, "delimiters", where);
      if (delimiters.length === 0) bad("ac parser requires a non-empty 'delimiters' array", `${where}/delimiters`);
      return { kind: "ac", child: int(p, "child", where), delimiters };
    }
    default:
      return bad(`unknown parser type '${p.type}'`, `${where}/type`);
  }
}

export function arenaFromJson(json: unknown): { nodes: PegNode[]; rules: Map<string, PegNodeId>; root: PegNodeId } {
  const j = (typeof json === "string" ? JSON.parse(json) : json) as Partial<PegArenaJson> | null;
  if (j === null || typeof j !== "object") bad("arena JSON must be an object", "");
  if (!Array.isArray(j.parsers)) bad("arena JSON is missing or has an invalid 'parsers' array", "/parsers");
  if (j.rules === null || typeof j.rules !== "object" || Array.isArray(j.rules)) bad("arena JSON is missing or has an invalid 'rules' object", "/rules");
  if (!("root" in j) || typeof j.root !== "number") bad("arena JSON is missing 'root'", "/root");
  const nodes = j.parsers.map((p, i) => nodeFromJson(p, `/parsers/${i}`));
  const n = nodes.length;
  const rules = new Map<string, PegNodeId>();
  for (const [name, id] of Object.entries(j.rules)) {
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id >= n) {
      bad(`rule '${name}' references invalid parser id ${String(id)}`, `/rules/${name}`);
    }
    rules.set(name, id);
  }
  // Anything at or past 2^53 can only be the reference's size_t(-1).
  const root = j.root >= Number.MAX_SAFE_INTEGER ? INVALID_NODE_ID : j.root;
  if (root !== INVALID_NODE_ID && (root < 0 || root >= n || !Number.isInteger(root))) {
    bad(`root references invalid parser id ${root}`, "/root");
  }
  // Stricter than the reference (which would fail later, at parse time): every child id must exist.
  nodes.forEach((node, i) => {
    for (const c of childIds(node)) {
      if (!Number.isInteger(c) || c < 0 || c >= n) bad(`${node.kind} parser references invalid parser id ${c}`, `/parsers/${i}`);
    }
  });
  return { nodes, rules, root };
}
