/**
 * Parsing, once per template source: @huggingface/jinja's lexer (lstrip_blocks + trim_blocks, the
 * chat-template defaults the reference uses too) and parser, cached by the source's hash.
 */
import { createHash } from "node:crypto";
import { Template } from "@huggingface/jinja";
import { LlamapegError } from "../../errors.js";
import type { NodeOf } from "./ast.js";

export interface CompiledTemplate {
  /** sha256 of the source, hex; the cache key. */
  readonly hash: string;
  /** The source as the reference sees it: CRLF/CR normalized to LF. */
  readonly source: string;
  readonly program: NodeOf<"Program">;
}

const CACHE_LIMIT = 64;
const cache = new Map<string, CompiledTemplate>();

export function templateHash(source: string): string {
  return createHash("sha256").update(source).digest("hex");
}

/** Parses `source` (or returns the cached parse). A syntax error is ERR_TEMPLATE_RENDER. */
export function compileTemplate(source: string): CompiledTemplate {
  if (typeof source !== "string") throw new LlamapegError("ERR_INVALID_ARGUMENT", "template source must be a string");
  const hash = templateHash(source);
  const hit = cache.get(hash);
  if (hit) {
    // keep recently used entries at the back of the Map (LRU order)
    cache.delete(hash);
    cache.set(hash, hit);
    return hit;
  }
  // the reference's lexer normalizes line endings before anything else
  const normalized = source.replace(/\r\n?/g, "\n");
  let program: NodeOf<"Program">;
  try {
    program = new Template(normalized).parsed as unknown as NodeOf<"Program">;
  } catch (e) {
    // the parser runs off the token list (a TypeError) when a block is never closed
    const msg = e instanceof TypeError ? `unexpected end of template, is a block left open? (${e.message})` : e instanceof Error ? e.message : String(e);
    const at = locateSyntaxError(normalized);
    throw new LlamapegError("ERR_TEMPLATE_RENDER", `chat template has a syntax error: ${msg}${at ? ` (at ${at.where}: \`${at.tag}\`)` : ""}`, {
      where: `template ${hash.slice(0, 12)}${at ? ` ${at.where}` : ""}`,
      cause: e,
    });
  }
  const compiled: CompiledTemplate = { hash, source: normalized, program };
  cache.set(hash, compiled);
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  return compiled;
}

/** Block statements that need their end tag to parse on their own. */
const BLOCK_ENDS: Record<string, string> = {
  if: "{% endif %}",
  for: "{% endfor %}",
  macro: "{% endmacro %}",
  call: "{% endcall %}",
  filter: "{% endfilter %}",
  generation: "{% endgeneration %}",
};

/**
 * The parser keeps no positions, so find the first tag that does not parse on its own (block
 * openers get their end tag, continuation tags are skipped). Structural errors such as a missing
 * `endif` are not found this way; the message then stands alone.
 */
function locateSyntaxError(source: string): { where: string; tag: string } | undefined {
  const tagRe = /\{\{[^]*?\}\}|\{%[^]*?%\}|\{#[^]*?#\}/g;
  for (const m of source.matchAll(tagRe)) {
    const tag = m[0];
    let probe: string | undefined;
    if (tag.startsWith("{{")) probe = tag;
    else if (tag.startsWith("{%")) {
      const word = /^\{%-?\s*(\w+)/.exec(tag)?.[1] ?? "";
      if (word === "set" && !tag.includes("=")) probe = `${tag}{% endset %}`;
      else if (word === "set") probe = tag;
      else if (word in BLOCK_ENDS) probe = tag + BLOCK_ENDS[word];
      else if (word === "elif") probe = `{% if true %}${tag.replace(/\belif\b/, "if")}{% endif %}{% endif %}`;
    }
    if (probe === undefined) continue;
    try {
      new Template(probe);
    } catch {
      let line = 1;
      let last = -1;
      for (let i = 0; i < m.index; i++)
        if (source.charCodeAt(i) === 10) {
          line++;
          last = i;
        }
      const short = tag.length > 60 ? tag.slice(0, 60) + "…" : tag;
      return { where: `line ${line}, column ${m.index - last}`, tag: short.replace(/\s+/g, " ") };
    }
  }
  return undefined;
}
