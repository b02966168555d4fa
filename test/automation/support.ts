/**
 * What the automation suites share: a workspace per test (so one test's contact_created
 * automation never enrols another test's contacts), templates whose subject names them, the
 * system with every unit an automation's send passes through, and readers of what the SMTP
 * sink received.
 */
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import type { ReceivedMessage } from "../harness/smtp-sink.js";

export const keyOf = (ws: string) => `mr_test_${ws}_1`;
export const SENDER = "team@acme.test";

/** A workspace whose templates are named `names`; each one's subject is `<name> for <firstName>`. */
export function workspace(id: string, templates: string[], over: Record<string, unknown> = {}) {
  return {
    id, name: id, timezone: "UTC",
    apiKeys: [{ key: keyOf(id), scopes: ["api_user"] }],
    verifiedEmails: [SENDER], verifiedDomains: [], members: ["owner@acme.test"],
    flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
    monthlyLimit: 100_000, sendingAccountNew: false,
    contactProperties: [{ slug: "plan", type: "string" }],
    templates: templates.map((name) => ({
      name, subject: `${name} for {{firstName}}`, html: `<p>Hi {{firstName}}, this is ${name}.</p>`, fromEmail: SENDER, fromName: "Acme",
    })),
    ...over,
  };
}

/** Units an automation needs: its own, the accounts and audience units (workspaces, templates; contacts, events), and the send path to the sink. */
export const AUTOMATION_UNITS = ["accounts", "audience", "renderer", "email", "delivery", "webhooks", "automation", "gateway"] as const;

export function startAutomationSystem(workspaces: unknown[], env: Record<string, string> = {}): Promise<TestSystem> {
  return useSystem({
    bootstrap: { workspaces },
    units: [...AUTOMATION_UNITS],
    env: {
      ...env,
    },
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(what: string, read: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`${what}: timed out; last value: ${JSON.stringify(value).slice(0, 2000)}`);
    await sleep(100);
    value = await read();
  }
  return value;
}

/** One header of a raw message (unfolded), or undefined. */
export function headerOf(raw: string, name: string): string | undefined {
  const head = raw.slice(0, raw.search(/\r?\n\r?\n/));
  const m = new RegExp(`^${name}:[ \\t]*(.*(?:\\r?\\n[ \\t].*)*)`, "im").exec(head);
  return m?.[1].replace(/\r?\n[ \t]+/g, " ").trim();
}

export interface Mail {
  to: string;
  subject: string;
  messageId: string;
  receivedAt: number;
}

export const asMail = (m: ReceivedMessage): Mail => ({
  to: m.to.join(","),
  subject: headerOf(m.raw, "Subject") ?? "",
  messageId: headerOf(m.raw, "Message-ID") ?? "",
  receivedAt: m.receivedAt.getTime(),
});

/** What the sink received for one address, in arrival order. */
export const mailsTo = (sys: TestSystem, address: string): Mail[] => sys.sink!.messages.filter((m) => m.to.includes(address)).map(asMail);

/** The public automation API of one workspace. */
export function automations(sys: TestSystem, ws: string) {
  const api = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: keyOf(ws), body });
  const ok = <T>(res: { status: number; body: any }, status: number, field: string): T => {
    if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body[field] as T;
  };
  return {
    api,
    async create(definition: Record<string, unknown>) {
      return ok<any>(await api("POST", "/v1/automations", definition), 201, "automation");
    },
    /** Created and activated. */
    async active(definition: Record<string, unknown>) {
      const created = await this.create(definition);
      return ok<any>(await api("POST", `/v1/automations/${created.id}/activate`, {}), 200, "automation");
    },
    async get(id: string) {
      return ok<any>(await api("GET", `/v1/automations/${id}`), 200, "automation");
    },
    async runs(id: string, query = ""): Promise<any[]> {
      const items: any[] = [];
      let cursor = "";
      for (;;) {
        const page = ok<any>(await api("GET", `/v1/automations/${id}/runs?limit=100${query ? `&${query}` : ""}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`), 200, "runs");
        items.push(...page.items);
        if (!page.hasMore) return items;
        cursor = page.cursor;
      }
    },
    async stats(id: string) {
      return ok<any>(await api("GET", `/v1/automations/${id}/stats`), 200, "stats");
    },
    /** A contact created through POST /v1/contacts (its contact_created event is what enrols it). */
    async contact(email: string, firstName: string, properties: Record<string, unknown> = {}) {
      return ok<any>(await api("POST", "/v1/contacts", { properties: { email, firstName, ...properties } }), 201, "contact");
    },
  };
}

/** Each run step by its id. */
export const stepsById = (run: { steps: Array<{ stepId: string }> }) => Object.fromEntries(run.steps.map((s) => [s.stepId, s as any]));

/** The run is inside `stepId` (entered, not completed): a wait there has begun. */
export const waitingIn = (run: any, stepId: string) =>
  run?.status === "ACTIVE" && run.currentStepId === stepId && run.steps.some((s: any) => s.stepId === stepId && !s.completedAt);
