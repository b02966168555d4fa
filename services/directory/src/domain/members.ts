import { badRequest } from "@mailroom/kit/errors.js";
import { normalizeEmail } from "./address.js";
import { scopedId } from "./model.js";
import type { MemberRepository } from "./ports.js";
import type { Workspaces } from "./workspaces.js";
import { requireWorkspaceId, systemClock, type Clock } from "./validation.js";

/** Workspace members: the only addresses a broadcast test may go to. */
export class Members {
  constructor(
    private readonly repo: MemberRepository,
    private readonly workspaces: Workspaces,
    private readonly now: Clock = systemClock,
  ) {}

  private parse(email: string): string {
    const e = normalizeEmail(email);
    if (!e) throw badRequest("invalid_email", `"${String(email).slice(0, 200)}" is not a valid email address`);
    return e;
  }

  async add(workspaceId: string, email: string): Promise<string> {
    await this.workspaces.get(workspaceId);
    const e = this.parse(email);
    await this.repo.ensure({ _id: scopedId(workspaceId, e), workspaceId, email: e, createdAt: this.now() });
    return e;
  }

  async remove(workspaceId: string, email: string): Promise<void> {
    requireWorkspaceId(workspaceId);
    await this.repo.remove(scopedId(workspaceId, this.parse(email)));
  }

  async list(workspaceId: string): Promise<string[]> {
    const docs = await this.repo.list(requireWorkspaceId(workspaceId), 10_000);
    return docs.map((d) => d.email);
  }
}
