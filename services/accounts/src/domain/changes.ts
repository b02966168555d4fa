import type { Member, Workspace } from "@mailroom/records/model.js";
import type { MemberRepository, WorkspaceRepository } from "@mailroom/records/ports.js";
import { Announcer, event, time, type ChangeIntent, type ChangeIntentRecorder, type DirectoryEvent, type DirectoryEventPublisher } from "@mailroom/records/change-events.js";

/** The accounts unit's events (DESIGN §9.2): a member joined, a workspace paused or banned. */

export function memberEvents(m: Member): DirectoryEvent[] {
  return [event("WORKSPACE_TEAM_MEMBER_JOINED", m.workspaceId, new Date(m.createdAt), [m._id, time(m.createdAt)], { member: { email: m.email, workspaceId: m.workspaceId, joinedAt: new Date(m.createdAt).toISOString() } })];
}

/** A workspace as its webhooks see it: identity and the operator's state. */
export function clientWorkspace(w: Workspace): Record<string, unknown> {
  const hold = (h: Workspace["banned"]) => (h ? { reason: h.reason || null, at: new Date(h.at).toISOString() } : null);
  return {
    id: w._id,
    name: w.name,
    createdAt: new Date(w.createdAt).toISOString(),
    sendingPaused: Boolean(w.sendingPaused),
    banned: Boolean(w.banned),
    ...(w.sendingPaused ? { sendingPausedReason: hold(w.sendingPaused)!.reason, sendingPausedAt: hold(w.sendingPaused)!.at } : {}),
    ...(w.banned ? { bannedReason: hold(w.banned)!.reason, bannedAt: hold(w.banned)!.at } : {}),
  };
}

/** WORKSPACE_SENDING_EMAILS_PAUSED / WORKSPACE_BANNED when a write turned the pause / the ban on (never when lifted). */
export function workspaceEvents(before: Workspace, after: Workspace): DirectoryEvent[] {
  const events: DirectoryEvent[] = [];
  if (!before.sendingPaused && after.sendingPaused) {
    const at = new Date(after.sendingPaused.at);
    events.push(event("WORKSPACE_SENDING_EMAILS_PAUSED", after._id, at, ["paused", time(at)], { workspace: clientWorkspace(after), reason: after.sendingPaused.reason || null }));
  }
  if (!before.banned && after.banned) {
    const at = new Date(after.banned.at);
    events.push(event("WORKSPACE_BANNED", after._id, at, ["banned", time(at)], { workspace: clientWorkspace(after), reason: after.banned.reason || null }));
  }
  return events;
}

/** What the store holds now, for recovering an intent (the repositories without emission). */
export interface AccountsIntentState {
  members: Pick<MemberRepository, "list">;
  workspaces: Pick<WorkspaceRepository, "find">;
}

/** The events an accounts intent's write announced (none for another unit's kinds). */
export async function eventsOfIntent(intent: ChangeIntent, state: AccountsIntentState): Promise<DirectoryEvent[]> {
  switch (intent.kind) {
    case "member": {
      const members = await state.members.list(intent.workspaceId, 10_000);
      return members.some((m) => m._id === intent.member._id) ? memberEvents(intent.member) : [];
    }
    case "workspace": {
      const now = await state.workspaces.find(intent.workspaceId);
      return now ? workspaceEvents(intent.before, now) : [];
    }
    default:
      return [];
  }
}

export class EmittingMemberStore implements MemberRepository {
  private readonly announcer: Announcer;

  constructor(private readonly inner: MemberRepository, publish: DirectoryEventPublisher, intend?: ChangeIntentRecorder, now: () => Date = () => new Date()) {
    this.announcer = new Announcer(publish, intend, now);
  }

  async ensure(member: Member): Promise<void> {
    const known = (await this.inner.list(member.workspaceId, 10_000)).some((m) => m._id === member._id);
    if (known) return this.inner.ensure(member);
    return this.announcer.around({ kind: "member", workspaceId: member.workspaceId, member }, () => this.inner.ensure(member), () => memberEvents(member));
  }

  remove(id: string) {
    return this.inner.remove(id);
  }

  list(workspaceId: string, limit: number) {
    return this.inner.list(workspaceId, limit);
  }

  findByPublicId(workspaceId: string, publicId: string) {
    return this.inner.findByPublicId(workspaceId, publicId);
  }
}

export class EmittingWorkspaceStore implements WorkspaceRepository {
  private readonly announcer: Announcer;

  constructor(private readonly inner: WorkspaceRepository, publish: DirectoryEventPublisher, intend?: ChangeIntentRecorder, now: () => Date = () => new Date()) {
    this.announcer = new Announcer(publish, intend, now);
  }

  insert(workspace: Workspace) {
    return this.inner.insert(workspace);
  }

  find(id: string) {
    return this.inner.find(id);
  }

  async update(id: string, changes: Partial<Omit<Workspace, "_id">>): Promise<Workspace | null> {
    const watched = "sendingPaused" in changes || "banned" in changes;
    const prior = watched ? await this.inner.find(id) : null;
    if (!prior) return this.inner.update(id, changes);
    return this.announcer.around(
      { kind: "workspace", workspaceId: id, before: prior },
      () => this.inner.update(id, changes),
      (after) => (after ? workspaceEvents(prior, after) : []),
    );
  }

  list(limit: number) {
    return this.inner.list(limit);
  }
}

