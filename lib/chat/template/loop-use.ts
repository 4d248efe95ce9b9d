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
const loopReads = new WeakMap<object, boolean>();

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
