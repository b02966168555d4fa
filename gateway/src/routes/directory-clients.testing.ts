/**
 * Test support for the gateway's route suites: the clients of the accounts and audience units
 * (AccountsService, ContactService, TemplateService) over one in-memory test directory
 * (services/audience/src/testing.ts), whose one router serves all three. (Imported only by tests.)
 */
import { createClient } from "@connectrpc/connect";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { directoryRoutes, type TestDirectory } from "../../../services/audience/src/testing.js";

/** `accounts`, `contacts` and `templates` of the gateway's ServiceClients, over `dir`. */
export function directoryClients(dir: TestDirectory) {
  const transport = memoryTransport(directoryRoutes(dir));
  return {
    accounts: createClient(AccountsService, transport),
    contacts: createClient(ContactService, transport),
    templates: createClient(TemplateService, transport),
  };
}
