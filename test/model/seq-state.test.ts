// Sequence state on disk (issue 23): save -> dispose -> load -> continue gives the tokens of never
// stopping, on a transformer, a hybrid and a sliding-window model; bad files are coded errors
// that leave the sequence empty and usable and the context's other sequences untouched.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { ContextOptions, Model } from "../../lib/llama/index.js";
import { loadTestModel, type TestModelVariant } from "../support/models.js";
import { codeOf } from "./helpers.js";

const KINDS = ["qwen2", "lfm2", "gemma3"] as const satisfies readonly TestModelVariant[];
type Kind = (typeof KINDS)[number];
const CONTEXT: ContextOptions = { contextSize: 1024, batchSize: 64, threads: 1, swaFull: false };
const models = new Map<Kind, Model>();
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "llamapeg-state-"));
  for (const kind of KINDS) models.set(kind, await loadTestModel(kind));
});

afterAll(() => {
  for (const m of models.values()) m.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const words = (n: number, salt: number) => Array.from({ length: n }, (_, i) => `w${(i * 7 + salt) % 97}`).join(" ");
const greedy = { maxTokens: 24, temperature: 0 };

function concat(...parts: ArrayLike<number>[]): Int32Array {
  return Int32Array.from(parts.flatMap((p) => Array.from(p)));
}

describe("save -> dispose -> load -> continue", () => {
  for (const kind of KINDS) {
    it(`${kind}: the same tokens as never stopping, with the saved prefix reused`, async () => {
      const model = models.get(kind)!;
      const p1 = model.tokenize(words(300, 2)); // past gemma3's 256 SWA cells
      const extra = model.tokenize(` and then ${words(20, 5)}`);

      const straight = model.createContext(CONTEXT);
      const a = await straight.generate(p1, greedy).result();
      const p2 = concat(p1, a.tokens, extra);
      const b = await straight.generate(p2, greedy).result();
      straight.dispose();

      const file = join(dir, `${kind}.state`);
      const first = model.createContext(CONTEXT);
      const s1 = first.getSequence();
      const a2 = await s1.generate(p1, greedy).result();
      const saved = s1.tokens;
      const info = await s1.saveState(file);
      first.dispose();
      expect(a2.tokens).toEqual(a.tokens);
      expect(info.tokens).toBe(saved.length);
      expect(info.bytes).toBe(readFileSync(file).length);

      const second = model.createContext(CONTEXT);
      const seq = second.getSequence();
      const loaded = await seq.loadState(file);
      expect(loaded.tokens).toBe(p1.length + a.tokens.length - 1);
      expect(seq.tokens).toEqual(saved);
      const b2 = await seq.generate(p2, greedy).result();
      second.dispose();
      expect(b2.tokens).toEqual(b.tokens);
      expect(b2.stats.reusedTokens).toBe(b.stats.reusedTokens);
      expect(b2.stats.reusedTokens).toBe(loaded.tokens);
    });
  }
});

describe("bad state files", () => {
  // One good file per model, and a context whose other sequence holds a conversation that must
  // survive every failed load.
  async function setup(kind: Kind, options: ContextOptions = {}) {
    const model = models.get(kind)!;
    const c = model.createContext({ ...CONTEXT, sequences: 2, ...options });
    const keeper = c.getSequence();
    await keeper.generate(model.tokenize(words(50, 9)), greedy).result();
    const kept = keeper.tokens;
    const target = c.getSequence();
    return { model, c, keeper, kept, target };
  }

  async function goodFile(kind: Kind, name: string, tokens = 300, options: ContextOptions = {}): Promise<string> {
    const model = models.get(kind)!;
    const c = model.createContext({ ...CONTEXT, ...options });
    const s = c.getSequence();
    await s.generate(model.tokenize(words(tokens, 4)), greedy).result();
    const file = join(dir, name);
    await s.saveState(file);
    c.dispose();
    return file;
  }

  async function expectEmptyAndUsable(t: Awaited<ReturnType<typeof setup>>) {
    expect(t.target.tokens.length).toBe(0);
    expect(t.keeper.tokens).toEqual(t.kept);
    const prompt = t.model.tokenize(words(40, 1));
    const r = await t.target.generate(prompt, greedy).result();
    const cold = t.model.createContext(CONTEXT);
    const ref = await cold.generate(prompt, greedy).result();
    cold.dispose();
    expect(r.tokens).toEqual(ref.tokens);
    expect(r.stats.reusedTokens).toBe(0);
  }

  it("another model, truncated, flipped bytes, not a state file, a missing file, too small a context, another swaFull", async () => {
    const q = await goodFile("qwen2", "q.state");
    const g = await goodFile("gemma3", "g.state");
    const bytes = readFileSync(q);
    const truncated = join(dir, "truncated.state");
    writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const flipped = join(dir, "flipped.state");
    const copy = Buffer.from(bytes);
    copy[Math.floor(copy.length * 0.7)]! ^= 0x10;
    writeFileSync(flipped, copy);
    const garbage = join(dir, "garbage.state");
    writeFileSync(garbage, "hello, not a state");

    const cases: [Kind, string, string, ContextOptions?][] = [
      ["lfm2", q, "ERR_STATE_MISMATCH"],
      ["qwen2", truncated, "ERR_STATE_INVALID"],
      ["qwen2", flipped, "ERR_STATE_INVALID"],
      ["qwen2", garbage, "ERR_STATE_INVALID"],
      ["qwen2", join(dir, "missing.state"), "ERR_STATE_INVALID"],
      ["qwen2", q, "ERR_STATE_MISMATCH", { contextSize: 256 }],
      ["gemma3", g, "ERR_STATE_MISMATCH", { swaFull: true }],
    ];
    for (const [kind, file, code, options] of cases) {
      const t = await setup(kind, options);
      // something in the target first: a failed load must empty it
      await t.target.generate(t.model.tokenize(words(30, 3)), greedy).result();
      const error = await codeOf(() => t.target.loadState(file));
      expect([file, error.code]).toEqual([file, code]);
      expect(error.where).toBe(file);
      await expectEmptyAndUsable(t);
      t.c.dispose();
    }
  });

  it("saving or loading while generating is ERR_BUSY; a disposed sequence is ERR_DISPOSED", async () => {
    const t = await setup("lfm2");
    const file = join(dir, "busy.state");
    const gen = t.target.generate(t.model.tokenize(words(30, 3)), { maxTokens: 200, temperature: 0 });
    expect((await codeOf(() => t.target.saveState(file))).code).toBe("ERR_BUSY");
    expect((await codeOf(() => t.target.loadState(file))).code).toBe("ERR_BUSY");
    await gen.result();
    await t.target.saveState(file);
    t.target.dispose();
    expect((await codeOf(() => t.target.loadState(file))).code).toBe("ERR_DISPOSED");
    t.c.dispose();
  });
});
