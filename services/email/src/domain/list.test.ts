import { beforeEach, describe, expect, it } from "vitest";
import { AppError } from "@mailroom/kit/errors.js";
import { buildTestWorld, type TestWorld } from "../testing.js";
import type { EmailRequest } from "./model.js";

const WS = "ws_list";
const raw = (to: string, groupBy?: string): EmailRequest => ({
  to,
  content: { kind: "raw", from: "Acme <team@acme.test>", subject: `Hello ${to}`, html: "<p>Hi</p>" },
  ...(groupBy ? { groupBy } : {}),
});

describe("listing a workspace's emails", () => {
  let w: TestWorld;
  const ids: string[] = [];
  beforeEach(async () => {
    w = await buildTestWorld();
    ids.length = 0;
    const recipients = ["ann@example.test", "Bob@Example.test", "carol@other.test", "dan@example.test", "erin@example.test"];
    for (const [i, to] of recipients.entries()) {
      ids.push((await w.service.send(WS, raw(to, i % 2 ? "welcome" : undefined))).id);
      // Two emails share each millisecond: ties are ordered by id, never dropped.
      if (i % 2) w.clock.advance(60_000);
    }
    await w.service.send("ws_other", raw("ann@example.test"));
  });

  it("pages newest first without repeating or skipping an email", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await w.service.list(WS, { limit: 2, cursor });
      expect(page.emails.length).toBeLessThanOrEqual(2);
      seen.push(...page.emails.map((e) => e.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toHaveLength(5);
    expect(new Set(seen)).toEqual(new Set(ids));
    const all = await w.service.list(WS, {});
    expect(all.emails.map((e) => e.id)).toEqual(seen);
    expect(all.nextCursor).toBeUndefined();
    const created = all.emails.map((e) => e.createdAt.getTime());
    expect([...created].sort((a, b) => b - a)).toEqual(created);
  });

  it("filters by a case-insensitive part of the recipient, status, group and creation time", async () => {
    const example = await w.service.list(WS, { recipient: "EXAMPLE.test" });
    expect(example.emails.map((e) => e.to).sort()).toEqual(["Bob@Example.test", "ann@example.test", "dan@example.test", "erin@example.test"]);
    // Regex characters are literal.
    expect((await w.service.list(WS, { recipient: "example.test|other" })).emails).toEqual([]);
    expect((await w.service.list(WS, { recipient: "carol@other.test" })).emails.map((e) => e.id)).toEqual([ids[2]]);
    expect((await w.service.list(WS, { groupBy: "welcome" })).emails.map((e) => e.to).sort()).toEqual(["Bob@Example.test", "dan@example.test"]);
    expect((await w.service.list(WS, { groupBy: "" })).emails).toHaveLength(3);
    expect((await w.service.list(WS, { statuses: ["SENT"] })).emails).toHaveLength(5);
    expect((await w.service.list(WS, { statuses: ["DELIVERED"] })).emails).toHaveLength(0);
    const first = (await w.service.list(WS, {})).emails.at(-1)!;
    const since = await w.service.list(WS, { createdFrom: new Date(first.createdAt.getTime() + 1) });
    expect(since.emails.map((e) => e.id)).not.toContain(first.id);
    expect(since.emails).toHaveLength(3);
    const before = await w.service.list(WS, { createdTo: new Date(first.createdAt.getTime() + 1) });
    expect(before.emails).toHaveLength(2);
  });

  it("matches a whole address with recipientExact, and no email for a tag none of them carries (carry.test.ts lists by tag)", async () => {
    expect((await w.service.list(WS, { recipient: "bob@example.TEST", recipientExact: true })).emails.map((e) => e.id)).toEqual([ids[1]]);
    expect((await w.service.list(WS, { recipient: "example.test", recipientExact: true })).emails).toEqual([]);
    expect(await w.service.list(WS, { tags: ["campaign:spring"] })).toEqual({ emails: [] });
    for (const tag of ["campaign", "a:b:c", "sp ace:x", ":x", "x:"]) {
      await expect(w.service.list(WS, { tags: [tag] })).rejects.toMatchObject({ httpStatus: 400, code: "invalid_request" });
    }
  });

  it("never lists another workspace's emails", async () => {
    const other = await w.service.list("ws_other", {});
    expect(other.emails).toHaveLength(1);
    expect(ids).not.toContain(other.emails[0].id);
    expect((await w.service.list("ws_nobody", {})).emails).toEqual([]);
  });

  it("refuses a bad limit, a forged cursor and an inverted time range with 400", async () => {
    for (const q of [{ limit: 101 }, { limit: -1 }, { cursor: "not-a-cursor" }, { cursor: Buffer.from("1.bad id!").toString("base64url") },
      { createdFrom: new Date(2), createdTo: new Date(1) }, { recipient: "x".repeat(400) }]) {
      const err = await w.service.list(WS, q).then(() => undefined, (e) => e);
      expect(err, JSON.stringify(q)).toBeInstanceOf(AppError);
      expect((err as AppError).httpStatus).toBe(400);
    }
    await expect(w.service.list(WS, { cursor: "not-a-cursor" })).rejects.toMatchObject({ code: "invalid_cursor" });
  });
});
