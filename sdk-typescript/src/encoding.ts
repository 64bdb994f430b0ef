/**
 * Payload encoding: the `{encoding: "json", data}` objects of the protocol.
 *
 * The one convention, shared with every XDB SDK: `data` is the JSON text of the value
 * (`"\"email\""` for the string `email`, `"{\"a\":1}"` for an object), and an absent
 * value (`undefined` or `null`) is sent as an absent field, not as `"null"`. Global
 * attributes are plain JSON values, not encoded objects. Pure functions.
 */
import { XdbSdkError } from "./errors.js";
import type { EncodedObject } from "./protocol.js";

/** The only encoding this SDK writes and reads. */
export const JSON_ENCODING = "json";

/** Encodes `value` as JSON; `what` names it in the error. */
export function encode(what: string, value: unknown): EncodedObject {
  let data: string | undefined;
  try {
    data = JSON.stringify(value);
  } catch (error) {
    throw new XdbSdkError("ENCODE", `cannot encode ${what}: ${String(error)}`);
  }
  if (data === undefined) {
    throw new XdbSdkError("ENCODE", `cannot encode ${what}: ${typeof value} is not JSON`);
  }
  return { encoding: JSON_ENCODING, data };
}

/** Encodes `value`, or returns `undefined` for `undefined`/`null` ("no value"). */
export function encodeOptional(what: string, value: unknown): EncodedObject | undefined {
  if (value === undefined || value === null) {
    return undefined;
  }
  return encode(what, value);
}

/**
 * Decodes an optional payload: absent (or `null`) reads as `undefined`; JSON `null` reads
 * as `null`. Only the `json` encoding is read (case-insensitive).
 */
export function decode<T = unknown>(what: string, value: EncodedObject | null | undefined): T {
  if (value === undefined || value === null) {
    return undefined as T;
  }
  if (value.encoding.toLowerCase() !== JSON_ENCODING) {
    throw new XdbSdkError(
      "UNSUPPORTED_ENCODING",
      `unsupported encoding ${JSON.stringify(value.encoding)} for ${what} (only "json" is supported)`,
    );
  }
  try {
    return JSON.parse(value.data) as T;
  } catch (error) {
    throw new XdbSdkError("DECODE", `cannot decode ${what}: ${String(error)}`);
  }
}

/** Converts a value to the plain JSON value a global attribute is sent as. */
export function toJsonValue(what: string, value: unknown): unknown {
  if (value === undefined) {
    return null;
  }
  return JSON.parse(encode(what, value).data) as unknown;
}
