/**
 * Worker-call signatures. XDB signs every call it makes to a worker with a secret it
 * shares with the worker (`security.worker_signing_secret`): header `X-XDB-Signature`
 * carries `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. The timestamp bounds
 * replays: a signature further than `maxSkewSeconds` (300) from the worker's clock is
 * refused. The same algorithm as the services' signer; the clock is passed in.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** The request header holding the signature. */
export const SIGNATURE_HEADER = "X-XDB-Signature";

/** How far a signature's timestamp may be from the verifier's clock, in seconds. */
export const DEFAULT_MAX_SKEW_SECONDS = 300;

/** Why a call's signature was refused. */
export type SignatureFailure =
  | { kind: "MISSING"; message: string }
  | { kind: "MALFORMED"; message: string }
  | { kind: "EXPIRED"; skewSeconds: number; message: string }
  | { kind: "MISMATCH"; message: string };

type Bytes = Uint8Array | string;

function mac(secret: Bytes, timestamp: number, body: Bytes): Buffer {
  return createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest();
}

/** The header value signing `body` at `timestamp` (unix seconds). */
export function sign(secret: Bytes, timestamp: number, body: Bytes): string {
  return `t=${timestamp},v1=${mac(secret, timestamp, body).toString("hex")}`;
}

/** Checks `header` against `body` at `nowSeconds`; `undefined` when the signature holds. */
export function verify(
  secret: Bytes,
  header: string | undefined,
  body: Bytes,
  nowSeconds: number,
  maxSkewSeconds: number = DEFAULT_MAX_SKEW_SECONDS,
): SignatureFailure | undefined {
  if (header === undefined) {
    return { kind: "MISSING", message: `the request carries no ${SIGNATURE_HEADER} header` };
  }
  let timestamp: number | undefined;
  let tag: Buffer | undefined;
  for (const part of header.split(",")) {
    const trimmed = part.trim();
    const eq = trimmed.indexOf("=");
    if (eq < 0) continue;
    const key = trimmed.slice(0, eq);
    const value = trimmed.slice(eq + 1);
    if (key === "t") {
      timestamp = /^\+?\d{1,19}$/.test(value) ? Number(value) : undefined;
    } else if (key === "v1") {
      tag = /^(?:[0-9a-fA-F]{2})*$/.test(value) ? Buffer.from(value, "hex") : undefined;
    }
  }
  if (timestamp === undefined || tag === undefined) {
    return {
      kind: "MALFORMED",
      message: `the ${SIGNATURE_HEADER} header is not \`t=<seconds>,v1=<hex>\``,
    };
  }
  const skew = Math.abs(nowSeconds - timestamp);
  if (skew > maxSkewSeconds) {
    return {
      kind: "EXPIRED",
      skewSeconds: skew,
      message: `the signature's timestamp is ${skew} s away from this worker's clock`,
    };
  }
  const expected = mac(secret, timestamp, body);
  if (tag.length !== expected.length || !timingSafeEqual(tag, expected)) {
    return {
      kind: "MISMATCH",
      message: "the signature does not match: the secret differs or the body was changed",
    };
  }
  return undefined;
}
