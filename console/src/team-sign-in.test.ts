import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AccountsService, ApiKeySchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { MemberSchema, SessionSchema, TeamService, type Member } from "@mailroom/proto/accounts/v1/team_pb.js";
import { EmailService, type SendEmailRequest } from "@mailroom/proto/email/v1/email_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { appError } from "@mailroom/kit/errors.js";
import { SESSION_COOKIE } from "./session.js";
import { askForLink as askForLinkOf, consoleGateway, csrfOf, Jar, redeem as redeemOf, type ConsoleBrowser } from "./sign-in-testing.js";

/**
 * Member sign-in through the console (fastify inject) against an in-memory TeamService that
 * keeps the contract's rules (single-use magic links valid 15 minutes, tokens unknown when
 * altered, sessions revocable and rotated) and an in-memory email service that records what
 * the system sender sends: magic-link expiry, reuse and tampering; the same answer for
 * members and strangers; sign-out, "sign out everywhere", removal and rotation.
 */
const SECRET = "console-team-test-secret-0123456789abcdef";
const WS = "ws_team";
let now = Date.now();
const unauth = (code: string, message: string) => appError({ code, httpStatus: 401, message });

const members = new Map<string, Member>();
const magic = new Map<string, { email: string; exp: number; used: boolean }>();
const sessions = new Map<string, { id: string; memberId: string; revoked: boolean; rotateNext: boolean; method: string }>();
const invitations = new Map<string, { memberId: string; used: boolean }>();
let seq = 0;
const sent: SendEmailRequest[] = [];

function addMember(email: string, role: string, status = "ACTIVE"): Member {
  const m = create(MemberSchema, { id: `mbr_${++seq}`, workspaceId: WS, email, role, status, createdAt: timestampFromDate(new Date()) });
  members.set(m.id, m);
  return m;
}
function newSession(memberId: string, method: string) {
  const id = `ses_${++seq}`;
  const token = `st_${id}_${Math.random().toString(36).slice(2)}xxxxxxxx`;
  sessions.set(token, { id, memberId, revoked: false, rotateNext: false, method });
  return { session: create(SessionSchema, { id, workspaceId: WS, memberId, method }), sessionToken: token };
}
const memberByEmail = (email: string) => [...members.values()].find((m) => m.email === email && m.status === "ACTIVE");

