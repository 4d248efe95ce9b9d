// Raw HTTP against a test server: requests whose bodies, headers and connection the test controls.
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export function raw(url: string, options: { method?: string; headers?: Record<string, string>; body?: string | Buffer; chunked?: Buffer[] } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? "GET", headers: options.headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on("error", reject);
    });
    req.on("error", reject);
    if (options.chunked) {
      for (const c of options.chunked) req.write(c);
      req.end();
    } else req.end(options.body);
  });
}

/** The `data:` payloads of an SSE body, in order. */
export function sseEvents(body: string): string[] {
  return body
    .split("\n\n")
    .filter((e) => e.trim() !== "")
    .map((e) => {
      if (!e.startsWith("data: ")) throw new Error(`not an SSE data event: ${JSON.stringify(e.slice(0, 80))}`);
      return e.slice("data: ".length);
    });
}

export async function poll(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}
