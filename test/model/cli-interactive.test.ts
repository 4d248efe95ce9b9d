// The interactive chat loop driven through streams, as a user at a terminal would: the demo tools
// answer with canned results and the model goes on to its reply; with the user's tools the result
// is asked for (or skipped).
import { PassThrough } from "node:stream";

import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

import { interactiveChat } from "../../lib/cli/chat-interactive.js";
import { DEMO_TOOLS } from "../../lib/cli/demo-tools.js";
import type { Context, Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";

let model: Model;
let context: Context;

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 4096, threads: 2 });
});
afterAll(() => model?.dispose());

/** A scripted user: each answer is typed when the matching prompt appears on the output. */
function user(script: { when: RegExp; type: string }[]) {
  const input = new PassThrough();
  const output = new PassThrough();
  let seen = "";
  output.on("data", (d: Buffer) => {
    seen += d.toString();
    const next = script[0];
    if (next !== undefined && next.when.test(seen)) {
      script.shift();
      seen = "";
      input.write(`${next.type}\n`);
    }
  });
  return { input, output };
}

/** Silences the turn output; returns what went to stderr (warnings, errors) for failure messages. */
function quiet(): { stderr: string } {
  const log = { stderr: "" };
  vi.spyOn(process.stdout, "write").mockImplementation(() => true);
  vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    log.stderr += String(chunk);
    return true;
  });
  return log;
}

const base = { tools: DEMO_TOOLS, tool_choice: "required" as const, calls_only: true, max_tokens: 120, seed: 5, temperature: 0.8 };

describe("llamapeg chat, interactive", () => {
  it("demo tools: call -> canned tool result -> the model's reply; a second question goes on from that history", async () => {
    const log = quiet();
    const io = user([
      { when: /> $/, type: "What is the weather in Paris?" },
      { when: /> $/, type: "And in Tokyo?" },
      { when: /> $/, type: "/exit" },
    ]);
    const messages = await interactiveChat(context, base, { json: false, stream: false, record: undefined, showMessage: false }, { askForResults: false, io });
    vi.restoreAllMocks();
    expect(messages[0], log.stderr).toEqual({ role: "user", content: "What is the weather in Paris?" });
    const call = (messages[1] as { tool_calls?: { id: string }[] }).tool_calls?.[0];
    expect(call, JSON.stringify(messages[1])).toBeDefined();
    expect(messages[2]).toMatchObject({ role: "tool", tool_call_id: call!.id });
    expect(messages[3]).toMatchObject({ role: "assistant" });
    const second = messages.findIndex((m) => m.role === "user" && m.content === "And in Tokyo?");
    expect(second).toBeGreaterThan(3);
    expect(messages[second + 1]).toMatchObject({ role: "assistant" });
  });

  // one call by the grammar: the scripts answer one result prompt
  const named = { ...base, tool_choice: { type: "function" as const, function: { name: "get_weather" } }, parallel_tool_calls: false };
  const turn = { json: false, stream: false, record: undefined, showMessage: false };

  it("user tools: the typed result becomes the tool message and the model replies", async () => {
    const log = quiet();
    const io = user([
      { when: /> $/, type: "Weather?" },
      { when: /result of get_weather\(.*\) \(empty line: skip\) ← $/s, type: '{"temperature": 3}' },
      { when: /(> |skip\) ← )$/, type: "" },
      { when: /> $/, type: "/exit" },
    ]);
    const messages = await interactiveChat(context, named, turn, { askForResults: true, io });
    vi.restoreAllMocks();
    const tool = messages.find((m) => m.role === "tool");
    expect(tool, log.stderr).toMatchObject({ content: '{"temperature": 3}' });
    expect(messages[messages.indexOf(tool!) + 1]).toMatchObject({ role: "assistant" });
  });

  it("user tools: an empty line skips the result and the user has the prompt again", async () => {
    const log = quiet();
    const io = user([
      { when: /> $/, type: "Weather?" },
      { when: /skip\) ← $/, type: "" },
      { when: /> $/, type: "/exit" },
    ]);
    const messages = await interactiveChat(context, named, turn, { askForResults: true, io });
    vi.restoreAllMocks();
    expect(messages.map((m) => m.role), log.stderr).toEqual(["user", "assistant"]);
    expect((messages[1] as { tool_calls?: unknown[] }).tool_calls).toHaveLength(1);
  });

  it("a long chat goes on: a history too long for the context loses its oldest turns, with a notice, not an error", async () => {
    const small = model.createContext({ contextSize: 512, threads: 2, contextShift: true });
    try {
      const log = quiet();
      const long = (i: number) => `${i} ${"word ".repeat(110)}`;
      const io = user([1, 2, 3, 4, 5].map((i) => ({ when: /> $/, type: long(i) })).concat([{ when: /> $/, type: "/exit" }]));
      const messages = await interactiveChat(small, { max_tokens: 40, temperature: 0 }, turn, { askForResults: false, io });
      vi.restoreAllMocks();
      expect(log.stderr).not.toMatch(/error:/);
      expect(log.stderr).toMatch(/the oldest turn is left out/);
      const users = messages.filter((m) => m.role === "user").map((m) => String(m.content).split(" ")[0]);
      expect(users.at(-1)).toBe("5");
      expect(users).not.toContain("1");
      expect(messages.at(-1)).toMatchObject({ role: "assistant" });
    } finally {
      small.dispose();
    }
  });
});

