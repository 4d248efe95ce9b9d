// Render parity: for every vendored template and every conversation in
// test/fixtures/conversations/, our prompt (and generation prompt) must equal what llama.cpp's
// common_chat_templates_apply returns (the full path users see: message normalization,
// workarounds, specialized handlers, Jinja engine). Expectations come from running the reference.
//
// LLAMAPEG_WRITE_PARITY=1 also regenerates the per-template table in docs/templates.md.
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { LlamapegError } from "../../lib/errors.js";
import { prepareChatContext, renderChatTemplate, renderGenerationPrompt } from "../../lib/chat/apply/render.js";
import { renderTemplate, templateCaps } from "../../lib/jinja/index.js";
import { spliceDocTable } from "../support/doc-table.js";
import { getHarness, type Harness } from "../support/harness.js";

// The harness runs in UTC with a fixed clock; make our local time UTC too.
process.env.TZ = "UTC";

const ROOT = path.resolve(import.meta.dirname, "../..");
const TEMPLATES = path.join(ROOT, "vendor/llama.cpp/models/templates");
const CONVERSATIONS = path.join(ROOT, "test/fixtures/conversations");
const NOW = "2026-01-31T12:00:00Z";
const BOS = "<s>";
const EOS = "</s>";

interface Conversation {
  name: string;
  description: string;
  messages: unknown[];
  tools?: unknown[];
  add_generation_prompt: boolean;
  enable_thinking?: boolean;
  chat_template_kwargs?: Record<string, unknown>;
  json_schema?: unknown;
}

type Status =
  | { kind: "identical" }
  | { kind: "identical-engine"; note: string }
  | { kind: "both-raise"; reference: string; ours: string }
  | { kind: "differs"; why: string };

const templates = fs
  .readdirSync(TEMPLATES)
  .filter((f) => f.endsWith(".jinja"))
  .sort();
const conversations: Conversation[] = fs
  .readdirSync(CONVERSATIONS)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(fs.readFileSync(path.join(CONVERSATIONS, f), "utf8")) as Conversation);

const results = new Map<string, Map<string, Status>>();
let h: Harness;

beforeAll(async () => {
  h = await getHarness();
});

afterAll(async () => {
  await h?.close();
  if (process.env.LLAMAPEG_WRITE_PARITY) writeParityTable();
});

function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return `at ${i}: reference ${JSON.stringify(a.slice(i, i + 60))} vs ours ${JSON.stringify(b.slice(i, i + 60))}`;
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, " ").replace(/`/g, "'").trim().slice(0, 160);
}

async function compare(source: string, conv: Conversation): Promise<Status> {
  const request = {
    messages: conv.messages,
    ...(conv.tools ? { tools: conv.tools } : {}),
    add_generation_prompt: conv.add_generation_prompt,
    ...(conv.enable_thinking !== undefined ? { enable_thinking: conv.enable_thinking } : {}),
    ...(conv.chat_template_kwargs ? { chat_template_kwargs: conv.chat_template_kwargs } : {}),
    ...(conv.json_schema !== undefined ? { json_schema: conv.json_schema } : {}),
  };
  const ref = await h.request<{ prompt: string; generation_prompt: string }>("chat.templates_apply", {
    template: source,
    bos_token: BOS,
    eos_token: EOS,
    request: { ...request, now: NOW },
  });
  const ourRequest = { ...request, bos_token: BOS, eos_token: EOS, now: new Date(NOW), reference_mode: true };
  let ours: string | undefined;
  let ourError: unknown;
  try {
    ours = renderChatTemplate(source, ourRequest);
  } catch (e) {
    ourError = e;
  }
  if (ourError !== undefined && !(ourError instanceof LlamapegError)) throw ourError; // never a raw exception
  if (ref.ok) {
    if (ours === undefined) return { kind: "differs", why: `reference renders, ours throws: ${(ourError as Error).message}` };
    if (ours !== ref.result!.prompt) return { kind: "differs", why: firstDifference(ref.result!.prompt, ours) };
    // the generation prompt (what the template adds for the assistant turn) must agree too
    const gen = renderGenerationPrompt(source, ourRequest);
    if (gen !== ref.result!.generation_prompt)
      return { kind: "differs", why: `generation prompt: ${firstDifference(ref.result!.generation_prompt, gen)}` };
    return { kind: "identical" };
  }
  const refError = ref.error ?? "";
  if (ours === undefined) {
    // same failure: where the template raised, the reference reports the same message
    const raised = /Jinja Exception: (.*?)(?: \(in `[^]*)?$/s.exec((ourError as Error).message)?.[1];
    if (raised !== undefined && !refError.includes(raised))
      return { kind: "differs", why: `both fail, for different reasons: reference ${oneLine(refError)}; ours ${oneLine((ourError as Error).message)}` };
    return { kind: "both-raise", reference: oneLine(refError), ours: oneLine((ourError as Error).message) };
  }
  // The reference can fail after rendering (its template analysis); then check the engine alone
  // on the exact context we rendered.
  const prepared = prepareChatContext(source, ourRequest);
  const vars = conv.add_generation_prompt ? { ...prepared.variables, add_generation_prompt: true } : prepared.variables;
  const engine = await h.request<{ output: string }>("jinja.render", { template: prepared.source, context: vars, now: NOW });
  const mine = renderTemplate(prepared.source, vars, { now: new Date(NOW), printing: "reference" });
  if (engine.ok && engine.result!.output === mine)
    return { kind: "identical-engine", note: `reference apply failed (${oneLine(refError)}); same text from its Jinja engine` };
  return { kind: "differs", why: `reference fails (${oneLine(refError)}), ours renders` };
}

