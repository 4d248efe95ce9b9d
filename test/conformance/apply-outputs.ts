/**
 * What the apply conformance tests share: the conversations (test/fixtures/apply), the request the
 * reference gets for one, our request for the same, and the model output the reference's own
 * renderer writes for a conversation's expected reply (so outputs come from the reference, never
 * from hand-written strings).
 */
import fs from "node:fs";
import path from "node:path";

import type { ApplyChatRequest } from "../../lib/chat/apply/index.js";
import type { Harness } from "../support/harness.js";

export const ROOT = path.resolve(import.meta.dirname, "../..");
export const TEMPLATES = path.join(ROOT, "vendor/llama.cpp/models/templates");
export const FIXTURES = path.join(ROOT, "test/fixtures/apply");
export const NOW = "2026-01-31T12:00:00Z";
export const BOS = "<s>";
export const EOS = "</s>";

export interface Conversation {
  name: string;
  description: string;
  messages: Record<string, unknown>[];
  tools?: unknown[];
  tool_choice?: "auto" | "required" | "none";
  parallel_tool_calls?: boolean;
  reasoning_format: "none" | "auto";
  response_format?: { type: "json_schema"; json_schema: { schema: Record<string, unknown> } };
  expected: Record<string, unknown> & { content?: string; reasoning_content?: string; tool_calls?: { function: { name: string; arguments: string } }[] };
}

export const templateFiles = (): string[] => fs.readdirSync(TEMPLATES).filter((f) => f.endsWith(".jinja")).sort();
export const readTemplate = (file: string): string => fs.readFileSync(path.join(TEMPLATES, file), "utf8");
export const conversations = (): Conversation[] => JSON.parse(fs.readFileSync(path.join(FIXTURES, "conversations.json"), "utf8")) as Conversation[];

/** The reference's request (`chat.templates_apply`). */
export function referenceRequest(conv: Conversation, messages: unknown[], addGenerationPrompt: boolean): Record<string, unknown> {
  return {
    messages,
    ...(conv.tools ? { tools: conv.tools, tool_choice: conv.tool_choice ?? "auto", parallel_tool_calls: conv.parallel_tool_calls ?? false } : {}),
    ...(conv.response_format ? { json_schema: conv.response_format.json_schema.schema } : {}),
    reasoning_format: conv.reasoning_format,
    add_generation_prompt: addGenerationPrompt,
    now: NOW,
  };
}

/** Our request for the same conversation, with the reference's semantics (`required` lets text come first, reference mode). */
export function ourRequest(conv: Conversation): ApplyChatRequest {
  return {
    messages: conv.messages,
    ...(conv.tools ? { tools: conv.tools, tool_choice: conv.tool_choice ?? "auto", parallel_tool_calls: conv.parallel_tool_calls ?? false } : {}),
    ...(conv.tool_choice === "required" ? { calls_only: false } : {}),
    ...(conv.response_format ? { response_format: conv.response_format } : {}),
    reasoning_format: conv.reasoning_format,
    bos_token: BOS,
    eos_token: EOS,
    now: new Date(NOW),
    reference_mode: true,
  } as ApplyChatRequest;
}

/**
 * The text the model would write for `reply`: the render of the conversation with that reply (no
 * generation prompt), after the prompt without the generation prompt, must start with the
 * generation prompt (or with it minus a trailing thinking start tag, for templates whose history
 * shows only `</think>`); what follows, minus the end-of-turn suffix (the common suffix with a
 * render of a different reply), is the output. null when the template renders the reply otherwise.
 */
export async function renderedOutput(
  h: Harness,
  source: string,
  conv: Conversation,
  generationPrompt: string,
  thinkingStart: string,
  reply: Record<string, unknown> = conv.expected,
): Promise<string | null> {
  const render = async (messages: unknown[]): Promise<string | null> => {
    const r = await h.request<{ prompt: string }>("chat.templates_apply", {
      template: source,
      bos_token: BOS,
      eos_token: EOS,
      request: referenceRequest(conv, messages, false),
    });
    return r.ok ? r.result!.prompt : null;
  };
  const [base, full, other] = await Promise.all([
    render(conv.messages),
    render([...conv.messages, reply]),
    render([...conv.messages, { role: "assistant", content: "Zq" }]),
  ]);
  if (base === null || full === null || other === null || !full.startsWith(base)) return null;
  let turn = full.slice(base.length);
  if (turn.startsWith(generationPrompt)) turn = turn.slice(generationPrompt.length);
  else if (thinkingStart !== "" && generationPrompt.trimEnd().endsWith(thinkingStart)) {
    const head = generationPrompt.slice(0, generationPrompt.trimEnd().length - thinkingStart.length);
    if (!turn.startsWith(head)) return null;
    turn = turn.slice(head.length);
  } else return null;
  let suffix = 0;
  while (suffix < turn.length && suffix < other.length && turn[turn.length - 1 - suffix] === other[other.length - 1 - suffix]) suffix++;
  return turn.slice(0, turn.length - suffix);
}
