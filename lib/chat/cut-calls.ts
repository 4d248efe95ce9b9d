/**
 * A finished output whose last call was cut inside its arguments (max_tokens, a stop string, a
 * final parse that failed after the call streamed): llama.cpp hands the arguments out as they
 * stand, which is not JSON, and says nothing. Here (outside reference mode) the arguments are
 * closed where they stand (partial-json.ts `closeCutJson`: the open string, arrays and objects),
 * which extends what was streamed, and the call is reported; arguments that cannot be closed stay
 * as they are and are reported too, so no call with invalid JSON goes out unflagged.
 */
import type { AssistantMessage } from "./messages.js";
import { closeCutJson } from "./partial-json.js";

/** One call of a final message whose arguments were not JSON. */
export interface CutCall {
  index: number;
  /** The arguments were closed (now JSON); false: they are not JSON and stay as they were. */
  closed: boolean;
  /** The arguments as the output left them. */
  raw: string;
}

function isJsonObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

/** The open string and brackets at the end of a JSON prefix, or null when it is not one. */
function openings(text: string): { inString: boolean; inEscape: boolean; closers: string } | null {
  const stack: string[] = [];
  let inString = false;
  let inEscape = false;
  for (const c of text) {
    if (inString) {
      if (inEscape) inEscape = false;
      else if (c === "\\") inEscape = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "{") stack.push("}");
    else if (c === "[") stack.push("]");
    else if (c === "}" || c === "]") {
      if (stack.pop() !== c) return null;
    }
  }
  return { inString, inEscape, closers: stack.reverse().join("") };
}

/**
 * The shortest text that makes `raw` a JSON object by appending only (what was streamed stays a
 * prefix): close the open string, finish a cut literal or number, a value after a cut `:`, then the
 * open brackets. undefined when appending cannot (a dangling key or comma, a cut escape).
 */
export function extendToJson(raw: string): string | undefined {
  if (raw.trim() === "") return `${raw}{}`;
  const o = openings(raw);
  if (o === null || o.inEscape || !raw.trimStart().startsWith("{")) return undefined;
  if (o.inString) return [`${raw}"${o.closers}`].find(isJsonObject);
  const tails = ["", "null", "0", "rue", "ue", "e", "alse", "lse", "se", "ull", "ll", "l"];
  for (const t of tails) {
    const candidate = `${raw}${t}${o.closers}`;
    if (isJsonObject(candidate)) return candidate;
  }
  return undefined;
}

/** Closes the cut arguments of `msg`'s calls in place (appending only); returns the calls that were not JSON. */
export function closeCutCalls(msg: AssistantMessage): CutCall[] {
  const out: CutCall[] = [];
  msg.tool_calls.forEach((c, index) => {
    const raw = c.function.arguments;
    if (raw.trim() !== "" && closeCutJson(raw)?.closed === false) return; // already JSON
    const fixed = extendToJson(raw);
    if (fixed !== undefined) c.function.arguments = fixed;
    out.push({ index, closed: fixed !== undefined, raw });
  });
  return out;
}

/** What a report of `cut` says. */
export function describeCutCall(cut: CutCall, name: string): string {
  return cut.closed
    ? `tool call ${cut.index} (${name}) was cut inside its arguments; they were closed where they stand (partial call)`
    : `tool call ${cut.index} (${name}) has arguments that are not JSON: ${JSON.stringify(cut.raw.slice(0, 80))}`;
}
