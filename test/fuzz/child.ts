// Runs fuzz cases where a crash is possible in child processes: one child runs cases in order,
// printing "S <i>" before and "R <i> <json>" after each; when it dies (a signal, an abort) or a
// case runs past its time, the case in flight is recorded as such and a fresh child goes on
// with the next one. An RSS watchdog kills a child whose resident memory passes the limit and
// records the case as "oom" (a runaway allocation fails the case, not the machine).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

/** The resident set of a process in MB (Linux /proc; elsewhere 0: no watchdog). */
function rssMb(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m === null ? 0 : Number(m[1]) / 1024;
  } catch {
    return 0;
  }
}

export type ChildResult =
  | { outcome: "crash"; signal: string | null; status: number | null; stderr: string }
  | { outcome: "hang"; ms: number }
  | { outcome: "oom"; rssMb: number }
  | ({ outcome: string; ms?: number; rss?: number; code?: string | null; message?: string } & Record<string, unknown>);

export interface ChildRunOptions {
  /** node arguments: the script and what it needs, then the index to start from is appended. */
  args: (first: number) => string[];
  count: number;
  /** A case that runs longer is killed and recorded as a hang. */
  caseTimeoutMs: number;
  /** A child whose RSS passes this is killed and its case recorded as "oom". Default 3072 MB. */
  rssLimitMb?: number;
  env?: NodeJS.ProcessEnv;
}

export async function runInChildren(o: ChildRunOptions): Promise<ChildResult[]> {
  const results: ChildResult[] = new Array(o.count);
  let next = 0;
  while (next < o.count) {
    next = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, o.args(next), { stdio: ["ignore", "pipe", "pipe"], env: o.env ?? process.env });
      let current = -1;
      let buffered = "";
      let stderr = "";
      let timer: NodeJS.Timeout | undefined;
      let started = 0;
      const arm = (): void => {
        clearTimeout(timer);
        started = Date.now();
        timer = setTimeout(() => {
          results[current] = { outcome: "hang", ms: Date.now() - started };
          child.kill("SIGKILL");
        }, o.caseTimeoutMs);
      };
      const rssLimit = o.rssLimitMb ?? 3072;
      const watchdog = setInterval(() => {
        const rss = rssMb(child.pid);
        if (rss > rssLimit && current >= 0 && results[current] === undefined) {
          results[current] = { outcome: "oom", rssMb: Math.round(rss) };
          child.kill("SIGKILL");
        }
      }, 100);
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => {
        buffered += chunk;
        let nl: number;
        while ((nl = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          const m = /^([SR]) (\d+)(?: (.*))?$/.exec(line);
          if (!m) continue;
          const i = Number(m[2]);
          if (m[1] === "S") {
            current = i;
            stderr = "";
            arm();
          } else {
            clearTimeout(timer);
            results[i] = JSON.parse(m[3]!) as ChildResult;
            current = -1;
          }
        }
      });
      child.stderr.setEncoding("utf8");
      child.stderr.on("data", (chunk: string) => {
        stderr = (stderr + chunk).slice(-2000);
      });
      child.on("close", (status, signal) => {
        clearTimeout(timer);
        clearInterval(watchdog);
        if (current >= 0) {
          if (results[current] === undefined) results[current] = { outcome: "crash", signal, status, stderr };
          resolve(current + 1);
        } else {
          // a clean end, or a death between cases: go on after the last result
          let last = next;
          while (last < o.count && results[last] !== undefined) last++;
          if (last === next && status !== 0) {
            // died before its first case: record it there so the run cannot loop
            results[next] = { outcome: "crash", signal, status, stderr };
            last = next + 1;
          }
          resolve(last);
        }
      });
    });
  }
  return results;
}
