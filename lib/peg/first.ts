/**
 * First-byte sets, for skipping parsers that cannot match at a position without calling them.
 *
 * `firstBytes(nodes, rules)[id]` is either null (no claim) or a 256-entry table S with this guarantee:
 * at a position inside the input whose byte is not in S, the node returns FAIL, and reports the
 * position itself as its end. (Every kind that fails on its first byte reports `end = start`, so
 * skipping the call changes nothing observable.) Non-ASCII bytes are always admitted, so UTF-8 edge
 * cases (cut or invalid sequences) are left to the parsers themselves.
 */
import { type PegNode, type PegNodeId, assertNeverNode } from "./nodes.js";
import { utf8Encode } from "./utf8.js";

export type FirstSet = Uint8Array | null;

export function firstBytes(nodes: readonly PegNode[], rules: ReadonlyMap<string, PegNodeId>): FirstSet[] {
  const out: FirstSet[] = new Array<FirstSet>(nodes.length).fill(null);
  const state = new Uint8Array(nodes.length); // 0 new, 1 in progress (a cycle: no claim), 2 done

  const of = (id: PegNodeId): FirstSet => {
    if (state[id] === 2) return out[id]!;
    if (state[id] === 1) return null;
    state[id] = 1;
    const r = compute(nodes[id]!);
    out[id] = r;
    state[id] = 2;
    return r;
  };

  const compute = (node: PegNode): FirstSet => {
    switch (node.kind) {
      case "literal": {
        const b = utf8Encode(node.text);
        if (b.length === 0) return null;
        const set = new Uint8Array(256);
        set[b[0]!] = 1;
        return set;
      }
      case "chars": {
        if (node.min <= 0) return null;
        const set = new Uint8Array(256);
        for (let c = 0; c < 128; c++) {
          let m = false;
          for (const r of node.ranges) if (c >= r.start && c <= r.end) m = true;
          if (m !== node.negated) set[c] = 1;
        }
        set.fill(1, 128);
        return set;
      }
      case "sequence":
        return node.children.length === 0 ? null : of(node.children[0]!);
      case "choice": {
        const set = new Uint8Array(256);
        for (const c of node.children) {
          const cs = of(c);
          if (cs === null) return null;
          for (let b = 0; b < 256; b++) set[b] |= cs[b]!;
        }
        return set;
      }
      case "repetition":
        return node.min <= 0 ? null : of(node.child);
      case "and":
      case "schema":
      case "rule":
      case "atomic":
      case "tag":
      case "gbnf":
      case "ac":
        return of(node.child);
      case "ref": {
        const target = rules.get(node.name);
        return target === undefined ? null : of(target);
      }
      case "epsilon":
      case "start":
      case "end":
      case "not":
      case "any":
      case "space":
      case "string":
      case "until":
        return null;
      default:
        return assertNeverNode(node);
    }
  };

  for (let i = 0; i < nodes.length; i++) of(i);
  return out;
}
