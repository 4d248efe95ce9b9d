/**
 * Helpers for comparing the chat layer with the reference harness: message and diff shapes of
 * `chat.parse` / `chat.diff`, normalized so both sides compare field by field.
 */
import type { AppliedChatPlan } from "../../lib/chat/apply/index.js";
import type { AssistantMessage, ChatDelta } from "../../lib/chat/messages.js";
import { PegArena } from "../../lib/peg/arena.js";
import type { SchemaMode } from "../../lib/json-schema/index.js";

/** The harness's `msg` (common_chat_msg as JSON). */
export interface RefMsg {
  role: string;
  content: string;
  reasoning_content: string;
  tool_calls: { name: string; arguments: string; id: string }[];
}

/** The harness's diff entry (common_chat_msg_diff as JSON). */
export interface RefDiff {
  reasoning_content_delta: string;
  content_delta: string;
  tool_call_index: number | null;
  tool_call_delta: { name: string; arguments: string; id: string };
}

export interface NormMsg {
  content: string;
  reasoning_content: string;
  tool_calls: { name: string; id: string; arguments: unknown }[];
}

/** Arguments as parsed JSON when they are JSON (so spacing does not count), else the raw text. */
function normArgs(args: string): unknown {
  try {
    return { json: JSON.parse(args) };
  } catch {
    return { raw: args };
  }
}

/** `cutInChar`: the input ends inside a UTF-8 character; the reference shows it as U+FFFD, we leave it out. */
function normText(s: string, cutInChar: boolean): string {
  return cutInChar ? s.replace(/\uFFFD+$/, "") : s;
}

export function normRef(m: RefMsg, cutInChar = false): NormMsg {
  return {
    content: normText(m.content, cutInChar),
    reasoning_content: normText(m.reasoning_content, cutInChar),
    tool_calls: m.tool_calls.map((c) => ({ name: c.name, id: c.id, arguments: normArgs(normText(c.arguments, cutInChar)) })),
  };
}

export function normOurs(m: AssistantMessage): NormMsg {
  return {
    content: m.content,
    reasoning_content: m.reasoning_content,
    tool_calls: m.tool_calls.map((c) => ({ name: c.function.name, id: c.id, arguments: normArgs(c.function.arguments) })),
  };
}

/** Our message as the harness reads one (`chat.diff` input). */
export function toRefMsg(m: AssistantMessage): RefMsg {
  return {
    role: "assistant",
    content: m.content,
    reasoning_content: m.reasoning_content,
    tool_calls: m.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments, id: c.id })),
  };
}

/** Our deltas in the reference's diff shape. */
export function toRefDiffs(deltas: readonly ChatDelta[]): RefDiff[] {
  return deltas.map((d) => {
    const tc = d.tool_calls?.[0];
    return {
      reasoning_content_delta: d.reasoning_content ?? "",
      content_delta: d.content ?? "",
      tool_call_index: tc === undefined ? null : tc.index,
      tool_call_delta: { name: tc?.function?.name ?? "", arguments: tc?.function?.arguments ?? "", id: tc?.id ?? "" },
    };
  });
}

/** The reference emits an entry when a field shrank to a prefix, with nothing in it; we emit none. */
export function dropEmptyDiffs(diffs: readonly RefDiff[]): RefDiff[] {
  return diffs.filter(
    (d) =>
      d.reasoning_content_delta !== "" ||
      d.content_delta !== "" ||
      d.tool_call_index !== null,
  );
}

export function b64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64");
}

/** Does `bytes[0, cut)` end inside a UTF-8 character? */
export function cutsCharacter(bytes: Uint8Array, cut: number): boolean {
  return cut < bytes.length && (bytes[cut]! & 0xc0) === 0x80;
}

interface ArenaJson {
  parsers: { type: string; [k: string]: unknown }[];
  rules: Record<string, number>;
  root: number;
}

/**
 * An arena's structure without its numbering: the nodes reachable from the root (refs followed to
 * their rules), renumbered in depth-first pre-order, children remapped, and only the rules reached.
 * Two arenas built with the same combinators compare equal however the builder ordered node
 * creation (the reference's C++ evaluates `a + b` operands right to left and leaves the
 * intermediate sequences of a chain unreachable).
 */
export function structuralArena(a: ArenaJson): ArenaJson {
  const order = new Map<number, number>();
  const out: ArenaJson["parsers"] = [];
  const rules: Record<string, number> = {};
  const visit = (id: number): number => {
    const known = order.get(id);
    if (known !== undefined) return known;
    const node = a.parsers[id];
    if (node === undefined) throw new Error(`no parser ${id}`);
    if (node.type === "ref") {
      const target = a.rules[node.name as string];
      if (target === undefined) throw new Error(`rule not found: ${String(node.name)}`);
      return visit(target);
    }
    const at = out.length;
    order.set(id, at);
    out.push(node); // placeholder, so a cycle through a rule finds its number
    const copy: { type: string; [k: string]: unknown } = { ...node };
    if (Array.isArray(node.children)) copy.children = (node.children as number[]).map(visit);
    if (typeof node.child === "number") copy.child = visit(node.child);
    out[at] = copy;
    if (node.type === "rule") rules[node.name as string] = at;
    return at;
  };
  const root = visit(a.root);
  const sorted: Record<string, number> = {};
  for (const k of Object.keys(rules).sort()) sorted[k] = rules[k]!;
  return { parsers: out, rules: sorted, root };
}

