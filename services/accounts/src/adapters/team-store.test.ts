import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { openStore } from "@mailroom/store/open.js";
import type { Store } from "@mailroom/store/port.js";
import { storeDirectory, storeTeam, type TestDirectory } from "../../../audience/src/testing.js";
import type { Team } from "../domain/team.js";
import type { AuditLog } from "../domain/audit-log.js";

/** The team's and the audit log's queries on the embedded store production runs (LMDB), not only the in-memory one. */
describe("team and audit log stores on the embedded store", () => {
  let tmp: string;
  let store: Store;
  let dir: TestDirectory;
  let team: Team;
  let auditLog: AuditLog;
  let now = new Date();
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), "mailroom-team-store-"));
    store = await openStore({ dataDir: tmp, service: "directory" });
    dir = await storeDirectory(store);
    ({ team, auditLog } = await storeTeam(dir, { now: () => new Date(now) }));
    await dir.workspaces.create({ id: "ws_a", name: "A" });
  });
  afterAll(async () => {
    await store?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  it("invites, signs in, rotates, removes", async () => {
    await dir.members.add("ws_a", "owner@acme.test");
    const inv = await team.invite({ workspaceId: "ws_a", email: "ed@acme.test", role: "EDITOR" });
    expect((await team.acceptInvitation(inv.token)).status).toBe("ACTIVE");
    expect(errorInfoOf(await team.acceptInvitation(inv.token).catch((e) => e))?.code).toBe("invitation_used");
    const { token } = await team.redeemMagicLink((await team.startMagicLink("ed@acme.test")).token, {});
    now = new Date(now.getTime() + 3_600_000);
    const rotated = (await team.getSession(token)).rotatedToken!;
    expect((await team.getSession(token)).rotatedToken).toBeUndefined(); // the old one, within its 60 s
    expect((await team.getSession(rotated)).member.email).toBe("ed@acme.test");
    expect(errorInfoOf(await team.remove("ws_a", "owner@acme.test").catch((e) => e))?.code).toBe("last_owner");
    await team.remove("ws_a", "ed@acme.test");
    expect(errorInfoOf(await team.getSession(rotated).catch((e) => e))?.code).toBe("session_invalid");
  });

  it("lists the audit log with filters and paging", async () => {
    const base = Date.now() - 60_000;
    for (let i = 0; i < 5; i++) {
      await auditLog.record({
        _id: `aud_0${i}`, workspaceId: "ws_a", at: new Date(base + Math.floor(i / 2) * 1_000), actor: { kind: i % 2 ? "key" : "member", id: `id_${i % 2}`, label: "" },
        action: "contact.update", resource: { type: i < 3 ? "contact" : "member", id: `r_${i}` }, requestId: "", summary: { n: String(i) },
      });
    }
    const all: string[] = [];
    let pageToken = "";
    do {
      const page = await auditLog.list({ workspaceId: "ws_a", limit: 2, pageToken });
      all.push(...page.entries.map((e) => e._id));
      pageToken = page.nextPageToken;
    } while (pageToken);
    expect(all).toEqual(["aud_04", "aud_03", "aud_02", "aud_01", "aud_00"]);
    expect((await auditLog.list({ workspaceId: "ws_a", actor: "key:id_1" })).entries.map((e) => e._id)).toEqual(["aud_03", "aud_01"]);
    expect((await auditLog.list({ workspaceId: "ws_a", resource: "contact:r_2" })).entries.map((e) => e._id)).toEqual(["aud_02"]);
    expect((await auditLog.list({ workspaceId: "ws_a", resource: "member", since: new Date(base + 2_000) })).entries.map((e) => e._id)).toEqual(["aud_04"]);
  });

  it("stores a batch once: entries already stored or named twice change nothing", async () => {
    const at = new Date(Date.now() - 30_000);
    const entry = (id: string, n: string) => ({
      _id: id, workspaceId: "ws_batch", at, actor: { kind: "key", id: "key_1", label: "" }, action: "email.send",
      resource: { type: "email", id: id.replace("aud", "em") }, requestId: "", summary: { n },
    });
    await auditLog.recordMany([entry("aud_b1", "first"), entry("aud_b2", "first")]);
    // A redelivered batch (aud_b1, aud_b2 stored before a crash lost their acks) with new
    // entries, one of them twice: the stored ones keep what they had, the new ones go in once.
    await auditLog.recordMany([entry("aud_b3", "first"), entry("aud_b2", "again"), entry("aud_b4", "first"), entry("aud_b4", "again"), entry("aud_b1", "again")]);
    const listed = (await auditLog.list({ workspaceId: "ws_batch" })).entries;
    expect(listed.map((e) => e._id).sort()).toEqual(["aud_b1", "aud_b2", "aud_b3", "aud_b4"]);
    expect(listed.find((e) => e._id === "aud_b2")?.summary).toEqual({ n: "first" });
    expect(await store.collection("audit_log").countDocuments({ workspaceId: "ws_batch" })).toBe(4);
  });
});
