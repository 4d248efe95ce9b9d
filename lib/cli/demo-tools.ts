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
      },
    },
  },
];

export const DEMO_PROMPT = "What is the weather in Paris?";