/** Rule names made from node ids by the GBNF export (`until-<id>`, `ac-<id>`, and their `-NN` states). */
const ID_RULE = /^(until|ac)-(\d+)(-\d+)?$/;

/** The identifiers a GBNF body references, in order (literals, classes and counts skipped). */
function bodyRefs(body: string, rename?: (name: string) => string): { refs: string[]; text: string } {
  const refs: string[] = [];
  let text = "";
  let i = 0;
  while (i < body.length) {
    const c = body[i]!;
    if (c === '"' || c === "[") {
      const close = c === '"' ? '"' : "]";
      let j = i + 1;
      while (j < body.length && body[j] !== close) j += body[j] === "\\" ? 2 : 1;
      text += body.slice(i, j + 1);
      i = j + 1;
    } else if (c === "{") {
      const j = body.indexOf("}", i);
      text += body.slice(i, j + 1);
      i = j + 1;
    } else if (/[a-zA-Z-]/.test(c)) {
      let j = i;
      while (j < body.length && /[a-zA-Z0-9-]/.test(body[j]!)) j++;
      const name = body.slice(i, j);
      refs.push(name);
      text += rename === undefined ? name : rename(name);
      i = j;
    } else {
      text += c;
      i++;
    }
  }
  return { refs, text };
}

/**
 * GBNF with the node-id rule names renamed by first use in a walk from `root` and then the other
 * named rules (breadth first, in reference order), lines sorted again: the same grammar text
 * whatever ids the nodes had.
 */
export function canonicalGbnf(gbnf: string): string {
  const rules = new Map<string, string>();
  for (const line of gbnf.split("\n")) {
    if (line.trim() === "") continue;
    const m = /^([a-zA-Z0-9-]+) ::= (.*)$/.exec(line);
    if (m === null) throw new Error(`unexpected GBNF line ${JSON.stringify(line.slice(0, 80))}`);
    rules.set(m[1]!, m[2]!);
  }
  const base = new Map<string, string>();
  const counters = { until: 0, ac: 0 } as Record<string, number>;
  // from root, then from the other named rules (a rule the export keeps but no body references,
  // such as the child of an `ac` node, still names its own id rules)
  const starts = ["root", ...[...rules.keys()].filter((n) => n !== "root" && !ID_RULE.test(n)).sort()];
  const seen = new Set<string>(starts);
  const queue = [...starts];
  while (queue.length > 0) {
    const name = queue.shift()!;
    const body = rules.get(name);
    if (body === undefined) continue;
    for (const ref of bodyRefs(body).refs) {
      const m = ID_RULE.exec(ref);
      if (m !== null && !base.has(`${m[1]}-${m[2]}`)) base.set(`${m[1]}-${m[2]}`, `${m[1]}-c${counters[m[1]!]!++}`);
      if (!seen.has(ref)) {
        seen.add(ref);
        queue.push(ref);
      }
    }
  }
  const rename = (n: string): string => {
    const m = ID_RULE.exec(n);
    const b = m === null ? undefined : base.get(`${m[1]}-${m[2]}`);
    return b === undefined ? n : `${b}${m![3] ?? ""}`;
  };
  const lines = [...rules].map(([name, body]) => `${rename(name)} ::= ${bodyRefs(body, rename).text}`);
  lines.sort((x, y) => {
    const a = x.slice(0, x.indexOf(" ::= "));
    const b = y.slice(0, y.indexOf(" ::= "));
    return a < b ? -1 : a > b ? 1 : 0;
  });
  return `${lines.join("\n")}\n`;
}

/**
 * The GBNF a plan's tree exports, computed through the public arena API alone: the eager grammar
 * from `plan.grammarRoot`, the lazy one from the trigger rules; `schemas` are the request's tool
 * parameter schemas and response schema. null when the plan has no grammar from its tree.
 */
export function treeGrammar(plan: AppliedChatPlan, schemas: readonly unknown[], schemaMode: SchemaMode = "reference"): string | null {
  const lazy = plan.grammar?.lazy ?? false;
  if (!lazy && plan.grammarRoot < 0) return null;
  const arena = new PegArena(plan.parser.nodes, plan.parser.rules, lazy ? plan.parser.root : plan.grammarRoot);
  return arena.toGbnf({ lazy, resolveRefs: schemas, schemaMode });
}
