import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient, Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import {
  AutomationSchema, AutomationService, AutomationStatus, RunSchema, RunStatus,
  type CreateAutomationRequest, type UpdateAutomationRequest,
} from "@mailroom/proto/automation/v1/automation_pb.js";
import { ContactService, ContactStatus } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { GroupService } from "@mailroom/proto/audience/v1/groups_pb.js";
import { WebhookService } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { appError } from "@mailroom/kit/errors.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { buildGateway } from "../../gateway/src/app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";
import { durationFromText, durationWords } from "./views/automation-flow.js";
import { stepPathOf } from "./pages/automation-form.js";

/**
 * The automations console over in-memory Connect services: the list, the flow with its
 * per-step counts, the editor (a form per step) round-tripping every step type into the
 * CreateAutomation / UpdateAutomation JSON, the unit's invalid_automation error shown at its
 * path, CSRF, and a contact's runs on the contact page.
 */
const ORIGIN = "http://console.test";
const KEY = "mr_test_console_automations";
const AUT = "aut_01jaaaaaaaaaaaaaaaaaaaaaaa";
const CONTACT = "ctc_01jaaaaaaaaaaaaaaaaaaaaaaa";
const GROUP = "grp_01jaaaaaaaaaaaaaaaaaaaaaaa";

/** Every step type, nested two deep, in the public shape (as the unit stores it). */
const EVERY_STEP = [
  { id: "welcome", type: "send", template: "welcome" },
  { id: "pause", type: "wait", duration: "P2D" },
  {
    id: "is_pro", type: "condition", filter: { "properties.plan": "pro" },
    then: [
      { id: "pro_mail", type: "send", template: "pro-tips", settings: { trackOpens: false } },
      { id: "vip", type: "add_to_group", groupId: GROUP },
    ],
    else: [
      {
        id: "wait_buy", type: "wait_for_event", event: "purchase", timeout: "PT2S",
        then: [{ id: "tag", type: "update_contact", properties: { plan: "pro", score: 3 } }],
        else: [{ id: "leave", type: "remove_from_group", groupId: GROUP }, { id: "bye", type: "exit" }],
      },
    ],
  },
  { id: "morning", type: "wait_until", time: "09:00", days: ["mon", "fri"], timezone: "workspace" },
];
const TRIGGER = { type: "event", name: "signed_up", filter: { "properties.plan": { $exists: true } } };

const automation = (over: { id?: string; name?: string; status?: AutomationStatus; version?: number; runs?: { active?: bigint; completed?: bigint; exited?: bigint } } = {}) => create(AutomationSchema, {
  id: AUT, workspaceId: "ws_a", name: "Welcome <series>", status: AutomationStatus.ACTIVE,
  triggerJson: JSON.stringify(TRIGGER), stepsJson: JSON.stringify(EVERY_STEP), reentryJson: JSON.stringify({ after: "P30D" }),
  version: 3, createdAt: timestampFromDate(new Date(Date.UTC(2030, 0, 1))), updatedAt: timestampFromDate(new Date(Date.UTC(2030, 0, 2))),
  runs: { active: 7n, completed: 42n, exited: 5n }, ...over,
});

const calls = {
  create: [] as CreateAutomationRequest[],
  update: [] as UpdateAutomationRequest[],
  activate: 0,
  refuse: undefined as undefined | { path: string; message: string },
  statsVersions: [] as number[],
};

