/**
 * What the chat layer knows of a template source, worked out once per template and cached: the
 * source as the reference renders it (`common_chat_templates_init`'s patches), its hash, its
 * probed capabilities (`common/jinja/caps.cpp`), the model family that claims it and the quirks
 * applied to its input. The plan, the template input and the analysis probes all read these.
 */
import { createHash } from "node:crypto";

import { boundedCache } from "../cache.js";
import { type TemplateCaps, templateCaps } from "../jinja/index.js";
import type { ChatFamily, TemplateQuirks } from "./families/family.js";
import { QUIRKS } from "./families/quirks.js";
import { detectFamily } from "./families/registry.js";
import { concatContentParts } from "./messages.js";
import { patchTemplateSource } from "./source-patches.js";

export interface TemplateFacts {
  /** The patched, normalized source that is rendered. */
  readonly source: string;
  /** sha256 of the source as given, hex. */
  readonly hash: string;
  readonly caps: Readonly<TemplateCaps>;
  /** The family whose plan and hooks the template gets (families/registry.ts); undefined: the analysis path. */
  readonly family: ChatFamily | undefined;
  /** Quirks of templates without a family of their own (families/quirks.ts) that apply to this one. */
  readonly quirks: readonly TemplateQuirks[];
}

const facts = boundedCache<string, TemplateFacts>(32);

/** The facts of a template source (computed on first use; throws the template's compile error). */
export function templateFacts(given: string): TemplateFacts {
  return facts.getOrSet(given, () => {
    const source = patchTemplateSource(given);
    return {
      source,
      hash: createHash("sha256").update(given).digest("hex"),
      caps: templateCaps(source),
      family: detectFamily(source),
      quirks: QUIRKS.filter((q) => q.detect(source)),
    };
  });
}

type JsonObject = Record<string, unknown>;

/**
 * `messages_inp_normalizer`: fits the content shape to what the template accepts (string-only
 * templates get typed parts joined, typed-only templates get strings wrapped as
 * `[{type: "text", text}]`). The template analysis probes apply exactly this, as
 * `common_chat_template_direct_apply` does.
 */
export function fitContent(caps: TemplateCaps, messages: readonly JsonObject[]): JsonObject[] {
  const onlyString = caps.supportsStringContent && !caps.supportsTypedContent;
  const onlyTyped = !caps.supportsStringContent && caps.supportsTypedContent;
  if (!onlyString && !onlyTyped) return [...messages];
  return messages.map((m) => {
    if (!("content" in m)) return m;
    const c = m.content;
    if (onlyTyped && typeof c === "string") return { ...m, content: [{ type: "text", text: c }] };
    if (onlyString && Array.isArray(c)) {
      const parts = (c as JsonObject[])
        .filter((p) => p.type === "text" || p.type === "media_marker")
        .map((p) => ({ type: p.type as "text" | "media_marker", text: typeof p.text === "string" ? p.text : "" }));
      return { ...m, content: concatContentParts(parts) };
    }
    return m;
  });
}
