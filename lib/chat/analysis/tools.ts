/**
 * Tool-call syntax: an assistant turn with one call vs plain content gives the tool section; where
 * the probe function's name and argument name sit in it (quoted JSON or tags) decides the syntax
 * (`tools.format.mode`). JSON-native syntaxes are read from the JSON itself; tagged syntaxes go on
 * to `tools-tagged.ts`.
 */
import { LlamapegError } from "../../errors.js";
import { choice, lit, parseAnywhereAndExtract, seq, space, tag } from "./pattern.js";
import type { Prober } from "./prober.js";
import {
  ARG_FIRST,
  ASSISTANT_MSG,
  FUN_FIRST,
  PROBE_TOOLS,
  assistantCalls,
  firstCall,
  secondCall,
  userMsg,
  type Json,
} from "./probes.js";
import { analyzeTaggedTools } from "./tools-tagged.js";
import { trimWhitespace } from "../normalize.js";
import { fromBytes, trimLeadingWhitespace } from "./text.js";
import { emptyTools, type ReasoningAnalysis, type ToolsAnalysis } from "./types.js";

export function analyzeTools(prober: Prober, reasoning: ReasoningAnalysis): ToolsAnalysis {
  const t = emptyTools();
  if (!prober.caps.supportsToolCalls) return t;
  const cmp = prober.compare(
    "tools.call_vs_content",
    { messages: [userMsg, { role: "assistant", content: ASSISTANT_MSG }], tools: PROBE_TOOLS },
    (p) => {
      p.messages = [userMsg, assistantCalls(firstCall)];
    },
  );
  if (cmp === null || cmp.diff.right === "") return t;
  const haystack = cmp.diff.right;

  const fnQuoted = inJson(haystack, FUN_FIRST);
  const argQuoted = inJson(haystack, ARG_FIRST);
  t.format.mode = fnQuoted ? "json_native" : argQuoted ? "tag_with_json" : "tag_with_tagged";

  // the call section may carry reasoning markers; drop the first of each
  let clean = haystack;
  if (reasoning.start !== "") clean = removeFirst(clean, reasoning.start);
  if (reasoning.end !== "") clean = removeFirst(clean, reasoning.end);

  if (t.format.mode === "json_native") {
    analyzeJsonNative(t, clean);
    if (prober.caps.supportsParallelToolCalls) analyzeJsonNativeParallel(prober, t);
  } else {
    analyzeTaggedTools(prober, t, clean);
  }
  // end markers do not affect content: relax their whitespace
  t.format.sectionEnd = trimWhitespace(t.format.sectionEnd);
  t.format.perCallEnd = trimWhitespace(t.format.perCallEnd);
  return t;
}

function removeFirst(s: string, needle: string): string {
  const pos = s.indexOf(needle);
  return pos < 0 ? s : s.slice(0, pos) + s.slice(pos + needle.length);
}

/** The needle appears as a quoted JSON key or value: `{ "needle"` or `: "needle"`. */
function inJson(haystack: string, needle: string): boolean {
  const p = seq(choice("{", ":"), space, tag("dq", `"${needle}"`));
  return parseAnywhereAndExtract(p, haystack).ok;
}

function analyzeJsonNative(t: ToolsAnalysis, clean: string): void {
  const f = t.format;
  let jsonStart = clean.indexOf("{");
  let jsonEnd = clean.lastIndexOf("}");
  if (jsonStart < 0 || jsonEnd < jsonStart) {
    throw new LlamapegError(
      "ERR_TEMPLATE_ANALYSIS",
      `probe tools.json_native: the tool call renders its name as JSON but no JSON object was found in ${JSON.stringify(fromBytes(clean))}`,
      { where: "tools.json_native" },
    );
  }
  const cut = clean.slice(jsonStart, jsonEnd + 1);
  let call: Json;
  try {
    call = JSON.parse(fromBytes(cut)) as Json;
  } catch (e) {
    throw new LlamapegError(
      "ERR_TEMPLATE_ANALYSIS",
      `probe tools.json_native: the rendered tool call is not valid JSON: ${JSON.stringify(fromBytes(cut))}`,
      { where: "tools.json_native", cause: e },
    );
  }

  const register = (prefix: string, key: string, value: Json) => {
    const path = prefix !== "" ? `${prefix}.${key}` : key;
    if (typeof value === "string" && value.includes("call0000")) f.idField = path;
    else if (typeof value === "string" && value === FUN_FIRST) f.nameField = path;
    else if (JSON.stringify(value).includes(ARG_FIRST)) f.argsField = path;
    else if (key.includes("id")) f.genIdField = path; // a generated id field
  };
  if (call !== null && typeof call === "object" && !Array.isArray(call)) {
    for (const [key, value] of Object.entries(call)) {
      if (key === FUN_FIRST) {
        // `{"<name>": {...}}`: no name field, the arguments are the value
        f.funNameIsKey = true;
        f.nameField = "";
        f.argsField = "";
        continue;
      }
      if (value !== null && typeof value === "object" && !Array.isArray(value) && !JSON.stringify(value).includes(ARG_FIRST)) {
        f.functionField = key;
        for (const [k, v] of Object.entries(value)) register(key, k, v);
      }
      register("", key, value);
    }
  }

  const arrayWrapped = seq(tag("pre", seq("[", space)), lit(cut), tag("post", seq(space, "]")));
  const ar = parseAnywhereAndExtract(arrayWrapped, clean);
  if (ar.ok) {
    f.toolsArrayWrapped = true;
    jsonStart -= ar.get("pre").length;
    jsonEnd += ar.get("post").length;
  }
  jsonEnd++;

  const located: [number, string][] = [];
  for (const field of [f.nameField, f.argsField, f.idField, f.genIdField]) {
    if (field === "") continue;
    const pos = clean.indexOf(field);
    located.push([pos < 0 ? Number.POSITIVE_INFINITY : pos, field]);
  }
  located.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  f.parameterOrder = located.map(([, name]) => name);

  f.sectionStart = trimLeadingWhitespace(clean.slice(0, jsonStart));
  f.sectionEnd = trimWhitespace(clean.slice(jsonEnd));
  // with an array, the closing bracket belongs to the array, not to a section marker
  if (f.toolsArrayWrapped && f.sectionEnd === "]") f.sectionEnd = "";
}

/** A second call that repeats the section marker means the marker is per call. */
function analyzeJsonNativeParallel(prober: Prober, t: ToolsAnalysis): void {
  const cmp = prober.compare(
    "tools.json_native_parallel",
    { messages: [userMsg, assistantCalls(firstCall)], tools: PROBE_TOOLS },
    (p) => {
      p.messages = [userMsg, assistantCalls(firstCall, secondCall)];
    },
  );
  if (cmp === null) return;
  const f = t.format;
  if (f.sectionStart !== "" && cmp.diff.right.includes(f.sectionStart)) {
    f.perCallStart = f.sectionStart;
    f.perCallEnd = f.sectionEnd;
    f.sectionStart = "";
    f.sectionEnd = "";
  }
}
