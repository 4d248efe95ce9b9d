/**
 * GET /metrics: the server's counters in Prometheus text format (version 0.0.4), as llama-server's
 * `/metrics` (tools/server: `handle_metrics`) serves its own: requests by route and status, prompt
 * and generated tokens, time spent, generations running, slots and the queue. Tokens are counted
 * on the slots' generations (tap-target.ts), so every route that generates is counted.
 */
import type { ServerResponse } from "node:http";

import type { GenerationStats } from "../llama/generation.js";
import type { CompletionTarget, CompletionTargetLike } from "../openai/index.js";
import { tapTarget } from "./tap-target.js";

interface Sample {
  name: string;
  help: string;
  type: "counter" | "gauge";
  values: { labels?: Record<string, string>; value: number }[];
}

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');

/** Prometheus text exposition of `samples`. */
export function prometheusText(samples: readonly Sample[]): string {
  let out = "";
  for (const s of samples) {
    out += `# HELP ${s.name} ${s.help}\n# TYPE ${s.name} ${s.type}\n`;
    for (const v of s.values) {
      const labels = v.labels === undefined ? "" : `{${Object.entries(v.labels).map(([k, x]) => `${k}="${escapeLabel(x)}"`).join(",")}}`;
      out += `${s.name}${labels} ${Number.isFinite(v.value) ? v.value : 0}\n`;
    }
  }
  return out;
}

export class ServerMetrics {
  readonly #requests = new Map<string, number>();
  #promptTokens = 0;
  #reusedTokens = 0;
  #generatedTokens = 0;
  #promptMs = 0;
  #generateMs = 0;
  #generations = 0;
  #failed = 0;
  #running = 0;

  /** `target` with its generations counted. */
  tap(target: CompletionTargetLike): CompletionTarget {
    return tapTarget(target, () => {
      this.#running++;
      return { onEnd: (stats) => this.#ended(stats) };
    });
  }

  #ended(stats: GenerationStats | null): void {
    this.#running--;
    this.#generations++;
    if (stats === null) {
      this.#failed++;
      return;
    }
    this.#promptTokens += stats.promptTokens;
    this.#reusedTokens += stats.reusedTokens;
    this.#generatedTokens += stats.generatedTokens;
    this.#promptMs += stats.promptMs;
    this.#generateMs += stats.generateMs;
  }

  /** One answered request: its route (the pattern's name, not the raw path) and status. */
  request(route: string, status: number): void {
    const key = `${route}\u0000${status}`;
    this.#requests.set(key, (this.#requests.get(key) ?? 0) + 1);
  }

  render(pool: { readonly size: number; readonly idle: number; readonly queued: number }): string {
    const requests = [...this.#requests].map(([k, value]) => {
      const [route, status] = k.split("\u0000") as [string, string];
      return { labels: { route, status }, value };
    });
    return prometheusText([
      { name: "llamapeg_requests_total", help: "HTTP requests answered, by route and status.", type: "counter", values: requests },
      { name: "llamapeg_prompt_tokens_total", help: "Prompt tokens of finished generations (reused KV prefix included).", type: "counter", values: [{ value: this.#promptTokens }] },
      { name: "llamapeg_prompt_tokens_reused_total", help: "Prompt tokens taken from the KV cache instead of decoded.", type: "counter", values: [{ value: this.#reusedTokens }] },
      { name: "llamapeg_generated_tokens_total", help: "Tokens generated.", type: "counter", values: [{ value: this.#generatedTokens }] },
      { name: "llamapeg_prompt_seconds_total", help: "Time spent decoding prompts.", type: "counter", values: [{ value: this.#promptMs / 1000 }] },
      { name: "llamapeg_generation_seconds_total", help: "Time spent generating tokens.", type: "counter", values: [{ value: this.#generateMs / 1000 }] },
      { name: "llamapeg_generations_total", help: "Generations ended (failed ones included).", type: "counter", values: [{ value: this.#generations }] },
      { name: "llamapeg_generations_failed_total", help: "Generations that ended with an error.", type: "counter", values: [{ value: this.#failed }] },
      { name: "llamapeg_generations_running", help: "Generations running now.", type: "gauge", values: [{ value: this.#running }] },
      { name: "llamapeg_slots", help: "Slots (sequences requests run on).", type: "gauge", values: [{ value: pool.size }] },
      { name: "llamapeg_slots_idle", help: "Slots free now.", type: "gauge", values: [{ value: pool.idle }] },
      { name: "llamapeg_requests_queued", help: "Requests waiting for a slot.", type: "gauge", values: [{ value: pool.queued }] },
    ]);
  }
}

export function sendMetrics(res: ServerResponse, text: string): number {
  res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
  return 200;
}
