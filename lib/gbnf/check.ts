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
import { GbnfSyntaxError, type ParsedGrammar, RuleKind, TERMINAL, parseGbnf, ruleElements, ruleId, ruleName } from "./parse.js";

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
  for (let id = 0; id < g.count; id++) {
    if (!g.defined[id]) invalid(gbnf, `Undefined rule identifier '${ruleName(g, id)}' (used but never defined)`, g.firstUse[id]! >= 0 ? g.firstUse[id]! : g.offset[id]!, ruleName(g, id));
  }
  const root = options.root ?? "root";
  const rootId = ruleId(g, root);
  if (rootId === undefined) invalid(gbnf, `grammar does not contain a '${root}' symbol to start from`, 0);

  let elements = 0;
  for (let id = 0; id < g.count; id++) elements += ruleElements(g, id);

  const { chain, fanout } = leftmostChains(gbnf, g);
  return { rules: g.count, elements, chain, fanout };
}

/**
 * llama_grammar_detect_left_recursion's walk, done iteratively: from each rule into the rules
 * referenced at the start of an alternative (and after a reference to a rule with an empty
 * alternative). A cycle is left recursion; the longest path is the depth llama.cpp recurses to.
 */
function leftmostChains(src: string, g: ParsedGrammar): { chain: number; fanout: number } {
  const n = g.count;
  const { syms, kind, chains, chainOf } = g;
  const mayBeEmpty = new Uint8Array(n);
  for (let id = 0; id < n; id++) {
    if (kind[id] === RuleKind.Repeat) {
      mayBeEmpty[id] = 1;
      continue;
    }
    const first = g.altFirst[id]!;
    for (let a = first; a < first + g.altCount[id]!; a++) if (g.altLength[a] === 0) mayBeEmpty[id] = 1;
  }
  // each alternative of `id` as (symbols syms[start .. start+length-1], one more symbol after them
  // or -1); a repetition's rules share their head's symbols (parse.ts)
  const forEachAlternative = (id: number, fn: (start: number, length: number, extra: number) => void): void => {
    if (kind[id] === RuleKind.Repeat) {
      const r = chains[chainOf[id]!]!;
      const next = r.next(id);
      fn(r.headStart, r.headLength, next < 0 || r.cut ? -1 : next);
      fn(0, 0, -1);
    } else {
      const first = g.altFirst[id]!;
      for (let a = first; a < first + g.altCount[id]!; a++) fn(g.altStart[a]!, g.altLength[a]!, -1);
    }
  };
  // the leftmost references of each rule, as one array (edges of `id`: edgeStart[id]..edgeStart[id+1])
  const edgeStart = new Int32Array(n + 1);
  const edgeList: number[] = [];
  const addEdges = (start: number, length: number, extra: number): void => {
    for (let i = 0; i <= length; i++) {
      const sym = i < length ? syms[start + i]! : extra;
      if (sym === TERMINAL || (i === length && extra < 0)) break;
      edgeList.push(sym);
      if (!mayBeEmpty[sym]) break;
    }
  };
  for (let id = 0; id < n; id++) {
    edgeStart[id] = edgeList.length;
    forEachAlternative(id, addEdges);
  }
  edgeStart[n] = edgeList.length;
  // stacks an alternative starts: those of its leading rules up to the first that cannot be empty,
  // plus one where it reaches a terminal or its end
  let f = 0;
  const addFan = (start: number, length: number, extra: number): void => {
    const len = length + (extra < 0 ? 0 : 1);
    let i = 0;
    for (; i < len; i++) {
      const sym = i < length ? syms[start + i]! : extra;
      if (sym === TERMINAL) break;
      f += fan[sym]!;
      if (!mayBeEmpty[sym]) break;
    }
    if (i === len || (i < length ? syms[start + i] : extra) === TERMINAL) f += 1;
  };
  // 0 = unseen, 1 = on the path, 2 = done; depth = longest chain from the rule
  const state = new Uint8Array(n);
  const depth = new Int32Array(n);
  const fan = new Float64Array(n);
  let widest = 0;
  const stackRule = new Int32Array(n);
  const stackNext = new Int32Array(n);
  let top = -1;
  let longest = 0;
  for (let start = 0; start < n; start++) {
    if (state[start] !== 0) continue;
    stackRule[++top] = start;
    stackNext[top] = edgeStart[start]!;
    state[start] = 1;
    while (top >= 0) {
      const rule = stackRule[top]!;
      const end = edgeStart[rule + 1]!;
      if (stackNext[top]! < end) {
        const to = edgeList[stackNext[top]!++]!;
        if (state[to] === 1) {
          const path: string[] = [];
          for (let k = 0; k <= top; k++) if (path.length > 0 || stackRule[k] === to) path.push(ruleName(g, stackRule[k]!));
          invalid(src, `left recursion: ${[...path, ruleName(g, to)].join(" -> ")} can recurse without consuming input`, g.offset[to]!, ruleName(g, to));
        }
        if (state[to] === 0) {
          state[to] = 1;
          stackRule[++top] = to;
          stackNext[top] = edgeStart[to]!;
        }
        continue;
      }
      let d = 1;
      for (let e = edgeStart[rule]!; e < end; e++) d = Math.max(d, depth[edgeList[e]!]! + 1);
      depth[rule] = d;
      f = 0;
      forEachAlternative(rule, addFan);
      fan[rule] = Math.min(f, 1e12);
      widest = Math.max(widest, fan[rule]!);
      if (fan[rule]! > MAX_FANOUT) {
        invalid(src, `rule ${ruleName(g, rule)} starts ${fan[rule]} parse stacks (at most ${MAX_FANOUT}): llama.cpp would match each against the whole vocabulary at every token`, g.offset[rule]!, ruleName(g, rule));
      }
      state[rule] = 2;
      top--;
      if (d > MAX_CHAIN) {
        invalid(src, `a chain of ${d} rules each starting with the next exceeds ${MAX_CHAIN} (llama.cpp recurses along it)`, g.offset[rule]!, ruleName(g, rule));
      }
      longest = Math.max(longest, d);
    }
  }
  return { chain: longest, fanout: widest };
}

