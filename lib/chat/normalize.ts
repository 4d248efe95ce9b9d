/**
 * Small text helpers the mapper needs to turn tagged argument text into JSON text. They work on
 * JS strings; every character they look at is ASCII, so this equals the reference's byte-wise code.
 */

/** C `isspace` in the C locale. */
export function isSpace(c: string | undefined): boolean {
  return c === " " || c === "\t" || c === "\n" || c === "\v" || c === "\f" || c === "\r";
}

export function trimTrailingSpace(s: string): string {
  let end = s.length;
  while (end > 0 && isSpace(s[end - 1])) end--;
  return end === s.length ? s : s.slice(0, end);
}

/** Strips C-locale whitespace at both ends (the reference's `trim_whitespace`). */
export function trimWhitespace(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isSpace(s[a])) a++;
  while (b > a && isSpace(s[b - 1])) b--;
  return s.slice(a, b);
}

/** At most one leading space removed, all trailing space removed (the reference's `trim`). */
export function trimArgName(s: string): string {
  return trimTrailingSpace(isSpace(s[0]) ? s.slice(1) : s);
}

/** JSON-escapes a string, without the surrounding quotes. */
export function escapeJsonStringInner(s: string): string {
  return JSON.stringify(s).slice(1, -1);
}

/** Net count of `{` over `}` outside JSON strings. */
export function jsonBraceDepth(s: string): number {
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (escaped) {
      escaped = false;
      continue;
    }
    if (c === 0x5c /* \ */ && inString) {
      escaped = true;
      continue;
    }
    if (c === 0x22 /* " */) {
      inString = !inString;
      continue;
    }
    if (!inString) {
      if (c === 0x7b) depth++;
      else if (c === 0x7d) depth--;
    }
  }
  return depth;
}

function isWordChar(c: string | undefined): boolean {
  return c !== undefined && /^[A-Za-z0-9_]$/.test(c);
}

const PY_LITERALS: readonly (readonly [string, string])[] = [
  ["True", "true"],
  ["False", "false"],
  ["None", "null"],
];

/**
 * Python-style values to JSON text: single-quoted strings become double-quoted (escapes adjusted),
 * True/False/None become true/false/null, raw control characters inside strings get JSON escapes.
 * A literal cut short is mapped by prefix ("Tr" -> "tr"), so the output of a growing input only grows.
 */
export function pythonToJson(input: string): string {
  let out = "";
  let inSingle = false;
  let inDouble = false;
  const n = input.length;
  for (let i = 0; i < n; i++) {
    const c = input[i]!;
    if (c === "\\" && i + 1 < n) {
      const next = input[i + 1]!;
      if (inSingle) {
        if (next === "'") out += "'";
        else if (next === '"') out += '\\"';
        else out += c + next;
        i++;
        continue;
      }
      if (inDouble) {
        out += c + next;
        i++;
        continue;
      }
      out += c;
      continue;
    }
    if (c === '"') {
      if (inSingle) out += '\\"';
      else {
        inDouble = !inDouble;
        out += c;
      }
    } else if (c === "'") {
      if (inDouble) out += c;
      else {
        inSingle = !inSingle;
        out += '"';
      }
    } else if ((inSingle || inDouble) && c < " ") {
      // A raw control character inside a string (LFM2.5's template prints string arguments as
      // they are, tabs and newlines included): JSON's escape. The reference passes it through,
      // which makes arguments that are not JSON.
      out += JSON.stringify(c).slice(1, -1);
    } else if (!inSingle && !inDouble && (c === "T" || c === "F" || c === "N") && (i === 0 || !isWordChar(input[i - 1]))) {
      let len = 0;
      while (i + len < n && isWordChar(input[i + len])) len++;
      const token = input.slice(i, i + len);
      const hit = PY_LITERALS.find(([py]) => py.slice(0, len) === token);
      if (hit) {
        out += hit[1].slice(0, len);
        i += len - 1;
      } else {
        out += c;
      }
    } else {
      out += c;
    }
  }
  return out;
}
