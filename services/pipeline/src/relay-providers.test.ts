import { describe, expect, it } from "vitest";
import { correlationHeaders, deliveryIdOfSesTag, sesTagValue } from "./relay-providers.js";

describe("SES message tag values", () => {
  // SES: tag values are ASCII letters, digits, '_' and '-' only (API_MessageTag).
  const SES_TAG = /^[A-Za-z0-9_-]{1,256}$/;

  it.each([
    ["trs_01jabcdefghjkmnpqrstvwxyz0", "trs_01jabcdefghjkmnpqrstvwxyz0"],
    ["cmp_01jaaa.ctc_01jbbb", "cmp_01jaaa-2Ectc_01jbbb"],
    ["tst_01jccc-12", "tst_01jccc-2D12"],
    ["odd id/é", "odd-20id-2F-C3-A9"],
  ])("%s is written %s and read back", (id, tag) => {
    expect(sesTagValue(id)).toBe(tag);
    expect(sesTagValue(id)).toMatch(SES_TAG);
    expect(deliveryIdOfSesTag(tag)).toBe(id);
  });

  it("the SES header carries the encoded id (a broadcast recipient's '.' included)", () => {
    const [header] = correlationHeaders("ses", "cmp_1.ctc_2");
    expect(header).toEqual({ key: "X-SES-MESSAGE-TAGS", value: "mailroom_delivery_id=cmp_1-2Ectc_2" });
  });

  it("a value that is no encoding (a hand-written tag) is read as is", () => {
    expect(deliveryIdOfSesTag("trs_plain")).toBe("trs_plain");
    expect(deliveryIdOfSesTag("a-zz")).toBe("a-zz");
    expect(deliveryIdOfSesTag("bad-FF")).toBe("bad-FF");
  });
});
