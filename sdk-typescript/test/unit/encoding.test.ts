import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { XdbSdkError, decode, encode, encodeOptional, toJsonValue } from "@xdb/sdk";

describe("payload encoding", () => {
  it("writes data as the JSON text of the value", () => {
    assert.deepEqual(encode("x", [1, 2]), { encoding: "json", data: "[1,2]" });
    assert.deepEqual(encode("x", "email"), { encoding: "json", data: '"email"' });
    assert.deepEqual(encode("x", null), { encoding: "json", data: "null" });
    assert.deepEqual(decode("x", encode("x", { a: { b: [true] } })), { a: { b: [true] } });
  });

  it("sends no value as an absent field, and reads an absent field as undefined", () => {
    assert.equal(encodeOptional("x", undefined), undefined);
    assert.equal(encodeOptional("x", null), undefined);
    assert.deepEqual(encodeOptional("x", 0), { encoding: "json", data: "0" });
    assert.equal(decode("x", undefined), undefined);
    assert.equal(decode("x", null), undefined);
    assert.equal(decode("x", { encoding: "json", data: "null" }), null);
  });

  it("reads the json encoding in any case and refuses others", () => {
    assert.equal(decode("x", { encoding: "JSON", data: "1" }), 1);
    assert.throws(
      () => decode("input", { encoding: "protobuf", data: "??" }),
      (e: unknown) => e instanceof XdbSdkError && e.kind === "UNSUPPORTED_ENCODING" && /protobuf/.test(e.message),
    );
    assert.throws(() => decode("input", { encoding: "json", data: "{oops" }), (e: unknown) => e instanceof XdbSdkError && e.kind === "DECODE");
  });

  it("refuses values that are not JSON", () => {
    assert.throws(() => encode("x", 10n), (e: unknown) => e instanceof XdbSdkError && e.kind === "ENCODE");
    assert.throws(() => encode("x", () => 1), (e: unknown) => e instanceof XdbSdkError && e.kind === "ENCODE");
  });

  it("sends global attributes as plain JSON values", () => {
    assert.deepEqual(toJsonValue("c", { at: new Date(0) }), { at: "1970-01-01T00:00:00.000Z" });
    assert.equal(toJsonValue("c", undefined), null);
  });
});
