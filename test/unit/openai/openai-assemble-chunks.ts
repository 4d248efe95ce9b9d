// Assembles streamed chunks into a message the way OpenAI clients do (shared by the tests).
import type { ChatCompletionChunk } from "../../../lib/openai/index.js";

export interface AssembledMessage {
  content: string | null;
  reasoning_content: string;
  tool_calls: { id: string; type: string; function: { name: string; arguments: string } }[];
}

export function assembleChunks(chunks: readonly ChatCompletionChunk[]): AssembledMessage {
  const out: AssembledMessage = { content: null, reasoning_content: "", tool_calls: [] };
  for (const c of chunks) {
    const d = c.choices[0]?.delta;
    if (d === undefined) continue;
    if (typeof d.content === "string") out.content = (out.content ?? "") + d.content;
    if (d.reasoning_content !== undefined) out.reasoning_content += d.reasoning_content;
    for (const t of d.tool_calls ?? []) {
      const call = (out.tool_calls[t.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
      if (t.id !== undefined) call.id = t.id;
      if (t.function?.name !== undefined) call.function.name += t.function.name;
      if (t.function?.arguments !== undefined) call.function.arguments += t.function.arguments;
    }
  }
  return out;
}
