import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { BatchUpsertContactsResponseSchema, ListContactPropertiesResponseSchema, PropertyType, type BatchUpsertContactsRequest } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { importContactsCsv, type ContactsClient } from "./import-csv.js";

/** An audience unit that accepts every row; `gate` lets a test hold its answers back. */
function fakeContacts(gate?: () => Promise<void>) {
  const batches: BatchUpsertContactsRequest[] = [];
  const client = {
    async listContactProperties() {
      return create(ListContactPropertiesResponseSchema, { properties: [{ slug: "plan", type: PropertyType.STRING }] });
    },
    async batchUpsertContacts(req: BatchUpsertContactsRequest) {
      batches.push(req);
      await gate?.();
      return create(BatchUpsertContactsResponseSchema, { results: req.contacts.map((_, index) => ({ index, ok: true, created: true })) });
    },
  } as unknown as ContactsClient;
  return { client, batches };
}

/** A CSV produced lazily, chunk by chunk, counting what the importer pulled from it. */
function generatedCsv(head: string, rows: number, row: (i: number) => string) {
  const counted = { bytes: 0 };
  let i = 0;
  const stream = new Readable({
    read() {
      if (i === 0) this.push(head);
      if (i >= rows) return void this.push(null);
      let chunk = "";
      for (const end = Math.min(rows, i + 500); i < end; i++) chunk += row(i);
      counted.bytes += Buffer.byteLength(chunk);
      this.push(chunk);
    },
  });
  return { stream, counted };
}

describe("importContactsCsv", () => {
  it("stops at a quote that is never closed, without reading the rest of a large file", async () => {
    const { client, batches } = fakeContacts();
    // ~20 MB of rows after the bad quote on line 3.
    const { stream, counted } = generatedCsv('email,plan\nfirst@example.test,pro\n"second@example.test,pro\n', 700_000, (i) => `row${i}@example.test,free\n`);
    const heapBefore = process.memoryUsage().heapUsed;
    const summary = await importContactsCsv({ client, workspaceId: "ws", input: stream });
    expect(summary.stopped).toEqual({ line: 3, reason: expect.stringMatching(/record starting at line 3 is longer than 64 KB .*never closed/) });
    expect(summary).toMatchObject({ rows: 1, created: 1, rejectedCount: 0 });
    expect(batches.flatMap((b) => b.contacts.map((c) => c.email))).toEqual(["first@example.test"]);
    // Read about one record's worth past the quote, not the file's 20 MB.
    expect(counted.bytes).toBeLessThan(1024 * 1024);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(32 * 1024 * 1024);
    expect(stream.destroyed).toBe(true);
  });

  it("reads no more than a few batches ahead of the audience unit's answers", async () => {
    let release!: () => void;
    let held = new Promise<void>((r) => (release = r));
    const { client, batches } = fakeContacts(() => held);
    const rowBytes = "row000000@example.test,free\n".length;
    const { stream, counted } = generatedCsv("email,plan\n", 100_000, (i) => `row${String(i).padStart(6, "0")}@example.test,free\n`);
    const done = importContactsCsv({ client, workspaceId: "ws", input: stream, batchSize: 1000, maxInFlight: 2 });
    await new Promise((r) => setTimeout(r, 300));
    // Two batches sent and unanswered, a third waiting: the reading has stopped.
    expect(batches).toHaveLength(2);
    expect(counted.bytes).toBeLessThan(4 * 1000 * rowBytes + 256 * 1024);
    const pulled = counted.bytes;
    await new Promise((r) => setTimeout(r, 200));
    expect(counted.bytes).toBe(pulled);
    release();
    held = Promise.resolve();
    const summary = await done;
    expect(summary).toMatchObject({ rows: 100_000, created: 100_000, rejectedCount: 0 });
    expect(batches).toHaveLength(100);
  });

  it("sends typed columns as text for the audience unit to convert, and skips empty cells", async () => {
    const { client, batches } = fakeContacts();
    await importContactsCsv({ client, workspaceId: "ws", input: Readable.from(["Email,First Name,PLAN,subscribed\nann@x.test, Ann ,pro,no\nbob@x.test,,,\n"]) });
    expect(batches[0].contacts.map((c) => ({ email: c.email, firstName: c.firstName, text: c.textProperties }))).toEqual([
      { email: "ann@x.test", firstName: "Ann", text: { plan: "pro", subscribed: "no" } },
      { email: "bob@x.test", firstName: undefined, text: {} },
    ]);
  });
});
