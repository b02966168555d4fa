/**
 * In-memory pieces for the automation unit's tests: a directory (the accounts and audience
 * units' part) that knows a few templates,
 * groups and properties, a RunControl that records what it was told, a settable clock, and
 * the catalog over the in-memory store.
 */
import { newId } from "@mailroom/kit/ids.js";
import { openMemoryStore } from "@mailroom/store/open.js";
import { StoreCatalog } from "./adapters/catalog-store.js";
import { Automations, type AutomationDirectory } from "./domain/automations.js";
import type { ExitReason, Run, RunStatus, Step, StepCounts } from "./domain/model.js";
import type { Clock, RunControl } from "./domain/ports.js";

export const TEST_WS = "ws_acme";

export class FakeClock implements Clock {
  constructor(public at = new Date("2030-01-15T12:00:00Z")) {}
  now(): Date {
    return new Date(this.at);
  }
  advance(ms: number): void {
    this.at = new Date(this.at.getTime() + ms);
  }
}

/** Templates by name, groups by id and publicId, property slugs; a filter is refused when it names an unknown `properties.<slug>`. */
export class FakeDirectory implements AutomationDirectory {
  templates = new Set(["welcome", "day-2", "upgrade"]);
  /** Layouts and snippets by name (their kind). */
  pieces = new Map<string, string>([["frame", "layout"], ["footer", "snippet"]]);
  groups = new Map<string, string>([["grp_01", "grp_01"], ["vip", "grp_01"]]);
  properties = new Set(["firstName", "lastName", "email", "plan", "score"]);
  calls: string[] = [];
  /** When set, template checks wait for it (lets a test line two writes up at the same point). */
  gate?: Promise<void>;

  async templateKind(_ws: string, name: string): Promise<string | undefined> {
    this.calls.push(`template:${name}`);
    await this.gate;
    return this.templates.has(name) ? "template" : this.pieces.get(name);
  }
  async groupId(_ws: string, idOrPublicId: string): Promise<string | undefined> {
    this.calls.push(`group:${idOrPublicId}`);
    return this.groups.get(idOrPublicId);
  }
  broadcasts = new Set(["cmp_01"]);
  async broadcastExists(_ws: string, id: string): Promise<boolean> {
    this.calls.push(`broadcast:${id}`);
    return this.broadcasts.has(id);
  }
  async propertySlugs(): Promise<string[]> {
    this.calls.push("properties");
    return [...this.properties];
  }
  async filterError(_ws: string, filter: Record<string, unknown>): Promise<string | undefined> {
    this.calls.push("filter");
    for (const key of Object.keys(filter)) {
      const slug = key.startsWith("properties.") ? key.slice("properties.".length) : undefined;
      if (slug !== undefined && !this.properties.has(slug)) return `filter.${key}: unknown property "${slug}"`;
    }
    return undefined;
  }
}

/** Records the catalog's calls; runs and stats are whatever a test puts in. */
export class FakeRunControl implements RunControl {
  calls: string[] = [];
  runs: Run[] = [];
  countsOf = new Map<string, { active: number; completed: number; exited: number }>();
  lastStatsSteps: readonly Step[] = [];

  async hold(_ws: string, automationId: string): Promise<void> {
    this.calls.push(`hold:${automationId}`);
  }
  async release(_ws: string, automationId: string): Promise<void> {
    this.calls.push(`release:${automationId}`);
  }
  async exitAll(_ws: string, automationId: string, reason: ExitReason): Promise<void> {
    this.calls.push(`exitAll:${automationId}:${reason}`);
  }
  async counts(_ws: string, automationId: string) {
    return this.countsOf.get(automationId) ?? { active: 0, completed: 0, exited: 0 };
  }
  async list(q: { workspaceId: string; automationId?: string; contactId?: string; status?: RunStatus; limit: number; cursor?: string }) {
    const match = this.runs.filter(
      (r) => r.workspaceId === q.workspaceId && (!q.automationId || r.automationId === q.automationId) && (!q.contactId || r.contactId === q.contactId) && (!q.status || r.status === q.status),
    );
    const from = q.cursor ? match.findIndex((r) => r.id === q.cursor) + 1 : 0;
    const page = match.slice(from, from + q.limit);
    return { runs: page, nextCursor: from + q.limit < match.length ? page[page.length - 1].id : undefined };
  }
  async stats(_ws: string, _id: string, _version: number, steps: readonly Step[]): Promise<StepCounts[]> {
    this.lastStatsSteps = steps;
    return steps.map((s, i) => ({ stepId: s.id, type: s.type, entered: i + 1, waiting: 0, completed: i, exited: 1 }));
  }
}

