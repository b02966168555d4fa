import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { openMemoryStore } from "@mailroom/store/open.js";
import type { Store } from "@mailroom/store/port.js";
import { MemberStore } from "../adapters/member-store.js";
import { SessionStore, TeamTokenStore } from "../adapters/team-store.js";
import { storeDirectory, TEST_SECRETS, type TestDirectory } from "../../../audience/src/testing.js";
import { TEAM_LIFETIMES, Team } from "./team.js";
import { hashTeamToken, signTeamToken } from "./team-tokens.js";
import type { DirectoryEvent } from "@mailroom/records/change-events.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** A directory and its team over one in-memory store, on a clock the test moves. */
async function setup(opts: { store?: Store; secrets?: { current: string; previous?: string }; published?: DirectoryEvent[] } = {}) {
  const store = opts.store ?? openMemoryStore();
  // The memory store expires documents (TTL indexes) by the real clock: start from it.
  const start = new Date(Math.floor(Date.now() / 1000) * 1000);
  let now = start;
  const clock = () => new Date(now);
  const dir: TestDirectory = await storeDirectory(store, { now: clock });
  const team = new Team({
    members: await MemberStore.open(store),
    tokens: await TeamTokenStore.open(store),
    sessions: await SessionStore.open(store),
    workspaces: dir.workspaces,
    secrets: opts.secrets ?? TEST_SECRETS,
    now: clock,
    publishChanges: (events) => void opts.published?.push(...events),
  });
  const advance = (ms: number) => void (now = new Date(now.getTime() + ms));
  return { store, dir, team, advance, start };
}

const code = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e: unknown) => e))?.code;

/** Flips one character of a token's signed part. */
const tamper = (token: string) => {
  const i = token.length - 5;
  return token.slice(0, i) + (token[i] === "A" ? "B" : "A") + token.slice(i + 1);
};

describe("team: members with roles", () => {
  it("the first member is OWNER, later ones EDITOR unless a role is given; bootstrap members may carry a role", async () => {
    const { dir, team } = await setup();
    await dir.bootstrap.loadJson(JSON.stringify({
      workspaces: [{ id: "ws_a", name: "A", members: ["first@acme.test", "second@acme.test", { email: "viewer@acme.test", role: "VIEWER" }, { email: "admin@acme.test", role: "ADMIN" }] }],
    }));
    const members = await team.list("ws_a");
    expect(members.map((m) => [m.email, m.role, m.status])).toEqual([
      ["first@acme.test", "OWNER", "ACTIVE"],
      ["second@acme.test", "EDITOR", "ACTIVE"],
      ["viewer@acme.test", "VIEWER", "ACTIVE"],
      ["admin@acme.test", "ADMIN", "ACTIVE"],
    ]);
    expect(members.every((m) => /^mbr_[0-9a-z]{26}$/.test(m.publicId!))).toBe(true);
    expect(await dir.members.list("ws_a")).toHaveLength(4);
  });

  it("members stored before roles become ACTIVE: the oldest of a workspace its OWNER, the others EDITORs", async () => {
    const store = openMemoryStore();
    const legacy = store.collection("members");
    await legacy.insertOne({ _id: "ws_a:old@acme.test", workspaceId: "ws_a", email: "old@acme.test", createdAt: new Date("2024-01-01") });
    await legacy.insertOne({ _id: "ws_a:new@acme.test", workspaceId: "ws_a", email: "new@acme.test", createdAt: new Date("2025-01-01") });
    const { dir, team } = await setup({ store });
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    expect((await team.list("ws_a")).map((m) => [m.email, m.role, m.status])).toEqual([
      ["old@acme.test", "OWNER", "ACTIVE"],
      ["new@acme.test", "EDITOR", "ACTIVE"],
    ]);
  });

  it("keeps the last OWNER: it cannot be demoted or removed until another member is OWNER", async () => {
    const { dir, team } = await setup();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.members.add("ws_a", "owner@acme.test");
    await dir.members.add("ws_a", "ed@acme.test");
    const owner = await team.member("ws_a", "owner@acme.test");
    expect(await code(team.updateRole("ws_a", owner.publicId!, "ADMIN"))).toBe("last_owner");
    expect(await code(team.remove("ws_a", owner.publicId!))).toBe("last_owner");
    const err = await team.remove("ws_a", "owner@acme.test").catch((e: unknown) => e);
    expect(errorInfoOf(err)).toMatchObject({ httpStatus: 409, message: expect.stringMatching(/at least one owner/) });
    // Two owners demoting each other at once: at most one succeeds, an OWNER remains.
    await team.updateRole("ws_a", "ed@acme.test", "OWNER");
    const both = await Promise.allSettled([team.updateRole("ws_a", "ed@acme.test", "ADMIN"), team.updateRole("ws_a", "owner@acme.test", "ADMIN")]);
    expect(both.filter((r) => r.status === "fulfilled").length).toBeLessThanOrEqual(1);
    expect((await team.list("ws_a")).filter((m) => m.role === "OWNER").length).toBeGreaterThanOrEqual(1);
    for (const m of await team.list("ws_a")) if (m.role !== "OWNER") await team.updateRole("ws_a", m.publicId!, "EDITOR");
    await team.updateRole("ws_a", "owner@acme.test", "OWNER");
    await team.updateRole("ws_a", "ed@acme.test", "OWNER");
    expect((await team.updateRole("ws_a", owner.publicId!, "VIEWER")).role).toBe("VIEWER");
    expect(await code(team.remove("ws_a", "ed@acme.test"))).toBe("last_owner");
    expect(await code(team.updateRole("ws_a", "ed@acme.test", "superuser"))).toBe("invalid_role");
    expect(await code(team.updateRole("ws_a", "nobody@acme.test", "VIEWER"))).toBe("member_not_found");
  });

  it("a caller's role bounds what it grants and whom it changes", async () => {
    const { dir, team } = await setup();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.members.add("ws_a", "owner@acme.test");
    expect(await code(team.invite({ workspaceId: "ws_a", email: "x@acme.test", role: "OWNER", actingRole: "ADMIN" }))).toBe("role_above_caller");
    await team.invite({ workspaceId: "ws_a", email: "x@acme.test", role: "ADMIN", actingRole: "ADMIN" });
    expect(await code(team.updateRole("ws_a", "owner@acme.test", "OWNER", "ADMIN"))).toBe("role_above_caller");
    expect(await code(team.remove("ws_a", "owner@acme.test", "ADMIN"))).toBe("role_above_caller");
  });
});

