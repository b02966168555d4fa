/**
 * The store port contract: every adapter must pass this suite unchanged (services/store's
 * store.test.ts runs it on each). Each test works in its own fresh collection, so adapters
 * backed by a shared server need no cleanup between tests. The cases, by concern: reads.ts,
 * filters.ts, updates.ts, indexes.ts.
 */
import { afterAll, beforeAll, describe } from "vitest";
import type { Collection, Store } from "@mailroom/store/port.js";
import type { ContractContext, Item } from "./context.js";
import { describeFilterCases } from "./filters.js";
import { describeIndexCases } from "./indexes.js";
import { describeReadCases } from "./reads.js";
import { describeUpdateCases } from "./updates.js";

export interface StoreContractOptions {
  /** Skip the whole suite (e.g. no MongoDB available). */
  skip?: boolean;
  /** Called once after the suite, e.g. to drop a test database. */
  cleanup?: () => Promise<void>;
}

export function describeStoreContract(name: string, open: () => Promise<Store>, options: StoreContractOptions = {}): void {
  describe.skipIf(options.skip === true)(`store contract: ${name}`, () => {
    let store: Store;
    let counter = 0;
    const fresh = (): Collection<Item> => store.collection<Item>(`contract_${Date.now().toString(36)}_${++counter}`);
    const ids = (docs: Item[]) => docs.map((d) => d._id);

    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await store?.close();
      await options.cleanup?.();
    });

    const context: ContractContext = { store: () => store, fresh, ids };
    describeReadCases(context);
    describeFilterCases(context);
    describeUpdateCases(context);
    describeIndexCases(context);
  });
}
