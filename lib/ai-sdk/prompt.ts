/**
 * The AI SDK's prompt (LanguageModelV4Prompt) as OpenAI chat messages, which the chat template then
 * renders: tool calls with their JSON input as `arguments`, tool results as `tool` messages.
 */
import { UnsupportedFunctionalityError, type LanguageModelV4Message, type LanguageModelV4Prompt, type LanguageModelV4ToolResultOutput } from "@ai-sdk/provider";

interface OpenAIMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  reasoning_content?: string;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  name?: string;
}

function unsupported(functionality: string): never {
  throw new UnsupportedFunctionalityError({ functionality });
}

/** A file part as text when it is text (an inline text document); other files cannot be rendered into a chat template. */
function fileText(part: { data: { type: string; text?: string }; mediaType: string }, where: string): string {
  if (part.data.type === "text" && typeof part.data.text === "string") return part.data.text;
  return unsupported(`${where}: file parts (${part.mediaType}) other than inline text`);
}

function toolOutputText(output: LanguageModelV4ToolResultOutput): string {
  switch (output.type) {
    case "text":
    case "error-text":
      return output.value;
    case "json":
    case "error-json":
      return JSON.stringify(output.value);
    case "execution-denied":
      return `Tool execution denied${output.reason !== undefined ? `: ${output.reason}` : "."}`;
    case "content":
      return output.value
        .map((p) => (p.type === "text" ? p.text : p.type === "file" ? fileText(p as never, "tool result") : unsupported("tool result: custom content parts")))
        .join("");
  }
}

function convertMessage(m: LanguageModelV4Message, i: number): OpenAIMessage[] {
  switch (m.role) {
    case "system":
      return [{ role: "system", content: m.content }];
    case "user":
      return [{ role: "user", content: m.content.map((p) => (p.type === "text" ? p.text : fileText(p as never, `prompt[${i}]`))).join("") }];
    case "assistant": {
      let text = "";
      let reasoning = "";
      const calls: NonNullable<OpenAIMessage["tool_calls"]> = [];
      const results: OpenAIMessage[] = [];
      for (const p of m.content) {
        if (p.type === "text") text += p.text;
        else if (p.type === "reasoning") reasoning += p.text;
        else if (p.type === "tool-call") calls.push({ id: p.toolCallId, type: "function", function: { name: p.toolName, arguments: JSON.stringify(p.input ?? {}) } });
        else if (p.type === "tool-result") results.push({ role: "tool", tool_call_id: p.toolCallId, name: p.toolName, content: toolOutputText(p.output) });
        else if (p.type === "file") text += fileText(p as never, `prompt[${i}]`);
        // custom and reasoning-file parts carry nothing a chat template can show
      }
      const out: OpenAIMessage = { role: "assistant", content: text === "" && calls.length > 0 ? null : text };
      if (reasoning !== "") out.reasoning_content = reasoning;
      if (calls.length > 0) out.tool_calls = calls;
      return [out, ...results];
    }
    case "tool":
      return m.content.flatMap((p) => (p.type === "tool-result" ? [{ role: "tool" as const, tool_call_id: p.toolCallId, name: p.toolName, content: toolOutputText(p.output) }] : []));
  }
}

export function toOpenAIMessages(prompt: LanguageModelV4Prompt): OpenAIMessage[] {
  return prompt.flatMap((m, i) => convertMessage(m, i));
}
