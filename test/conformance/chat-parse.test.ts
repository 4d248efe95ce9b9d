/**
 * Chat output parsing and diffs vs the C++ reference, over the hand-built grammars of
 * test/fixtures/chat/grammars.ts (every tool-call shape and option). The tree is built once by our
 * builders and loaded by both sides, so this checks parsing + AST-to-message mapping and diffs; the
 * builders themselves are compared in chat-builders.test.ts.
 *
 * For every output, at every byte: the partial parse (reference `common_chat_peg_parse` with
 * is_partial) gives the same message (arguments compared as JSON when they are JSON), or both
 * reject; consecutive partial messages give the same diffs (`compute_diffs`), or both reject.
 * Complete parses: ours is strict (the whole output must match), the reference stays lenient: where
 * we accept, the messages must be the same; where we reject, the reference's parse must not be a
 * success (it is need_more_input or a failure).
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diffMessages } from "../../lib/chat/diff.js";
import { emptyAssistantMessage, makeToolCall, type AssistantMessage } from "../../lib/chat/messages.js";
import { parseChatOutput } from "../../lib/chat/parse.js";
import { chatPlan } from "../../lib/chat/plan.js";
import { LlamapegError } from "../../lib/errors.js";
import { GRAMMARS } from "../fixtures/chat/grammars.js";
import { getHarness, type Harness } from "../support/harness.js";
import { b64, cutsCharacter, dropEmptyDiffs, normOurs, normRef, toRefDiffs, toRefMsg, type RefDiff, type RefMsg } from "./chat-compare.js";

const encoder = new TextEncoder();
let h: Harness;
const totals = { parses: 0, diffs: 0, refUtf8Rejects: 0 };

beforeAll(async () => {
  h = await getHarness();
});

afterAll(async () => {
  await h?.close();
  console.log(`chat conformance: ${totals.parses} parses, ${totals.diffs} diffs compared; ${totals.refUtf8Rejects} cuts inside a character the reference rejects (invalid UTF-8 in a JSON string)`);
});

function ourParse(plan: ReturnType<typeof chatPlan>, bytes: Uint8Array, partial: boolean): AssistantMessage | LlamapegError {
  try {
    return parseChatOutput(plan, bytes, { partial });
  } catch (e) {
    if (e instanceof LlamapegError && e.code === "ERR_CHAT_PARSE") return e;
    throw e;
  }
}

async function compareDiff(prev: AssistantMessage, next: AssistantMessage): Promise<void> {
  totals.diffs++;
  const ref = await h.request<RefDiff[]>("chat.diff", { prev: toRefMsg(prev), next: toRefMsg(next) });
  let ours: ReturnType<typeof diffMessages> | null = null;
  try {
    ours = diffMessages(prev, next);
  } catch (e) {
    expect((e as LlamapegError).code).toBe("ERR_CHAT_DIFF");
  }
  expect(ours === null, `diff ${JSON.stringify(toRefMsg(prev))} -> ${JSON.stringify(toRefMsg(next))}: reference ${ref.ok ? "accepts" : `rejects (${ref.error})`}`).toBe(!ref.ok);
  if (ref.ok && ours !== null) expect(toRefDiffs(ours)).toEqual(dropEmptyDiffs(ref.result!));
}

describe("chat parse and diff conformance", () => {
  for (const g of GRAMMARS) {
    it(g.name, async () => {
      const arena = g.build();
      const format = g.format ?? "peg-native";
      const plan = chatPlan(arena, { generationPrompt: g.generationPrompt, format, referenceMode: true });
      const params = { format, generation_prompt: g.generationPrompt, parser: arena.toJSON() };
      for (const text of [...g.valid, ...g.broken]) {
        const bytes = encoder.encode(text);
        const cuts = [...Array(bytes.length + 1).keys()];
        const refs = await Promise.all(
          cuts.map((cut) => h.request<{ msg: RefMsg }>("chat.parse", { params, text_b64: b64(bytes.subarray(0, cut)), partial: true })),
        );
        let prev: AssistantMessage | null = null;
        for (const cut of cuts) {
          totals.parses++;
          const ref = refs[cut]!;
          const ours = ourParse(plan, bytes.subarray(0, cut), true);
          const inChar = cutsCharacter(bytes, cut);
          const where = `${JSON.stringify(text)} cut at ${cut}`;
          if (!ref.ok && inChar && /invalid UTF-8/i.test(ref.error ?? "")) {
            totals.refUtf8Rejects++; // we leave the cut character out instead
            continue;
          }
          expect(ours instanceof LlamapegError, `${where}: reference ${ref.ok ? "accepts" : `rejects (${ref.error})`}`).toBe(!ref.ok);
          if (!ref.ok || ours instanceof LlamapegError) continue;
          expect(normOurs(ours), where).toEqual(normRef(ref.result!.msg, inChar));
          if (prev !== null && !inChar) await compareDiff(prev, ours);
          if (!inChar) prev = ours;
        }
        // Complete parse.
        const ref = await h.request<{ msg: RefMsg }>("chat.parse", { params, text_b64: b64(bytes), partial: false });
        const refType = await h.call<{ type: string }>("peg.parse", {
          arena: params.parser,
          input_b64: b64(encoder.encode(g.generationPrompt + text)),
          partial: true,
        });
        const ours = ourParse(plan, bytes, false);
        if (ours instanceof LlamapegError) {
          // We require the whole output to match; the reference (lenient) must not call it a success.
          expect(refType.type, `${JSON.stringify(text)} complete: we reject, the reference parses`).not.toBe("success");
        } else {
          expect(ref.ok, `${JSON.stringify(text)} complete: we accept, the reference rejects (${ref.error})`).toBe(true);
          expect(normOurs(ours), `${JSON.stringify(text)} complete`).toEqual(normRef(ref.result!.msg));
        }
      }
    });
  }

  it("random message pairs diff the same", async () => {
    const text = fc.string({ unit: fc.constantFrom("a", "b", "{", '"', "é"), maxLength: 4 });
    const call = fc.record({ name: fc.constantFrom("", "f", "fo", "g"), args: text, id: fc.constantFrom("", "x") });
    const msg = fc.record({ content: text, reasoning: text, calls: fc.array(call, { maxLength: 3 }) });
    const toMsg = (m: { content: string; reasoning: string; calls: { name: string; args: string; id: string }[] }): AssistantMessage => ({
      ...emptyAssistantMessage(),
      content: m.content,
      reasoning_content: m.reasoning,
      tool_calls: m.calls.map((c) => makeToolCall(c.name, c.args, c.id)),
    });
    // Half the pairs are built to extend each other, so both paths are exercised.
    const pair = fc.oneof(
      fc.tuple(msg, msg),
      fc.tuple(msg, text, text).map(([m, a, b]) => [m, { ...m, content: m.content + a, calls: m.calls.map((c, i, all) => (i === all.length - 1 ? { ...c, args: c.args + b } : c)) }] as const),
    );
    await fc.assert(fc.asyncProperty(pair, async ([a, b]) => compareDiff(toMsg(a), toMsg(b))), { numRuns: 300 });
  });
});
