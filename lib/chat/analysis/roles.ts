/**
 * What starts an assistant turn and a user turn (`<|im_start|>assistant`), for message
 * delimiting: a conversation with and without the turn in question, minus the turn's own text.
 */
import type { Prober } from "./prober.js";
import { ASSISTANT_MSG, USER_MSG, assistantMsg, userMsg, userMsgTwo } from "./probes.js";
import { trimWhitespace } from "../normalize.js";
import { segmentizeMarkers } from "./text.js";
import type { ReasoningAnalysis } from "./types.js";

export function detectAssistantStart(prober: Prober, reasoning: ReasoningAnalysis): string {
  const cmp = prober.compare("roles.assistant_start", { messages: [userMsg] }, (p) => {
    p.messages = [userMsg, assistantMsg];
  });
  if (cmp === null) return "";
  const turn = cmp.diff.right;
  const at = turn.indexOf(ASSISTANT_MSG);
  let prefix = at < 0 ? turn : turn.slice(0, at);
  // a reasoning block the template opens before the content is not part of the turn start
  for (const m of [reasoning.start, reasoning.end]) {
    if (m === "") continue;
    const pos = prefix.indexOf(trimWhitespace(m));
    if (pos >= 0) prefix = prefix.slice(0, pos);
  }
  return trimWhitespace(prefix);
}

export function detectUserStart(prober: Prober): string {
  let cmp = prober.compare(
    "roles.user_start",
    { messages: [] },
    (p) => {
      p.messages = [userMsg];
    },
    true,
  );
  if (cmp === null) {
    // templates that reject an empty conversation: add a user turn after a full exchange
    cmp = prober.compare("roles.user_start", { messages: [userMsgTwo, assistantMsg] }, (p) => {
      p.messages = [userMsgTwo, assistantMsg, userMsg];
    });
    if (cmp === null) return "";
  }
  let turn = cmp.diff.right;
  const a = turn.indexOf(ASSISTANT_MSG);
  if (a >= 0) turn = turn.slice(a + ASSISTANT_MSG.length);
  const u = turn.indexOf(USER_MSG);
  const candidate = u < 0 ? turn : turn.slice(0, u);
  let out = "";
  let seenMarker = false;
  for (const seg of segmentizeMarkers(candidate)) {
    const lower = seg.value.replace(/[A-Z]/g, (c) => c.toLowerCase()); // ASCII only, as C tolower
    // skip what ends the previous turn (`<|im_end|>`, `</s>`-like close markers) at the start
    if (seg.type === "marker" && !seenMarker && (lower.includes("end") || lower.includes("close"))) continue;
    if (seg.type === "text" && !seenMarker && trimWhitespace(seg.value) === "") continue;
    seenMarker ||= seg.type === "marker";
    out += seg.value;
  }
  return trimWhitespace(out);
}
