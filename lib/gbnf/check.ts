/**
 * `checkGbnf`: every grammar llama.cpp would reject, or choke on, is ERR_GRAMMAR_INVALID here,
 * in TypeScript, naming the rule and the line and column, before native code sees it:
 * syntax errors, undefined rules, a missing root, repetitions with min > max (llama.cpp's count
 * underflows and allocates until memory runs out) or past its limit of 2000, groups nested
 * deeper than MAX_NESTING (its parser recurses per level), left recursion, and chains of leftmost
 * rule references longer than MAX_CHAIN (its left-recursion check recurses along them: 70,000
 * chained rules overflow the native stack), and grammars whose expansion exceeds MAX_ELEMENTS.
 */
import { LlamapegError } from "../errors.js";
import { lineColumn } from "../line-column.js";
import { GbnfSyntaxError, type ParsedGrammar, TERMINAL, parseGbnf, ruleId } from "./parse.js";

/** Deepest group nesting accepted. */
export const MAX_NESTING = 200;
/** Longest chain of leftmost rule references accepted. */
export const MAX_CHAIN = 2000;
/** Most grammar elements (8 bytes each in llama.cpp) a grammar may expand to. */
export const MAX_ELEMENTS = 4_000_000;
/**
 * Most parse stacks one rule may start (its alternatives, through leftmost references): llama.cpp
 * matches every stack against every vocabulary token at each step, so a 100,000-value enum costs
 * it a minute per token.
 */
export const MAX_FANOUT = 10_000;

export interface CheckGbnfOptions {
  /** The start rule. Default "root". */
  root?: string;
}

/** What a grammar that passed looks like to llama.cpp. */
export interface GbnfStats {
  rules: number;
  elements: number;
  /** Longest chain of leftmost rule references. */
  chain: number;
  /** Most parse stacks one rule starts (an upper bound). */
  fanout: number;
}

function position(src: string, offset: number): string {
  const { line, column } = lineColumn(src, offset);
  return `line ${line}, column ${column}`;
}

function invalid(src: string, message: string, offset: number, rule?: string): never {
  const at = position(src, offset);
  throw new LlamapegError("ERR_GRAMMAR_INVALID", `invalid GBNF grammar at ${at}${rule ? ` (rule ${rule})` : ""}: ${message}`, {
    where: `grammar ${at}${rule ? ` rule ${rule}` : ""}`,
  });
}

/** Throws ERR_GRAMMAR_INVALID when llama.cpp would reject `gbnf` or could not handle it. */
export function checkGbnf(gbnf: string, options: CheckGbnfOptions = {}): GbnfStats {
  if (typeof gbnf !== "string") throw new LlamapegError("ERR_INVALID_ARGUMENT", "the grammar must be a string", { where: "grammar" });
  let g: ParsedGrammar;
  try {
    g = parseGbnf(gbnf, { maxNesting: MAX_NESTING, maxElements: MAX_ELEMENTS });
  } catch (e) {
    if (e instanceof GbnfSyntaxError) invalid(gbnf, e.message, e.offset, e.rule);
    throw e;
  }
  for (const [id, r] of g.rules.entries()) if (!r.defined) invalid(gbnf, `Undefined rule identifier '${r.name}' (used but never defined)`, g.firstUse.get(id) ?? r.offset, r.name);
  const root = options.root ?? "root";
  const rootId = ruleId(g, root);
  if (rootId === undefined) invalid(gbnf, `grammar does not contain a '${root}' symbol to start from`, 0);

  let elements = 0;
  for (const r of g.rules) elements += r.elements;

  const { chain, fanout } = leftmostChains(gbnf, g);
  return { rules: g.rules.length, elements, chain, fanout };
}

/**
 * llama_grammar_detect_left_recursion's walk, done iteratively: from each rule into the rules
 * referenced at the start of an alternative (and after a reference to a rule with an empty
 * alternative). A cycle is left recursion; the longest path is the depth llama.cpp recurses to.
 */
function leftmostChains(src: string, g: ParsedGrammar): { chain: number; fanout: number } {
  const n = g.rules.length;
  const mayBeEmpty = g.rules.map((r) => r.alternatives.some((a) => a.length === 0));
  const edges: number[][] = g.rules.map((r) => {
    const out: number[] = [];
    for (const alt of r.alternatives) {
      for (const sym of alt) {
        if (sym === TERMINAL) break;
        out.push(sym);
        if (!mayBeEmpty[sym]) break;
      }
    }
    return out;
  });
  // 0 = unseen, 1 = on the path, 2 = done; depth = longest chain from the rule
  const state = new Uint8Array(n);
  const depth = new Int32Array(n);
  // stacks a rule starts: one per alternative that begins with a terminal (or is empty), plus
  // those of the rules it begins with
  const fan = new Float64Array(n);
  let widest = 0;
  const stack: { rule: number; next: number }[] = [];
  let longest = 0;
  for (let start = 0; start < n; start++) {
    if (state[start] !== 0) continue;
    stack.push({ rule: start, next: 0 });
    state[start] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const out = edges[top.rule]!;
      if (top.next < out.length) {
        const to = out[top.next++]!;
        if (state[to] === 1) {
          const path = stack.slice(stack.findIndex((f) => f.rule === to)).map((f) => g.rules[f.rule]!.name);
          invalid(src, `left recursion: ${[...path, g.rules[to]!.name].join(" -> ")} can recurse without consuming input`, g.rules[to]!.offset, g.rules[to]!.name);
        }
        if (state[to] === 0) {
          state[to] = 1;
          stack.push({ rule: to, next: 0 });
        }
        continue;
      }
      let d = 1;
      for (const to of out) d = Math.max(d, depth[to]! + 1);
      depth[top.rule] = d;
      let f = 0;
      for (const alt of g.rules[top.rule]!.alternatives) {
        let i = 0;
        for (; i < alt.length && alt[i] !== TERMINAL; i++) {
          f += fan[alt[i]!]!;
          if (!mayBeEmpty[alt[i]!]) break;
        }
        if (i === alt.length || alt[i] === TERMINAL) f += 1;
      }
      fan[top.rule] = Math.min(f, 1e12);
      widest = Math.max(widest, fan[top.rule]!);
      if (fan[top.rule]! > MAX_FANOUT) {
        const r = g.rules[top.rule]!;
        invalid(src, `rule ${r.name} starts ${fan[top.rule]} parse stacks (at most ${MAX_FANOUT}): llama.cpp would match each against the whole vocabulary at every token`, r.offset, r.name);
      }
      state[top.rule] = 2;
      stack.pop();
      if (d > MAX_CHAIN) {
        const r = g.rules[top.rule]!;
        invalid(src, `a chain of ${d} rules each starting with the next exceeds ${MAX_CHAIN} (llama.cpp recurses along it)`, r.offset, r.name);
      }
      longest = Math.max(longest, d);
    }
  }
  return { chain: longest, fanout: widest };
}