describe("team: invitations", () => {
  it("accepts once; reuse, tampering, another secret and expiry (72 h) are refused", async () => {
    const published: DirectoryEvent[] = [];
    const { dir, team, advance, store, start } = await setup({ published });
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    const inv = await team.invite({ workspaceId: "ws_a", email: "New@Acme.test", role: "ADMIN", invitedBy: "cli:ops" });
    expect(inv.token).toMatch(/^inv_[A-Za-z0-9_-]+$/);
    expect(inv.expiresAt.getTime() - start.getTime()).toBe(72 * HOUR);
    expect(inv.member).toMatchObject({ email: "new@acme.test", role: "ADMIN", status: "INVITED", invitedBy: "cli:ops" });
    // Stored hashed only.
    const stored = JSON.stringify(await store.collection("team_tokens").find({}));
    expect(stored).not.toContain(inv.token);
    expect(stored).toContain(hashTeamToken(inv.token));
    expect(await dir.members.list("ws_a")).toEqual([]); // invited is not a member yet

    expect(await code(team.acceptInvitation(tamper(inv.token)))).toBe("invitation_invalid");
    expect(await code(team.acceptInvitation(signTeamToken({ current: "another-secret-0123456789abcdef" }, "inv")))).toBe("invitation_invalid");
    expect(await code(team.acceptInvitation(signTeamToken(TEST_SECRETS, "inv")))).toBe("invitation_invalid"); // signed, never issued
    expect(await code(team.acceptInvitation(inv.token.replace(/^inv_/, "mlk_")))).toBe("invitation_invalid");
    const member = await team.acceptInvitation(inv.token);
    expect(member).toMatchObject({ email: "new@acme.test", role: "ADMIN", status: "ACTIVE" });
    expect(published.map((e) => [e.type, (e.data as { member: { email: string } }).member.email])).toEqual([["WORKSPACE_TEAM_MEMBER_JOINED", "new@acme.test"]]);
    expect(await code(team.acceptInvitation(inv.token))).toBe("invitation_used");
    expect(await code(team.invite({ workspaceId: "ws_a", email: "new@acme.test", role: "VIEWER" }))).toBe("member_exists");

    const firstInvite = await team.invite({ workspaceId: "ws_a", email: "again@acme.test", role: "ADMIN" });
    const reinvite = await team.invite({ workspaceId: "ws_a", email: "again@acme.test", role: "VIEWER" });
    expect(reinvite.member.publicId).toBe(firstInvite.member.publicId);
    expect(await code(team.acceptInvitation(firstInvite.token))).toBe("invitation_invalid"); // replaced
    expect((await team.acceptInvitation(reinvite.token)).role).toBe("VIEWER");

    const late = await team.invite({ workspaceId: "ws_a", email: "late@acme.test", role: "VIEWER" });
    advance(72 * HOUR - 1_000);
    const inTime = await team.invite({ workspaceId: "ws_a", email: "late2@acme.test", role: "VIEWER" });
    advance(2_000);
    expect(await code(team.acceptInvitation(late.token))).toBe("invitation_expired");
    expect((await team.acceptInvitation(inTime.token)).status).toBe("ACTIVE");
  });

  it("a token signed with MAILROOM_SECRET_PREVIOUS still works while the secret rotates; removal voids open invitations", async () => {
    const store = openMemoryStore();
    const old = await setup({ store, secrets: { current: "old-secret-0123456789abcdefghij" } });
    await old.dir.workspaces.create({ id: "ws_a", name: "A" });
    const inv = await old.team.invite({ workspaceId: "ws_a", email: "a@acme.test", role: "EDITOR" });
    const removed = await old.team.invite({ workspaceId: "ws_a", email: "b@acme.test", role: "EDITOR" });
    const rotated = await setup({ store, secrets: { current: "new-secret-0123456789abcdefghij", previous: "old-secret-0123456789abcdefghij" } });
    expect((await rotated.team.acceptInvitation(inv.token)).status).toBe("ACTIVE");
    await rotated.team.remove("ws_a", "b@acme.test");
    expect(await code(rotated.team.acceptInvitation(removed.token))).toBe("invitation_invalid");
  });
});