export interface CatalogWorld {
  automations: Automations;
  catalog: StoreCatalog;
  directory: FakeDirectory;
  runs: FakeRunControl;
  clock: FakeClock;
}

/** The catalog's use cases over a fresh in-memory store. */
export async function buildCatalogWorld(): Promise<CatalogWorld> {
  const catalog = new StoreCatalog(openMemoryStore());
  await catalog.init();
  const directory = new FakeDirectory();
  const runs = new FakeRunControl();
  const clock = new FakeClock();
  const automations = new Automations({ repo: catalog, directory, runs, clock, newId: () => newId("aut") });
  return { automations, catalog, directory, runs, clock };
}

// ---- The run engine's world (enrolment, claim loop, exits) over the in-memory store ----

import { pino } from "pino";
import { CollectionRunStore } from "./adapters/run-store.js";
import { Enrolment } from "./domain/enrol.js";
import { Runner, type ContactDirectory, type Mailer, type RunContact, type SendRequest, type SendResult } from "./domain/runner.js";
import { Exits, Runs, type RunEventPublisher, type StoredRun } from "./domain/runs.js";
import type { FilterJson } from "./domain/model.js";

/**
 * Contacts in memory; filters understood here: `{ "properties.<slug>": value }`,
 * `{ "<builtin>": value }` and `$and` / `$or` of those (enough for conditions and triggers).
 */
export class FakeContacts implements ContactDirectory {
  contacts = new Map<string, RunContact>();
  workspaceTz: string | undefined;
  calls: string[] = [];
  groups = new Map<string, Set<string>>();

  add(c: Partial<RunContact> & { email: string }): RunContact {
    const contact: RunContact = { id: c.id ?? `ctc_${c.email.split("@")[0]}`, status: "SUBSCRIBED", properties: {}, ...c };
    this.contacts.set(contact.email.toLowerCase(), contact);
    return contact;
  }
  async contactByEmail(_ws: string, email: string) {
    this.calls.push(`contact:${email}`);
    return this.contacts.get(email.toLowerCase()) ?? null;
  }
  async matches(_ws: string, filter: FilterJson, email: string) {
    this.calls.push(`matches:${email}`);
    const c = this.contacts.get(email.toLowerCase());
    return c ? matchFilter(filter, c) : false;
  }
  async workspaceTimezone() {
    return this.workspaceTz;
  }
  async updateContact(_ws: string, contactId: string, properties: Record<string, unknown>) {
    this.calls.push(`update:${contactId}:${JSON.stringify(properties)}`);
    for (const c of this.contacts.values()) if (c.id === contactId) c.properties = { ...c.properties, ...properties };
  }
  async addToGroup(_ws: string, groupId: string, contactId: string) {
    this.calls.push(`add:${groupId}:${contactId}`);
    this.groups.set(groupId, new Set([...(this.groups.get(groupId) ?? []), contactId]));
  }
  async removeFromGroup(_ws: string, groupId: string, contactId: string) {
    this.calls.push(`remove:${groupId}:${contactId}`);
    this.groups.get(groupId)?.delete(contactId);
  }
}

