/**
 * The interactive loop of `llamapeg chat`, the way an agent runtime drives a model: the user's
 * line, the model's turn, and when it calls tools, their results as `tool` messages and the
 * model's next turn, until it answers without calls. The demo tools answer with canned results;
 * with the user's own tools the user types each result (an empty line skips it). With `resume`
 * (`--resume FILE`) the chat starts from a saved one and is saved when it ends (chat-session-file.ts).
 */
import { createInterface, type Interface } from "node:readline/promises";

import type { ChatMessage } from "../chat/messages.js";
import { LlamapegError, type LlamapegErrorCode } from "../errors.js";
import type { Context, Sequence } from "../llama/index.js";
import type { ChatCompletionMessage, ChatCompletionRequest } from "../openai/index.js";
import { resumeChat, saveChat, stateFileOf } from "./chat-session-file.js";
import { runTurn, type TurnOptions } from "./chat-turn.js";
import { answerDemoCall, type ToolResultMessage } from "./demo-tools.js";
import { styleFor } from "./style.js";

/** Tool rounds per user line: a model that keeps calling is stopped here and the user gets the prompt back. */
export const MAX_TOOL_ROUNDS = 5;

/** Errors that end one turn, not the chat: the conversation goes back to before the user's line. */
const TURN_ERRORS: ReadonlySet<LlamapegErrorCode> = new Set(["ERR_ABORTED", "ERR_INVALID_REQUEST", "ERR_TEMPLATE_RENDER", "ERR_SCHEMA_INVALID", "ERR_SCHEMA_UNSUPPORTED", "ERR_CONTEXT_FULL"]);

type Message = ChatMessage | ChatCompletionMessage | ToolResultMessage;

/** After tool results the model must be free to answer: a forced choice (required, a named tool) becomes auto. */
export function followUpRequest(base: Omit<ChatCompletionRequest, "messages">): Omit<ChatCompletionRequest, "messages"> {
  if (base.tool_choice === undefined || base.tool_choice === "auto" || base.tool_choice === "none") return base;
  const { calls_only: _callsOnly, ...rest } = base;
  return { ...rest, tool_choice: "auto" };
}

export interface ChatIO {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}

class Prompter {
  #closed = false;
  readonly rl: Interface;

