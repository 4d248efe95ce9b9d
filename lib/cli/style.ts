/**
 * Terminal styling that follows the conventions: ANSI codes only when the stream is a terminal and
 * NO_COLOR (https://no-color.org) is not set; piped or redirected output stays plain text.
 */
export interface Style {
  dim(text: string): string;
  cyan(text: string): string;
  yellow(text: string): string;
  red(text: string): string;
}

const plain = (text: string): string => text;
const PLAIN: Style = { dim: plain, cyan: plain, yellow: plain, red: plain };

function wrap(code: number): (text: string) => string {
  return (text) => (text === "" ? "" : `\x1b[${code}m${text}\x1b[0m`);
}
const ANSI: Style = { dim: wrap(2), cyan: wrap(36), yellow: wrap(33), red: wrap(31) };

/** Whether `stream` gets colours: a TTY, and NO_COLOR unset or empty. */
export function colorEnabled(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === "");
}

export function styleFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Style {
  return colorEnabled(stream, env) ? ANSI : PLAIN;
}
