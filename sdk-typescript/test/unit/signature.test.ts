import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { sign, verify } from "@xdb/sdk";

const SECRET = "0123456789abcdef-secret";
const BODY = '{"a":1}';

describe("worker-call signatures", () => {
  it("signs as XDB does: hex HMAC-SHA256 of `t.body`", () => {
    // Computed independently (Python's hmac) for the same secret, time and body.
    assert.equal(sign(SECRET, 1_700_000_000, BODY), "t=1700000000,v1=6948a2dc6985c92d09b9edade5c97dce2ba201452d91a72e4a20d35abe4d3420");
  });

  it("verifies with the same secret and body, bytes or text", () => {
    const header = sign(SECRET, 1_700_000_000, BODY);
    assert.equal(verify(SECRET, header, BODY, 1_700_000_010), undefined);
    assert.equal(verify(Buffer.from(SECRET), header, Buffer.from(BODY), 1_700_000_000), undefined);
    assert.equal(verify(SECRET, ` ${header.replace(",", " , ")} `, BODY, 1_700_000_000), undefined, "spaces around parts");
  });

  it("refuses another secret or body", () => {
    const header = sign(SECRET, 1_700_000_000, BODY);
    assert.equal(verify("another-secret-0123", header, BODY, 1_700_000_000)?.kind, "MISMATCH");
    assert.equal(verify(SECRET, header, '{"a":2}', 1_700_000_000)?.kind, "MISMATCH");
  });

  it("refuses old, future, missing and malformed signatures", () => {
    const header = sign(SECRET, 1_700_000_000, "x");
    assert.deepEqual(verify(SECRET, header, "x", 1_700_000_301), {
      kind: "EXPIRED",
      skewSeconds: 301,
      message: "the signature's timestamp is 301 s away from this worker's clock",
    });
    assert.equal(verify(SECRET, header, "x", 1_699_999_699)?.kind, "EXPIRED");
    assert.equal(verify(SECRET, header, "x", 1_700_000_300), undefined, "300 s is still allowed");
    assert.equal(verify(SECRET, undefined, "x", 1)?.kind, "MISSING");
    for (const bad of ["", "t=1", "v1=00", "t=x,v1=00", "t=1,v1=zz", "t=1,v1=0"]) {
      assert.equal(verify(SECRET, bad, "x", 1)?.kind, "MALFORMED", bad);
    }
  });
});
