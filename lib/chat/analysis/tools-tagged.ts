/**
 * Tagged tool-call syntaxes (`tag_with_json`, `tag_with_tagged`): section and per-call markers,
 * the function-name wrapper, argument name/value wrappers, and where the call id goes. Each step
 * compares two single-call renderings that differ in one respect (the function, an argument name,
 * an argument value, the number of arguments or calls, the call id).
 */
import { LlamapegError } from "../../errors.js";
import { afterCommonSuffix, calculateDiffSplit, untilCommonPrefix } from "./diff-split.js";
import {
  any,
  choice,
  end,
  marker,
  not,
  parseAndExtract,
  parseAnywhereAndExtract,
  rest,
  seq,
  space,
  star,
  tag,
  until,
  untilOneOf,
  type Pattern,
} from "./pattern.js";
import type { Comparison, Prober } from "./prober.js";
import {
  ARG_FIRST,
  ARG_SECOND,
  ASSISTANT_MSG,
  CALL_ID_001,
  FUN_FIRST,
  FUN_SECOND,
  PROBE_TOOLS,
  assistantCalls,
  firstCall,
  firstCallAltId,
  firstCallOneArg,
  firstCallOneArgOtherVal,
  firstCallOtherArg,
  firstCallZeroArgs,
  secondCall,
  userMsg,
  type Json,
} from "./probes.js";
import { trimWhitespace } from "../normalize.js";
import { fromBytes, trimLeadingWhitespace } from "./text.js";
import type { ToolsAnalysis } from "./types.js";

/** Text that is not a marker, one char at a time: `(!marker .)*` */
const nonMarkerRun: Pattern = star(seq(not(marker), any));
/** The last marker and whatever text follows it up to the end. */
const lastMarkerToEnd: Pattern = seq(marker, nonMarkerRun, end);

export function analyzeTaggedTools(prober: Prober, t: ToolsAnalysis, clean: string): void {
  analyzeNonJsonSyntax(t, clean);
  if (prober.caps.supportsParallelToolCalls) checkPerCallMarkers(prober, t);
  extractFunctionMarkers(prober, t);
  if (t.format.mode === "tag_with_tagged") {
    extractArgumentNameMarkers(prober, t);
    extractArgumentValueMarkers(prober, t);
  }
  extractArgumentSeparator(prober, t);
  extractArgsMarkers(prober, t);
  extractCallIdMarkers(prober, t);
}

/** Compares `[user, assistant(a...)]` with `[user, assistant(b...)]` (tools given). */
function compareCalls(prober: Prober, probe: string, a: Json, b: Json): Comparison | null {
  return prober.compare(probe, { messages: [userMsg, a], tools: PROBE_TOOLS }, (p) => {
    p.messages = [userMsg, b];
  });
}

/** Section / per-call markers around the function marker in the single-call rendering. */
function analyzeNonJsonSyntax(t: ToolsAnalysis, clean: string): void {
  // Is the function name inside a tag (`<function=NAME>`, `[NAME]`) or bare?
  const funMarker = tag(
    "fun_marker",
    choice(
      seq(
        tag("fun_pre", seq("<", untilOneOf([">", FUN_FIRST]))),
        FUN_FIRST,
        tag("fun_post", seq(not(seq(space, "<")), until(">"), ">")),
        space,
      ),
      seq(
        tag("fun_pre", seq("[", untilOneOf(["]", FUN_FIRST]))),
        FUN_FIRST,
        tag("fun_post", seq(not(seq(space, "[", until("]"), "]")), space)),
      ),
    ),
  );
  const funRes = parseAnywhereAndExtract(funMarker, clean);
  const fm = funRes.ok ? funRes.get("fun_marker") : FUN_FIRST;

  // up to two markers before the function marker: section start, then per-call start
  const perTool = seq(
    tag("sec_start", seq(marker, space)),
    tag("call_start", seq(marker, space)),
    tag("fun_pre", until(fm)),
    fm,
    tag("rest", rest),
  );
  const section = seq(tag("sec_start", seq(marker, space)), fm, tag("rest", rest));
  let res = parseAnywhereAndExtract(perTool, clean);
  let resEnd;
  if (res.ok) {
    const doubleCloser = seq(tag("call_end", seq(marker, space)), tag("sec_end", seq(marker, space)), end);
    resEnd = parseAnywhereAndExtract(doubleCloser, res.get("rest"));
    t.function.namePrefix = funRes.get("fun_pre") + t.function.namePrefix;
  } else {
    res = parseAnywhereAndExtract(section, clean);
    const singleCloser = seq(tag("sec_end", seq(marker, space)), end);
    resEnd = parseAnywhereAndExtract(singleCloser, res.get("rest"));
  }
  t.format.perCallStart = res.get("call_start");
  t.format.perCallEnd = resEnd.get("call_end");
  t.format.sectionStart = res.get("sec_start");
  t.format.sectionEnd = resEnd.get("sec_end");
}

