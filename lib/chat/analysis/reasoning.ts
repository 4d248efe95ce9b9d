/**
 * Reasoning markers and mode. Three probes:
 * - presence: an assistant turn with vs without `reasoning_content` — the markers around it;
 * - thinking toggle: the generation prompt with `enable_thinking` false vs true — an opened
 *   (`<think>`) or pre-closed (`<think></think>`) reasoning block the template adds itself;
 * - scope (tool-capable templates): reasoning rendered only next to tool calls -> `tools_only`.
 */
import { lit, marker, opt, parseAnywhereAndExtract, rest, seq, space, tag } from "./pattern.js";
import type { Prober } from "./prober.js";
import {
  ARG_FIRST,
  ARG_SECOND,
  ASSISTANT_MSG,
  FUN_FIRST,
  PROBE_TOOLS,
  THINKING_CONTENT,
  USER_MSG,
  toolCall,
  userMsg,
} from "./probes.js";
import { trimWhitespace } from "../normalize.js";
import { pruneWhitespaceSegments, segmentizeMarkers } from "./text.js";
import type { ReasoningAnalysis } from "./types.js";

export function analyzeReasoning(prober: Prober): ReasoningAnalysis {
  const r: ReasoningAnalysis = { mode: "none", start: "", end: "" };
  comparePresence(prober, r);
  compareThinkingEnabled(prober, r);
  if (prober.caps.supportsToolCalls) compareScope(prober, r);
  return r;
}

function comparePresence(prober: Prober, r: ReasoningAnalysis): void {
  const plain = { role: "assistant", content: ASSISTANT_MSG };
  const withReasoning = { role: "assistant", content: ASSISTANT_MSG, reasoning_content: THINKING_CONTENT };
  const cmp = prober.compare("reasoning.presence", { messages: [userMsg, plain] }, (p) => {
    p.messages = [userMsg, withReasoning];
  });
  if (cmp === null || cmp.diff.right === "" || !cmp.diff.right.includes(THINKING_CONTENT)) return;

  const wrapped = seq(tag("pre", seq(marker, space)), lit(THINKING_CONTENT), tag("post", seq(space, marker, space)), rest);
  const delimiter = seq(lit(THINKING_CONTENT), space, opt(seq(tag("post", seq(marker, space)), rest)));
  let res = parseAnywhereAndExtract(wrapped, cmp.outputB);
  if (!res.ok) res = parseAnywhereAndExtract(delimiter, cmp.outputB);
  if (!res.ok) return;
  const pre = res.get("pre");
  const post = res.get("post");
  if (pre !== "" && post !== "") {
    r.mode = "tag_based";
    r.start = pre;
    r.end = post;
  } else if (post !== "") {
    r.mode = "tag_based";
    r.end = post;
  }
}

function compareThinkingEnabled(prober: Prober, r: ReasoningAnalysis): void {
  const cmp = prober.compare(
    "reasoning.thinking_toggle",
    { messages: [{ role: "user", content: USER_MSG }], addGenerationPrompt: true, enableThinking: false },
    (p) => {
      p.enableThinking = true;
    },
  );
  if (cmp === null) return;
  const { diff, outputA, outputB } = cmp;
  const leftTrimmed = trimWhitespace(diff.left);
  const rightTrimmed = trimWhitespace(diff.right);

  if (leftTrimmed === "" && diff.right !== "") {
    // thinking on adds an opening marker at the end of the generation prompt
    if (rightTrimmed !== "" && outputB.endsWith(rightTrimmed) && r.start === "") {
      r.start = diff.right;
      r.mode = "tag_based";
    }
  } else if (rightTrimmed === "" && diff.left !== "") {
    // thinking off adds a closing marker (often an empty block `<think></think>`)
    if (leftTrimmed !== "" && outputA.endsWith(leftTrimmed) && r.end === "") {
      const seg = pruneWhitespaceSegments(segmentizeMarkers(outputA));
      if (seg.length >= 2 && seg[seg.length - 1]!.value === leftTrimmed && seg[seg.length - 2]!.type === "marker") {
        r.start = seg[seg.length - 2]!.value;
      }
      r.end = diff.left;
      r.mode = "tag_based";
    }
  } else if (leftTrimmed !== "" && rightTrimmed !== "") {
    // Both sides changed (e.g. the system message follows the flag too): anchor on the tail of
    // one rendering and look for exactly two extra markers after it in the other.
    const anchorLen = 64;
    for (let dir = 0; dir < 2; dir++) {
      const base = dir === 0 ? outputB : outputA;
      const extended = dir === 0 ? outputA : outputB;
      const len = Math.min(base.length, anchorLen);
      const anchor = base.slice(base.length - len);
      const pos = extended.lastIndexOf(anchor);
      if (pos < 0 || pos + len >= extended.length) continue;
      const extra = trimWhitespace(extended.slice(pos + len));
      if (extra === "") continue;
      const seg = pruneWhitespaceSegments(segmentizeMarkers(extra));
      if (seg.length === 2 && seg[0]!.type === "marker" && seg[1]!.type === "marker") {
        if (r.start === "") r.start = seg[0]!.value;
        if (r.end === "") r.end = seg[1]!.value;
        r.mode = "tag_based";
        break;
      }
    }
  }
  if (r.mode === "none" && r.start === "" && r.end !== "") r.mode = "tag_based";
}

function compareScope(prober: Prober, r: ReasoningAnalysis): void {
  const withContent = { role: "assistant", content: ASSISTANT_MSG, reasoning_content: THINKING_CONTENT };
  const withTools = {
    role: "assistant",
    content: null,
    reasoning_content: THINKING_CONTENT,
    tool_calls: [toolCall(FUN_FIRST, { [ARG_FIRST]: "VVVV", [ARG_SECOND]: "XXXX" })],
  };
  const cmp = prober.compare("reasoning.scope", { messages: [userMsg, withContent], tools: PROBE_TOOLS }, (p) => {
    p.messages = [userMsg, withTools];
  });
  if (cmp === null) return;
  const inA = cmp.outputA.includes(THINKING_CONTENT);
  const inB = cmp.outputB.includes(THINKING_CONTENT);
  if (inA || !inB) return;

  r.mode = "tools_only";
  const wrapped = seq(tag("pre", seq(marker, space)), lit(THINKING_CONTENT), space, tag("post", seq(marker, space)));
  const res = parseAnywhereAndExtract(wrapped, cmp.outputB);
  if (res.ok) {
    r.start = res.get("pre");
    r.end = res.get("post");
    return;
  }
  const delimiter = seq(lit(THINKING_CONTENT), space, opt(tag("post", seq(marker, space))));
  const res2 = parseAnywhereAndExtract(delimiter, cmp.outputB);
  if (res2.ok) r.end = res2.get("post");
  else r.mode = "none";
}
