/** `--tools FILE`: an OpenAI tools JSON array, checked the way a request's `tools` are checked. */
import type { ChatTool } from "../chat/tools.js";
import { LlamapegError } from "../errors.js";
import { normalizeChatRequest } from "../openai/request.js";
import { readJsonFile } from "./json-file.js";

/** "none" is no tools; anything else is a file. A bad file is one line naming the file and where. */
export function readToolsFile(path: string): ChatTool[] {
  if (path === "none") return [];
  const parsed = readJsonFile(path, "tools");
  if (!Array.isArray(parsed)) throw new LlamapegError("ERR_INVALID_ARGUMENT", `--tools ${path}: expected a JSON array of tools`, { where: path });
  try {
    return normalizeChatRequest({ messages: [{ role: "user", content: "" }], tools: parsed as ChatTool[] }).tools;
  } catch (e) {
    if (!(e instanceof LlamapegError)) throw e;
    // The request checker names `tools[i]...`; in the file that is `[i]...`.
    const message = e.message.replace(/^tools(?=\[)/, "");
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `--tools ${path}: ${message}`, { where: path });
  }
}