/** With two calls: a repeated section start is really per call; an end seen once per turn is a section end. */
function checkPerCallMarkers(prober: Prober, t: ToolsAnalysis): void {
  const cmp = compareCalls(prober, "tools.per_call_markers", assistantCalls(firstCall), assistantCalls(firstCall, secondCall));
  if (cmp === null) return;
  const f = t.format;
  const filtered = calculateDiffSplit(cmp.diff.suffix, cmp.diff.right);
  const second = trimLeadingWhitespace(filtered.right);
  if (f.sectionStart !== "" && second.startsWith(f.sectionStart)) {
    f.perCallStart = f.sectionStart;
    f.perCallEnd = f.sectionEnd;
    f.sectionStart = "";
    f.sectionEnd = "";
  }
  if (f.perCallEnd !== "") {
    const one = countOccurrences(cmp.outputA, f.perCallEnd);
    const two = countOccurrences(cmp.outputB, f.perCallEnd);
    if (one > 0 && one === two) {
      f.sectionEnd = f.perCallEnd;
      f.perCallEnd = "";
    }
  }
}

function countOccurrences(haystack: string, needle: string): number {
  let n = 0;
  for (let pos = haystack.indexOf(needle); pos >= 0; pos = haystack.indexOf(needle, pos + needle.length)) n++;
  return n;
}