function matchFilter(filter: FilterJson, c: RunContact): boolean {
  return Object.entries(filter).every(([key, want]) => {
    if (key === "$and") return (want as FilterJson[]).every((f) => matchFilter(f, c));
    if (key === "$or") return (want as FilterJson[]).some((f) => matchFilter(f, c));
    const value = key.startsWith("properties.") ? c.properties[key.slice("properties.".length)] : (c as unknown as Record<string, unknown>)[key];
    return JSON.stringify(value) === JSON.stringify(want);
  });
}

/** The email service as send steps see it: idempotency keys answer their first email, suppressed addresses FAIL. */
export class FakeMailer implements Mailer {
  sent: Array<SendRequest & { emailId: string }> = [];
  byKey = new Map<string, string>();
  suppressed = new Set<string>();
  /** Answers the next sends with this instead (then back to normal). */
  next: SendResult[] = [];
  private n = 0;

  async send(_ws: string, request: SendRequest): Promise<SendResult> {
    const forced = this.next.shift();
    if (forced) return forced;
    const known = this.byKey.get(request.idempotencyKey);
    if (known) return { kind: "sent", emailId: known };
    const emailId = `trs_${++this.n}`;
    this.byKey.set(request.idempotencyKey, emailId);
    if (this.suppressed.has(request.to)) return { kind: "suppressed", emailId, detail: "suppressed: unsubscribed" };
    this.sent.push({ ...request, emailId });
    return { kind: "sent", emailId };
  }
  async templateOf(): Promise<string | undefined> {
    return undefined;
  }
  /** Templates sent to one address, in order. */
  to(email: string): string[] {
    return this.sent.filter((s) => s.to === email).map((s) => s.template);
  }
}

export class RecordedRunEvents implements RunEventPublisher {
  published: Array<{ kind: string; runId: string; status: string }> = [];
  async publish(kind: "started" | "completed" | "exited", run: StoredRun): Promise<void> {
    this.published.push({ kind, runId: run.id, status: run.status });
  }
  ids(): string[] {
    return this.published.map((p) => `${p.runId}.${p.kind}`);
  }
}

export interface EngineWorld extends CatalogWorld {
  runStore: CollectionRunStore;
  control: Runs;
  contacts: FakeContacts;
  mailer: FakeMailer;
  events: RecordedRunEvents;
  enrolment: Enrolment;
  runner: Runner;
  /** A runner of another process over the same store (takeover tests). */
  newRunner(opts?: { leaseMs?: number }): Runner;
}

const silentLogger = pino({ level: "silent" });

/** The whole unit minus its transports, over one in-memory store. */
export async function buildEngineWorld(opts: { leaseMs?: number; concurrency?: number } = {}): Promise<EngineWorld> {
  const store = openMemoryStore();
  const catalog = new StoreCatalog(store, { activeCacheMs: 1 });
  await catalog.init();
  const runStore = new CollectionRunStore(store);
  await runStore.init();
  const clock = new FakeClock();
  const contacts = new FakeContacts();
  const mailer = new FakeMailer();
  const events = new RecordedRunEvents();
  const exits = new Exits(runStore, events, clock, silentLogger);
  const control = new Runs(runStore, exits, clock);
  const directory = new FakeDirectory();
  const automations = new Automations({ repo: catalog, directory, runs: control, clock, newId: () => newId("aut") });
  const newRunner = (o: { leaseMs?: number } = {}) =>
    new Runner({ runs: runStore, catalog, contacts, mailer, exits, clock, logger: silentLogger }, { leaseMs: o.leaseMs ?? opts.leaseMs, concurrency: opts.concurrency ?? 16 });
  const enrolment = new Enrolment({ runs: runStore, catalog, contacts, mailer, exits, events, clock, logger: silentLogger });
  return {
    automations,
    catalog,
    directory,
    runs: new FakeRunControl(),
    clock,
    runStore,
    control,
    contacts,
    mailer,
    events,
    enrolment,
    runner: newRunner(),
    newRunner,
  };
}
