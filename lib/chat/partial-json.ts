/**
 * Closing a JSON text that was cut short: the arguments of a tool call cut by max_tokens are a
 * prefix of a JSON object (`{"city": "Par`), which a template that reads arguments as an object
 * cannot take as it is. The prefix is closed where it stands (open string, objects and arrays), and
 * a dangling key, separator or partial literal at the cut is dropped.
 */

/** How a JSON prefix ends: the open containers, and whether a string is open. */
interface PrefixState {
  closers: string[];
  inString: boolean;
  /** The prefix ends inside an escape sequence of the open string (`\`, `\u12`). */
  inEscape: boolean;
}

function scan(text: string): PrefixState | null {
  const closers: string[] = [];
  let inString = false;
  let escape = -1; // characters left of an escape (-1: none; 0: after `\`)
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (escape >= 0) {
        if (escape === 0) escape = c === "u" ? 4 : -1;
        else if (--escape === 0) escape = -1;
      } else if (c === "\\") escape = 0;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "{") closers.push("}");
    else if (c === "[") closers.push("]");
    else if (c === "}" || c === "]") {
      if (closers.pop() !== c) return null;
    }
  }
  return { closers, inString, inEscape: escape >= 0 };
}

/**
 * `text` when it is JSON; else, for a cut JSON object, the shortest repair (at most 64 characters
 * dropped from the end) that is a JSON object; else undefined.
 */
export function closeCutJson(text: string): { text: string; closed: boolean } | undefined {
  if (isJson(text)) return { text, closed: false };
  const trimmed = text.trimEnd();
  if (!trimmed.trimStart().startsWith("{")) return undefined;
  for (let cut = trimmed.length; cut > 0 && trimmed.length - cut <= 64; cut--) {
    const head = trimmed.slice(0, cut);
    const state = scan(head);
    if (state === null) return undefined;
    if (state.inEscape) continue;
    const candidate = (state.inString ? `${head}"` : head.replace(/[\s,:]+$/, "")) + [...state.closers].reverse().join("");
    if (isJson(candidate, true)) return { text: candidate, closed: true };
  }
  return undefined;
}

function isJson(text: string, objectOnly = false): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return !objectOnly || (typeof value === "object" && value !== null && !Array.isArray(value));
  } catch {
    return false;
  }
}
