// A bench "side" is a long-lived child process that loaded the model once and answers one JSON
// line per request. Each side runs in its own process so that its environment (OMP_WAIT_POLICY
// and the like) is exactly what it was given: nothing the orchestrator loaded leaks into it.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/**
 * Starts `command args` and waits for its `{"ready": true}` line. `encode(request)` turns a
 * request object into the line the child reads; `decode(line)` its reply into a run record.
 */
export async function startSide({ name, command, args, env, encode = JSON.stringify, decode = JSON.parse }) {
  const child = spawn(command, args, { env, stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let exited = null;
  child.on("exit", (code, signal) => (exited = code ?? signal));
  const nextLine = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error(`bench side ${name} exited (${exited})`);
    return value;
  };
  const hello = JSON.parse(await nextLine());
  if (!hello.ready) throw new Error(`bench side ${name} did not start: ${JSON.stringify(hello)}`);
  return {
    name,
    info: hello,
    async run(request) {
      child.stdin.write(encode(request) + "\n");
      const reply = decode(await nextLine());
      if (reply.error) throw new Error(`bench side ${name}: ${reply.error}`);
      return reply;
    },
    close() {
      child.stdin.end();
      return new Promise((resolve) => (exited !== null ? resolve() : child.once("exit", resolve)));
    },
  };
}

/** Serves requests read as JSON lines on stdin with `handle(request) -> reply`, in order. */
export async function serveLines(ready, handle) {
  process.stdout.write(JSON.stringify({ ready: true, ...ready }) + "\n");
  const rl = createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (line.trim() === "") continue;
    let reply;
    try {
      reply = await handle(JSON.parse(line));
    } catch (error) {
      reply = { error: error instanceof Error ? error.stack ?? error.message : String(error) };
    }
    process.stdout.write(JSON.stringify(reply) + "\n");
  }
}

/** CPU milliseconds of this whole process (every thread) since `start` (process.cpuUsage()). */
export function cpuMsSince(start) {
  const u = process.cpuUsage(start);
  return (u.user + u.system) / 1000;
}
