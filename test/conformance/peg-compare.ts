/**
 * Helpers for comparing our PEG engine with the reference harness: corpus loading, AST
 * normalization (trees rebuilt from the result's top-level nodes, ids dropped: the reference numbers
 * every node it ever created, abandoned branches included, while our packrat parser reuses nodes),
 * and arena comparison (`rules` compared as a map: the reference serializes an unordered_map).
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

import type { PegArenaJson, PegParseResult } from "../../lib/peg/index.js";

export interface PegCase {
  /** unique name, used in test titles */
  name: string;
  /** builder expression (test/support/README.md) */
  expr: unknown;
  /** inputs as UTF-8 text */
  inputs?: string[];
  /** inputs as base64 bytes (for invalid or cut UTF-8) */
  inputs_b64?: string[];
  /** extra `peg.gbnf` fields, e.g. `resolve_refs` */
  gbnf?: Record<string, unknown>;
  /** parse only complete inputs (no prefix sweep), for very long inputs */
  no_prefixes?: boolean;
  /** the expression uses reference-only helpers: load the reference's arena instead of building one */
  load_only?: boolean;
}

export interface RefAstNode {
  id: number;
  rule: string;
  tag: string;
  start: number;
  end: number;
  text: string;
  text_b64?: string;
  is_partial: boolean;
  children: number[];
}

export interface RefParse {
  type: string;
  start: number;
  end: number;
  nodes: number[];
  ast: RefAstNode[];
}

export interface NormNode {
  rule: string;
  tag: string;
  start: number;
  end: number;
  text: string;
  bytes: string;
  partial: boolean;
  children: NormNode[];
}

export const FIXTURE_DIR = new URL("../fixtures/peg/", import.meta.url).pathname;

export function loadCorpus(dir = FIXTURE_DIR): Array<PegCase & { file: string }> {
  const out: Array<PegCase & { file: string }> = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort()) {
    const lines = readFileSync(join(dir, file), "utf8").split("\n");
    lines.forEach((line, i) => {
      if (line.trim() === "" || line.startsWith("//")) return;
      try {
        out.push({ ...(JSON.parse(line) as PegCase), file });
      } catch (e) {
        throw new Error(`${file}:${i + 1}: ${(e as Error).message}`);
      }
    });
  }
  return out;
}

export function caseInputs(c: PegCase): Uint8Array[] {
  const enc = new TextEncoder();
  return [...(c.inputs ?? []).map((s) => enc.encode(s)), ...(c.inputs_b64 ?? []).map((b) => new Uint8Array(Buffer.from(b, "base64")))];
}

export function refTree(r: RefParse, input: Uint8Array): NormNode[] {
  const byId = new Map(r.ast.map((n) => [n.id, n]));
  const walk = (id: number): NormNode => {
    const n = byId.get(id)!;
    return {
      rule: n.rule,
      tag: n.tag,
      start: n.start,
      end: n.end,
      text: n.text,
      bytes: Buffer.from(n.start < input.length ? input.subarray(n.start, n.end) : new Uint8Array()).toString("base64"),
      partial: n.is_partial,
      children: n.children.map(walk),
    };
  };
  return r.nodes.map(walk);
}

export function ourTree(r: PegParseResult): NormNode[] {
  const walk = (id: number): NormNode => {
    const n = r.ast.node(id);
    return {
      rule: n.rule,
      tag: n.tag,
      start: n.start,
      end: n.end,
      text: n.text,
      bytes: Buffer.from(n.start < r.ast.input.length ? r.ast.bytes(id) : new Uint8Array()).toString("base64"),
      partial: n.isPartial,
      children: n.children.map(walk),
    };
  };
  return r.ast.roots.map(walk);
}

/** Arena JSON with `rules` key-sorted, so two serializations compare with deep equality. */
export function canonicalArena(a: PegArenaJson): PegArenaJson {
  const rules: Record<string, number> = {};
  for (const k of Object.keys(a.rules).sort()) rules[k] = a.rules[k]!;
  return { parsers: a.parsers, rules, root: a.root };
}
