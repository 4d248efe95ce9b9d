/**
 * How the analysis renders a probe conversation: through the project's renderer
 * (lib/jinja, at parity with llama.cpp's Jinja engine) with the template's facts
 * (../template-facts.ts). This file is the one seam between the two.
 */
import { LlamapegError } from "../../errors.js";
import { renderTemplate } from "../../jinja/index.js";
import { fitContent, templateFacts } from "../template-facts.js";
import type { TemplateCaps } from "./types.js";

/** What one probe rendering gets: the reference's `template_params`. */
export interface ProbeInputs {
  messages: unknown[];
  tools?: unknown[] | undefined;
  addGenerationPrompt: boolean;
  enableThinking: boolean;
}

export interface ProbeTokens {
  bosToken: string;
  eosToken: string;
}

/** A compiled template that renders probe conversations (throws on a template error). */
export interface ProbeTemplate {
  /** The source as the reference analyses it (line ends normalized, load-time patches applied). */
  readonly source: string;
  readonly caps: TemplateCaps;
  render(inputs: ProbeInputs): string;
}

/**
 * Compiles `source` once. Like the reference's `common_chat_template_direct_apply`, the context
 * holds `messages`, `bos_token`, `eos_token`, `enable_thinking`, `tools` only when given, and
 * `add_generation_prompt` only when true (templates test `is defined`). All probes of one
 * analysis see the same `now`, so date lines cannot differ between the two sides of a pair.
 */
export function compileProbeTemplate(rawSource: string, tokens: ProbeTokens): ProbeTemplate {
  let facts;
  try {
    facts = templateFacts(rawSource);
  } catch (e) {
    throw new LlamapegError("ERR_TEMPLATE_ANALYSIS", `template does not compile: ${(e as Error).message}`, {
      where: "template",
      cause: e,
    });
  }
  const { source, caps } = facts;
  const now = new Date();
  return {
    source,
    caps: { ...caps },
    render(inputs) {
      const vars: Record<string, unknown> = {
        // content as string or typed parts, whichever the template takes (as the reference does)
        messages: fitContent(caps, inputs.messages as Record<string, unknown>[]),
        bos_token: tokens.bosToken,
        eos_token: tokens.eosToken,
        enable_thinking: inputs.enableThinking,
      };
      if (inputs.tools !== undefined) vars["tools"] = inputs.tools;
      if (inputs.addGenerationPrompt) vars["add_generation_prompt"] = true;
      return renderTemplate(source, vars, { now });
    },
  };
}
