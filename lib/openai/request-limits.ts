/**
 * Size limits on the parts of a request that cost work per byte before anything is generated:
 * tool definitions and the response schema (compiled into a grammar, rendered into the prompt).
 * Checked first, in one iterative walk (a deep or huge value cannot overflow the stack or take
 * seconds to refuse): a 10 MB tool description or a 10,000-entry enum is a 400 at once, not a
 * refusal after 20 s of compiling. The bounds keep the planning of the largest accepted request
 * to tens of milliseconds (see docs/security.md); OpenAI itself takes at most 128 tools.
 */
import { invalidRequest } from "./errors.js";

export const REQUEST_LIMITS = Object.freeze({
  /** Tools per request (OpenAI's own limit). */
  maxTools: 128,
  /** Longest string anywhere in `tools` or `response_format` (a description, an enum value, a pattern). */
  maxString: 256 * 1024,
  /** Characters of all strings in `tools` and `response_format` together. */
  maxTotalChars: 1024 * 1024,
  /** Entries of any one array in a schema (enum, anyOf, required...). */
  maxArray: 1024,
  /** JSON values (objects, arrays, scalars) in `tools` and `response_format` together. */
  maxValues: 20_000,
});

/** Refuses `tools` and `response_format` over the limits, naming the field and the limit. */
export function checkRequestSize(r: Record<string, unknown>): void {
  const tools = r.tools;
  if (Array.isArray(tools) && tools.length > REQUEST_LIMITS.maxTools) invalidRequest("tools", `at most ${REQUEST_LIMITS.maxTools} tools, got ${tools.length}`);
  let values = 0;
  let chars = 0;
  for (const field of ["tools", "response_format"] as const) {
    const stack: { v: unknown; path: string }[] = [{ v: r[field], path: field }];
    while (stack.length > 0) {
      const { v, path } = stack.pop()!;
      if (++values > REQUEST_LIMITS.maxValues) invalidRequest(field, `tools and response_format hold more than ${REQUEST_LIMITS.maxValues} JSON values together`);
      if (typeof v === "string") {
        if (v.length > REQUEST_LIMITS.maxString) invalidRequest(path, `a string of ${v.length} characters, over the limit of ${REQUEST_LIMITS.maxString}`);
        if ((chars += v.length) > REQUEST_LIMITS.maxTotalChars) invalidRequest(field, `tools and response_format hold more than ${REQUEST_LIMITS.maxTotalChars} characters of text together`);
      } else if (Array.isArray(v)) {
        if (path !== "tools" && v.length > REQUEST_LIMITS.maxArray) invalidRequest(path, `an array of ${v.length} entries, over the limit of ${REQUEST_LIMITS.maxArray}`);
        for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: `${path}[${i}]` });
      } else if (typeof v === "object" && v !== null) {
        for (const [k, x] of Object.entries(v)) {
          if ((chars += k.length) > REQUEST_LIMITS.maxTotalChars) invalidRequest(field, `tools and response_format hold more than ${REQUEST_LIMITS.maxTotalChars} characters of text together`);
          stack.push({ v: x, path: `${path}.${k}` });
        }
      }
    }
  }
}
