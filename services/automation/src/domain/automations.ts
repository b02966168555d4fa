/**
 * The automation catalog's use cases (DESIGN §9.6): create, read, list, new versions, delete,
 * activate, pause, and the run listings and per-step stats the API shows. Definitions are
 * parsed by definition.ts; what only the accounts unit (templates) and the audience unit
 * (groups, properties, filters) know is confirmed through `AutomationDirectory`; runs are the run engine's, reached
 * through `RunControl`.
 */
import { badRequest, conflict, notFound } from "@mailroom/kit/errors.js";
import { parseDefinition, references, type Reference } from "./definition.js";
import type { Automation, AutomationStatus, Definition, Run, RunStatus, StepCounts } from "./model.js";
import type { Clock, RunControl } from "./ports.js";
import { StepTree } from "./steps.js";

export const LIST_DEFAULT_LIMIT = 20;
export const LIST_MAX_LIMIT = 100;
export const NAME_MAX = 200;

export interface RunCounts {
  active: number;
  completed: number;
  exited: number;
}

/** An automation as the API shows it: the current version, with the runs of every version. */
export type AutomationView = Automation & { runs: RunCounts };

/** The catalog's documents (adapters/catalog-store.ts). */
export interface AutomationRepository {
  /** A new automation and its version 1. */
  insert(automation: Automation): Promise<void>;
  /** Undefined once deleted. */
  find(workspaceId: string, id: string): Promise<Automation | null>;
  /** Newest first, ids below `before` when given. */
  list(workspaceId: string, query: { limit: number; before?: string }): Promise<Automation[]>;
  /**
   * Compare-and-set: `next` (version `expectedVersion + 1`) replaces the automation only while
   * it is still at `expectedVersion` and not deleted; false when another write came first.
   */
  saveVersion(next: Automation, expectedVersion: number): Promise<boolean>;
  /** The status moves `from` one of these to `to`; the automation as it was before, null when it was in none of them (or is gone). */
  setStatus(workspaceId: string, id: string, from: readonly AutomationStatus[], to: AutomationStatus, at: Date): Promise<Automation | null>;
  /** Soft delete; the automation as it was, null when it was not there. */
  markDeleted(workspaceId: string, id: string, at: Date): Promise<Automation | null>;
  /** A version's definition (null when the automation never had it). */
  definitionAt(workspaceId: string, id: string, version: number): Promise<Definition | null>;
}

/** What the accounts and audience units (and, for a broadcast, the broadcast unit) confirm about a definition's references. */
export interface AutomationDirectory {
  /** The kind of the workspace's template of that name ("template", "layout" or "snippet"); undefined when there is none. */
  templateKind(workspaceId: string, name: string): Promise<string | undefined>;
  /** The stored group id (`grp_…`) of a group id or publicId; undefined when there is no such group. */
  groupId(workspaceId: string, idOrPublicId: string): Promise<string | undefined>;
  /** Every property slug of the workspace, built-ins included. */
  propertySlugs(workspaceId: string): Promise<string[]>;
  /** Whether the workspace has this broadcast (an email_opened / email_clicked trigger naming one). */
  broadcastExists(workspaceId: string, broadcastId: string): Promise<boolean>;
  /** Undefined when the audience unit accepts the filter, else its `invalid_filter` message (a path starting with `filter`, a colon, what is wrong). */
  filterError(workspaceId: string, filter: Record<string, unknown>): Promise<string | undefined>;
}

export interface AutomationsDeps {
  repo: AutomationRepository;
  directory: AutomationDirectory;
  runs: RunControl;
  clock: Clock;
  newId(): string;
}

/** A definition as a request carries it: parsed JSON, not yet checked. */
export interface DefinitionInput {
  trigger: unknown;
  steps: unknown;
  reentry?: unknown;
}

export interface UpdateInput {
  name?: string;
  trigger?: unknown;
  steps?: unknown;
  reentry?: unknown;
}