describe("render parity with common_chat_templates_apply", () => {
  it("has the fixed set of conversations", () => {
    expect(conversations.map((c) => c.name)).toEqual(
      expect.arrayContaining(["plain-qa", "system-prompt", "multi-turn", "tool-call", "parallel-tool-calls", "nested-arguments", "reasoning-content"]),
    );
    expect(templates.length).toBeGreaterThanOrEqual(68);
  });

  for (const t of templates) {
    it(t, async () => {
      const source = fs.readFileSync(path.join(TEMPLATES, t), "utf8");
      const row = new Map<string, Status>();
      results.set(t, row);
      for (const conv of conversations) row.set(conv.name, await compare(source, conv));
      const differs = [...row].filter(([, s]) => s.kind === "differs").map(([c, s]) => `${c}: ${(s as { why: string }).why}`);
      expect(differs).toEqual([]);
    });
  }
});

// The engine alone: llama.cpp's Jinja runtime on the same plain context (no chat preprocessing;
// tool-call arguments as objects, content as given), and the capability probes.
describe("engine parity with llama.cpp's Jinja runtime", () => {
  const snake = (k: string): string => k.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());
  for (const t of templates) {
    it(t, async () => {
      const source = fs.readFileSync(path.join(TEMPLATES, t), "utf8");
      const refCaps = await h.call<Record<string, boolean>>("jinja.caps", { template: source });
      const ours = Object.fromEntries(Object.entries(templateCaps(source)).map(([k, v]) => [snake(k), v]));
      expect(ours).toEqual(refCaps);
      const mismatches: string[] = [];
      for (const conv of conversations) {
        const messages = (conv.messages as Record<string, unknown>[]).map((m) =>
          Array.isArray(m.tool_calls)
            ? {
                ...m,
                tool_calls: (m.tool_calls as { function: { arguments: string } }[]).map((tc) => ({
                  ...tc,
                  function: { ...tc.function, arguments: JSON.parse(tc.function.arguments) },
                })),
              }
            : m,
        );
        const context: Record<string, unknown> = { messages, bos_token: BOS, eos_token: EOS, enable_thinking: conv.enable_thinking ?? true };
        if (conv.tools) context.tools = conv.tools;
        if (conv.add_generation_prompt) context.add_generation_prompt = true;
        const ref = await h.request<{ output: string }>("jinja.render", { template: source, context, now: NOW });
        let ours: string | undefined;
        try {
          ours = renderTemplate(source, context, { now: new Date(NOW), printing: "reference" });
        } catch (e) {
          expect(e).toBeInstanceOf(LlamapegError);
        }
        if (ref.ok !== (ours !== undefined)) mismatches.push(`${conv.name}: reference ${ref.ok ? "renders" : "raises"}, ours ${ours !== undefined ? "renders" : "raises"}`);
        else if (ref.ok && ref.result!.output !== ours) mismatches.push(`${conv.name}: ${firstDifference(ref.result!.output, ours!)}`);
      }
      expect(mismatches).toEqual([]);
    });
  }
});

// ---- docs table ----------------------------------------------------------------------------------

function writeParityTable(): void {
  const docs = path.join(ROOT, "docs/templates.md");
  const symbol = (s: Status): string =>
    s.kind === "identical" ? "=" : s.kind === "identical-engine" ? "=*" : s.kind === "both-raise" ? "R" : "**≠**";
  let identical = 0;
  let engine = 0;
  let raise = 0;
  let differs = 0;
  const notes: string[] = [];
  const header = `| template | ${conversations.map((c) => c.name).join(" | ")} |`;
  const sep = `| --- | ${conversations.map(() => ":-:").join(" | ")} |`;
  const rows = [...results].sort(([a], [b]) => a.localeCompare(b)).map(([t, row]) => {
    const cells = conversations.map((c) => {
      const s = row.get(c.name)!;
      if (s.kind === "identical") identical++;
      else if (s.kind === "identical-engine") engine++;
      else if (s.kind === "both-raise") raise++;
      else differs++;
      if (s.kind === "both-raise") notes.push(`- ${t} / ${c.name}: both raise — ours: \`${s.ours}\``);
      if (s.kind === "identical-engine") notes.push(`- ${t} / ${c.name}: ${s.note}`);
      if (s.kind === "differs") notes.push(`- ${t} / ${c.name}: **differs** — ${s.why}`);
      return symbol(s);
    });
    return `| ${t.replace(/\.jinja$/, "")} | ${cells.join(" | ")} |`;
  });
  const total = identical + engine + raise + differs;
  const body = [
    "",
    `Generated by \`LLAMAPEG_WRITE_PARITY=1 npx vitest run test/conformance/render-parity\` against the reference harness.`,
    "",
    `**${identical + engine + raise} / ${total}** template × conversation pairs agree: ${identical} identical prompts, ` +
      `${engine} identical where the reference's apply fails after rendering (compared through its Jinja engine), ` +
      `${raise} raise in both; ${differs} differ. Identical means the prompt and the generation prompt.`,
    "",
    "Legend: `=` identical prompt · `=*` identical engine output (reference apply failed, see notes) · `R` raises in both · `≠` differs.",
    "",
    header,
    sep,
    ...rows,
    "",
    "Notes:",
    "",
    ...(notes.length ? notes : ["- none"]),
    "",
  ].join("\n");
  spliceDocTable(docs, "parity", body);
}
