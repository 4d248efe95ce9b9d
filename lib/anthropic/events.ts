/**
 * Chat Completions chunks in, Anthropic Messages stream events out (and the message they add up
 * to). Each change of kind in the session's deltas closes the open content block and opens the
 * next: reasoning -> `thinking`, content -> `text`, each tool call -> `tool_use` (its arguments as
 * `input_json_delta` fragments). The non-stream answer runs the same code, so both carry the same
 * blocks.
 */
import { randomId } from "../openai/assemble.js";
import type { ChatCompletion, ChatCompletionChunk } from "../openai/types.js";
import type { ContentBlock, MessageObject, MessageStreamEvent, StopReason, ToolUseBlock } from "./types.js";

type Open = { kind: "thinking" | "text"; index: number } | { kind: "tool"; index: number; toolIndex: number; json: string };

/** How the generation ended, as far as the chunks cannot tell (which stop sequence matched). */
export interface MessageEnd {
  completion: ChatCompletion;
  /** The stop sequence that ended the output, if one did. */
  stopSequence: string | null;
}

export class MessageEmitter {
  readonly id: string;
  readonly #model: string;
  readonly #content: ContentBlock[] = [];
  #open: Open | null = null;

  constructor(model: string, id = randomId("msg_")) {
    this.id = id;
    this.#model = model;
  }

  #message(content: ContentBlock[], stopReason: StopReason | null, stopSequence: string | null, completion?: ChatCompletion): MessageObject {
    const u = completion?.usage;
    const cached = u?.prompt_tokens_details?.cached_tokens ?? 0;
    return {
      id: this.id,
      type: "message",
      role: "assistant",
      model: this.#model,
      content,
      stop_reason: stopReason,
      stop_sequence: stopSequence,
      stop_details: null,
      container: null,
      diagnostics: null,
      usage: {
        // Anthropic counts cache reads apart from input_tokens.
        input_tokens: u === undefined ? 0 : u.prompt_tokens - cached,
        output_tokens: u?.completion_tokens ?? 0,
        cache_creation_input_tokens: null,
        cache_read_input_tokens: u === undefined ? null : cached,
        cache_creation: null,
        inference_geo: null,
        output_tokens_details: u?.completion_tokens_details === undefined ? null : { thinking_tokens: u.completion_tokens_details.reasoning_tokens },
        server_tool_use: null,
        service_tier: "standard",
        speed: null,
      },
    };
  }

  start(): MessageStreamEvent[] {
    return [{ type: "message_start", message: this.#message([], null, null) }];
  }

  push(chunk: ChatCompletionChunk): MessageStreamEvent[] {
    const out: MessageStreamEvent[] = [];
    for (const choice of chunk.choices) {
      const d = choice.delta;
      if (d.reasoning_content !== undefined && d.reasoning_content !== "") {
        const index = this.#opened(out, "thinking", () => ({ type: "thinking", thinking: "", signature: "" }));
        (this.#content[index] as { thinking: string }).thinking += d.reasoning_content;
        out.push({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: d.reasoning_content } });
      }
      if (d.content !== undefined && d.content !== null && d.content !== "") {
        const index = this.#opened(out, "text", () => ({ type: "text", text: "", citations: null }));
        (this.#content[index] as { text: string }).text += d.content;
        out.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: d.content } });
      }
      for (const t of d.tool_calls ?? []) {
        let open = this.#open?.kind === "tool" && this.#open.toolIndex === t.index ? this.#open : null;
        if (open === null) {
          this.#close(out);
          const index = this.#content.length;
          const block: ToolUseBlock = { type: "tool_use", id: t.id ?? randomId("toolu_"), name: t.function?.name ?? "", input: {}, caller: { type: "direct" } };
          this.#content.push(block);
          out.push({ type: "content_block_start", index, content_block: structuredClone(block) });
          open = this.#open = { kind: "tool", index, toolIndex: t.index, json: "" };
        }
        const args = t.function?.arguments;
        if (args !== undefined && args !== "") {
          open.json += args;
          out.push({ type: "content_block_delta", index: open.index, delta: { type: "input_json_delta", partial_json: args } });
        }
      }
    }
    return out;
  }

  finish(end: MessageEnd): { events: MessageStreamEvent[]; message: MessageObject } {
    const events: MessageStreamEvent[] = [];
    this.#close(events);
    const finish = end.completion.choices[0].finish_reason;
    const stopReason: StopReason = finish === "length" ? "max_tokens" : finish === "tool_calls" ? "tool_use" : end.stopSequence !== null ? "stop_sequence" : "end_turn";
    const stopSequence = stopReason === "stop_sequence" ? end.stopSequence : null;
    const message = this.#message(structuredClone(this.#content), stopReason, stopSequence, end.completion);
    events.push({
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: stopSequence, stop_details: null, container: null },
      usage: {
        output_tokens: message.usage.output_tokens,
        input_tokens: message.usage.input_tokens,
        cache_creation_input_tokens: null,
        cache_read_input_tokens: message.usage.cache_read_input_tokens,
        output_tokens_details: message.usage.output_tokens_details,
        server_tool_use: null,
      },
    });
    events.push({ type: "message_stop" });
    return { events, message };
  }

  /** The open block of this kind, or a new one after closing the open one. */
  #opened(out: MessageStreamEvent[], kind: "thinking" | "text", make: () => ContentBlock): number {
    if (this.#open?.kind === kind) return this.#open.index;
    this.#close(out);
    const index = this.#content.length;
    const block = make();
    this.#content.push(block);
    out.push({ type: "content_block_start", index, content_block: structuredClone(block) });
    this.#open = { kind, index };
    return index;
  }

  #close(out: MessageStreamEvent[]): void {
    const open = this.#open;
    if (open === null) return;
    this.#open = null;
    if (open.kind === "tool") (this.#content[open.index] as ToolUseBlock).input = parseInput(open.json);
    out.push({ type: "content_block_stop", index: open.index });
  }
}

/** A call's arguments as its input object (cut short by max_tokens: what parses, else {}). */
function parseInput(json: string): unknown {
  if (json === "") return {};
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return {};
  }
}