const CURSOR = /^aut_[0-9a-z]{26}$/;
const CONTROL = /[\u0000-\u001f\u007f]/;

/** 400 invalid_automation: the message starts with the JSON path, which `extra.path` repeats. */
export const invalidAutomation = (path: string, what: string) =>
  badRequest("invalid_automation", `${path}: ${what}`, { extra: { path: JSON.stringify(path) } });
const automationNotFound = (id: string) => notFound("automation_not_found", `Automation ${id.slice(0, 100)} not found`);
const automationState = (message: string) => conflict("automation_state", message);

function checkName(name: unknown): string {
  if (typeof name !== "string") throw invalidAutomation("name", "is required (a string)");
  const trimmed = name.trim();
  if (!trimmed) throw invalidAutomation("name", "must not be empty");
  if (trimmed.length > NAME_MAX) throw invalidAutomation("name", `at most ${NAME_MAX} characters`);
  if (CONTROL.test(trimmed)) throw invalidAutomation("name", "must be one line without control characters");
  return trimmed;
}

export function checkLimit(limit: number | undefined): number {
  if (limit === undefined || limit === 0) return LIST_DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX_LIMIT) throw badRequest("invalid_request", `limit must be between 1 and ${LIST_MAX_LIMIT}`);
  return limit;
}