  constructor(io: ChatIO, onInterrupt: () => boolean) {
    this.rl = createInterface({ input: io.input, output: io.output, terminal: (io.input as { isTTY?: boolean }).isTTY === true });
    this.rl.on("close", () => (this.#closed = true));
    // Ctrl-C stops the reply being generated; at the prompt it ends the chat.
    this.rl.on("SIGINT", () => {
      if (!onInterrupt()) this.rl.close();
    });
  }

  /** The user's line, or null once input has ended (Ctrl-D, Ctrl-C at the prompt). */
  ask(question: string): Promise<string | null> {
    if (this.#closed) return Promise.resolve(null);
    return new Promise((resolve) => {
      const onClose = () => resolve(null);
      this.rl.once("close", onClose);
      this.rl.question(question).then(
        (answer) => {
          this.rl.off("close", onClose);
          resolve(answer);
        },
        () => resolve(null),
      );
    });
  }

  close(): void {
    this.rl.close();
  }
}

/**
 * Removes the oldest exchange (the first user line and what followed it, up to the next user line)
 * when it ends before `current` (the current turn's first message); returns how many messages went.
 */
export function dropOldestTurn(messages: Message[], current: number): number {
  const first = messages.findIndex((m) => m.role === "user");
  if (first < 0 || first >= current) return 0;
  let next = first + 1;
  while (next < current && messages[next]!.role !== "user") next++;
  messages.splice(first, next - first);
  return next - first;
}

/**
 * Runs until the user ends the chat; returns the conversation. `resume`: a session file to start
 * from (when it exists) and to save to at the end; it needs a Sequence (its state is saved too).
 */
export async function interactiveChat(
  context: Context | Sequence,
  base: Omit<ChatCompletionRequest, "messages">,
  turnOptions: TurnOptions,
  o: { askForResults: boolean; io?: ChatIO; resume?: { path: string; sequence: Sequence } },
): Promise<Message[]> {
  const note = styleFor(process.stderr);
  let current: AbortController | null = null;
  const prompter = new Prompter(o.io ?? { input: process.stdin, output: process.stdout }, () => {
    if (current === null) return false;
    current.abort(new Error("interrupted"));
    return true;
  });
  const messages: Message[] = [];
  if (o.resume !== undefined) {
    const saved = await resumeChat<Message>(o.resume.path, o.resume.sequence);
    if (saved !== null) {
      messages.push(...saved.messages);
      const state = "loaded" in saved.state ? `${saved.state.loaded} tokens ready` : "missing" in saved.state ? `no ${stateFileOf(o.resume.path)}: the history is decoded again` : `state not loaded (${saved.state.refused}): the history is decoded again`;
      process.stderr.write(`${note.dim(`[resumed ${saved.messages.length} messages from ${o.resume.path}; ${state}]`)}
`);
    }
  }

  const results = async (calls: NonNullable<ChatCompletionMessage["tool_calls"]>): Promise<ToolResultMessage[] | null> => {
    const out: ToolResultMessage[] = [];
    for (const call of calls) {
      if (!o.askForResults) {
        const r = answerDemoCall(call);
        process.stderr.write(`${note.dim(`← ${call.function.name}: ${r.content} (demo result)`)}\n`);
        out.push(r);
        continue;
      }
      const answer = await prompter.ask(`result of ${call.function.name}(${call.function.arguments}) (empty line: skip) ← `);
      if (answer === null) return null;
      if (answer.trim() !== "") out.push({ role: "tool", tool_call_id: call.id, content: answer });
    }
    return out;
  };

  try {
    for (;;) {
      const line = await prompter.ask("\n> ");
      if (line === null || line.trim() === "" || line.trim() === "/exit") return messages;
      let mark = messages.length;
      messages.push({ role: "user", content: line });
      // The context shifts while a reply is generated; a history that no longer fits as a prompt
      // loses its oldest turns (up to the next user line), never the current one.
      const fitting = async (request: Omit<ChatCompletionRequest, "messages">) => {
        for (;;) {
          current = new AbortController();
          try {
            return await runTurn(context, { ...request, messages, signal: current.signal }, turnOptions);
          } catch (e) {
            const dropped = e instanceof LlamapegError && e.code === "ERR_CONTEXT_FULL" ? dropOldestTurn(messages, mark) : 0;
            if (dropped === 0) throw e;
            mark -= dropped;
            process.stderr.write(`${note.dim("[the conversation no longer fits the context: the oldest turn is left out]")}\n`);
          } finally {
            current = null;
          }
        }
      };
      try {
        let request = base;
        for (let round = 0; ; round++) {
          const c = await fitting(request);
          const m = c.choices[0].message;
          messages.push(m);
          const calls = m.tool_calls ?? [];
          if (calls.length === 0) break;
          if (round + 1 >= MAX_TOOL_ROUNDS) {
            process.stderr.write(`${note.yellow(`[${MAX_TOOL_ROUNDS} tool rounds without an answer; back to you]`)}\n`);
            break;
          }
          const answered = await results(calls);
          if (answered === null) return messages;
          if (answered.length === 0) break;
          messages.push(...answered);
          request = followUpRequest(base);
        }
      } catch (e) {
        if (!(e instanceof LlamapegError) || !TURN_ERRORS.has(e.code)) throw e;
        messages.length = mark;
        process.stderr.write(`${note.yellow(e.code === "ERR_ABORTED" ? "[stopped]" : `error: ${e.message} [${e.code}]`)}\n`);
      }
    }
  } finally {
    prompter.close();
    if (o.resume !== undefined) {
      await saveChat(o.resume.path, o.resume.sequence, messages);
      process.stderr.write(`${note.dim(`[saved ${messages.length} messages to ${o.resume.path}]`)}
`);
    }
  }
}