const automationClient = createClient(AutomationService, memoryTransport(({ service }) => {
  const refuseIfAsked = () => {
    if (calls.refuse) {
      throw appError({ code: "invalid_automation", httpStatus: 400, message: `${calls.refuse.path}: ${calls.refuse.message}`, extra: { path: JSON.stringify(calls.refuse.path) } });
    }
  };
  service(AutomationService, {
    listAutomations: (req) => ({ automations: req.workspaceId === "ws_a" ? [automation(), automation({ id: "aut_draft1", name: "Drip", status: AutomationStatus.DRAFT, version: 1, runs: {} })] : [] }),
    getAutomation(req) {
      if (req.workspaceId !== "ws_a" || req.automationId !== AUT) throw appError({ code: "automation_not_found", httpStatus: 404, message: "Automation not found" });
      return { automation: automation() };
    },
    createAutomation(req) {
      calls.create.push(req);
      refuseIfAsked();
      return { automation: automation({ name: req.name, status: AutomationStatus.DRAFT, version: 1 }) };
    },
    updateAutomation(req) {
      calls.update.push(req);
      refuseIfAsked();
      return { automation: automation({ version: 4 }) };
    },
    activateAutomation() {
      calls.activate++;
      return { automation: automation() };
    },
    pauseAutomation: () => ({ automation: automation({ status: AutomationStatus.PAUSED }) }),
    deleteAutomation: () => ({ automation: automation() }),
    getAutomationStats(req) {
      calls.statsVersions.push(req.version);
      // Version 2's runs still wait in "pause" and in "old_wait" (a step version 3 removed); version 1 has none left.
      if (req.version === 2) {
        return { automationId: AUT, version: 2, steps: [
          { stepId: "welcome", type: "send", entered: 20n, completed: 20n },
          { stepId: "pause", type: "wait", entered: 20n, waiting: 6n, completed: 14n },
          { stepId: "old_wait", type: "wait", entered: 14n, waiting: 5n, completed: 9n },
        ] };
      }
      if (req.version === 1) return { automationId: AUT, version: 1, steps: [{ stepId: "welcome", type: "send", entered: 2n, completed: 2n }] };
      if (req.version > 3) throw appError({ code: "automation_not_found", httpStatus: 404, message: "no such version" });
      return {
        automationId: AUT, version: 3,
        steps: [
          { stepId: "welcome", type: "send", entered: 54n, completed: 54n },
          { stepId: "pause", type: "wait", entered: 54n, waiting: 4n, completed: 50n },
          { stepId: "is_pro", type: "condition", entered: 50n, completed: 50n },
          { stepId: "wait_buy", type: "wait_for_event", entered: 31n, waiting: 3n, completed: 27n, exited: 1n },
          { stepId: "bye", type: "exit", entered: 11n, exited: 11n },
        ],
      };
    },
    listRuns(req) {
      const run = create(RunSchema, {
        id: "run_1", automationId: AUT, version: 3, contactId: CONTACT, status: RunStatus.ACTIVE, currentStepId: "pause",
        startedAt: timestampFromDate(new Date(Date.UTC(2030, 0, 3, 10))),
        steps: [
          { stepId: "welcome", type: "send", enteredAt: timestampFromDate(new Date(Date.UTC(2030, 0, 3, 10))), completedAt: timestampFromDate(new Date(Date.UTC(2030, 0, 3, 10, 1))), emailId: "trs_01jbbbbbbbbbbbbbbbbbbbbbbb" },
          { stepId: "pause", type: "wait", enteredAt: timestampFromDate(new Date(Date.UTC(2030, 0, 3, 10, 1))) },
        ],
      });
      const gone = create(RunSchema, { id: "run_0", automationId: "aut_deleted", version: 1, contactId: CONTACT, status: RunStatus.EXITED, exitReason: "automation_deleted", steps: [] });
      if (req.automationId === "" && req.contactId === CONTACT) return { runs: [run, gone] };
      return { runs: req.automationId === AUT ? [run] : [] };
    },
  });
}));

const stubTransport = memoryTransport(({ service }) => {
  service(AccountsService, {
    authenticate(req) {
      if (req.apiKey !== KEY) throw new ConnectError("unknown key", Code.Unauthenticated);
      return { workspaceId: "ws_a", keyId: "key_a", scopes: ["api_user"] };
    },
    getApiKey: () => ({ apiKey: { id: "key_a", workspaceId: "ws_a", name: "key", scopes: ["api_user"] } }),
    getWorkspace: (req) => ({ workspace: { id: req.workspaceId, name: "Acme" } }),
  });
  service(ContactService, {
    listContactProperties: () => ({ properties: [{ slug: "plan", displayName: "Plan" }] }),
    getContact(req) {
      if (req.contactId !== CONTACT) throw appError({ code: "contact_not_found", httpStatus: 404, message: "No such contact" });
      return { contact: { id: CONTACT, email: "ann@example.test", status: ContactStatus.SUBSCRIBED } };
    },
    listContactEvents: () => ({ events: [] }),
    checkSuppression: () => ({ suppressed: [] }),
  });
  service(TemplateService, { listTemplates: () => ({ templates: [{ name: "welcome" }, { name: "pro-tips" }] }) });
});
const accounts = createClient(AccountsService, stubTransport);
const contacts = createClient(ContactService, stubTransport);
const templates = createClient(TemplateService, stubTransport);
const groups = createClient(GroupService, memoryTransport(({ service }) => {
  service(GroupService, { listGroups: () => ({ groups: [{ id: GROUP, publicId: "vip", displayName: "VIP" }] }) });
}));
const webhooks = createClient(WebhookService, memoryTransport(({ service }) => {
  service(WebhookService, { listContactDeliveries: () => ({ deliveries: [] }), listWebhooks: () => ({ webhooks: [] }) });
}));

