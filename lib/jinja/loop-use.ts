/**
 * Which `for` loops need their `loop` object. Building it (nine entries per iteration) is a tenth
 * of rendering a tool list, and most loops never read it. A loop's body can read `loop` only by
 * naming it, or, because macros see their caller's variables (dynamic scoping), through a macro
 * that names it and is called from the body. So a loop needs the object when its body names
 * `loop` anywhere, or when some macro of the template names `loop` and the body calls anything.
 * Both answers are worked out once per parsed node and kept with it.
 */
import type { Node, NodeOf } from "./ast.js";

const CALLS = new Set(["CallExpression", "CallStatement", "FilterExpression", "FilterStatement", "TestExpression"]);

const programReads = new WeakMap<object, boolean>();
const programLets = new WeakMap<object, boolean>();
const loopReads = new WeakMap<object, boolean>();
const loopLets = new WeakMap<object, boolean>();

/** Whether the value (a node, a list of nodes, an object literal's map) holds a node `test` accepts. */
function holds(x: unknown, test: (n: { type: string; value?: unknown }) => boolean): boolean {
  if (Array.isArray(x)) return x.some((y) => holds(y, test));
  if (x instanceof Map) {
    for (const [k, v] of x) if (holds(k, test) || holds(v, test)) return true;
    return false;
  }
  if (typeof x !== "object" || x === null || typeof (x as { type?: unknown }).type !== "string") return false;
  if (test(x as { type: string })) return true;
  for (const v of Object.values(x)) if (typeof v === "object" && v !== null && holds(v, test)) return true;
  return false;
}

const namesLoop = (n: { type: string; value?: unknown }): boolean => n.type === "Identifier" && n.value === "loop";

/** Whether any macro of `program` names `loop`. */
function macrosReadLoop(program: NodeOf<"Program">): boolean {
  let r = programReads.get(program);
  if (r === undefined) {
    r = holds(program.body, (n) => n.type === "Macro" && holds((n as unknown as NodeOf<"Macro">).body, namesLoop));
    programReads.set(program, r);
  }
  return r;
}

/** Whether the body of `loop` (a For node of `program`) may read its `loop` object. */
export function readsLoopObject(program: NodeOf<"Program">, node: NodeOf<"For">): boolean {
  let r = loopReads.get(node);
  if (r === undefined) {
    const body: Node[] = node.body;
    r = holds(body, namesLoop) || (macrosReadLoop(program) && holds(body, (n) => CALLS.has(n.type)));
    loopReads.set(node, r);
  }
  return r;
}

/**
 * Whether `x` uses `loop` other than by reading a member of it (`loop.index`, `loop[k]`): naming
 * it bare (`{% set l = loop %}`, `loop | tojson`, a macro argument) or assigning to a member of
 * it. When no body can, nothing outside an iteration ever holds its loop object, so one object
 * per loop, updated in place, renders the same as a fresh one per iteration.
 */
function letsLoopOut(x: unknown): boolean {
  if (Array.isArray(x)) return x.some(letsLoopOut);
  if (x instanceof Map) {
    for (const [k, v] of x) if (letsLoopOut(k) || letsLoopOut(v)) return true;
    return false;
  }
  if (typeof x !== "object" || x === null || typeof (x as { type?: unknown }).type !== "string") return false;
  const n = x as Node;
  if (namesLoop(n as { type: string; value?: unknown })) return true;
  if (n.type === "MemberExpression" && namesLoop(n.object as { type: string; value?: unknown })) return n.computed && letsLoopOut(n.property);
  if (n.type === "Set" && n.assignee.type === "MemberExpression" && holds(n.assignee.object, namesLoop)) return true;
  for (const v of Object.values(n)) if (typeof v === "object" && v !== null && letsLoopOut(v)) return true;
  return false;
}

/** Whether any macro of `program` uses `loop` other than by reading its members. */
function macrosLetLoopOut(program: NodeOf<"Program">): boolean {
  let r = programLets.get(program);
  if (r === undefined) {
    r = holds(program.body, (n) => n.type === "Macro" && letsLoopOut((n as unknown as NodeOf<"Macro">).body));
    programLets.set(program, r);
  }
  return r;
}

/** Whether the body of `node` (a For node of `program`) may hold on to its `loop` object (see letsLoopOut). */
export function letsLoopObjectOut(program: NodeOf<"Program">, node: NodeOf<"For">): boolean {
  let r = loopLets.get(node);
  if (r === undefined) {
    const body: Node[] = node.body;
    r = letsLoopOut(body) || (macrosLetLoopOut(program) && holds(body, (n) => CALLS.has(n.type)));
    loopLets.set(node, r);
  }
  return r;
}
