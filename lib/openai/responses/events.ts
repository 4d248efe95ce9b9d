/**
 * Chat Completions chunks in, Responses streaming events out (and the response they add up to).
 * The session's deltas already come in output order (reasoning, then text or calls; a call's id
 * and name before its argument fragments), so each change of kind closes the open output item
 * and opens the next: reasoning -> `reasoning` item, content -> `message` item with one
 * `output_text` part, each tool call -> `function_call` item. The non-stream answer runs the same
 * code and keeps only the final response, so both carry the same items.
 */
import { randomId } from "../assemble.js";
import type { ChatCompletion, ChatCompletionChunk } from "../types.js";
import type { ResponsesEcho } from "./request.js";
import type { ResponseFunctionCallItem, ResponseMessageItem, ResponseObject, ResponseOutputItem, ResponseReasoningItem, ResponseStreamEvent } from "./types.js";

type Open = { kind: "reasoning"; index: number; item: ResponseReasoningItem } | { kind: "message"; index: number; item: ResponseMessageItem } | { kind: "call"; index: number; item: ResponseFunctionCallItem; toolIndex: number };

/** Distributes `Omit` over a union (each event keeps its own fields). */
type EventBody = ResponseStreamEvent extends infer E ? (E extends ResponseStreamEvent ? Omit<E, "sequence_number"> : never) : never;

export class ResponseEmitter {
  readonly id: string;
  readonly #echo: ResponsesEcho;
  readonly #model: string;
  readonly #createdAt: number;
  readonly #output: ResponseOutputItem[] = [];
  #open: Open | null = null;
  #seq = 0;

  constructor(echo: ResponsesEcho, model: string, id = randomId("resp_")) {
    this.id = id;
    this.#echo = echo;
    this.#model = model;
    this.#createdAt = Math.floor(Date.now() / 1000);
  }