/** Calling FUN_FIRST vs FUN_SECOND: the name's wrapper, the separator before arguments, the closer. */
function extractFunctionMarkers(prober: Prober, t: ToolsAnalysis): void {
  const foo = assistantCalls(firstCall);
  const cmp = compareCalls(prober, "tools.function_markers", foo, assistantCalls(secondCall));
  if (cmp === null) return;
  const { diff } = cmp;
  if (!diff.left.includes(FUN_FIRST) || !diff.right.includes(FUN_SECOND)) return;
  const f = t.format;
  const fn = t.function;

  const prefixMarker = f.perCallStart !== "" ? f.perCallStart : f.sectionStart;
  if (prefixMarker !== "" && diff.prefix.lastIndexOf(prefixMarker) >= 0) {
    fn.namePrefix = diff.prefix.slice(diff.prefix.lastIndexOf(prefixMarker) + prefixMarker.length);
  }

  // name prefix/suffix inside the differing part, up to the next marker
  const name = parseAndExtract(seq(tag("pre", until(FUN_FIRST)), FUN_FIRST, tag("post", nonMarkerRun)), diff.left);
  if (name.ok) {
    fn.namePrefix += name.get("pre");
    fn.nameSuffix = name.get("post");
  }

  if (f.mode === "tag_with_json") {
    // the name suffix runs to the first `{` or `[` that is not a marker, when a marker follows the JSON
    const nonJson = choice(marker, seq(not("{"), not("["), any));
    const afterJson = seq(nonMarkerRun, marker);
    const suf = parseAndExtract(seq(tag("ext", star(nonJson)), afterJson), diff.suffix);
    if (suf.ok) fn.nameSuffix += suf.get("ext");
  } else {
    // the name suffix runs to the first marker (an argument's)
    const suf = parseAndExtract(tag("ext", nonMarkerRun), diff.suffix);
    if (suf.ok) {
      const ext = suf.get("ext");
      fn.nameSuffix += ext;
      const argStart = seq(marker, space, choice(ARG_FIRST, ARG_SECOND));
      const sep = parseAndExtract(seq(tag("sep", star(seq(not(argStart), any))), argStart), diff.suffix.slice(ext.length));
      if (sep.ok) fn.argsSeparator = trimWhitespace(sep.get("sep"));
    }
  }

  // the closer: between the last argument and the call/section end marker
  const suffixMarker = f.perCallEnd !== "" ? f.perCallEnd : f.sectionEnd;
  let closerSuffix = "";
  if (suffixMarker === "") {
    // no end marker: compare with a turn without calls
    const noCall = compareCalls(prober, "tools.function_close", foo, { role: "assistant", content: ASSISTANT_MSG });
    if (noCall !== null) {
      const left = noCall.diff.left;
      const at = left.indexOf("YYYY");
      // the reference's `find + 4` wraps to 3 when "YYYY" is missing; past the end it throws
      const from = at < 0 ? 3 : at + 4;
      if (from > left.length) {
        throw new LlamapegError(
          "ERR_TEMPLATE_ANALYSIS",
          `probe tools.function_close: the last argument value is not in the tool call ${JSON.stringify(fromBytes(left))}`,
          { where: "tools.function_close" },
        );
      }
      closerSuffix = left.slice(from);
    }
  } else {
    const at = diff.suffix.indexOf(suffixMarker);
    closerSuffix = at < 0 ? diff.suffix : diff.suffix.slice(0, at);
  }
  if (closerSuffix !== "") {
    if (f.mode === "tag_with_tagged") {
      // after the last value, skip the argument's closing marker; the rest closes the function
      const closer = parseAndExtract(seq(until("YYYY"), "YYYY", space, marker, space, tag("close", rest)), closerSuffix);
      if (closer.ok) fn.close = closer.get("close");
    } else if (f.mode === "tag_with_json") {
      const closer = parseAndExtract(seq(until("YYYY"), "YYYY", tag("post_val", rest)), closerSuffix);
      if (closer.ok) {
        const post = closer.get("post_val");
        const pos = Math.max(post.lastIndexOf("}"), post.lastIndexOf("]"));
        if (pos >= 0 && pos < post.length - 1) fn.close = trimLeadingWhitespace(post.slice(pos + 1));
      }
    }
  }
  fn.close = trimLeadingWhitespace(fn.close);
}

/** ARG_FIRST vs ARG_SECOND as the only argument: the wrapper around an argument name. */
function extractArgumentNameMarkers(prober: Prober, t: ToolsAnalysis): void {
  const cmp = compareCalls(prober, "tools.argument_name", assistantCalls(firstCallOneArg), assistantCalls(firstCallOtherArg));
  if (cmp === null) return;
  const { diff } = cmp;
  if (diff.left === "" || diff.right === "") return;
  const a = t.arguments;
  const left = parseAnywhereAndExtract(seq(tag("pre", until(ARG_FIRST)), ARG_FIRST, tag("suffix", untilOneOf(['"', "X"]))), diff.left);
  const right = parseAnywhereAndExtract(seq(tag("pre", until(ARG_SECOND)), ARG_SECOND, tag("suffix", untilOneOf(['"', "Y"]))), diff.right);
  if (left.ok && right.ok && left.get("pre") !== "" && left.get("pre") === right.get("pre") && left.get("suffix") === right.get("suffix")) {
    // the name sits inside a shared structure (e.g. a JSON key)
    a.namePrefix = left.get("pre");
    a.nameSuffix = left.get("suffix");
  } else if (diff.left.startsWith(ARG_FIRST) && diff.right.startsWith(ARG_SECOND)) {
    // the name starts the difference: its prefix is the last marker before it
    const pre = parseAndExtract(seq(star(seq(not(lastMarkerToEnd), any)), tag("name_prefix", lastMarkerToEnd)), diff.prefix);
    a.namePrefix = pre.ok ? pre.get("name_prefix") : diff.prefix;
    // the suffix runs from the name to the first marker (plus whitespace), in the diff or after it
    const afterFirst = diff.left.slice(ARG_FIRST.length) + diff.suffix;
    const suf = parseAnywhereAndExtract(tag("suffix", seq(nonMarkerRun, marker, space)), afterFirst);
    if (suf.ok) a.nameSuffix = suf.get("suffix");
  }
}

