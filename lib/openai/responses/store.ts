/**
 * The responses `previous_response_id` can name: the conversation up to and including each stored
 * response, as chat messages, in memory and bounded (the oldest goes first once `maxEntries` are
 * held). OpenAI keeps responses for 30 days; a local server keeps the last few hundred.
 */
export type StoredMessage = { role: string; [k: string]: unknown };

export interface StoredResponse {
  /** Every message of the conversation so far: history, this turn's input, this response's output. */
  messages: StoredMessage[];
}

export class ResponseStore {
  readonly maxEntries: number;
  readonly #entries = new Map<string, StoredResponse>();

  constructor(maxEntries = 256) {
    this.maxEntries = maxEntries;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(id: string): StoredResponse | undefined {
    const hit = this.#entries.get(id);
    if (hit !== undefined) {
      // Used again: the newest.
      this.#entries.delete(id);
      this.#entries.set(id, hit);
    }
    return hit;
  }

  set(id: string, value: StoredResponse): void {
    this.#entries.delete(id);
    this.#entries.set(id, value);
    while (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value as string);
  }
}
