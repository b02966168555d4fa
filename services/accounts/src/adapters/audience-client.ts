import type { Client } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ContactStatus as PbContactStatus, type ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { callNeighbour } from "@mailroom/kit/errors.js";
import { EXTRA_BUILT_INS, type Contact, type ContactStatus, type PropertyValue, type Workspace } from "@mailroom/records/model.js";
import { workspaceToPb } from "../routes.js";
import type { BootstrapDocument } from "@mailroom/records/bootstrap-document.js";
import type { ContactBootstrapPort } from "../domain/bootstrap.js";
import type { ContactReader } from "../domain/template-previews.js";

const CALL = { timeoutMs: 30_000 };

const call = <T>(what: string, run: () => Promise<T>) => callNeighbour("audience", what, run);

/**
 * What the accounts unit asks the audience unit, over Connect: a contact's values for a
 * template preview, and a bootstrap document's contacts (checked with the rest of the
 * document, applied once its workspaces are written).
 */
export class AudienceClient implements ContactReader, ContactBootstrapPort {
  constructor(private readonly contacts: Client<typeof ContactService>) {}

  async getById(workspaceId: string, contactId: string): Promise<Contact> {
    const { contact: c } = await call("GetContact", () => this.contacts.getContact({ workspaceId, contactId }, CALL));
    const extra: Partial<Record<(typeof EXTRA_BUILT_INS)[number], string>> = {};
    for (const field of EXTRA_BUILT_INS) if (c![field]) extra[field] = c![field];
    return {
      _id: c!.id,
      workspaceId: c!.workspaceId,
      email: c!.email,
      emailLower: c!.email.toLowerCase(),
      firstName: c!.firstName,
      lastName: c!.lastName,
      timezone: c!.timezone,
      status: PbContactStatus[c!.status] as ContactStatus,
      properties: (c!.properties ?? {}) as Record<string, PropertyValue>,
      createdAt: c!.createdAt ? timestampDate(c!.createdAt) : new Date(0),
      ...extra,
    } as Contact;
  }

  async check(doc: BootstrapDocument): Promise<void> {
    await call("LoadContactBootstrap", () => this.contacts.loadContactBootstrap({ json: JSON.stringify(doc), validateOnly: true }, CALL));
  }

  async apply(doc: BootstrapDocument, workspaces: Workspace[]): Promise<void> {
    await call("LoadContactBootstrap", () => this.contacts.loadContactBootstrap({ json: JSON.stringify(doc), workspaces: workspaces.map(workspaceToPb) }, CALL));
  }
}