describe("llamapeg chat --resume", () => {
  const turn = { json: false, stream: false, record: undefined, showMessage: false };
  it("a chat saved at the end goes on in the next run from its messages and its state; a damaged state costs a re-decode, not the chat", async () => {
    const { mkdtempSync, writeFileSync, readFileSync, rmSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const dir = mkdtempSync(join(tmpdir(), "llamapeg-resume-"));
    const path = join(dir, "chat.json");
    const plain = { max_tokens: 12, temperature: 0 };
    try {
      const first = model.createContext({ contextSize: 2048, threads: 2 });
      const s1 = first.getSequence();
      let log = quiet();
      const one = await interactiveChat(s1, plain, turn, { askForResults: false, io: user([{ when: /> $/, type: "First question." }, { when: /> $/, type: "/exit" }]), resume: { path, sequence: s1 } });
      vi.restoreAllMocks();
      expect(one.map((m) => m.role), log.stderr).toEqual(["user", "assistant"]);
      expect(log.stderr).toMatch(/saved 2 messages/);
      const held = s1.tokens.length;
      first.dispose();
      expect(JSON.parse(readFileSync(path, "utf8")).messages).toEqual(JSON.parse(JSON.stringify(one)));

      // a new context: the state is loaded before the first line, the messages go on
      const second = model.createContext({ contextSize: 2048, threads: 2 });
      const s2 = second.getSequence();
      log = quiet();
      const io = user([{ when: /> $/, type: "Second question." }, { when: /> $/, type: "/exit" }]);
      const two = await interactiveChat(s2, plain, turn, { askForResults: false, io, resume: { path, sequence: s2 } });
      vi.restoreAllMocks();
      expect(log.stderr).toMatch(new RegExp(`resumed 2 messages from .*; ${held} tokens ready`));
      expect(two.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
      expect(two.slice(0, 2)).toEqual(one);
      second.dispose();

      // a damaged state file: the chat resumes from the messages alone
      writeFileSync(`${path}.state`, "not a state");
      const third = model.createContext({ contextSize: 2048, threads: 2 });
      const s3 = third.getSequence();
      log = quiet();
      const three = await interactiveChat(s3, plain, turn, { askForResults: false, io: user([{ when: /> $/, type: "/exit" }]), resume: { path, sequence: s3 } });
      vi.restoreAllMocks();
      expect(log.stderr).toMatch(/state not loaded \(ERR_STATE_INVALID/);
      expect(three).toEqual(two);
      third.dispose();

      // not a session file: a coded error naming it, before anything runs
      writeFileSync(path, "{}");
      const fourth = model.createContext({ contextSize: 512, threads: 1 });
      const s4 = fourth.getSequence();
      await expect(interactiveChat(s4, plain, turn, { askForResults: false, io: user([]), resume: { path, sequence: s4 } })).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT", where: path });
      fourth.dispose();
    } finally {
      vi.restoreAllMocks();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
