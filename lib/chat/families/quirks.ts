/**
 * Templates the reference treats specially before rendering although no family plan claims them
 * (they take the template analysis path). Each entry: how it is recognized, what is done to the
 * request's messages. Applied beside the family's own hooks (lib/chat/apply/template-input.ts).
 */
import { trimWhitespace } from "../normalize.js";
import type { TemplateQuirks } from "./family.js";

/** StepFun: stray whitespace sends the model into reasoning loops, so the reference trims it. */
export const stepfun: TemplateQuirks = {
  detect: (src) => src.includes("You have access to the following functions in JSONSchema format"),
  rewriteChatMessages: (messages) =>
    messages.map((m) => ({
      ...m,
      content: typeof m.content === "string" ? trimWhitespace(m.content) : Array.isArray(m.content) ? m.content.map((p) => (p.type === "text" ? { ...p, text: trimWhitespace(p.text) } : p)) : m.content,
      ...(m.reasoning_content !== undefined ? { reasoning_content: trimWhitespace(m.reasoning_content) } : {}),
    })),
};

export const QUIRKS: readonly TemplateQuirks[] = [stepfun];
