import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { DirectoryService } from "../../../gen/mailroom/directory/v1/directory_pb.js";
import { TeamService } from "../../../gen/mailroom/directory/v1/team_pb.js";
import { EmailService, type SendEmailRequest } from "../../../gen/mailroom/email/v1/email_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { memoryDirectory, storeTeam } from "../../../services/directory/src/testing.js";
import { directoryService } from "../../../services/directory/src/routes.js";
import { teamService } from "../../../services/directory/src/team-routes.js";
import type { Team } from "../../../services/directory/src/domain/team.js";
import { buildGateway } from "../app.js";
import type { GatewayDeps, ServiceClients } from "../deps.js";
import { SESSION_COOKIE } from "./session.js";

/**
 * Magic-link sign-in through the console against the directory's own TeamService (its domain
 * and Connect mapping, in memory, on a clock the test moves): a link expires after 15 minutes,
 * works once, and an altered one is refused; the session token rotates after an hour and the
 * cookie follows; a removed member is signed out on the next request.
 */
const MINUTE = 60_000;
let now = new Date(Math.floor(Date.now() / 1000) * 1000);
const clock = () => new Date(now);
const sent: SendEmailRequest[] = [];

class Jar {
  cookies = new Map<string, string>();
  take(res: LightMyRequestResponse) {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number; expires?: Date }>) {
      const cleared = c.value === "" || c.maxAge === 0 || (c.expires && c.expires.getTime() < Date.now());
      if (cleared) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    return res;
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}
const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
const FORM = { "content-type": "application/x-www-form-urlencoded", origin: "http://console.test", "sec-fetch-site": "same-origin" };

describe("console magic links against the directory's TeamService", () => {
  let app: FastifyInstance;
  let team: Team;

  beforeAll(async () => {
    const dir = await memoryDirectory({ now: clock });
    await dir.bootstrap.loadJson(JSON.stringify({
      workspaces: [{ id: "ws_ml", name: "Magic Co", members: [{ email: "owner@magic.test", role: "OWNER" }, { email: "ed@magic.test", role: "EDITOR" }] }],
    }));
    const wired = await storeTeam(dir, { now: clock });
    team = wired.team;
    const transport = memoryTransport(({ service }) => {
      service(DirectoryService, directoryService(dir, undefined, team));
      service(TeamService, teamService(team, wired.auditLog));
      service(EmailService, {
        sendEmail(req) {
          sent.push(req);
          return {};
        },
      });
    });
    const deps: GatewayDeps = {
      config: loadConfig({ MAILROOM_SECRET: "console-magic-directory-secret-0123456789", MAILROOM_PUBLIC_URL: "http://console.test" }),
      logger: createLogger("console-magic-test", "silent"),
      clients: {
        directory: createClient(DirectoryService, transport),
        team: createClient(TeamService, transport),
        email: createClient(EmailService, transport),
      } as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authFailuresPerMinute: 1000,
      // Every request asks the directory: removal must show at once here.
      authCacheMs: 0,
      consoleSignIn: { systemSender: { workspaceId: "ws_system", from: "signin@mailroom.test", fromName: "Mailroom" } },
    };
    app = await buildGateway(deps, { api: [], public: [] });
  });
  afterAll(async () => app?.close());

  const get = (url: string, jar: Jar) => app.inject({ method: "GET", url, headers: { cookie: jar.header() } }).then((r) => jar.take(r));
  const post = (url: string, jar: Jar, form: Record<string, string>) =>
    app.inject({ method: "POST", url, payload: new URLSearchParams(form).toString(), headers: { ...FORM, cookie: jar.header() } }).then((r) => jar.take(r));

  async function mailedLink(email: string): Promise<string> {
    const jar = new Jar();
    const before = sent.length;
    const page = await get("/console/sign-in", jar);
    expect((await post("/console/sign-in/email", jar, { _csrf: csrfOf(page.body), email })).statusCode).toBe(200);
    for (let i = 0; i < 50 && sent.length === before; i++) await new Promise((r) => setTimeout(r, 10));
    const mail = sent[before];
    expect(mail?.email?.to).toBe(email);
    const text = mail.email!.content.case === "raw" ? mail.email!.content.value.text : "";
    return /http:\/\/console\.test(\/console\/magic\/\S+)/.exec(text)![1];
  }

  async function redeem(path: string, jar = new Jar()) {
    const landing = await get(path, jar);
    const res = await post(path, jar, { _csrf: csrfOf(landing.body) });
    return { res, jar };
  }

  it("signs in once; the same link again, an altered one and an expired one are refused", async () => {
    const link = await mailedLink("owner@magic.test");
    const first = await redeem(link);
    expect(first.res.statusCode).toBe(303);
    expect((await get("/console/sessions", first.jar)).body).toContain("owner@magic.test");

    const again = await redeem(link);
    expect(again.res.statusCode).toBe(401);
    expect(again.res.body).toContain("already used");
    expect(again.jar.cookies.has(SESSION_COOKIE)).toBe(false);

    const fresh = await mailedLink("owner@magic.test");
    const i = fresh.length - 5;
    const altered = fresh.slice(0, i) + (fresh[i] === "A" ? "B" : "A") + fresh.slice(i + 1);
    const tampered = await redeem(altered);
    expect(tampered.res.statusCode).toBe(401);
    expect(tampered.res.body).toContain("not valid");

    now = new Date(now.getTime() + 15 * MINUTE + 1000);
    const expired = await redeem(fresh);
    expect(expired.res.statusCode).toBe(401);
    expect(expired.res.body).toContain("expired");
    expect(expired.jar.cookies.has(SESSION_COOKIE)).toBe(false);
  });

  it("follows the directory's rotation of the session token, and signs a removed member out at once", async () => {
    const { jar } = await redeem(await mailedLink("ed@magic.test"));
    const first = jar.cookies.get(SESSION_COOKIE);
    now = new Date(now.getTime() + 61 * MINUTE);
    expect((await get("/console/sessions", jar)).statusCode).toBe(200);
    expect(jar.cookies.get(SESSION_COOKIE)).not.toBe(first);
    // The old cookie keeps working for the rotation's grace only.
    const old = new Jar();
    old.cookies.set(SESSION_COOKIE, first!);
    expect((await get("/console/sessions", old)).statusCode).toBe(200);
    now = new Date(now.getTime() + 2 * MINUTE);
    expect((await get("/console/sessions", old)).statusCode).toBe(303);
    expect((await get("/console/sessions", jar)).statusCode).toBe(200);

    const ed = (await team.list("ws_ml")).find((m) => m.email === "ed@magic.test")!;
    await team.remove("ws_ml", ed.publicId!);
    const after = await get("/console/sessions", jar);
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toMatch(/^\/console\/sign-in/);
  });
});