/** Value XXXX vs YYYY: the wrapper around an argument value. */
function extractArgumentValueMarkers(prober: Prober, t: ToolsAnalysis): void {
  const cmp = compareCalls(prober, "tools.argument_value", assistantCalls(firstCallOneArg), assistantCalls(firstCallOneArgOtherVal));
  if (cmp === null) return;
  const { diff } = cmp;
  if (diff.left !== "XXXX" || diff.right !== "YYYY") return;
  const a = t.arguments;
  const nameEnding = ARG_FIRST + a.nameSuffix;
  let prefix = diff.prefix;
  const at = prefix.lastIndexOf(nameEnding);
  if (at >= 0) prefix = prefix.slice(at + nameEnding.length);
  if (prefix !== "") {
    const pre = parseAndExtract(seq(star(seq(not(lastMarkerToEnd), any)), tag("val_prefix", lastMarkerToEnd)), prefix);
    a.valuePrefix = pre.ok ? pre.get("val_prefix") : prefix;
  }
  let valueSuffix = diff.suffix;
  if (t.function.close !== "") {
    const pos = valueSuffix.indexOf(t.function.close);
    if (pos >= 0) valueSuffix = valueSuffix.slice(0, pos);
  } else if (t.format.perCallEnd !== "" || t.format.sectionEnd !== "") {
    const endMarker = t.format.perCallEnd !== "" ? t.format.perCallEnd : t.format.sectionEnd;
    const pos = valueSuffix.indexOf(endMarker);
    if (pos >= 0) valueSuffix = valueSuffix.slice(0, pos);
  }
  if (trimWhitespace(valueSuffix) !== "") a.valueSuffix = valueSuffix;
}

/**
 * One argument vs two: the text before the second argument. As in the reference, the separator
 * is what precedes the common prefix of the two argument names (which share none, so this finds
 * nothing for the probe names; kept so the result matches).
 */
function extractArgumentSeparator(prober: Prober, t: ToolsAnalysis): void {
  const cmp = compareCalls(prober, "tools.argument_separator", assistantCalls(firstCallOneArg), assistantCalls(firstCall));
  if (cmp === null) return;
  if (cmp.diff.right !== "") t.arguments.separator = untilCommonPrefix(cmp.diff.right, ARG_FIRST, ARG_SECOND);
}

/** Zero arguments vs one: the container around the arguments (only read for JSON-native calls). */
function extractArgsMarkers(prober: Prober, t: ToolsAnalysis): void {
  const cmp = compareCalls(prober, "tools.arguments_container", assistantCalls(firstCallZeroArgs), assistantCalls(firstCallOneArg));
  if (cmp === null || t.format.mode !== "json_native") return;
  const { diff } = cmp;
  const f = t.format;
  const prefixMarker = f.sectionStart !== "" ? f.sectionStart : f.perCallStart;
  const suffixMarker = f.sectionEnd !== "" ? f.sectionEnd : f.perCallEnd;
  // the markers may also occur earlier (an example in the system prompt): take the closest
  let prefixPos = prefixMarker === "" ? 0 : diff.prefix.lastIndexOf(prefixMarker);
  let suffixPos = suffixMarker === "" ? diff.suffix.length : diff.suffix.indexOf(suffixMarker);
  if (prefixPos < 0) prefixPos = 0;
  if (suffixPos < 0) suffixPos = diff.suffix.length;
  const prefixCut = diff.prefix.slice(prefixPos + prefixMarker.length);
  const suffixCut = diff.suffix.slice(0, suffixPos);
  let argsStart = untilCommonPrefix(prefixCut, "{}", '{"first":');
  const argsEnd = afterCommonSuffix(suffixCut, "{}", '"XXXX"}');
  if (argsStart === "" && argsEnd === "") return;
  const fun = argsStart.indexOf(FUN_FIRST);
  if (fun >= 0) argsStart = argsStart.slice(fun + FUN_FIRST.length);
  const id = argsStart.indexOf(CALL_ID_001);
  if (id >= 0) argsStart = argsStart.slice(id + CALL_ID_001.length);
  t.arguments.start = argsStart;
  t.arguments.end = argsEnd;
}

