import { badRequest } from "@mailroom/kit/errors.js";
import { normalizeEmail } from "@mailroom/records/address.js";
import { newId } from "@mailroom/kit/ids.js";
import { scopedId, type MemberRole } from "@mailroom/records/model.js";
import type { MemberRepository } from "@mailroom/records/ports.js";
import type { Workspaces } from "./workspaces.js";
import { requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";

/** Workspace members as addresses: the only ones a broadcast test may go to (roles: team.ts). */
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

  /**
   * Adds an ACTIVE member unless the address already is one (its role then stays): `role`,
   * or EDITOR — OWNER when the workspace has no owner yet (its first member).
   */
  async add(workspaceId: string, email: string, role?: MemberRole): Promise<string> {
    await this.workspaces.get(workspaceId);
    const e = this.parse(email);
    const existing = await this.repo.list(workspaceId, 10_000);
    const hasOwner = existing.some((m) => m.role === "OWNER" && (m.status ?? "ACTIVE") === "ACTIVE");
    await this.repo.ensure({
      _id: scopedId(workspaceId, e),
      workspaceId,
      email: e,
      createdAt: this.now(),
      publicId: newId("mbr"),
      role: role ?? (hasOwner ? "EDITOR" : "OWNER"),
      status: "ACTIVE",
      lastSignInAt: null,
    });
    return e;
  }

  async remove(workspaceId: string, email: string): Promise<void> {
    requireWorkspaceId(workspaceId);
    await this.repo.remove(scopedId(workspaceId, this.parse(email)));
  }

  async list(workspaceId: string): Promise<string[]> {
    const docs = await this.repo.list(requireWorkspaceId(workspaceId), 10_000);
    // Invited people are not members yet.
    return docs.filter((d) => (d.status ?? "ACTIVE") === "ACTIVE").map((d) => d.email);
  }
}