class Jar {
  cookies = new Map<string, string>();
  take(res: LightMyRequestResponse) {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number }>) {
      if (c.value === "" || c.maxAge === 0) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    return res;
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}
const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
const ENTITIES: Record<string, string> = { lt: "<", gt: ">", quot: '"', amp: "&" };
const unescape = (s: string) => s.replace(/&(?:#(\d+)|(lt|gt|quot|amp));/g, (_, c, name) => (name ? ENTITIES[name] : String.fromCharCode(Number(c))));

/** What a browser would post for the form `formId` in `html` (no button: add `op`). */
function formFields(html: string, formId: string): Array<[string, string]> {
  const form = html.slice(html.indexOf(`id="${formId}"`), html.indexOf("</form>", html.indexOf(`id="${formId}"`)));
  const out: Array<[string, string]> = [];
  const attrOf = (tag: string, name: string) => { const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag); return m ? unescape(m[1]) : undefined; };
  for (const m of form.matchAll(/<input\b[^>]*>|<select\b[^>]*>[\s\S]*?<\/select>|<textarea\b[^>]*>([\s\S]*?)<\/textarea>/g)) {
    const tag = m[0];
    const name = attrOf(tag.slice(0, tag.indexOf(">") + 1), "name");
    if (!name) continue;
    if (tag.startsWith("<input")) {
      const type = attrOf(tag, "type");
      if ((type === "checkbox" || type === "radio") && !/\schecked\b/.test(tag)) continue;
      out.push([name, attrOf(tag, "value") ?? (type === "checkbox" ? "on" : "")]);
    } else if (tag.startsWith("<select")) {
      const options = [...tag.matchAll(/<option value="([^"]*)"( selected)?/g)];
      const chosen = options.find((o) => o[2]) ?? options[0];
      out.push([name, chosen ? unescape(chosen[1]) : ""]);
    } else out.push([name, unescape(m[1] ?? "")]);
  }
  return out;
}

describe("console: automations", () => {
  let app: FastifyInstance;
  let jar: Jar;

  beforeAll(async () => {
    const deps: GatewayDeps = {
      config: loadConfig({ MAILROOM_SECRET: "console-automations-test-secret-0123456789", MAILROOM_PUBLIC_URL: ORIGIN }),
      logger: createLogger("console-automations-test", "silent"),
      clients: { accounts, contacts, templates, groups, webhooks, automation: automationClient } as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authCacheMs: 60_000,
    };
    app = await buildGateway(deps, { api: [], public: [] });
    jar = new Jar();
    const page = jar.take(await app.inject({ method: "GET", url: "/console/sign-in" }));
    const res = await app.inject({
      method: "POST", url: "/console/sign-in",
      payload: new URLSearchParams({ _csrf: csrfOf(page.body), apiKey: KEY, next: "/console/automations" }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header(), origin: ORIGIN },
    });
    jar.take(res);
    expect(res.statusCode).toBe(303);
  });
  afterAll(async () => app?.close());
  beforeEach(() => {
    calls.create = [];
    calls.update = [];
    calls.refuse = undefined;
  });

  const get = (url: string) => app.inject({ method: "GET", url, headers: { cookie: jar.header() } }).then((r) => jar.take(r));
  const post = (url: string, form: Array<[string, string]> | Record<string, string>, headers: Record<string, string> = { origin: ORIGIN }) =>
    app.inject({
      method: "POST", url, payload: new URLSearchParams(form).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header(), ...headers },
    }).then((r) => jar.take(r));
  const token = async () => csrfOf((await get("/console/automations")).body);

  it("lists automations with status, version and run counts, and links them from the nav", async () => {
    const res = await get("/console/automations");
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/<a href="\/console\/automations" aria-current="page">Automations<\/a>/);
    const row = /<tr data-automation="aut_01j[\s\S]*?<\/tr>/.exec(res.body)![0];
    expect(row).toContain("Welcome &lt;series&gt;");
    expect(row).toContain(">Active<");
    expect(row).toMatch(/data-label="Version" class="num">3</);
    expect(row).toMatch(/data-runs="active">7</);
    expect(row).toMatch(/data-runs="completed">42</);
    expect(row).toMatch(/data-runs="exited">5</);
    expect(row).toContain("When event signed_up is received, if plan is set");
    expect(row).toContain(`/console/automations/${AUT}/pause`);
    const draft = /<tr data-automation="aut_draft1"[\s\S]*?<\/tr>/.exec(res.body)![0];
    expect(draft).toContain("/console/automations/aut_draft1/activate");
    expect(draft).toMatch(/data-runs="active">0</);
  });

  it("shows the flow: every step in words, branches nested under their step with their counts, and recent runs", async () => {
    const res = await get(`/console/automations/${AUT}`);
    expect(res.statusCode).toBe(200);
    const body = res.body;
    for (const words of ["Send template welcome", "Wait 2 days", "If plan is pro", "Send template pro-tips (opens not tracked)", "Add to group VIP",
      "Wait up to 2 seconds for event purchase", "Set plan to pro, score to 3", "Remove from group VIP", "Exit the automation",
      "Wait until 09:00 on Mon, Fri (workspace&#39;s timezone)", "A contact enters again 30 days after its last entry"]) expect(body).toContain(words);
    // Nesting: wait_buy sits in the condition's else branch, tag in wait_buy's then branch, and "morning" after the condition.
    const cond = body.slice(body.indexOf('data-step="is_pro"'));
    const elseBranch = cond.slice(cond.indexOf('data-branch="else"'));
    expect(cond.indexOf('data-step="pro_mail"')).toBeLessThan(cond.indexOf('data-branch="else"'));
    expect(elseBranch.indexOf('data-step="wait_buy"')).toBeGreaterThan(0);
    expect(elseBranch.indexOf('data-step="tag"')).toBeGreaterThan(elseBranch.indexOf('data-step="wait_buy"'));
    expect(body.indexOf('data-step="morning"')).toBeGreaterThan(body.indexOf('data-step="bye"'));
    // Counts per step, in cells the page's script refreshes.
    const cells = (step: string, html = body) => {
      const box = /<dl class="counts" data-stats="([^"]+)"[\s\S]*?<\/dl>/g;
      for (const m of html.matchAll(box)) if (m[1] === step) return Object.fromEntries([...m[0].matchAll(/data-count="(\w+)">(\d+)</g)].map((x) => [x[1], Number(x[2])]));
      return undefined;
    };
    expect(cells("wait_buy")).toEqual({ entered: 31, waiting: 3, completed: 27, exited: 1 });
    // Every version by default: version 2's runs still waiting in "pause" count there (4 + 6).
    expect(cells("pause")).toEqual({ entered: 74, waiting: 10, completed: 64, exited: 0 });
    expect(cells("welcome")).toEqual({ entered: 76, waiting: 0, completed: 76, exited: 0 });
    expect(cells("tag")).toEqual({ entered: 0, waiting: 0, completed: 0, exited: 0 });
    expect(body).toMatch(/<option value="all" selected>Every version<\/option><option value="3">Version 3 \(current\)<\/option><option value="2">Version 2<\/option><option value="1">Version 1<\/option>/);
    // A step version 3 removed, where version 2's runs wait.
    expect(body).toMatch(/<tr data-gone-step="old_wait">[\s\S]*?data-label="Waiting">5</);
    expect(body).toContain(`fetch(url`);
    expect(body).toContain(`"/console/automations/${AUT}/stats.json"`);

    // One version, chosen: its counts alone, and the live refresh asks for that version.
    calls.statsVersions = [];
    const v3 = (await get(`/console/automations/${AUT}?version=3`)).body;
    expect(calls.statsVersions).toEqual([3]);
    expect(cells("pause", v3)).toEqual({ entered: 54, waiting: 4, completed: 50, exited: 0 });
    expect(v3).not.toContain("data-gone-step");
    expect(v3).toContain(`"/console/automations/${AUT}/stats.json?version=3"`);
    expect(v3).toContain('<option value="3" selected>');
    const v2 = (await get(`/console/automations/${AUT}?version=2`)).body;
    expect(cells("pause", v2)).toEqual({ entered: 20, waiting: 6, completed: 14, exited: 0 });
    expect(cells("wait_buy", v2)).toEqual({ entered: 0, waiting: 0, completed: 0, exited: 0 });
    expect(v2).toMatch(/<tr data-gone-step="old_wait">/);
    for (const bad of ["4", "0", "-1", "x", "1e3"]) expect((await get(`/console/automations/${AUT}?version=${bad}`)).statusCode, bad).toBe(404);
    expect((await get(`/console/automations/${AUT}/stats.json?version=2`)).json().steps.pause).toEqual({ entered: 20, waiting: 6, completed: 14, exited: 0 });
    // Recent runs, with the contact's address.
    expect(body).toMatch(/<tr data-run="run_1">[\s\S]*ann@example.test[\s\S]*active/);

    const stats = await get(`/console/automations/${AUT}/stats.json`);
    expect(stats.json()).toEqual({
      status: "ACTIVE", statusText: "Active", version: "all", runs: { active: 7, completed: 42, exited: 5 },
      steps: expect.objectContaining({ wait_buy: { entered: 31, waiting: 3, completed: 27, exited: 1 }, pause: { entered: 74, waiting: 10, completed: 64, exited: 0 } }),
    });
    expect((await get("/console/automations/aut_nope")).statusCode).toBe(404);
    expect((await get("/console/automations/not-an-id")).statusCode).toBe(404);
  });

  it("round-trips a definition with every step type through the editor into UpdateAutomation", async () => {
    const edit = await get(`/console/automations/${AUT}/edit`);
    expect(edit.statusCode).toBe(200);
    const fields = formFields(edit.body, "automation-form").filter(([k]) => k !== "definition");
    const res = await post(`/console/automations/${AUT}`, [...fields, ["op", "save"]]);
    expect(res.statusCode, res.body.slice(0, 300)).toBe(303);
    expect(res.headers.location).toBe(`/console/automations/${AUT}`);
    const sent = calls.update[0];
    expect(sent.name).toBe("Welcome <series>");
    expect(JSON.parse(sent.stepsJson!)).toEqual(EVERY_STEP);
    expect(JSON.parse(sent.triggerJson!)).toEqual(TRIGGER);
    expect(JSON.parse(sent.reentryJson!)).toEqual({ after: "P30D" });
    // The raw JSON editor holds the same definition.
    const raw = JSON.parse(unescape(/<textarea id="definition"[^>]*>([\s\S]*?)<\/textarea>/.exec(edit.body)![1]));
    expect(raw).toEqual({ trigger: TRIGGER, steps: EVERY_STEP, reentry: { after: "P30D" } });
  });

  it("creates from the form: add steps with the buttons, fill them, and CreateAutomation gets the JSON", async () => {
    const csrf = await token();
    const base: Array<[string, string]> = [["_csrf", csrf], ["name", "Onboarding"], ["trigger.type", "contact_created"], ["trigger.filter", "{}"], ["reentry", "always"]];
    // Add a condition, then a send into its then branch: the form comes back with the new fieldsets.
    let page = await post("/console/automations", [...base, ["steps.__add", "condition"], ["op", "add:steps"]]);
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/id="edit-steps\.0"[\s\S]*<option value="condition" selected>/);
    let fields = formFields(page.body, "automation-form").filter(([k]) => k !== "definition" && k !== "_csrf");
    expect(fields).toContainEqual(["steps.0.id", "condition_1"]);
    page = await post("/console/automations", [["_csrf", csrf], ...fields.filter(([k]) => k !== "steps.0.then.__add"), ["steps.0.then.__add", "send"], ["op", "add:steps.0.then"]]);
    fields = formFields(page.body, "automation-form").filter(([k]) => k !== "definition" && k !== "_csrf");
    expect(fields).toContainEqual(["steps.0.then.0.type", "send"]);
    // Fill the fields a person would type, then add a wait at the end and move it up.
    const set = (name: string, value: string) => { fields = fields.map(([k, v]) => [k, k === name ? value : v]); };
    set("steps.0.filter", '{"properties.plan":"pro"}');
    set("steps.0.then.0.template", "welcome");
    // A second send, turned into a wait: its made-up id follows the type, and the wait's field appears.
    page = await post("/console/automations", [["_csrf", csrf], ...fields.filter(([k]) => k !== "steps.__add"), ["steps.__add", "send"], ["op", "add:steps"]]);
    fields = formFields(page.body, "automation-form").filter(([k]) => k !== "definition" && k !== "_csrf");
    expect(fields).toContainEqual(["steps.1.id", "send_2"]);
    set("steps.1.type", "wait");
    page = await post("/console/automations", [["_csrf", csrf], ...fields, ["op", "type:steps.1"]]);
    fields = formFields(page.body, "automation-form").filter(([k]) => k !== "definition" && k !== "_csrf");
    expect(fields).toContainEqual(["steps.1.id", "wait_1"]);
    expect(fields).toContainEqual(["steps.1.duration", "1 day"]);
    set("steps.1.duration", "1 hour 30 minutes");
    page = await post("/console/automations", [["_csrf", csrf], ...fields, ["op", "up:steps.1"]]);
    fields = formFields(page.body, "automation-form").filter(([k]) => k !== "definition" && k !== "_csrf");
    expect(fields).toContainEqual(["steps.0.type", "wait"]);
    const res = await post("/console/automations", [["_csrf", csrf], ...fields, ["op", "save"]]);
    expect(res.statusCode, res.body.slice(0, 200)).toBe(303);
    const sent = calls.create.at(-1)!;
    expect(sent.name).toBe("Onboarding");
    expect(JSON.parse(sent.triggerJson)).toEqual({ type: "contact_created" });
    expect(JSON.parse(sent.reentryJson)).toBe("always");
    expect(JSON.parse(sent.stepsJson)).toEqual([
      { id: "wait_1", type: "wait", duration: "PT1H30M" },
      { id: "condition_1", type: "condition", filter: { "properties.plan": "pro" }, then: [{ id: "send_1", type: "send", template: "welcome" }] },
    ]);
  });

  it("shows the unit's invalid_automation error at its path, inside the step it names, and keeps what was typed", async () => {
    calls.refuse = { path: "steps[2].else[0].then[0].properties", message: 'property "plann" does not exist' };
    const edit = await get(`/console/automations/${AUT}/edit`);
    const fields = formFields(edit.body, "automation-form").filter(([k]) => k !== "definition");
    const res = await post(`/console/automations/${AUT}`, [...fields, ["op", "save"]]);
    expect(res.statusCode).toBe(400);
    expect(res.body).toMatch(/role="alert" id="form-error">[\s\S]*<code>steps\[2\]\.else\[0\]\.then\[0\]\.properties<\/code>: property &quot;plann&quot; does not exist/);
    const step = /<fieldset class="step-edit has-error" id="edit-steps\.2\.else\.0\.then\.0"[\s\S]*?<\/fieldset>/.exec(res.body)?.[0];
    expect(step).toContain("does not exist");
    expect(formFields(res.body, "automation-form")).toContainEqual(["steps.2.else.0.then.0.properties", JSON.stringify({ plan: "pro", score: 3 }, null, 1)]);

    // A console-side fault (a filter that is not JSON) names its path without calling the unit.
    calls.refuse = undefined;
    const bad = fields.map(([k, v]): [string, string] => [k, k === "steps.2.filter" ? "{plan: pro" : v]);
    const res2 = await post(`/console/automations/${AUT}`, [...bad, ["op", "save"]]);
    expect(res2.statusCode).toBe(400);
    expect(res2.body).toContain("<code>steps[2].filter</code>: the filter is not valid JSON");
    expect(calls.update).toHaveLength(1);

    // The raw JSON editor: invalid JSON is refused at "definition"; valid JSON is sent as is.
    const json = await post(`/console/automations/${AUT}`, [...fields, ["op", "json"], ["definition", "{oops"]]);
    expect(json.statusCode).toBe(400);
    expect(json.body).toContain("<code>definition</code>: not valid JSON");
    const def = { trigger: { type: "contact_created" }, steps: [{ id: "x", type: "exit" }] };
    const ok = await post(`/console/automations/${AUT}`, [...fields, ["op", "json"], ["definition", JSON.stringify(def)]]);
    expect(ok.statusCode).toBe(303);
    expect(JSON.parse(calls.update.at(-1)!.stepsJson!)).toEqual(def.steps);
    expect(JSON.parse(calls.update.at(-1)!.reentryJson!)).toBe("once");
  });

  it("enforces CSRF on the editor and the state changes like every console form", async () => {
    const before = calls.activate;
    for (const [form, headers] of [
      [{}, { origin: ORIGIN }],
      [{ _csrf: "forged" }, { origin: ORIGIN }],
      [{ _csrf: await token() }, { origin: "https://evil.test" }],
      [{ _csrf: await token() }, { "sec-fetch-site": "cross-site" }],
    ] as Array<[Record<string, string>, Record<string, string>]>) {
      expect((await post(`/console/automations/${AUT}/activate`, form, headers)).statusCode).toBe(403);
      expect((await post("/console/automations", { ...form, name: "x", op: "save" }, headers)).statusCode).toBe(403);
    }
    expect(calls.activate).toBe(before);
    expect(calls.create).toHaveLength(0);
    const res = await post(`/console/automations/${AUT}/activate`, { _csrf: await token(), back: "list" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/console/automations");
    expect(calls.activate).toBe(before + 1);
  });

  it("lists a contact's runs on its page: automation, status, each step's times and the email sent", async () => {
    const res = await get(`/console/contacts/${CONTACT}`);
    expect(res.statusCode).toBe(200);
    const section = res.body.slice(res.body.indexOf('<h2 id="aut-h">Automations</h2>'));
    const run = /<div class="card" data-automation-run="run_1">[\s\S]*?<\/table>/.exec(section)![0];
    expect(run).toContain(`<a href="/console/automations/${AUT}">Welcome &lt;series&gt;</a>`);
    expect(run).toContain("active");
    expect(run).toMatch(/data-step="welcome"[\s\S]*2030-01-03T10:00:00.000Z[\s\S]*2030-01-03T10:01:00.000Z[\s\S]*href="\/console\/emails\/trs_01jbbbbbbbbbbbbbbbbbbbbbbb"/);
    expect(run).toMatch(/data-step="pause"[\s\S]*in progress/);
    expect(section).toMatch(/data-automation-run="run_0">[\s\S]*Deleted automation <code>aut_deleted<\/code>[\s\S]*the automation was deleted/);
  });
});

describe("automation editor helpers", () => {
  it("reads durations as words or ISO 8601, and shows ISO as words", () => {
    expect(durationFromText("2 days")).toBe("P2D");
    expect(durationFromText("1 hour, 30 min")).toBe("PT1H30M");
    expect(durationFromText("2 weeks")).toBe("P2W");
    expect(durationFromText("pt2s")).toBe("PT2S");
    expect(durationFromText("two days")).toBe("two days");
    expect(durationWords("PT2S")).toBe("2 seconds");
    expect(durationWords("PT90M")).toBe("90 minutes");
    expect(durationWords("P1W")).toBe("1 week");
    expect(durationWords("P1M")).toBe("P1M");
  });

  it("maps an error path to the step it is about", () => {
    expect(stepPathOf("steps[1].then[0].template")).toBe("steps.1.then.0");
    expect(stepPathOf("steps[1].then")).toBe("steps.1");
    expect(stepPathOf("steps[0]")).toBe("steps.0");
    expect(stepPathOf("trigger.groupId")).toBeUndefined();
  });
});