function findLastMarker(s: string): string {
  const res = parseAnywhereAndExtract(seq(star(seq(not(lastMarkerToEnd), any)), tag("m", marker)), s);
  return res.ok ? res.get("m") : "";
}

function findFirstMarker(s: string): string {
  const res = parseAnywhereAndExtract(tag("m", marker), s);
  return res.ok ? res.get("m") : "";
}

/** Call id call00001 vs call99999: where the id sits relative to the name and the arguments. */
function extractCallIdMarkers(prober: Prober, t: ToolsAnalysis): void {
  const cmp = compareCalls(prober, "tools.call_id", assistantCalls(firstCall), assistantCalls(firstCallAltId));
  if (cmp === null) return;
  const { diff } = cmp;
  if (diff.left === "" && diff.right === "") return;
  const id = t.callId;
  const commonIdPart = "call"; // the common prefix of the two probe ids
  // The system prompt lists the tools, names included: only a name inside the call counts. The
  // reference looks at the whole prefix, so a template that lists tools and writes the id before
  // the name (Solar Open) gets no id position and the probe's id baked into its name marker.
  const callStart = t.format.perCallStart !== "" ? t.format.perCallStart : t.format.sectionStart;
  const callFrom = callStart === "" ? -1 : diff.prefix.lastIndexOf(callStart);
  let inPrefix = diff.prefix.lastIndexOf(FUN_FIRST);
  if (callFrom >= 0 && inPrefix < callFrom) inPrefix = -1;
  const inSuffix = diff.suffix.indexOf(FUN_FIRST);

  if (inPrefix >= 0 && inSuffix < 0) {
    const argsInPrefix = diff.prefix.indexOf("{", inPrefix);
    const argsInSuffix = diff.suffix.indexOf("{");
    if (argsInSuffix >= 0 && argsInPrefix < 0) {
      id.pos = "between_func_and_args";
      // the marker right before the id, with no marker in between
      const afterFunc = diff.prefix.slice(inPrefix + FUN_FIRST.length);
      const idPrefix = seq(tag("prefix", marker), star(seq(not(marker), not(commonIdPart), any)), commonIdPart);
      const res = parseAnywhereAndExtract(idPrefix, afterFunc);
      id.prefix = res.ok ? res.get("prefix") : findLastMarker(afterFunc);
      // the first marker after the id, before the arguments
      const suf = parseAnywhereAndExtract(seq(star(seq(not(marker), not("{"), any)), tag("suffix", marker)), diff.suffix);
      if (suf.ok) id.suffix = suf.get("suffix");
    } else if (argsInPrefix >= 0) {
      id.pos = "post_args";
      const afterArgs = diff.prefix.slice(argsInPrefix);
      const closing = afterArgs.lastIndexOf("}");
      if (closing >= 0) id.prefix = findLastMarker(afterArgs.slice(closing + 1));
      id.suffix = findFirstMarker(diff.suffix);
    }
  } else if (inSuffix >= 0 && inPrefix < 0) {
    id.pos = "pre_func_name";
    id.prefix = findLastMarker(diff.prefix);
    id.suffix = findFirstMarker(diff.suffix.slice(0, inSuffix));
    // The name marker was read from a call with the probe's id in front: take the id out of it.
    const fn = t.function;
    if (fn.namePrefix.startsWith(CALL_ID_001) && fn.namePrefix.slice(CALL_ID_001.length).startsWith(id.suffix)) fn.namePrefix = fn.namePrefix.slice(CALL_ID_001.length);
  }

  if (id.prefix === t.arguments.end) id.prefix = "";
  if (id.suffix === t.arguments.start) id.suffix = "";
  // a per-call end that starts with the id suffix was the id section, not an end marker
  if (id.pos !== "none" && id.suffix !== "" && t.format.perCallEnd.startsWith(id.suffix)) t.format.perCallEnd = "";
}