const transport = memoryTransport(({ service }) => {
  service(TeamService, {
    startMagicLink(req) {
      const m = memberByEmail(req.email);
      if (!m) return {};
      const token = `ml_${++seq}_${Math.random().toString(36).slice(2)}abcdefgh`;
      magic.set(token, { email: m.email, exp: now + 15 * 60_000, used: false });
      return { token, memberEmail: m.email, workspaceIds: [WS], workspaceId: WS, expiresAt: timestampFromDate(new Date(now + 15 * 60_000)) };
    },
    redeemMagicLink(req) {
      const link = magic.get(req.token);
      if (!link) throw unauth("magic_link_invalid", "invalid");
      if (link.used) throw unauth("magic_link_used", "used");
      if (link.exp <= now) throw unauth("magic_link_expired", "expired");
      link.used = true;
      const m = memberByEmail(link.email);
      if (!m) throw unauth("magic_link_invalid", "invalid");
      return newSession(m.id, "magic_link");
    },
    getSession(req) {
      const s = sessions.get(req.sessionToken);
      const m = s && members.get(s.memberId);
      if (!s || s.revoked || !m) throw unauth("session_invalid", "invalid");
      let rotatedToken: string | undefined;
      if (s.rotateNext) {
        s.rotateNext = false;
        rotatedToken = `st_${s.id}_rotated_${++seq}xxxxxxxx`;
        sessions.set(rotatedToken, { ...s });
      }
      return { session: create(SessionSchema, { id: s.id, workspaceId: WS, memberId: m.id, method: s.method }), member: m, workspaceId: WS, rotatedToken };
    },
    listSessions(req) {
      return { sessions: [...sessions.values()].filter((s) => s.memberId === req.memberId && !s.revoked)
        .map((s) => create(SessionSchema, { id: s.id, workspaceId: WS, memberId: s.memberId, method: s.method, current: s.id === req.currentSessionId })) };
    },
    revokeSession(req) {
      for (const s of sessions.values()) if (s.id === req.sessionId) s.revoked = true;
      return {};
    },
    revokeAllSessions(req) {
      let revoked = 0;
      for (const s of sessions.values()) if (s.memberId === req.memberId && !s.revoked) { s.revoked = true; revoked++; }
      return { revoked };
    },
    listMembers() {
      return { members: [...members.values()] };
    },
    inviteMember(req) {
      const m = addMember(req.email, req.role, "INVITED");
      const token = `inv_${++seq}_abcdefghijklmnop`;
      invitations.set(token, { memberId: m.id, used: false });
      return { invitationId: `inv_${seq}`, token, member: m, expiresAt: timestampFromDate(new Date(now + 72 * 3600_000)) };
    },
    acceptInvitation(req) {
      const inv = invitations.get(req.token);
      if (!inv) throw unauth("invitation_invalid", "invalid");
      if (inv.used) throw unauth("invitation_used", "used");
      inv.used = true;
      const m = members.get(inv.memberId)!;
      m.status = "ACTIVE";
      return { member: m, workspaceId: WS };
    },
    updateMemberRole(req) {
      const m = members.get(req.memberId)!;
      m.role = req.role;
      return { member: m };
    },
    removeTeamMember(req) {
      const m = members.get(req.memberId)!;
      // The team's rule: a workspace keeps at least one owner.
      const owners = [...members.values()].filter((x) => x.role === "OWNER" && x.status === "ACTIVE");
      if (m.role === "OWNER" && owners.length === 1) throw appError({ code: "last_owner", httpStatus: 409, message: "A workspace keeps at least one owner: make another member OWNER first" });
      members.delete(req.memberId);
      for (const s of sessions.values()) if (s.memberId === req.memberId) s.revoked = true;
      return { member: m };
    },
  });
  service(AccountsService, {
    getWorkspace(req) {
      return { workspace: { id: req.workspaceId, name: "Team Co" } };
    },
    authenticate(req) {
      if (req.apiKey !== "mr_test_team_owned_key") throw appError({ code: "unauthorized", httpStatus: 401, message: "no" });
      return { workspaceId: WS, keyId: "key_owned", scopes: ["api_user", "api_read"], role: "EDITOR", memberId: ownerOfKey };
    },
    getApiKey(req) {
      return { apiKey: create(ApiKeySchema, { id: req.keyId, workspaceId: WS, name: "owned", scopes: ["api_user", "api_read"], role: "EDITOR", ownerMemberId: ownerOfKey }) };
    },
  });
  service(EmailService, {
    sendEmail(req) {
      sent.push(req);
      return {};
    },
  });
});
let ownerOfKey = "";

