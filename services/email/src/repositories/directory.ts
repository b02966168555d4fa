import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import type { DirectoryService } from "../../../../gen/mailroom/directory/v1/directory_pb.js";
import type { DirectoryRepository, SendableReservation, SenderCheck, TemplateContent } from "../domain/ports.js";
import { asDomainError } from "./errors.js";

const RPC = { timeoutMs: 15_000 };

/**
 * The directory service over Connect. Allowed sender checks are remembered briefly
 * (`senderCacheMs`, like the gateway's key cache) so a burst of sends from one address
 * costs one lookup; refusals are never cached, so a newly verified sender works at once.
 */
export class RpcDirectoryRepository implements DirectoryRepository {
  private readonly allowedSenders = new Map<string, { check: SenderCheck; expires: number }>();

  constructor(
    private readonly client: Client<typeof DirectoryService>,
    private readonly senderCacheMs = 5_000,
  ) {}

  async checkSender(workspaceId: string, from: string): Promise<SenderCheck> {
    const key = `${workspaceId}\u0000${from}`;
    const cached = this.allowedSenders.get(key);
    if (cached && cached.expires > Date.now()) return cached.check;
    try {
      const res = await this.client.checkSender({ workspaceId, from }, RPC);
      const check: SenderCheck = {
        allowed: res.allowed,
        address: res.address,
        name: res.name,
        allowedEmails: res.allowedEmails,
        allowedDomains: res.allowedDomains,
      };
      if (check.allowed && this.senderCacheMs > 0) {
        if (this.allowedSenders.size >= 10_000) this.allowedSenders.clear();
        this.allowedSenders.set(key, { check, expires: Date.now() + this.senderCacheMs });
      }
      return check;
    } catch (err) {
      throw asDomainError(err);
    }
  }

  async verifiedSenders(workspaceId: string): Promise<{ emails: string[]; domains: string[] }> {
    const res = await this.client.listSenders({ workspaceId }, RPC);
    return {
      emails: res.emails.filter((e) => e.verified).map((e) => e.email),
      domains: res.domains.filter((d) => d.verified).map((d) => d.domain),
    };
  }

  async getTemplate(workspaceId: string, name: string): Promise<TemplateContent | null> {
    try {
      const { template } = await this.client.getTemplate({ workspaceId, name }, RPC);
      if (!template) return null;
      return {
        name: template.name,
        subject: template.subject,
        html: template.html,
        text: template.text,
        previewText: template.previewText,
      };
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.NotFound) return null;
      throw asDomainError(err);
    }
  }

  async reserveSendable(workspaceId: string, recipients: string[]): Promise<SendableReservation> {
    const res = await this.client.reserveSendable({ workspaceId, recipients }, RPC);
    const suppressed = new Map<string, string>();
    for (const s of res.suppressed) suppressed.set(s.email.toLowerCase(), reasonText(s.reason) + (s.detail ? `: ${s.detail}` : ""));
    return {
      suppressed,
      granted: res.granted,
      reserved: Number(res.reserved),
      period: res.period,
      used: Number(res.used),
      limit: Number(res.limit),
    };
  }

  async releaseUsage(workspaceId: string, count: number, period: string): Promise<void> {
    await this.client.releaseUsage({ workspaceId, count: BigInt(count), period }, RPC);
  }

  /** firstName/lastName are built-in fields; everything else is a custom property. */
  async upsertContact(workspaceId: string, email: string, properties: Record<string, unknown>): Promise<void> {
    const { firstName, lastName, email: _ignored, ...custom } = properties;
    await this.client.upsertContact(
      {
        workspaceId,
        createMissingProperties: true,
        contact: {
          email,
          firstName: typeof firstName === "string" ? firstName : undefined,
          lastName: typeof lastName === "string" ? lastName : undefined,
          properties: custom as JsonObject,
        },
      },
      RPC,
    );
  }
}

function reasonText(reason: number): string {
  // SuppressionReason: 1 unsubscribed, 2 hard bounce, 3 complaint, 4 manual.
  return ["suppressed", "unsubscribed", "hard bounce", "complaint", "manually suppressed"][reason] ?? "suppressed";
}
