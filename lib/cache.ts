/**
 * The process-wide caches of the library (parsed templates, template capabilities and facts,
 * analyses, compiled schemas, plans...): each a `BoundedCache` with one eviction rule, least
 * recently used first, registered here so that one call (`clearCaches`, public as
 * `clearPlanCache`) empties them all.
 */
import { internalError } from "./errors.js";

/** Anything the registry can empty. */
export interface Clearable {
  clear(): void;
}

const registry = new Set<Clearable>();

/** Adds a cache to the registry (caches made by `boundedCache` are added already). */
export function registerCache(cache: Clearable): void {
  registry.add(cache);
}

/** Empties every registered cache. */
export function clearCaches(): void {
  for (const c of registry) c.clear();
}

/** A map of at most `limit` entries; the least recently used (read or written) goes first. */
export class BoundedCache<K, V> implements Clearable {
  readonly #map = new Map<K, V>();
  readonly limit: number;

  constructor(limit: number) {
    // a bug in the library, never input: the limits are constants
    if (!Number.isInteger(limit) || limit < 1) throw internalError(`BoundedCache: limit must be a positive integer, got ${limit}`, "BoundedCache");
    this.limit = limit;
  }

  get size(): number {
    return this.#map.size;
  }

  /** The value of `key` (now the most recently used), or undefined. */
  get(key: K): V | undefined {
    const value = this.#map.get(key);
    if (value === undefined) return undefined;
    this.#map.delete(key);
    this.#map.set(key, value);
    return value;
  }

  has(key: K): boolean {
    return this.#map.has(key);
  }

  set(key: K, value: V): void {
    this.#map.delete(key);
    if (this.#map.size >= this.limit) this.#map.delete(this.#map.keys().next().value!);
    this.#map.set(key, value);
  }

  /** The value of `key`, made by `make` and kept when absent. */
  getOrSet(key: K, make: () => V): V {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const value = make();
    this.set(key, value);
    return value;
  }

  clear(): void {
    this.#map.clear();
  }
}

/** A registered `BoundedCache`: emptied by `clearCaches`. */
export function boundedCache<K, V>(limit: number): BoundedCache<K, V> {
  const cache = new BoundedCache<K, V>(limit);
  registerCache(cache);
  return cache;
}