  /** The response as it stands (a snapshot: later events do not change it). */
  snapshot(status: ResponseObject["status"], completion?: ChatCompletion): ResponseObject {
    const e = this.#echo;
    const output = structuredClone(this.#output);
    const r: ResponseObject = {
      id: this.id,
      object: "response",
      created_at: this.#createdAt,
      status,
      error: null,
      incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
      instructions: e.instructions,
      metadata: e.metadata,
      model: this.#model,
      output,
      output_text: output.flatMap((i) => (i.type === "message" ? i.content.map((c) => c.text) : [])).join(""),
      parallel_tool_calls: e.parallelToolCalls,
      previous_response_id: e.previousResponseId,
      reasoning: e.effort === null ? null : { effort: e.effort, summary: null },
      store: e.store,
      temperature: e.temperature,
      text: e.text,
      tool_choice: e.toolChoice,
      tools: e.tools,
      top_p: e.topP,
      max_output_tokens: e.maxOutputTokens,
      truncation: "disabled",
    };
    if (completion !== undefined) {
      const u = completion.usage;
      r.usage = {
        input_tokens: u.prompt_tokens,
        input_tokens_details: { cached_tokens: u.prompt_tokens_details?.cached_tokens ?? 0, cache_write_tokens: 0 },
        output_tokens: u.completion_tokens,
        // The target's count (the reasoning budget's counter); a llama-server target counts none: 0.
        output_tokens_details: { reasoning_tokens: u.completion_tokens_details?.reasoning_tokens ?? 0 },
        total_tokens: u.total_tokens,
      };
    }
    return r;
  }

  start(): ResponseStreamEvent[] {
    return [this.#event({ type: "response.created", response: this.snapshot("in_progress") }), this.#event({ type: "response.in_progress", response: this.snapshot("in_progress") })];
  }

  push(chunk: ChatCompletionChunk): ResponseStreamEvent[] {
    const out: ResponseStreamEvent[] = [];
    for (const choice of chunk.choices) {
      const d = choice.delta;
      if (d.reasoning_content !== undefined && d.reasoning_content !== "") {
        const open = this.#open?.kind === "reasoning" ? this.#open : this.#openReasoning(out);
        open.item.content[0]!.text += d.reasoning_content;
        out.push(this.#event({ type: "response.reasoning_text.delta", output_index: open.index, item_id: open.item.id, content_index: 0, delta: d.reasoning_content }));
      }
      if (d.content !== undefined && d.content !== null && d.content !== "") {
        const open = this.#open?.kind === "message" ? this.#open : this.#openMessage(out);
        open.item.content[0]!.text += d.content;
        out.push(this.#event({ type: "response.output_text.delta", output_index: open.index, item_id: open.item.id, content_index: 0, delta: d.content, logprobs: [] }));
      }
      for (const t of d.tool_calls ?? []) {
        const current = this.#open?.kind === "call" && this.#open.toolIndex === t.index ? this.#open : null;
        const open = current ?? this.#openCall(out, t.index, t.id ?? randomId("call_"), t.function?.name ?? "");
        if (current !== null && t.function?.name !== undefined && open.item.name === "") open.item.name = t.function.name;
        const args = t.function?.arguments;
        if (args !== undefined && args !== "") {
          open.item.arguments += args;
          out.push(this.#event({ type: "response.function_call_arguments.delta", output_index: open.index, item_id: open.item.id, delta: args }));
        }
      }
    }
    return out;
  }

  /** Closes the open item; the last events and the final response. */
  finish(completion: ChatCompletion): { events: ResponseStreamEvent[]; response: ResponseObject } {
    const incomplete = completion.choices[0].finish_reason === "length";
    const events: ResponseStreamEvent[] = [];
    this.#close(events, incomplete ? "incomplete" : "completed");
    const response = this.snapshot(incomplete ? "incomplete" : "completed", completion);
    events.push(this.#event({ type: incomplete ? "response.incomplete" : "response.completed", response }));
    return { events, response };
  }

  #event(body: EventBody): ResponseStreamEvent {
    return { ...body, sequence_number: this.#seq++ } as ResponseStreamEvent;
  }

  #add(out: ResponseStreamEvent[], item: ResponseOutputItem): number {
    this.#close(out, "completed");
    const index = this.#output.length;
    this.#output.push(item);
    out.push(this.#event({ type: "response.output_item.added", output_index: index, item: structuredClone(item) }));
    return index;
  }

  #openReasoning(out: ResponseStreamEvent[]): Open & { kind: "reasoning" } {
    const item: ResponseReasoningItem = { type: "reasoning", id: randomId("rs_"), summary: [], content: [], status: "in_progress" };
    const index = this.#add(out, item);
    item.content.push({ type: "reasoning_text", text: "" });
    out.push(this.#event({ type: "response.content_part.added", output_index: index, item_id: item.id, content_index: 0, part: { type: "reasoning_text", text: "" } }));
    return (this.#open = { kind: "reasoning", index, item });
  }

  #openMessage(out: ResponseStreamEvent[]): Open & { kind: "message" } {
    const item: ResponseMessageItem = { type: "message", id: randomId("msg_"), role: "assistant", status: "in_progress", content: [] };
    const index = this.#add(out, item);
    item.content.push({ type: "output_text", text: "", annotations: [] });
    out.push(this.#event({ type: "response.content_part.added", output_index: index, item_id: item.id, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }));
    return (this.#open = { kind: "message", index, item });
  }

  #openCall(out: ResponseStreamEvent[], toolIndex: number, callId: string, name: string): Open & { kind: "call" } {
    const item: ResponseFunctionCallItem = { type: "function_call", id: randomId("fc_"), call_id: callId, name, arguments: "", status: "in_progress" };
    const index = this.#add(out, item);
    return (this.#open = { kind: "call", index, item, toolIndex });
  }

  #close(out: ResponseStreamEvent[], status: "completed" | "incomplete"): void {
    const open = this.#open;
    if (open === null) return;
    this.#open = null;
    const { index, item } = open;
    if (open.kind === "reasoning") {
      const part = open.item.content[0]!;
      out.push(this.#event({ type: "response.reasoning_text.done", output_index: index, item_id: item.id, content_index: 0, text: part.text }));
      out.push(this.#event({ type: "response.content_part.done", output_index: index, item_id: item.id, content_index: 0, part: { ...part } }));
    } else if (open.kind === "message") {
      const part = open.item.content[0]!;
      out.push(this.#event({ type: "response.output_text.done", output_index: index, item_id: item.id, content_index: 0, text: part.text, logprobs: [] }));
      out.push(this.#event({ type: "response.content_part.done", output_index: index, item_id: item.id, content_index: 0, part: { ...part } }));
    } else {
      out.push(this.#event({ type: "response.function_call_arguments.done", output_index: index, item_id: item.id, name: open.item.name, arguments: open.item.arguments }));
    }
    item.status = status;
    out.push(this.#event({ type: "response.output_item.done", output_index: index, item: structuredClone(item) }));
  }
}

/** The response's output as chat messages (one assistant message), for the next turn's history. */
export function outputAsMessages(output: readonly ResponseOutputItem[]): { role: string; [k: string]: unknown }[] {
  const m: { role: string; content: string; reasoning_content?: string; tool_calls?: unknown[] } = { role: "assistant", content: "" };
  for (const item of output) {
    if (item.type === "reasoning") m.reasoning_content = (m.reasoning_content ?? "") + item.content.map((c) => c.text).join("");
    else if (item.type === "message") m.content += item.content.map((c) => c.text).join("");
    else (m.tool_calls ??= []).push({ id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } });
  }
  return [m];
}