describe("team: magic links", () => {
  it("answers nothing for non-members; a link signs in once, within 15 minutes, untampered", async () => {
    const { dir, team, advance, start } = await setup();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.workspaces.create({ id: "ws_b", name: "B" });
    await dir.members.add("ws_a", "ann@acme.test");
    await dir.members.add("ws_b", "ann@acme.test");
    await team.invite({ workspaceId: "ws_a", email: "invited@acme.test", role: "EDITOR" });
    for (const email of ["nobody@acme.test", "invited@acme.test", "not an email"]) {
      expect(await team.startMagicLink(email)).toEqual({ token: "", email: "", workspaceIds: [], workspaceId: "" });
    }
    const link = await team.startMagicLink("Ann@acme.test");
    expect(link).toMatchObject({ email: "ann@acme.test", workspaceIds: ["ws_a", "ws_b"], workspaceId: "ws_a" });
    expect(link.expiresAt!.getTime() - start.getTime()).toBe(15 * MINUTE);
    expect((await team.startMagicLink("ann@acme.test", "ws_b")).workspaceId).toBe("ws_b");

    expect(await code(team.redeemMagicLink(tamper(link.token), {}))).toBe("magic_link_invalid");
    expect(await code(team.redeemMagicLink("mlk_short", {}))).toBe("magic_link_invalid");
    const signIn = await team.redeemMagicLink(link.token, { userAgent: "Firefox", ip: "192.0.2.1" });
    expect(signIn.session).toMatchObject({ workspaceId: "ws_a", method: "magic_link", userAgent: "Firefox", ip: "192.0.2.1" });
    expect(await code(team.redeemMagicLink(link.token, {}))).toBe("magic_link_used");
    expect((await team.member("ws_a", "ann@acme.test")).lastSignInAt).toEqual(start);

    const slow = await team.startMagicLink("ann@acme.test");
    advance(15 * MINUTE);
    expect(await code(team.redeemMagicLink(slow.token, {}))).toBe("magic_link_expired");
  });
});

