/**
 * In-memory pieces for the automation unit's tests: a directory that knows a few templates,
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
  groups = new Map<string, string>([["grp_01", "grp_01"], ["vip", "grp_01"]]);
  properties = new Set(["firstName", "lastName", "email", "plan", "score"]);
  calls: string[] = [];
  /** When set, template checks wait for it (lets a test line two writes up at the same point). */
  gate?: Promise<void>;

  async templateExists(_ws: string, name: string): Promise<boolean> {
    this.calls.push(`template:${name}`);
    await this.gate;
    return this.templates.has(name);
  }
  async groupId(_ws: string, idOrPublicId: string): Promise<string | undefined> {
    this.calls.push(`group:${idOrPublicId}`);
    return this.groups.get(idOrPublicId);
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
