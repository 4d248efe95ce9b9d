/**
 * Content markers: an assistant turn with plain content is compared with one that has only a
 * tool call and with one that has only reasoning; text around the content in both that is not
 * the content itself is a wrapper (`<response>...</response>`).
 */
import { end, lit, marker, opt, parseAndExtract, parseAnywhereAndExtract, rest, seq, space, tag } from "./pattern.js";
import type { Prober } from "./prober.js";
import { ASSISTANT_MSG, PROBE_TOOLS, THINKING_CONTENT, toolCall, userMsg } from "./probes.js";
import { trimWhitespace } from "../normalize.js";
import type { ContentAnalysis, ReasoningAnalysis } from "./types.js";

export function analyzeContent(prober: Prober, reasoning: ReasoningAnalysis): ContentAnalysis {
  const c: ContentAnalysis = { mode: "plain", start: "", end: "", requiresNonnullContent: false };
  const contentOnly = { role: "assistant", content: ASSISTANT_MSG };
  const withTools = { role: "assistant", content: "", tool_calls: [toolCall("test_func", { arg1: "value1" })] };
  const withReasoning = { role: "assistant", content: "", reasoning_content: THINKING_CONTENT };
  const base = { messages: [userMsg, contentOnly], tools: PROBE_TOOLS };

  const cmpTools = prober.compare("content.vs_tool_call", base, (p) => {
    p.messages = [userMsg, withTools];
  });
  const cmpReasoning = prober.compare("content.vs_reasoning", base, (p) => {
    p.messages = [userMsg, withReasoning];
  });
  if (cmpTools === null || cmpReasoning === null) return c;
  const diffTools = cmpTools.diff;
  const diffReasoning = cmpReasoning.diff;

  let foundPlain = false;
  if (trimWhitespace(diffTools.left) === ASSISTANT_MSG) {
    // Only the content text (maybe with a stray end-of-turn marker) differs: no wrapper. The
    // check is the reference's: the reasoning-side diff, read as a literal after optional leading
    // space, must be all there is.
    const onlyText = seq(space, lit(diffReasoning.left), space, opt(marker), space, end);
    if (parseAndExtract(onlyText, diffReasoning.left).ok) {
      c.mode = "plain";
      foundPlain = true;
    } else if (reasoning.mode !== "none" && reasoning.end !== "") {
      const afterReasoning = seq(lit(reasoning.end), space, lit(ASSISTANT_MSG));
      if (parseAnywhereAndExtract(afterReasoning, diffReasoning.left).ok) {
        c.mode = "plain";
        foundPlain = true;
      }
    }
  }
  if (!foundPlain) {
    let rdiff = diffReasoning.left;
    if (reasoning.end !== "" && rdiff.includes(reasoning.end)) {
      rdiff = rdiff.slice(rdiff.indexOf(reasoning.end) + reasoning.end.length);
    }
    // take the more promising of the two diffs
    const pure = rdiff.length > diffTools.left.length ? rdiff : diffTools.left;
    const wrapped = seq(tag("pre", seq(marker, space)), lit(ASSISTANT_MSG), space, tag("post", seq(marker, space)), rest);
    const res = parseAnywhereAndExtract(wrapped, pure);
    c.start = res.get("pre");
    c.end = res.get("post");
  }
  if (c.start !== "" || c.end !== "") c.mode = "always_wrapped";
  return c;
}