describe("team: sessions", () => {
  async function signedIn() {
    const t = await setup();
    await t.dir.workspaces.create({ id: "ws_a", name: "A" });
    await t.dir.members.add("ws_a", "owner@acme.test");
    await t.dir.members.add("ws_a", "ed@acme.test");
    const login = async (email: string) => t.team.redeemMagicLink((await t.team.startMagicLink(email)).token, { userAgent: "UA" });
    return { ...t, login };
  }

  it("stores tokens hashed; rotates a token older than an hour, the old one valid 60 s more", async () => {
    const { dir, team, store, advance, login, start } = await signedIn();
    const { token, session } = await login("owner@acme.test");
    expect(token).toMatch(/^ses_[A-Za-z0-9_-]{43}$/);
    expect(JSON.stringify(await store.collection("sessions").find({}))).not.toContain(token);
    const first = await team.getSession(token);
    expect(first).toMatchObject({ session: { _id: session._id }, member: { email: "owner@acme.test" } });
    expect(first.rotatedToken).toBeUndefined();

    advance(HOUR);
    const rotated = await team.getSession(token);
    expect(rotated.rotatedToken).toMatch(/^ses_/);
    expect(rotated.session._id).toBe(session._id);
    expect(rotated.session.lastSeenAt).toEqual(new Date(start.getTime() + HOUR));
    // Parallel requests with the old token: still accepted, no second rotation.
    advance(TEAM_LIFETIMES.rotationGrace - 1_000);
    expect((await team.getSession(token)).rotatedToken).toBeUndefined();
    advance(2_000);
    expect(await code(team.getSession(token))).toBe("session_invalid");
    expect((await team.getSession(rotated.rotatedToken!)).session._id).toBe(session._id);
    expect(await code(team.getSession("ses_" + "x".repeat(43)))).toBe("session_invalid");
    await dir.workspaces.setBanned("ws_a", true, "abuse");
    expect(await code(team.getSession(rotated.rotatedToken!))).toBe("workspace_banned");
  });

  it("ends after 14 idle days; lists, revokes one and all; removal signs the member out at once", async () => {
    const { dir, team, advance, login } = await signedIn();
    const idle = await login("ed@acme.test");
    advance(14 * 24 * HOUR);
    expect(await code(team.getSession(idle.token))).toBe("session_invalid");

    const a = await login("ed@acme.test");
    advance(1_000);
    const b = await login("ed@acme.test");
    const c = await login("ed@acme.test");
    expect((await team.listSessions("ws_a", "ed@acme.test")).map((s) => s._id)).toEqual([c.session._id, b.session._id, a.session._id]);
    await team.revokeSession("ws_a", a.session._id);
    expect(await code(team.getSession(a.token))).toBe("session_invalid");
    expect(await code(team.revokeSession("ws_a", a.session._id))).toBe("session_not_found");
    expect(await code(team.revokeSession("ws_other", b.session._id))).toBe("session_not_found");
    // b, c and the idle one (which the store's TTL index would drop at its expiry anyway).
    expect(await team.revokeAllSessions("ws_a", "ed@acme.test")).toBe(3);
    expect(await code(team.getSession(b.token))).toBe("session_invalid");

    const d = await login("ed@acme.test");
    const owner = await login("owner@acme.test");
    await team.remove("ws_a", "ed@acme.test");
    expect(await code(team.getSession(d.token))).toBe("session_invalid");
    expect((await team.getSession(owner.token)).member.email).toBe("owner@acme.test");
    expect(await dir.members.list("ws_a")).toEqual(["owner@acme.test"]);
  });

  it("OpenID Connect: an active member's email signs in; the first identity is remembered and must match later", async () => {
    const { team } = await signedIn();
    const first = await team.signInWithOidc({ email: "ed@acme.test", issuer: "https://idp.test", subject: "sub-1", userAgent: "UA", ip: "192.0.2.9" });
    expect(first.session).toMatchObject({ method: "oidc", workspaceId: "ws_a" });
    expect((await team.member("ws_a", "ed@acme.test")).oidcSubject).toBe("sub-1");
    expect((await team.signInWithOidc({ email: "ED@acme.test", issuer: "https://idp.test", subject: "sub-1" })).token).toMatch(/^ses_/);
    expect(await code(team.signInWithOidc({ email: "ed@acme.test", issuer: "https://idp.test", subject: "sub-2" }))).toBe("oidc_subject_mismatch");
    expect(await code(team.signInWithOidc({ email: "ed@acme.test", issuer: "https://other.test", subject: "sub-1" }))).toBe("oidc_subject_mismatch");
    expect(await code(team.signInWithOidc({ email: "stranger@acme.test", issuer: "https://idp.test", subject: "s" }))).toBe("member_not_active");
    expect(await code(team.signInWithOidc({ email: "ed@acme.test", issuer: "https://idp.test", subject: "sub-1", workspaceId: "ws_zz" }))).toBe("member_not_active");
  });
});

