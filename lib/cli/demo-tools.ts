/** The tool set `llamapeg chat` offers when no --tools file is given. */
import type { ChatTool } from "../chat/tools.js";

export const DEMO_TOOLS: ChatTool[] = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather for a city",
      parameters: {
        type: "object",
        properties: {
          city: { type: "string", description: "City name", maxLength: 24 },
          unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        },
        required: ["city"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "search_web",
      description: "Search the web",
      parameters: {
        type: "object",
        properties: { query: { type: "string", maxLength: 40 }, max_results: { type: "integer", minimum: 1, maximum: 10 } },
        required: ["query"],
        additionalProperties: false,
      },
    },
  },
];

export const DEMO_PROMPT = "What is the weather in Paris?";

/** An OpenAI `tool` message answering one call. */
export interface ToolResultMessage {
  role: "tool";
  tool_call_id: string;
  content: string;
}

function parseArguments(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The demo tools' canned answers, so an interactive chat goes on to the model's reply the way an
 * agent runtime would: a fixed weather report, a fixed search result. Arguments that are not a
 * JSON object (a call cut by max_tokens) get an error result, as a real tool would return.
 */
export function answerDemoCall(call: { id: string; function: { name: string; arguments: string } }): ToolResultMessage {
  const args = parseArguments(call.function.arguments);
  let result: unknown;
  if (args === null) result = { error: "the arguments are not a JSON object" };
  else if (call.function.name === "get_weather") {
    result = { city: String(args.city ?? ""), temperature: args.unit === "fahrenheit" ? 64 : 18, unit: args.unit === "fahrenheit" ? "fahrenheit" : "celsius", conditions: "partly cloudy" };
  } else if (call.function.name === "search_web") {
    result = { results: [{ title: `About ${String(args.query ?? "")}`, url: "https://example.com/result" }] };
  } else result = { error: `no demo tool named ${JSON.stringify(call.function.name)}` };
  return { role: "tool", tool_call_id: call.id, content: JSON.stringify(result) };
}