/** `steps[2].then[0].groupId` -> ["steps", 2, "then", 0, "groupId"]. */
function pathSegments(path: string): Array<string | number> {
  const out: Array<string | number> = [];
  for (const part of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(part[2] !== undefined ? Number(part[2]) : part[1]);
  return out;
}

/** Writes `value` where `path` points in `root` when a string `expected` is there now (else leaves it). */
function replaceAt(root: unknown, path: string, expected: string, value: string): void {
  const segments = pathSegments(path);
  const last = segments.pop();
  let node = root as Record<string | number, unknown> | undefined;
  for (const s of segments) node = node?.[s] as Record<string | number, unknown> | undefined;
  if (node && last !== undefined && node[last] === expected) node[last] = value;
}

/** The automation use cases behind AutomationService. */
export class Automations {
  constructor(private readonly deps: AutomationsDeps) {}

  async create(workspaceId: string, input: DefinitionInput & { name: unknown }): Promise<AutomationView> {
    const name = checkName(input.name);
    const definition = await this.checkDefinition(workspaceId, input);
    const now = this.deps.clock.now();
    const automation: Automation = { id: this.deps.newId(), workspaceId, name, status: "DRAFT", version: 1, ...definition, createdAt: now, updatedAt: now };
    await this.deps.repo.insert(automation);
    return { ...automation, runs: { active: 0, completed: 0, exited: 0 } };
  }

  async get(workspaceId: string, id: string): Promise<AutomationView> {
    return this.view(await this.load(workspaceId, id));
  }

  async list(workspaceId: string, query: { limit?: number; cursor?: string }): Promise<{ items: AutomationView[]; cursor: string; hasMore: boolean }> {
    const limit = checkLimit(query.limit);
    if (query.cursor && !CURSOR.test(query.cursor)) throw badRequest("invalid_cursor", "cursor is not one this list returned");
    const rows = await this.deps.repo.list(workspaceId, { limit: limit + 1, before: query.cursor || undefined });
    const hasMore = rows.length > limit;
    const items = rows.slice(0, limit);
    return { items: await Promise.all(items.map((a) => this.view(a))), hasMore, cursor: hasMore ? items[items.length - 1].id : "" };
  }

  /**
   * A new version with what is given replaced (a name alone makes one too). Runs in progress
   * stay on theirs. Of two updates of the same version, only the first written wins: the
   * other is a 409 and may read and try again.
   */
  async update(workspaceId: string, id: string, input: UpdateInput): Promise<AutomationView> {
    const current = await this.load(workspaceId, id);
    const name = input.name === undefined ? current.name : checkName(input.name);
    const definition = await this.checkDefinition(workspaceId, {
      trigger: input.trigger === undefined ? current.trigger : input.trigger,
      steps: input.steps === undefined ? current.steps : input.steps,
      reentry: input.reentry === undefined ? current.reentry : input.reentry,
    });
    const next: Automation = { ...current, name, ...definition, version: current.version + 1, updatedAt: this.deps.clock.now() };
    if (!(await this.deps.repo.saveVersion(next, current.version))) {
      // Deleted meanwhile (404), or another update made this version first.
      await this.load(workspaceId, id);
      throw automationState(`Automation ${id} changed while this update was made (it is past version ${current.version}); read it again and retry`);
    }
    return this.view(next);
  }

  /** Soft delete; the automation's active runs exit with `automation_deleted`. */
  async delete(workspaceId: string, id: string): Promise<AutomationView> {
    const before = await this.deps.repo.markDeleted(workspaceId, id, this.deps.clock.now());
    if (!before) throw automationNotFound(id);
    // Marked first: enrolment and the claim loop see it deleted even if this call dies here.
    await this.deps.runs.exitAll(workspaceId, id, "automation_deleted");
    return this.view(before);
  }

  /** DRAFT or PAUSED → ACTIVE; the references are checked again (a template may be gone since). */
  async activate(workspaceId: string, id: string): Promise<AutomationView> {
    const current = await this.load(workspaceId, id);
    if (current.status === "ACTIVE") throw automationState(`Automation ${id} is already ACTIVE`);
    await this.checkReferences(workspaceId, current);
    const before = await this.deps.repo.setStatus(workspaceId, id, ["DRAFT", "PAUSED"], "ACTIVE", this.deps.clock.now());
    if (!before) return this.refuse(workspaceId, id, "activate", "DRAFT or PAUSED");
    if (before.status === "PAUSED") await this.deps.runs.release(workspaceId, id);
    return this.view(await this.load(workspaceId, id));
  }

  /** ACTIVE → PAUSED: nobody enters, runs hold where they are. */
  async pause(workspaceId: string, id: string): Promise<AutomationView> {
    const before = await this.deps.repo.setStatus(workspaceId, id, ["ACTIVE"], "PAUSED", this.deps.clock.now());
    if (!before) return this.refuse(workspaceId, id, "pause", "ACTIVE");
    await this.deps.runs.hold(workspaceId, id);
    return this.view(await this.load(workspaceId, id));
  }

  /** Runs of one automation (it must exist), or with `automationId` empty one contact's runs in every automation; newest first. */
  async runs(
    workspaceId: string,
    query: { automationId?: string; contactId?: string; status?: RunStatus; limit?: number; cursor?: string },
  ): Promise<{ runs: Run[]; nextCursor?: string }> {
    const limit = checkLimit(query.limit);
    if (query.automationId) await this.load(workspaceId, query.automationId);
    else if (!query.contactId) throw badRequest("invalid_request", "automationId or contactId is required");
    return this.deps.runs.list({
      workspaceId,
      automationId: query.automationId || undefined,
      contactId: query.contactId || undefined,
      status: query.status,
      limit,
      cursor: query.cursor || undefined,
    });
  }

  /** Per step of one version (default the current one), in definition order. */
  async stats(workspaceId: string, id: string, version?: number): Promise<{ automationId: string; version: number; steps: StepCounts[] }> {
    const current = await this.load(workspaceId, id);
    const wanted = version || current.version;
    if (!Number.isInteger(wanted) || wanted < 1) throw badRequest("invalid_request", "version must be a positive integer");
    const definition = wanted === current.version ? current : await this.deps.repo.definitionAt(workspaceId, id, wanted);
    if (!definition) throw notFound("automation_not_found", `Automation ${id} has no version ${wanted} (its current version is ${current.version})`);
    const steps = await this.deps.runs.stats(workspaceId, id, wanted, new StepTree(definition.steps).all());
    return { automationId: id, version: wanted, steps };
  }

  private async load(workspaceId: string, id: string): Promise<Automation> {
    const found = id ? await this.deps.repo.find(workspaceId, id) : null;
    if (!found) throw automationNotFound(id);
    return found;
  }

  private async view(a: Automation): Promise<AutomationView> {
    return { ...a, runs: await this.deps.runs.counts(a.workspaceId, a.id) };
  }

  /** A state change that did not apply: 404 when the automation is gone, else 409 naming its state. */
  private async refuse(workspaceId: string, id: string, action: string, allowed: string): Promise<never> {
    const current = await this.load(workspaceId, id);
    throw automationState(`Cannot ${action} automation ${id}: it is ${current.status} (only ${allowed} can be)`);
  }

  /** Parses, then confirms every reference with the accounts and audience units; group publicIds become stored ids. */
  private async checkDefinition(workspaceId: string, input: DefinitionInput): Promise<Definition> {
    const parsed = parseDefinition(input);
    if (!parsed.ok) throw invalidAutomation(parsed.error.path, parsed.error.message);
    const definition = structuredClone(parsed.value);
    const groups = await this.checkReferences(workspaceId, definition);
    for (const { path, given, id } of groups) replaceAt(definition, path, given, id);
    return definition;
  }

  /**
   * Every reference checked (at once; one call per distinct name), the first
   * fault in definition order reported. Answers the groups found, with their stored ids.
   */
  private async checkReferences(workspaceId: string, definition: Definition): Promise<Array<{ path: string; given: string; id: string }>> {
    const refs = references(definition);
    const dir = this.deps.directory;
    const memo = new Map<string, Promise<unknown>>();
    const once = <T>(key: string, load: () => Promise<T>): Promise<T> => {
      if (!memo.has(key)) memo.set(key, load());
      return memo.get(key) as Promise<T>;
    };
    type Outcome = { fault: string; path: string } | { group: string } | undefined;
    const check = async (ref: Reference): Promise<Outcome> => {
      switch (ref.kind) {
        case "template": {
          const kind = await once(`t:${ref.name}`, () => dir.templateKind(workspaceId, ref.name));
          if (!kind) return { path: ref.path, fault: `template "${ref.name}" does not exist` };
          // A layout or snippet is a piece of templates: never sent on its own, never what an email was sent from.
          if (kind !== "template") return { path: ref.path, fault: `"${ref.name}" is a ${kind}, not a template (name a template of kind "template")` };
          return undefined;
        }
        case "group": {
          const id = await once(`g:${ref.id}`, () => dir.groupId(workspaceId, ref.id));
          return id ? { group: id } : { path: ref.path, fault: `group "${ref.id}" does not exist` };
        }
        case "broadcast":
          return (await once(`b:${ref.id}`, () => dir.broadcastExists(workspaceId, ref.id))) ? undefined : { path: ref.path, fault: `broadcast "${ref.id}" does not exist` };
        case "property": {
          const slugs = await once("p", () => dir.propertySlugs(workspaceId));
          return slugs.includes(ref.slug) ? undefined : { path: ref.path, fault: `property "${ref.slug}" does not exist` };
        }
        case "filter": {
          const message = await once(`f:${JSON.stringify(ref.filter)}`, () => dir.filterError(workspaceId, ref.filter));
          if (message === undefined) return undefined;
          // The audience unit names the fault from `filter` on (`filter.$and[1].properties.plan: …`):
          // the same place under this filter's own path.
          const m = /^filter((?:[.[][^:]*)?): (.*)$/s.exec(message);
          return m ? { path: `${ref.path}${m[1]}`, fault: m[2] } : { path: ref.path, fault: message };
        }
      }
    };
    const outcomes = await Promise.all(refs.map(check));
    const groups: Array<{ path: string; given: string; id: string }> = [];
    refs.forEach((ref, i) => {
      const outcome = outcomes[i];
      if (!outcome) return;
      if ("fault" in outcome) throw invalidAutomation(outcome.path, outcome.fault);
      if (ref.kind === "group") groups.push({ path: ref.path, given: ref.id, id: outcome.group });
    });
    return groups;
  }
}
