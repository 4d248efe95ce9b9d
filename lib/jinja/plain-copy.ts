/**
 * `structuredClone` for the common case, faster: JSON-like data (plain objects, dense arrays,
 * primitives) copied by hand. What structuredClone would treat differently (class instances,
 * Maps, Dates, sparse arrays or arrays with extra keys, an own `__proto__` key, functions,
 * symbols, cycles, very deep data) is handed to structuredClone itself, so the result is always
 * what structuredClone returns (or throws).
 */
const NOT_PLAIN = Symbol("not plain");
const MAX_DEPTH = 200;

export function cloneData<T>(x: T): T {
  const copy = copyPlain(x, 0);
  return copy === NOT_PLAIN ? structuredClone(x) : (copy as T);
}

function copyPlain(x: unknown, depth: number): unknown {
  if (typeof x !== "object") return typeof x === "function" || typeof x === "symbol" ? NOT_PLAIN : x;
  if (x === null) return x;
  if (depth > MAX_DEPTH) return NOT_PLAIN;
  const proto = Object.getPrototypeOf(x);
  if (proto === Array.prototype) {
    const a = x as unknown[];
    if (Object.keys(a).length !== a.length) return NOT_PLAIN;
    const out = new Array<unknown>(a.length);
    for (let i = 0; i < a.length; i++) {
      const c = copyPlain(a[i], depth + 1);
      if (c === NOT_PLAIN) return NOT_PLAIN;
      out[i] = c;
    }
    return out;
  }
  if (proto !== Object.prototype) return NOT_PLAIN;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(x)) {
    if (k === "__proto__") return NOT_PLAIN;
    const c = copyPlain((x as Record<string, unknown>)[k], depth + 1);
    if (c === NOT_PLAIN) return NOT_PLAIN;
    out[k] = c;
  }
  return out;
}
