/**
 * `llamapeg chat`: a tool-calling chat through `createChatCompletion` on the embedded tiny test model
 * (created on first use) or on `--model path.gguf`. Streams content, reasoning (dimmed on a terminal)
 * and tool calls as they are generated. Interactive on a terminal: the demo tools answer with canned
 * results and the model goes on to its reply; with `--tools FILE` the user types each result.
 */
import { readFileSync } from "node:fs";

import type { ChatTool } from "../chat/tools.js";
import { LlamapegError } from "../errors.js";
import { loadModel, type Context, type ContextOptions } from "../llama/index.js";
import { SAMPLING_FIELDS } from "../llama/sampling-params.js";
import type { ChatCompletionRequest, ToolChoice } from "../openai/index.js";
import { ensureTestModel } from "../test-model/index.js";
import { intFlag, numFlag, parseFlags, stringFlag, toolChoiceFlag } from "./args.js";
import { runTurn, type TurnOptions } from "./chat-turn.js";
import { DEMO_PROMPT, DEMO_TOOLS } from "./demo-tools.js";
import { interactiveChat } from "./chat-interactive.js";
import { readJsonFile } from "./json-file.js";
import { progressBar } from "./progress.js";
import { readStdin } from "./stdin.js";
import { styleFor } from "./style.js";
import { readToolsFile } from "./tools-file.js";
import { UsageError } from "./usage-error.js";

/** --temperature: the sampler's default, and the range a request may give. */
const TEMPERATURE = SAMPLING_FIELDS.temperature;

export const CHAT_SUMMARY = "a tool-calling chat (the main job)";

export const CHAT_USAGE = `llamapeg chat [options]
  The prompt: --prompt, else standard input when it is not a terminal (empty: a demo prompt),
  else an interactive chat (an empty line or /exit ends it; Ctrl-C stops a reply).
  --model PATH          a GGUF model (default: the tiny random-weight test model, created on first use)
  --prompt TEXT         one-shot prompt
  --tools FILE          OpenAI tools JSON array (default: a demo set: get_weather, search_web; "none": no tools)
                        interactive: the demo tools answer with canned results; with FILE you type them
  --tool-choice MODE    auto | required | none | <tool name> (default: required on the test model, else auto)
  --calls-only          the same as --tool-choice required: the output is only the calls, no text before them
  --json-schema FILE    answer with JSON valid against this schema (with tools: a call or such JSON)
  --chat-template FILE  a Jinja chat template instead of the model's
  --no-grammar          sample freely (the output is still parsed)
  --stream              with --json: print every chat.completion.chunk, one per line
  --json                print the final chat.completion object instead of the human view
  --record FILE         save the generation (plan, token ids, pieces) for offline replay
  --max-tokens N        default 256
  --temperature T       default ${TEMPERATURE.default} (0 = greedy)
  --seed N              default random
  --threads N           compute threads (default: all cores)
  --context-size N      default 4096
  --resume FILE         interactive: start from the chat saved in FILE (when it exists) and save it there
                        when the chat ends (FILE.state keeps the model's state: the next run decodes only what is new)`;

function toolChoiceOf(value: string, tools: ChatTool[]): ToolChoice {
  if (value === "auto" || value === "required" || value === "none") return value;
  if (tools.some((t) => t.function.name === value)) return { type: "function", function: { name: value } };
  throw new UsageError(`--tool-choice must be auto, required, none or a tool name (got ${JSON.stringify(value)})`, "chat");
}

function readTemplate(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `--chat-template ${path}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}`, { where: path });
  }
}

/**
 * The chat's context. Interactive: a long chat goes on past a full context (the older half of the
 * tokens after the first drops out, as llama-server's context shift does) instead of stopping
 * mid-answer; one-shot runs stop at a full context, as a script expects.
 */
export function chatContextOptions(contextSize: number, threads: number | undefined, interactive: boolean): ContextOptions {
  return { contextSize, ...(interactive ? { contextShift: true } : {}), ...(threads === undefined ? {} : { threads }) };
}

