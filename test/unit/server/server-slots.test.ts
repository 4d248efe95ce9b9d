// The server's slot pool: n slots taken at once or not at all, waiters served in arrival order,
// the queue bound, a waiter that leaves.
import { describe, expect, it } from "vitest";

import { HttpError } from "../../../lib/server/http-error.js";
import { SlotPool } from "../../../lib/server/slots.js";

describe("SlotPool", () => {
  it("acquireMany takes n slots at once; two requests for 2 of 3 slots cannot block each other", async () => {
    const pool = new SlotPool(["a", "b", "c"], 8);
    const first = await pool.acquireMany(2);
    expect(first.map((l) => l.slot)).toEqual(["a", "b"]);
    // 1 idle, 2 wanted: waits without holding the idle one
    let second: string[] | undefined;
    const pending = pool.acquireMany(2).then((ls) => (second = ls.map((l) => l.slot)));
    await Promise.resolve();
    expect(second).toBeUndefined();
    expect(pool.idle).toBe(1);
    first[0]!.release();
    await pending;
    expect(second!.sort()).toEqual(["a", "c"]);
    expect(pool.idle).toBe(0);
  });

  it("serves waiters in arrival order: a single-slot request behind a two-slot one waits its turn", async () => {
    const pool = new SlotPool([1, 2], 8);
    const held = await pool.acquireMany(2);
    const order: string[] = [];
    const big = pool.acquireMany(2).then((ls) => (order.push("big"), ls));
    const small = pool.acquire().then((l) => (order.push("small"), l));
    held[0]!.release();
    await new Promise((r) => setTimeout(r, 5));
    expect(order).toEqual([]); // one free slot is not enough for the head; the small one stays behind it
    held[1]!.release();
    for (const l of await big) l.release();
    (await small).release();
    expect(order).toEqual(["big", "small"]);
  });

  it("a waiter that leaves lets the next one go; past the queue bound: 429; more than the pool: refused", async () => {
    const pool = new SlotPool(["x", "y"], 2);
    const one = await pool.acquire();
    const leave = new AbortController();
    const big = pool.acquireMany(2, leave.signal);
    big.catch(() => undefined);
    const small = pool.acquire();
    await expect(pool.acquire()).rejects.toBeInstanceOf(HttpError);
    leave.abort(new Error("gone"));
    await expect(big).rejects.toThrow("gone");
    expect((await small).slot).toBe("y");
    one.release();
    await expect(pool.acquireMany(3)).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT" });
  });
});
