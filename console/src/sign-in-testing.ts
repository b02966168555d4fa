/**
 * What the console's sign-in tests share (magic-link-accounts, team-sign-in, delivery-access):
 * the gateway over in-memory services (fastify inject, no port), a cookie jar that keeps what
 * a browser would, same-site form posts with the page's CSRF token, and the magic-link round
 * trip: ask for a link as a browser does, read it from the mail the system sender sent, and
 * press the landing page's button. Each test brings its own services (the accounts unit's real
 * TeamService or a stub keeping its contract) through `transport`.
 */
import { expect } from "vitest";
import { createClient, type Transport } from "@connectrpc/connect";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { EmailService, type SendEmailRequest } from "@mailroom/proto/email/v1/email_pb.js";
import { DeliveryService } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { buildGateway } from "../../gateway/src/app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";
import { SESSION_COOKIE } from "./session.js";

/** The origin the gateway believes it is served from (MAILROOM_PUBLIC_URL): links in mail point there. */
export const CONSOLE_ORIGIN = "http://console.test";

/** A browser's cookies for one origin: set, replaced and cleared as the responses say. */
export class Jar {
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
  get signedIn() {
    return this.cookies.has(SESSION_COOKIE);
  }
}

/** The CSRF token of a console page's forms. */
export const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";

/** A form post from the console's own pages, as the CSRF check wants it. */
const FORM = { "content-type": "application/x-www-form-urlencoded", origin: CONSOLE_ORIGIN, "sec-fetch-site": "same-origin" };

export interface ConsoleBrowser {
  app: FastifyInstance;
  get(url: string, jar: Jar): Promise<LightMyRequestResponse>;
  post(url: string, jar: Jar, form: Record<string, string>): Promise<LightMyRequestResponse>;
}

export interface ConsoleGatewayOptions {
  /** MAILROOM_SECRET: seals the console cookie. */
  secret: string;
  /** The logger's name (silent). */
  name: string;
  /** How long the gateway trusts a session lookup; 0 when a test needs removals to show at once. */
  authCacheMs: number;
  /** More clients (or fakes) beside those over `transport`, e.g. audiences, automation, webhooks. */
  clients?: Record<string, unknown>;
}

/**
 * The gateway (API and console) over `transport`, whose services answer the accounts, contacts,
 * templates, team, email and delivery clients, with the system sender that mails sign-in links.
 */
export async function consoleGateway(transport: Transport, opts: ConsoleGatewayOptions): Promise<ConsoleBrowser> {
  const deps: GatewayDeps = {
    config: loadConfig({ MAILROOM_SECRET: opts.secret, MAILROOM_PUBLIC_URL: CONSOLE_ORIGIN }),
    logger: createLogger(opts.name, "silent"),
    clients: {
      accounts: createClient(AccountsService, transport),
      contacts: createClient(ContactService, transport),
      templates: createClient(TemplateService, transport),
      team: createClient(TeamService, transport),
      email: createClient(EmailService, transport),
      delivery: createClient(DeliveryService, transport),
      ...opts.clients,
    } as unknown as ServiceClients,
    rateLimitPerMinute: 0,
    authFailuresPerMinute: 1000,
    authCacheMs: opts.authCacheMs,
    consoleSignIn: { systemSender: { workspaceId: "ws_system", from: "signin@mailroom.test", fromName: "Mailroom" } },
  };
  const app = await buildGateway(deps, { api: [], public: [] });
  return {
    app,
    get: (url, jar) => app.inject({ method: "GET", url, headers: { cookie: jar.header() } }).then((r) => jar.take(r)),
    post: (url, jar, form) =>
      app.inject({ method: "POST", url, payload: new URLSearchParams(form).toString(), headers: { ...FORM, cookie: jar.header() } }).then((r) => jar.take(r)),
  };
}

/**
 * Asks for a magic link as a browser would (the sign-in page's form), and waits for the mail
 * the system sender sends into `sent` (the test's email service records there). `link` is the
 * console path in the mail; none when nothing was mailed (a stranger), after `waitMs`.
 */
export async function askForLink(browser: ConsoleBrowser, sent: SendEmailRequest[], email: string, opts: { next?: string; waitMs?: number; jar?: Jar } = {}) {
  const jar = opts.jar ?? new Jar();
  const before = sent.length;
  const page = await browser.get("/console/sign-in", jar);
  const res = await browser.post("/console/sign-in/email", jar, { _csrf: csrfOf(page.body), email, ...(opts.next ? { next: opts.next } : {}) });
  // The mail goes out after the answer (the answer must not tell members from strangers by its timing).
  for (const end = Date.now() + (opts.waitMs ?? 500); sent.length === before && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
  const mail = sent.slice(before)[0];
  const text = mail?.email?.content.case === "raw" ? mail.email.content.value.text : "";
  const link = /http:\/\/console\.test(\/console\/magic\/\S+)/.exec(text)?.[1];
  return { res, mail, link, jar };
}

/** Opens a magic link and presses its button; the GET alone must sign nobody in (mail scanners fetch links). */
export async function redeem(browser: ConsoleBrowser, path: string, jar = new Jar()) {
  const landing = await browser.get(path, jar);
  expect(landing.statusCode).toBe(200);
  expect(jar.signedIn).toBe(false);
  const res = await browser.post(path, jar, { _csrf: csrfOf(landing.body) });
  return { res, jar };
}

/** A member signed in through a mailed link: the jar holds the session cookie. */
export async function signInByLink(browser: ConsoleBrowser, sent: SendEmailRequest[], email: string): Promise<Jar> {
  const { link } = await askForLink(browser, sent, email);
  expect(link, `no sign-in link mailed to ${email}`).toBeTruthy();
  const { res, jar } = await redeem(browser, link!);
  expect(res.statusCode).toBe(303);
  return jar;
}
