/**
 * Slow store operations as spans: a collection whose operations take as long as the test says,
 * behind instrumentStore, with tracing exporting to an OTLP receiver the test runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inSpan, startTracing, stopTracing } from "@mailroom/kit/tracing.js";
import { KIND, otlpEnv, startOtlpReceiver, withEnv, type OtlpReceiver, type ReceivedSpan } from "../../../test/harness/otlp-receiver.js";
import { instrumentStore } from "./instrumented.js";
import { openMemoryStore } from "./open.js";
import type { Store } from "./port.js";

const THRESHOLD_MS = 40;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A store whose findOne takes `ms` (from the filter), whose insertOne is instant and whose updateOne fails slowly. */
function timedStore(): Store {
  return {
    kind: "embedded",
    collection: () =>
      ({
        findOne: async (filter: { ms: number }) => (await sleep(filter.ms), null),
        insertOne: async () => undefined,
        updateOne: async () => {
          await sleep(THRESHOLD_MS + 20);
          throw Object.assign(new Error("E11000 duplicate key"), { code: 11000 });
        },
      }) as never,
    close: async () => undefined,
  };
}

describe("store operations above the threshold", () => {
  let receiver: OtlpReceiver;
  let store: Store;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    store = instrumentStore(timedStore(), "storetest", "lmdb");
    expect(await withEnv({ ...otlpEnv(receiver), MAILROOM_TRACE_STORE_THRESHOLD_MS: String(THRESHOLD_MS) }, () => startTracing("store-test"))).toBe(true);
  });
  afterAll(async () => {
    await stopTracing();
    await receiver?.close();
  });

  const spansNamed = (name: string) => (all: ReceivedSpan[]) => all.filter((s) => s.name === name);

  it("a slow operation becomes a CLIENT span in the caller's trace; a fast one does not", async () => {
    const contacts = store.collection("contacts");
    let parent = "";
    await inSpan("request", {}, async (span) => {
      parent = span!.spanContext().spanId;
      await contacts.insertOne({ _id: "c1" });
      await contacts.findOne({ ms: 1 } as never);
      await contacts.findOne({ ms: THRESHOLD_MS + 20 } as never);
    });
    const slow = spansNamed("store findOne contacts")(await receiver.waitFor((all) => spansNamed("store findOne contacts")(all).length >= 1 && all.some((s) => s.name === "request")));
    // Only the slow findOne: the 1 ms one and the insert stayed below the threshold.
    expect(slow).toHaveLength(1);
    expect(receiver.spans.filter((s) => s.name === "store insertOne contacts")).toEqual([]);
    const [span] = slow;
    expect(span!.kind).toBe(KIND.CLIENT);
    expect(span!.parentSpanId).toBe(parent);
    expect(span!.statusCode).toBe(0);
    expect(span!.attributes).toEqual({ "db.system.name": "lmdb", "db.collection.name": "contacts", "db.operation.name": "findOne" });
    // Its times are the operation's, not the moment it was recorded.
    expect(Number(span!.endNs - span!.startNs) / 1e6).toBeGreaterThanOrEqual(THRESHOLD_MS);
  });

  it("a slow operation that threw carries the error", async () => {
    await expect(store.collection("contacts").updateOne({ _id: "c1" } as never, { $set: { a: 1 } } as never)).rejects.toThrow("E11000");
    const [span] = spansNamed("store updateOne contacts")(await receiver.waitFor((all) => spansNamed("store updateOne contacts")(all).length >= 1));
    expect(span!.statusCode).toBe(2);
    expect(span!.attributes).toMatchObject({ "db.operation.name": "updateOne", "error.type": "11000" });
  });

  it("a threshold of 0 traces every operation of a real engine (the in-memory nedb store)", async () => {
    await stopTracing();
    expect(await withEnv({ ...otlpEnv(receiver), MAILROOM_TRACE_STORE_THRESHOLD_MS: "0" }, () => startTracing("store-test"))).toBe(true);
    const nedb = instrumentStore(openMemoryStore(), "storetest", "nedb");
    await nedb.collection("emails").insertOne({ _id: "e1" });
    await nedb.collection("emails").findOne({ _id: "e1" });
    const spans = await receiver.waitFor((all) => all.filter((s) => s.name.endsWith(" emails")).length >= 2);
    expect(spans.filter((s) => s.name.endsWith(" emails")).map((s) => [s.name, s.attributes["db.system.name"]])).toEqual([
      ["store insertOne emails", "nedb"],
      ["store findOne emails", "nedb"],
    ]);
    await nedb.close();
  });
});
