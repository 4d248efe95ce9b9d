// CLI conventions that need no model: colours only on a terminal without NO_COLOR, help and
// version, exit statuses by error kind, model size lines.
import { afterEach, describe, expect, it, vi } from "vitest";

import { followUpRequest } from "../../../lib/cli/chat-interactive.js";
import { answerDemoCall } from "../../../lib/cli/demo-tools.js";
import { formatBytes, formatCount, loadedModelFacts, summarizeModel } from "../../../lib/cli/model-summary.js";
import { main, reportError } from "../../../lib/cli/program.js";
import { colorEnabled, styleFor } from "../../../lib/cli/style.js";
import { UsageError } from "../../../lib/cli/usage-error.js";
import { LlamapegError } from "../../../lib/errors.js";

async function stdoutOf(run: () => Promise<void>): Promise<string> {
  let out = "";
  const log = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void (out += `${args.join(" ")}\n`));
  try {
    await run();
  } finally {
    log.mockRestore();
  }
  return out;
}

afterEach(() => vi.restoreAllMocks());

describe("colours", () => {
  it("only on a TTY, and never with NO_COLOR set (non-empty)", () => {
    expect(colorEnabled({ isTTY: true }, {})).toBe(true);
    expect(colorEnabled({ isTTY: false }, {})).toBe(false);
    expect(colorEnabled({}, {})).toBe(false);
    expect(colorEnabled({ isTTY: true }, { NO_COLOR: "1" })).toBe(false);
    expect(colorEnabled({ isTTY: true }, { NO_COLOR: "" })).toBe(true);
    expect(styleFor({ isTTY: true }, {}).dim("x")).toBe("\x1b[2mx\x1b[0m");
    expect(styleFor({ isTTY: true }, { NO_COLOR: "1" }).cyan("x")).toBe("x");
    expect(styleFor({ isTTY: false }, {}).yellow("x")).toBe("x");
  });
});

describe("help, version, exit statuses", () => {
  it("--version prints package.json's version", async () => {
    const { version } = (await import("../../../package.json", { with: { type: "json" } })).default as { version: string };
    expect(await stdoutOf(() => main(["--version"]))).toBe(`llamapeg ${version}\n`);
  });

  it("help <command> prints that command's usage; the overview lists every command", async () => {
    expect(await stdoutOf(() => main(["help", "chat"]))).toMatch(/^llamapeg chat \[options\]/);
    expect(await stdoutOf(() => main(["help", "bench"]))).toMatch(/^llamapeg bench \[options\]/);
    const overview = await stdoutOf(() => main([]));
    for (const c of ["chat", "analyze", "bench"]) expect(overview).toMatch(new RegExp(`^  ${c} `, "m"));
  });

  it("usage errors exit 2 with a hint; runtime errors exit 1 in one line; bugs print a stack", async () => {
    const lines: string[] = [];
    const write = (t: string) => void lines.push(t);
    await expect(main(["nope"])).rejects.toBeInstanceOf(UsageError);
    await expect(main(["help", "nope"])).rejects.toBeInstanceOf(UsageError);
    const flag = await main(["chat", "--max-tokens", "-3"]).catch((e: unknown) => e);
    expect(flag).toBeInstanceOf(UsageError);
    expect(reportError(flag, write)).toBe(2);
    expect(lines.join("")).toContain("see: llamapeg help chat");
    lines.length = 0;
    expect(reportError(new LlamapegError("ERR_MODEL_NOT_FOUND", "no such model", { where: "/x.gguf" }), write)).toBe(1);
    expect(lines.join("")).toBe("llamapeg: no such model (/x.gguf) [ERR_MODEL_NOT_FOUND]\n");
    lines.length = 0;
    expect(reportError(new TypeError("boom"), write)).toBe(1);
    expect(lines.join("")).toMatch(/TypeError: boom\n\s+at /);
  });
});

describe("model size", () => {
  it("replaces llama.cpp's '?B' with the parameter count", () => {
    const facts = loadedModelFacts({ description: "qwen2 ?B F16", parameters: 19_546_688, sizeBytes: 39_094_528 });
    expect(summarizeModel(facts)).toBe("qwen2 · 19.5M parameters · F16 · 37.3 MiB");
    expect(loadedModelFacts({ description: "llama 8B Q4_K - Medium", parameters: 8.03e9, sizeBytes: 4.9e9 }).fileType).toBe("Q4_K - Medium");
    expect(formatCount(7_241_732_096)).toBe("7.2B");
    expect(formatCount(494_032_768)).toBe("494M");
    expect(formatCount(512)).toBe("512");
    expect(formatBytes(1536)).toBe("1.5 KiB");
  });
});

describe("interactive chat helpers", () => {
  it("after tool results a forced tool choice becomes auto", () => {
    expect(followUpRequest({ tool_choice: "required", calls_only: true, max_tokens: 9 })).toEqual({ tool_choice: "auto", max_tokens: 9 });
    expect(followUpRequest({ tool_choice: { type: "function", function: { name: "f" } } }).tool_choice).toBe("auto");
    expect(followUpRequest({ tool_choice: "none" }).tool_choice).toBe("none");
  });

  it("the demo tools answer every call, cut arguments with an error result", () => {
    const ok = answerDemoCall({ id: "c1", function: { name: "get_weather", arguments: '{"city":"Paris"}' } });
    expect(ok.role).toBe("tool");
    expect(ok.tool_call_id).toBe("c1");
    expect(JSON.parse(ok.content)).toMatchObject({ city: "Paris", unit: "celsius" });
    expect(JSON.parse(answerDemoCall({ id: "c2", function: { name: "get_weather", arguments: '{"ci' } }).content)).toHaveProperty("error");
    expect(JSON.parse(answerDemoCall({ id: "c3", function: { name: "search_web", arguments: '{"query":"q"}' } }).content).results).toHaveLength(1);
  });
});
