/** Where an offset of a text is, as editors count: shared by every error message that points into a source (templates, GBNF, JSON files and bodies). */

/** 1-based line and column of `offset` in `text` (columns count UTF-16 code units; an offset past the end is the end). */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lastNl = -1;
  const end = Math.min(offset, text.length);
  for (let i = text.indexOf("\n"); i >= 0 && i < end; i = text.indexOf("\n", i + 1)) {
    line++;
    lastNl = i;
  }
  return { line, column: end - lastNl };
}
