/** One streamed turn of `llamapeg chat`: the deltas as they come, then the message and the timings. */
import { writeFileSync } from "node:fs";

import type { Context, Sequence } from "../llama/index.js";
import { createChatCompletion, type ChatCompletion, type ChatCompletionRequest } from "../openai/index.js";
import { styleFor } from "./style.js";

export interface TurnOptions {
  json: boolean;
  stream: boolean;
  record: string | undefined;
  /** Print the final message as JSON after the streamed view (one-shot mode). */
  showMessage: boolean;
}

export async function runTurn(context: Context | Sequence, request: ChatCompletionRequest, o: TurnOptions): Promise<ChatCompletion> {
  const out = process.stdout;
  const style = styleFor(out);
  const note = styleFor(process.stderr);
  const stream = createChatCompletion(context, { ...request, stream: true }, o.record === undefined ? {} : { onRecord: (r) => writeFileSync(o.record!, JSON.stringify(r)) });
  let inCall = false;
  for await (const chunk of stream) {
    if (o.json) {
      if (o.stream) out.write(`${JSON.stringify(chunk)}\n`);
      continue;
    }
    if (chunk.llamapeg !== undefined) {
      if ("warnings" in chunk.llamapeg) for (const w of chunk.llamapeg.warnings) process.stderr.write(`${note.yellow(`warning: ${w}`)}\n`);
      else process.stderr.write(`\n${note.yellow(`[${chunk.llamapeg.event.type} at byte ${chunk.llamapeg.event.position}: ${chunk.llamapeg.event.message}]`)}\n`);
    }
    const d = chunk.choices[0]?.delta;
    if (d === undefined) continue;
    if (d.reasoning_content !== undefined) out.write(style.dim(d.reasoning_content));
    if (typeof d.content === "string") out.write(d.content);
    for (const call of d.tool_calls ?? []) {
      if (call.function?.name !== undefined) {
        out.write(`${inCall ? ")\n" : "\n"}${style.cyan(`→ ${call.function.name}`)}(`);
        inCall = true;
      }
      if (call.function?.arguments) out.write(call.function.arguments);
    }
  }
  const c = await stream.completion;
  if (o.json) {
    if (!o.stream) out.write(`${JSON.stringify(c, null, 2)}\n`);
    return c;
  }
  if (inCall) out.write(")");
  out.write("\n");
  if (o.showMessage) out.write(`\n${JSON.stringify(c.choices[0].message, null, 2)}\n`);
  const t = c.llamapeg.timings;
  process.stderr.write(
    `${note.dim(
      `prompt ${c.usage.prompt_tokens} tokens (${c.usage.prompt_tokens_details?.cached_tokens ?? 0} reused) ${t.prompt_per_second.toFixed(1)} tok/s · ` +
        `generated ${c.usage.completion_tokens} tokens ${t.generation_per_second.toFixed(1)} tok/s · sampling ${(t.sampling_ms / Math.max(1, c.usage.completion_tokens)).toFixed(2)} ms/token · ` +
        `finish: ${c.choices[0].finish_reason}`,
    )}\n`,
  );
  return c;
}