export async function chatCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(
    argv,
    {
      model: { type: "string" },
      prompt: { type: "string" },
      tools: { type: "string" },
      "tool-choice": { type: "string" },
      "calls-only": { type: "boolean" },
      "json-schema": { type: "string" },
      "chat-template": { type: "string" },
      "no-grammar": { type: "boolean" },
      stream: { type: "boolean" },
      json: { type: "boolean" },
      record: { type: "string" },
      "max-tokens": { type: "string" },
      temperature: { type: "string" },
      seed: { type: "string" },
      threads: { type: "string" },
      "context-size": { type: "string" },
      resume: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    "chat",
  );
  if (values.help) {
    console.log(CHAT_USAGE);
    return;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])} (the prompt goes in --prompt or on standard input)`, "chat");
  const testModel = values.model === undefined;
  const toolsPath = stringFlag(values, "tools");
  const tools = toolsPath === undefined ? DEMO_TOOLS : readToolsFile(toolsPath);
  const toolChoice = tools.length === 0 ? "none" : toolChoiceOf(toolChoiceFlag(values, testModel ? "required" : "auto", "chat"), tools);
  const schemaPath = stringFlag(values, "json-schema");
  const templatePath = stringFlag(values, "chat-template");
  const base: Omit<ChatCompletionRequest, "messages"> = {
    ...(tools.length > 0 ? { tools, tool_choice: toolChoice } : {}),
    ...(schemaPath !== undefined ? { response_format: { type: "json_schema" as const, json_schema: { name: "answer", schema: readJsonFile(schemaPath, "json-schema") as Record<string, unknown> } } } : {}),
    ...(templatePath !== undefined ? { chat_template: readTemplate(templatePath) } : {}),
    ...(values["no-grammar"] === true ? { grammar: false as const } : {}),
    max_tokens: intFlag(values, "max-tokens", 256, 1, 1 << 20),
    temperature: numFlag(values, "temperature", TEMPERATURE.default, TEMPERATURE.min, TEMPERATURE.request.max),
    ...(values.seed === undefined ? {} : { seed: intFlag(values, "seed", 0, 0, 0xffffffff) }),
  };
  const contextSize = intFlag(values, "context-size", 4096, 64, 1 << 24);
  const threads = values.threads === undefined ? undefined : intFlag(values, "threads", 1, 1, 1024);
  const json = values.json === true;
  const turnOptions: TurnOptions = { json, stream: values.stream === true, record: stringFlag(values, "record"), showMessage: true };

  // The prompt: --prompt, else piped standard input, else interactive.
  let prompt = stringFlag(values, "prompt");
  const interactive = prompt === undefined && process.stdin.isTTY === true;
  if (values.resume !== undefined && !interactive) throw new UsageError("--resume is for the interactive chat (no --prompt, a terminal on standard input)", "chat");
  if (prompt === undefined && !interactive) {
    const piped = (await readStdin()).trim();
    prompt = piped === "" ? DEMO_PROMPT : piped;
  }

  if (testModel && !json) process.stderr.write(`${styleFor(process.stderr).dim("using the tiny random-weight test model (gibberish text; the grammar keeps tool calls valid)")}\n`);
  const modelPath: string = testModel ? await ensureTestModel("tiny") : (values.model as string);
  const bar = progressBar("loading model");
  const model = await loadModel(modelPath, { onProgress: (p: number) => bar.update(p) });
  bar.done();
  try {
    const context: Context = model.createContext(chatContextOptions(contextSize, threads, interactive));
    if (!interactive) {
      await runTurn(context, { ...base, messages: [{ role: "user", content: prompt! }] }, turnOptions);
      return;
    }
    const resume = stringFlag(values, "resume");
    const sequence = resume !== undefined ? context.getSequence() : undefined;
    await interactiveChat(sequence ?? context, base, { ...turnOptions, showMessage: false }, {
      askForResults: toolsPath !== undefined && tools.length > 0,
      ...(resume !== undefined ? { resume: { path: resume, sequence: sequence! } } : {}),
    });
  } finally {
    model.dispose();
  }
}
