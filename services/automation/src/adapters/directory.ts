import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { appErrorFromInfo, errorInfoOf } from "@mailroom/kit/errors.js";
import type { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import type { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { GroupService } from "@mailroom/proto/audience/v1/groups_pb.js";
import type { BroadcastService } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import type { AutomationDirectory } from "../domain/automations.js";

const RPC = { timeoutMs: 15_000 };

const isNotFound = (err: unknown) => err instanceof ConnectError && err.code === Code.NotFound;

/** A neighbour's 4xx refusal as the same AppError (its code and message); anything else unchanged. */
function asDomainError(err: unknown): unknown {
  const info = errorInfoOf(err);
  return info && info.httpStatus >= 400 && info.httpStatus < 500 ? appErrorFromInfo(info) : err;
}

/**
 * The catalog's checks of what a definition names, over Connect: templates (the accounts
 * unit's TemplateService), properties, filters and groups (the audience unit's ContactService
 * and GroupService), broadcasts (the broadcast unit). Nothing is cached: these run at create,
 * update and activate only.
 */
export class AutomationDirectoryClient implements AutomationDirectory {
  constructor(
    private readonly templates: Client<typeof TemplateService>,
    private readonly contacts: Client<typeof ContactService>,
    private readonly groups: Client<typeof GroupService>,
    private readonly broadcasts: Client<typeof BroadcastService>,
  ) {}

  async broadcastExists(workspaceId: string, broadcastId: string): Promise<boolean> {
    try {
      // Not gated by the workspace's broadcast flags (GetBroadcast is): only whether it exists.
      await this.broadcasts.getBroadcastTopic({ workspaceId, id: broadcastId }, RPC);
      return true;
    } catch (err) {
      if (isNotFound(err) || errorInfoOf(err)?.httpStatus === 400 || errorInfoOf(err)?.httpStatus === 404) return false;
      throw asDomainError(err);
    }
  }

  async templateKind(workspaceId: string, name: string): Promise<string | undefined> {
    try {
      const { template } = await this.templates.getTemplate({ workspaceId, name }, RPC);
      // Templates saved before kinds have none: they are of kind "template".
      return template ? template.kind || "template" : undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      // A name the accounts unit refuses as a name (e.g. invalid characters) names no template either.
      if (errorInfoOf(err)?.httpStatus === 400) return undefined;
      throw asDomainError(err);
    }
  }

  async groupId(workspaceId: string, idOrPublicId: string): Promise<string | undefined> {
    try {
      const { group } = await this.groups.getGroup({ workspaceId, groupId: idOrPublicId }, RPC);
      return group?.id || undefined;
    } catch (err) {
      if (isNotFound(err) || errorInfoOf(err)?.httpStatus === 400) return undefined;
      throw asDomainError(err);
    }
  }

  async propertySlugs(workspaceId: string): Promise<string[]> {
    try {
      const { properties } = await this.contacts.listContactProperties({ workspaceId }, RPC);
      return properties.map((p) => p.slug);
    } catch (err) {
      throw asDomainError(err);
    }
  }

  /**
   * The audience unit compiles the filter the way it will run it (its property types, groups,
   * engagement terms): a one-contact page of ListContacts is the cheapest call that does.
   */
  async filterError(workspaceId: string, filter: Record<string, unknown>): Promise<string | undefined> {
    try {
      await this.contacts.listContacts({ workspaceId, filter: JSON.stringify(filter), page: { limit: 1 } }, RPC);
      return undefined;
    } catch (err) {
      const info = errorInfoOf(err);
      if (info?.code === "invalid_filter") return info.message;
      throw asDomainError(err);
    }
  }
}