describe("team: API keys' owners", () => {
  it("a key acts with the lower of its and its owner's role, and stops when the owner is removed", async () => {
    const { dir, team } = await setup();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.members.add("ws_a", "owner@acme.test");
    await dir.members.add("ws_a", "ed@acme.test");
    const ed = await team.member("ws_a", "ed@acme.test");
    const { plain, key } = await dir.keys.create("ws_a", { role: "EDITOR", ownerMemberId: "ed@acme.test" });
    expect(key.ownerMemberId).toBe(ed.publicId);
    expect(await dir.keys.authenticate(plain)).toMatchObject({ role: "EDITOR", memberId: ed.publicId, scopes: ["api_user", "api_read"] });

    await team.updateRole("ws_a", ed.publicId!, "VIEWER");
    expect(await dir.keys.authenticate(plain)).toMatchObject({ role: "VIEWER", scopes: ["api_read"] });
    expect(await code(dir.keys.authenticate(plain, ["api_user"]))).toBe("insufficient_scope");
    await team.updateRole("ws_a", ed.publicId!, "ADMIN");
    expect((await dir.keys.authenticate(plain)).role).toBe("EDITOR"); // never above the key's own role

    const unowned = await dir.keys.create("ws_a", { role: "VIEWER" });
    expect(await dir.keys.authenticate(unowned.plain)).toMatchObject({ role: "VIEWER", memberId: "" });

    await team.remove("ws_a", ed.publicId!);
    expect(await code(dir.keys.authenticate(plain))).toBe("unauthorized");
    expect(await code(dir.keys.create("ws_a", { role: "EDITOR", ownerMemberId: ed.publicId }))).toBe("member_not_found");
    const invited = await team.invite({ workspaceId: "ws_a", email: "inv@acme.test", role: "EDITOR" });
    expect(await code(dir.keys.create("ws_a", { role: "EDITOR", ownerMemberId: invited.member.publicId }))).toBe("member_not_found");
  });

  it("an ADMIN key needs an OWNER or ADMIN owner, acts as ADMIN only while its owner is one, and a role change takes `admin` away", async () => {
    const { dir, team } = await setup();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.members.add("ws_a", "owner@acme.test");
    await dir.members.add("ws_a", "ed@acme.test");
    expect(await code(dir.keys.create("ws_a", { role: "ADMIN" }))).toBe("invalid_role");
    expect(await code(dir.keys.create("ws_a", { role: "ADMIN", ownerMemberId: "ed@acme.test" }))).toBe("invalid_role");
    // An unowned operator key with `admin` answers for nobody: it stays EDITOR.
    const operator = await dir.keys.create("ws_a", { scopes: ["api_user", "admin"] });
    expect((await dir.keys.authenticate(operator.plain)).role).toBe("EDITOR");

    const owner = await team.member("ws_a", "owner@acme.test");
    const { plain, key } = await dir.keys.create("ws_a", { role: "ADMIN", ownerMemberId: "owner@acme.test" });
    expect(key.scopes).toEqual(["api_user", "admin"]);
    expect(await dir.keys.authenticate(plain)).toMatchObject({ role: "ADMIN", memberId: owner.publicId });
    await dir.members.add("ws_a", "second@acme.test");
    const second = await team.member("ws_a", "second@acme.test");
    await team.updateRole("ws_a", second.publicId!, "OWNER");
    await team.updateRole("ws_a", owner.publicId!, "EDITOR");
    expect((await dir.keys.authenticate(plain)).role).toBe("EDITOR");
    expect(await code(dir.keys.update("ws_a", key._id, { role: "ADMIN" }))).toBe("invalid_role");
    await team.updateRole("ws_a", owner.publicId!, "ADMIN");
    expect((await dir.keys.authenticate(plain)).role).toBe("ADMIN");
    expect((await dir.keys.update("ws_a", key._id, { role: "EDITOR" })).scopes).toEqual(["api_user"]);
    expect((await dir.keys.authenticate(plain)).role).toBe("EDITOR");
    expect((await dir.keys.update("ws_a", key._id, { role: "ADMIN" })).scopes.sort()).toEqual(["admin", "api_user"]);
    expect((await dir.keys.authenticate(plain)).role).toBe("ADMIN");
  });
});
