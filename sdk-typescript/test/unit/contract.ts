// Requests checked offline against the repository's OpenAPI document (xdb-protocol/openapi.json),
// schema by schema (ajv, JSON Schema 2020-12), as the integration contract test checks them
// against the document the running service serves.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { Ajv2020 } from "ajv/dist/2020.js";

interface OpenApiDocument {
  paths: Record<string, { post?: { requestBody?: { content?: Record<string, { schema?: unknown }> } } }>;
  components: unknown;
}

/** What of `body` the repository's OpenAPI document refuses as a request to `path`. */
export function contractProblems(path: string, body: unknown): string {
  const url = new URL("../../../../xdb-protocol/openapi.json", import.meta.url);
  const document = JSON.parse(readFileSync(url, "utf8")) as OpenApiDocument;
  const schema = document.paths[path]?.post?.requestBody?.content?.["application/json"]?.schema;
  assert.ok(schema, `the document has a request body for ${path}`);
  const ajv = new Ajv2020({ strict: false, allErrors: true, formats: { int32: true, int64: true, double: true, float: true } });
  ajv.addSchema({ $id: "openapi.json", components: document.components });
  const validate = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"$ref":"#/', '"$ref":"openapi.json#/')) as object);
  return validate(body) ? "" : ajv.errorsText(validate.errors);
}
