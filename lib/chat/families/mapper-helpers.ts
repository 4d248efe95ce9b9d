/** Tree walks the family mappers share (Gemma 4, MiniMax M3). */
import type { AssistantMessage } from "../messages.js";
import { TAG } from "../tags.js";
import type { FamilyAstView } from "./family.js";

/** First descendant with `tag`, at most `maxDepth` levels down; -1 if none. */
export function findByTag(ast: FamilyAstView, parent: number, tag: string, maxDepth = 3): number {
  for (const c of ast.children(parent)) {
    if (ast.tag(c) === tag) return c;
    if (maxDepth > 1) {
      const r = findByTag(ast, c, tag, maxDepth - 1);
      if (r !== -1) return r;
    }
  }
  return -1;
}

/** Visits nodes until a reasoning/content/tool node, which `onTool` or the text rules handle. */
export function visitTopDown(ast: FamilyAstView, msg: AssistantMessage, onTool: (id: number) => void): void {
  const stack = [...ast.roots].reverse();
  while (stack.length > 0) {
    const id = stack.pop()!;
    const tag = ast.tag(id);
    if (tag === TAG.REASONING) msg.reasoning_content += ast.text(id);
    else if (tag === TAG.CONTENT) msg.content += ast.text(id);
    else if (tag === TAG.TOOL) onTool(id);
    else {
      const kids = ast.children(id);
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
    }
  }
}
