// @hey-api/openapi-ts's configuration for the TypeScript SDK's wire types (run by
// scripts/generate-wire-types.sh, which names the input and output folder): the types of
// the wire schemas, and zod schemas named `<Type>Schema` that check what arrives.
export default {
  input: process.env.XDB_WIRE_SCHEMAS,
  output: { path: process.env.XDB_WIRE_OUTPUT, indexFile: false },
  plugins: [
    "@hey-api/typescript",
    { name: "zod", definitions: { name: "{{name}}Schema", case: "preserve" } },
  ],
};