describe("console member sign-in (magic link) and sessions", () => {
  let browser: ConsoleBrowser;
  let owner: Member;
  let viewer: Member;

  beforeAll(async () => {
    browser = await consoleGateway(transport, { secret: SECRET, name: "console-team-test", authCacheMs: 10_000 });
  });
  afterAll(async () => browser?.app.close());
  beforeEach(() => {
    now = Date.now();
    members.clear();
    owner = addMember("owner@team.test", "OWNER");
    viewer = addMember("viewer@team.test", "VIEWER");
  });

  const get = (url: string, jar: Jar) => browser.get(url, jar);
  const post = (url: string, jar: Jar, form: Record<string, string>) => browser.post(url, jar, form);
  /** Asks for a link as a browser would; returns the link the system sender mailed (if any) and the page. */
  const askForLink = (email: string, jar = new Jar()) => askForLinkOf(browser, sent, email, { next: "/console", jar });
  const redeem = (path: string, jar = new Jar()) => redeemOf(browser, path, jar);

  it("mails a member a link from the system sender, and answers a stranger the same way", async () => {
    const member = await askForLink("Owner@Team.test");
    const stranger = await askForLink("nobody@team.test");
    expect(member.res.statusCode).toBe(200);
    expect(stranger.res.statusCode).toBe(200);
    const strip = (html: string) => html.replace(/owner@team\.test|nobody@team\.test/g, "EMAIL");
    expect(strip(stranger.res.body)).toBe(strip(member.res.body));
    expect(stranger.mail).toBeUndefined();
    expect(member.mail).toMatchObject({ workspaceId: "ws_system", email: { to: "owner@team.test", settings: { trackClicks: false, trackOpens: false } } });
    expect(member.mail.email!.content.value).toMatchObject({ from: "signin@mailroom.test", fromName: "Mailroom" });
    expect(member.link).toMatch(/^\/console\/magic\/ml_/);
  });

  it("signs a member in with the link once: a second use, an altered token and an expired link are refused", async () => {
    const { link } = await askForLink("owner@team.test");
    const first = await redeem(link!);
    expect(first.res.statusCode).toBe(303);
    expect(first.jar.cookies.has(SESSION_COOKIE)).toBe(true);
    const home = await get("/console/team", first.jar);
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain("owner@team.test");
    expect(home.body).toContain("(OWNER)");

    const reuse = await redeem(link!);
    expect(reuse.res.statusCode).toBe(401);
    expect(reuse.res.body).toContain("already used");
    expect(reuse.jar.cookies.has(SESSION_COOKIE)).toBe(false);

    const fresh = (await askForLink("owner@team.test")).link!;
    const tampered = fresh.slice(0, -3) + (fresh.endsWith("aaa") ? "bbb" : "aaa");
    const altered = await redeem(tampered);
    expect(altered.res.statusCode).toBe(401);
    expect(altered.res.body).toContain("not valid");
    const junk = await redeem("/console/magic/%3Cscript%3E");
    expect(junk.res.statusCode).toBe(401);

    now += 15 * 60_000 + 1000;
    const expired = await redeem(fresh);
    expect(expired.res.statusCode).toBe(401);
    expect(expired.res.body).toContain("expired");
    expect(expired.jar.cookies.has(SESSION_COOKIE)).toBe(false);
  });

  it("signs out by revoking the session; a revoked session or a removed member is out at once", async () => {
    const a = await redeem((await askForLink("viewer@team.test")).link!);
    const b = await redeem((await askForLink("viewer@team.test")).link!);
    const page = await get("/console/sessions", a.jar);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("This browser");
    // Viewers see the team but not its forms; the audit log is for owners and admins.
    const team = await get("/console/team", a.jar);
    expect(team.body).not.toContain("Send invitation");
    expect((await get("/console/audit", a.jar)).statusCode).toBe(403);

    const out = await post("/console/sign-out", a.jar, { _csrf: csrfOf(page.body) });
    expect(out.statusCode).toBe(303);
    expect([...sessions.values()].filter((s) => s.memberId === viewer.id && s.revoked)).toHaveLength(1);
    expect((await get("/console/sessions", b.jar)).statusCode).toBe(200);

    // Removal by an owner: the viewer's other browser is signed out on its next request.
    const o = await redeem((await askForLink("owner@team.test")).link!);
    const teamPage = await get("/console/team", o.jar);
    const removed = await post(`/console/team/${viewer.id}/remove`, o.jar, { _csrf: csrfOf(teamPage.body) });
    expect(removed.statusCode).toBe(303);
    const after = await get("/console/sessions", b.jar);
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toMatch(/^\/console\/sign-in/);
  });

  it("keeps the last owner who presses Remove on themselves signed in, with the refusal; another owner's self-removal signs out", async () => {
    const o = await redeem((await askForLink("owner@team.test")).link!);
    const teamPage = await get("/console/team", o.jar);
    const refused = await post(`/console/team/${owner.id}/remove`, o.jar, { _csrf: csrfOf(teamPage.body) });
    expect(refused.statusCode).toBe(303);
    expect(refused.headers.location).toBe("/console/team");
    expect(o.jar.cookies.has(SESSION_COOKIE)).toBe(true);
    const back = await get("/console/team", o.jar);
    expect(back.statusCode).toBe(200);
    expect(back.body).toContain("A workspace keeps at least one owner");
    expect(members.has(owner.id)).toBe(true);

    // With a second owner the removal goes through, and the one who left is signed out.
    addMember("second@team.test", "OWNER");
    const left = await post(`/console/team/${owner.id}/remove`, o.jar, { _csrf: csrfOf(back.body) });
    expect(left.statusCode).toBe(303);
    expect(left.headers.location).toMatch(/^\/console\/sign-in/);
    expect(o.jar.cookies.has(SESSION_COOKIE)).toBe(false);
    expect(members.has(owner.id)).toBe(false);
  });

  it("signs out everywhere: every session of the member ends", async () => {
    const a = await redeem((await askForLink("owner@team.test")).link!);
    const b = await redeem((await askForLink("owner@team.test")).link!);
    const page = await get("/console/sessions", a.jar);
    expect(page.body).toContain("Sign out everywhere");
    const res = await post("/console/sessions/revoke-all", a.jar, { _csrf: csrfOf(page.body) });
    expect(res.statusCode).toBe(303);
    expect(a.jar.cookies.has(SESSION_COOKIE)).toBe(false);
    // b's lookup may be cached up to 2 s in another gateway; here the cache was dropped.
    expect((await get("/console/sessions", b.jar)).statusCode).toBe(303);
  });

  it("reseals the cookie when the team rotates the session token", async () => {
    const a = await redeem((await askForLink("owner@team.test")).link!);
    const before = a.jar.cookies.get(SESSION_COOKIE);
    for (const s of sessions.values()) if (s.memberId === owner.id) s.rotateNext = true;
    await new Promise((r) => setTimeout(r, 2_100)); // past the 2 s session cache
    const res = await get("/console/sessions", a.jar);
    expect(res.statusCode).toBe(200);
    expect(a.jar.cookies.get(SESSION_COOKIE)).not.toBe(before);
    expect((await get("/console/sessions", a.jar)).statusCode).toBe(200);
  });

  it("lets an owner invite (mailed, and the link shown once), and the invitee accept and be signed in", async () => {
    const o = await redeem((await askForLink("owner@team.test")).link!);
    const teamPage = await get("/console/team", o.jar);
    expect(teamPage.body).toContain("Send invitation");
    const before = sent.length;
    const res = await post("/console/team/invite", o.jar, { _csrf: csrfOf(teamPage.body), email: "new@team.test", role: "EDITOR" });
    expect(res.statusCode).toBe(200);
    const link = /http:\/\/console\.test(\/console\/invite\/[^<"\s]+)/.exec(res.body)?.[1];
    expect(link).toBeTruthy();
    expect(sent.slice(before)).toHaveLength(1);
    expect(sent[before]).toMatchObject({ workspaceId: "ws_system", email: { to: "new@team.test" } });

    const jar = new Jar();
    const landing = await get(link!, jar);
    expect(jar.cookies.has(SESSION_COOKIE)).toBe(false);
    const accepted = await post(link!, jar, { _csrf: csrfOf(landing.body) });
    expect(accepted.statusCode).toBe(303);
    const home = await get("/console/sessions", jar);
    expect(home.body).toContain("new@team.test");
    const again = await post(link!, new Jar(), { _csrf: csrfOf((await get(link!, new Jar())).body) });
    expect([401, 403]).toContain(again.statusCode);
  });

  it("caps an API key's console role by its owner's and signs it out when the owner is gone", async () => {
    ownerOfKey = viewer.id;
    const jar = new Jar();
    const page = await get("/console/sign-in", jar);
    const res = await post("/console/sign-in", jar, { _csrf: csrfOf(page.body), apiKey: "mr_test_team_owned_key", next: "/console/team" });
    expect(res.statusCode).toBe(303);
    const team = await get("/console/team", jar);
    expect(team.statusCode).toBe(200);
    expect(team.body).toContain("(VIEWER)");
    expect(team.body).toContain("(read only)");
    members.delete(viewer.id);
    ownerOfKey = "";
  });
});
