import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { BatchUpsertContactsResponseSchema, ListContactPropertiesResponseSchema, PropertyType, type BatchUpsertContactsRequest } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { ContactsClient } from "@mailroom/kit/contacts-csv/import-csv.js";
import { ImportJobs, jobJson } from "./contacts-import.js";
import { cumulative, progressChart } from "./views/broadcasts-chart.js";

const log = { error: () => undefined };

/** Accepts every row except addresses without "@" (as the audience unit refuses them). */
function contactService() {
  const batches: BatchUpsertContactsRequest[] = [];
  const client = {
    async listContactProperties() {
      return create(ListContactPropertiesResponseSchema, { properties: [{ slug: "plan", type: PropertyType.STRING }] });
    },
    async batchUpsertContacts(req: BatchUpsertContactsRequest) {
      batches.push(req);
      return create(BatchUpsertContactsResponseSchema, {
        results: req.contacts.map((c, index) =>
          c.email.includes("@") ? { index, ok: true, created: true } : { index, ok: false, error: { code: "invalid_email", message: `${c.email} is not an email address` } }),
      });
    },
  } as unknown as ContactsClient;
  return { client, batches };
}

const settle = async (jobs: ImportJobs, ws: string, id: string) => {
  for (let i = 0; i < 200 && jobs.get(ws, id)?.state === "running"; i++) await new Promise((r) => setTimeout(r, 5));
  return jobs.get(ws, id)!;
};

describe("console CSV import jobs", () => {
  it("runs in the background, reports rejected rows by line, and is visible to its workspace only", async () => {
    const jobs = new ImportJobs();
    const { client, batches } = contactService();
    const csv = "email,firstName,plan\na@example.test,A,pro\nbroken,B,pro\na@example.test,Again,pro\nc@example.test,C,free,extra\n";
    const job = jobs.start(client, "ws_a", "people.csv", Buffer.from(csv), log);
    expect(job.id).toMatch(/^imp_[0-9a-f]{24}$/);
    expect(jobs.get("ws_b", job.id)).toBeUndefined();
    const done = await settle(jobs, "ws_a", job.id);
    expect(done.state).toBe("done");
    expect(done.summary!.rejected).toEqual([
      { line: 3, email: "broken", reason: "broken is not an email address" },
      { line: 4, email: "a@example.test", reason: "duplicate of line 2" },
      { line: 5, email: "c@example.test", reason: "expected 3 fields, found 4" },
    ]);
    expect(jobJson(done)).toMatchObject({ state: "done", percent: 100, rows: 4, rejected: 3, created: 1 });
    expect(batches.flatMap((b) => b.contacts.map((c) => c.email))).toEqual(["a@example.test", "broken"]);
  });

  it("fails the whole file on a header with an unknown column, writing nothing", async () => {
    const jobs = new ImportJobs();
    const { client, batches } = contactService();
    const job = jobs.start(client, "ws_a", "x.csv", Buffer.from("email,shoeSize\na@example.test,44\n"), log);
    const done = await settle(jobs, "ws_a", job.id);
    expect(done.state).toBe("failed");
    expect(done.error).toContain('"shoeSize"');
    expect(batches).toHaveLength(0);
  });
});

describe("progress chart", () => {
  it("turns per-minute increments into running totals and names them for screen readers", () => {
    const at = (m: number) => new Date(Date.UTC(2030, 0, 1, 12, m));
    const points = [
      { at: at(0), sent: 3, delivered: 3, opened: 0, clicked: 0 },
      { at: at(2), sent: 1, delivered: 0, opened: 2, clicked: 1 },
    ];
    expect(cumulative(points).map((p) => [p.sent, p.delivered, p.opened, p.clicked])).toEqual([[3, 3, 0, 0], [4, 3, 2, 1]]);
    // Sending started at 12:00 and completed at 12:03; each minute's increment is drawn at its end.
    const svg = progressChart(points, "Progress of <Spring>", { start: at(0), completedAt: at(3), now: at(10) }).toString();
    expect(svg).toContain('role="img"');
    expect(svg).toContain("Progress of &lt;Spring&gt;: running totals from 12:00:00 UTC to 12:03:00 UTC: Sent 4, Delivered 3, Opened 2, Clicked 1");
    expect(svg).not.toContain("<Spring>");
    expect(progressChart([], "x").toString()).toContain("Nothing sent yet");
  });
});
