/**
 * How the analysis renders a probe conversation. This is the one seam between the analysis and
 * the template engine: `lib/chat/template/` (the project's renderer at parity with llama.cpp's
 * Jinja engine) replaces the local @huggingface/jinja adapter here, in `compileProbeTemplate`.
 */
import { Template } from "@huggingface/jinja";

import { LlamapegError } from "../../errors.js";

/** What one probe rendering gets: the reference's `template_params` plus the special tokens. */
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
  render(inputs: ProbeInputs): string;
}

/**
 * Compiles `source` once. Like the reference's `common_chat_template_direct_apply`, the context
 * holds `messages`, `bos_token`, `eos_token`, `enable_thinking`, `tools` only when given, and
 * `add_generation_prompt` only when true (templates test `is defined`).
 */
export function compileProbeTemplate(source: string, tokens: ProbeTokens): ProbeTemplate {
  let template: Template;
  try {
    template = new Template(source);
  } catch (e) {
    throw new LlamapegError("ERR_TEMPLATE_ANALYSIS", `template does not compile: ${(e as Error).message}`, {
      where: "template",
      cause: e,
    });
  }
  return {
    render(inputs) {
      const ctx: Record<string, unknown> = {
        messages: structuredClone(inputs.messages),
        bos_token: tokens.bosToken,
        eos_token: tokens.eosToken,
        enable_thinking: inputs.enableThinking,
      };
      if (inputs.tools !== undefined) ctx["tools"] = structuredClone(inputs.tools);
      if (inputs.addGenerationPrompt) ctx["add_generation_prompt"] = true;
      return template.render(ctx);
    },
  };
}
