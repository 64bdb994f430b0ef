// The executions list's filter tree (the service's `where`) as the query builder edits
// it and as readable text, the form `xdb list --where` takes: bare names are business
// columns, `execution.<field>` fields of the execution; `and`, `or`, `not`, parentheses,
// = != < <= > >=, IN (...), IS [NOT] NULL and LIKE 'prefix%'. Pure.
import type { ExecutionField, FilterNode } from "./types.js";

export type Op = "=" | "!=" | "<" | "<=" | ">" | ">=" | "IN" | "IS NULL" | "IS NOT NULL" | "PREFIX" | "SUFFIX" | "CONTAINS";
export const OPS: readonly Op[] = ["=", "!=", "<", "<=", ">", ">=", "IN", "IS NULL", "IS NOT NULL", "PREFIX", "SUFFIX", "CONTAINS"];
export const FIELDS = [
  "status", "processType", "processId", "startTime", "closeTime", "paused", "currentStateId",
  "parked", "backingOff", "waitingOnTimer", "waitingOnQueue", "deploymentName", "deploymentVersion",
  "priority",
] as const satisfies readonly ExecutionField[];
export type Field = (typeof FIELDS)[number];
// A field the contract gains and FIELDS does not offer fails to compile here.
type _Holds<T extends true> = T;
type _EveryFieldOffered = _Holds<[Exclude<ExecutionField, Field>] extends [never] ? true : false>;

/** The execution's situation fields that are true or false. */
export const BOOLEAN_FIELDS: readonly Field[] = ["paused", "parked", "backingOff", "waitingOnTimer"];

/** The priorities an execution starts with: 1 (claimed first) to 5; 3 is the default. The
 * service refuses another number in a filter. */
export const PRIORITIES = ["1", "2", "3", "4", "5"] as const;

/** The operators the service takes on each field of the execution (its contract's list). */
export const FIELD_OPS: Record<Field, readonly Op[]> = {
  status: ["=", "!=", "IN"],
  processType: ["=", "!=", "IN", "PREFIX", "SUFFIX", "CONTAINS"],
  processId: ["=", "!=", "IN", "PREFIX", "SUFFIX", "CONTAINS"],
  startTime: ["=", "!=", "<", "<=", ">", ">="],
  closeTime: ["=", "!=", "<", "<=", ">", ">=", "IS NULL", "IS NOT NULL"],
  paused: ["=", "!="],
  currentStateId: ["=", "IN"],
  parked: ["=", "!="],
  backingOff: ["=", "!="],
  waitingOnTimer: ["=", "!="],
  waitingOnQueue: ["=", "IN"],
  deploymentName: ["=", "!=", "IN", "IS NULL", "IS NOT NULL"],
  deploymentVersion: ["=", "!=", "IN", "IS NULL", "IS NOT NULL"],
  priority: ["=", "!=", "<", "<=", ">", ">=", "IN"],
};

/** The operators a builder row offers: its field's, or all of them for a column. */
export function opsOf(condition: Pick<Condition, "kind" | "name">): readonly Op[] {
  return condition.kind === "field" ? (FIELD_OPS[condition.name as Field] ?? OPS) : OPS;
}

/** One row of the builder: a field of the execution or a column of the business row. */
export interface Condition {
  kind: "field" | "column";
  name: string;
  op: Op;
  /** As typed: IN takes a comma-separated list; IS [NOT] NULL none. */
  value: string;
}

/** The builder's model: groups combined with OR, each group's conditions with AND. */
export type Groups = Condition[][];

type Value = string | number | boolean;

/** `text` as the value the wire takes: a number, true/false, a status in capitals, an ISO
 * time as ms for the time fields, a priority as its number, else the text itself. */
export function typedValue(condition: Pick<Condition, "kind" | "name">, text: string): Value {
  const t = text.trim();
  if (condition.kind === "field") {
    if (condition.name === "status") return t.toUpperCase();
    if (BOOLEAN_FIELDS.includes(condition.name as Field)) return t.toLowerCase() === "true";
    if (condition.name === "startTime" || condition.name === "closeTime") {
      if (/^-?\d+$/.test(t)) return Number(t);
      const ms = Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(t) ? t : `${t}Z`);
      return Number.isNaN(ms) ? t : ms;
    }
    // Not a whole number: sent as typed, for the service to refuse by name.
    if (condition.name === "priority") return /^-?\d+$/.test(t) ? Number(t) : t;
    return t;
  }
  if (t === "true" || t === "false") return t === "true";
  if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  return t;
}

/** One builder row as a node of the tree. */
export function conditionNode(c: Condition): FilterNode {
  const subject = c.kind === "field" ? { field: c.name as Field } : { column: c.name };
  if (c.op === "IS NULL" || c.op === "IS NOT NULL") return { ...subject, op: c.op };
  if (c.op === "IN") {
    const values = c.value.split(",").map((v) => v.trim()).filter((v) => v !== "").map((v) => typedValue(c, v));
    return { ...subject, op: c.op, values };
  }
  return { ...subject, op: c.op, value: typedValue(c, c.value) };
}

/** The tree of the builder's groups; undefined when it has no condition. */
export function groupsToTree(groups: Groups): FilterNode | undefined {
  const ands = groups.filter((g) => g.length > 0).map((g) => ({ and: g.map(conditionNode) }));
  if (ands.length === 0) return undefined;
  return ands.length === 1 ? ands[0] : { or: ands };
}

function valueText(v: unknown): string {
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

/** The builder's groups for `tree`, or undefined when it has a shape the builder does not
 * draw (a `not`, nested groups): the text form still edits it. */
export function treeToGroups(tree: FilterNode | undefined): Groups | undefined {
  if (!tree) return [[]];
  const group = (node: FilterNode): Condition[] | undefined => {
    if ("and" in node) {
      const out: Condition[] = [];
      for (const n of node.and) {
        const c = leaf(n);
        if (!c) return undefined;
        out.push(c);
      }
      return out;
    }
    const c = leaf(node);
    return c ? [c] : undefined;
  };
  const leaf = (node: FilterNode): Condition | undefined => {
    if (!("op" in node)) return undefined;
    const kind = "field" in node ? "field" : "column";
    if ("column" in node && node.path && node.path.length > 0) return undefined;
    const name = "field" in node ? node.field : node.column;
    const value = node.op === "IN" ? (node.values ?? []).map(valueText).join(", ") : node.value == null ? "" : valueText(node.value);
    return { kind, name, op: node.op, value: kind === "field" && (name === "startTime" || name === "closeTime") && typeof node.value === "number" ? new Date(node.value).toISOString() : value };
  };
  if ("or" in tree) {
    const groups: Groups = [];
    for (const n of tree.or) {
      const g = group(n);
      if (!g) return undefined;
      groups.push(g);
    }
    return groups;
  }
  const g = group(tree);
  return g ? [g] : undefined;
}

function quote(v: unknown): string {
  if (typeof v === "string") return `'${v.replace(/'/g, "''")}'`;
  return JSON.stringify(v);
}

function subjectText(node: FilterNode): string {
  if ("field" in node) return `execution.${node.field}`;
  if ("column" in node) return [node.column, ...(node.path ?? []).map((k, i, all) => `${i === all.length - 1 ? "->>" : "->"}${quote(k)}`)].join("");
  return "";
}

/** `tree` as readable text (`execution.status = 'RUNNING' and amount >= 100`). */
export function treeToText(tree: FilterNode | undefined): string {
  if (!tree) return "";
  const inner = (node: FilterNode, parent: "and" | "or" | "not" | "top"): string => {
    if ("and" in node) {
      if (node.and.length === 0) return "true";
      const text = node.and.map((n) => inner(n, "and")).join(" and ");
      return parent === "top" || parent === "and" || node.and.length === 1 ? text : `(${text})`;
    }
    if ("or" in node) {
      const text = node.or.map((n) => inner(n, "or")).join(" or ");
      return parent === "top" || parent === "or" || node.or.length === 1 ? text : `(${text})`;
    }
    if ("not" in node) return `not (${inner(node.not, "not")})`;
    const subject = subjectText(node);
    switch (node.op) {
      case "IS NULL":
      case "IS NOT NULL":
        return `${subject} ${node.op.toLowerCase()}`;
      case "IN":
        return `${subject} in (${(node.values ?? []).map(quote).join(", ")})`;
      case "PREFIX":
      case "SUFFIX":
      case "CONTAINS": {
        const text = typeof node.value === "string" ? node.value : JSON.stringify(node.value);
        const pattern = node.op === "PREFIX" ? `${text}%` : node.op === "SUFFIX" ? `%${text}` : `%${text}%`;
        return `${subject} like ${quote(pattern)}`;
      }
      default:
        return `${subject} ${node.op} ${quote(node.value)}`;
    }
  };
  return inner(tree, "top");
}

/** A LIKE pattern as the one text condition it is: prefix, suffix or contains. */
function likeOf(pattern: string): { op: "PREFIX" | "SUFFIX" | "CONTAINS"; value: string } | undefined {
  const starts = pattern.startsWith("%");
  const ends = pattern.endsWith("%") && pattern.length > 1;
  const value = pattern.slice(starts ? 1 : 0, ends ? -1 : undefined);
  if (value === "" || /[%_]/.test(value)) return undefined;
  if (starts && ends) return { op: "CONTAINS", value };
  if (starts) return { op: "SUFFIX", value };
  if (ends) return { op: "PREFIX", value };
  return undefined;
}

type Token = { kind: "word" | "string" | "number" | "op" | "punct"; text: string };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "'") {
      let value = "";
      i++;
      for (;;) {
        if (i >= text.length) throw new Error("a quoted value is not closed");
        if (text[i] === "'") {
          if (text[i + 1] === "'") {
            value += "'";
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += text[i];
        i++;
      }
      tokens.push({ kind: "string", text: value });
    } else if (/[-\d]/.test(c) && /^-?\d/.test(text.slice(i))) {
      const m = /^-?\d+(\.\d+)?/.exec(text.slice(i)) as RegExpExecArray;
      tokens.push({ kind: "number", text: m[0] });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?/.exec(text.slice(i)) as RegExpExecArray;
      tokens.push({ kind: "word", text: m[0] });
      i += m[0].length;
    } else {
      const m = /^(->>|->|<=|>=|!=|<>|=|<|>)/.exec(text.slice(i));
      if (m) {
        tokens.push({ kind: "op", text: m[0] === "<>" ? "!=" : m[0] });
        i += m[0].length;
      } else if ("(),".includes(c)) {
        tokens.push({ kind: "punct", text: c });
        i++;
      } else {
        throw new Error(`unexpected '${c}'`);
      }
    }
  }
  return tokens;
}

/** Parses the readable text form into a tree; throws with what it cannot take. Empty
 * text is no filter (undefined). */
export function textToTree(text: string): FilterNode | undefined {
  const tokens = tokenize(text);
  if (tokens.length === 0) return undefined;
  let at = 0;
  const peek = () => tokens[at];
  const isWord = (w: string, t = peek()) => t?.kind === "word" && t.text.toLowerCase() === w;
  const expect = (text: string) => {
    const t = tokens[at];
    if (!t || t.text !== text) throw new Error(`expected '${text}'${t ? ` before '${t.text}'` : " at the end"}`);
    at++;
  };
  const literal = (): Value => {
    const t = tokens[at++];
    if (!t) throw new Error("a value is missing at the end");
    if (t.kind === "string") return t.text;
    if (t.kind === "number") return Number(t.text);
    if (isWord("true", t) || isWord("false", t)) return t.text.toLowerCase() === "true";
    throw new Error(`'${t.text}' is not a value (quoted text, a number, true or false)`);
  };
  const condition = (): FilterNode => {
    const t = tokens[at++];
    if (!t || t.kind !== "word") throw new Error(`expected a column or execution.<field>${t ? `, not '${t.text}'` : ""}`);
    let subject: { field: Field } | { column: string; path?: string[] };
    if (t.text.includes(".")) {
      const [scope, name] = t.text.split(".") as [string, string];
      const field = FIELDS.find((f) => f.toLowerCase() === name.toLowerCase());
      if (scope.toLowerCase() !== "execution" || !field) throw new Error(`'${t.text}': no such field (execution.${FIELDS.join(", execution.")})`);
      subject = { field };
    } else {
      const path: string[] = [];
      while (peek()?.kind === "op" && (peek()?.text === "->" || peek()?.text === "->>")) {
        at++;
        const key = tokens[at++];
        if (!key || key.kind !== "string") throw new Error("a JSON path key is quoted text");
        path.push(key.text);
      }
      subject = path.length > 0 ? { column: t.text, path } : { column: t.text };
    }
    const upper = (v: Value): Value => ("field" in subject && subject.field === "status" && typeof v === "string" ? v.toUpperCase() : v);
    const negate = (n: FilterNode, yes: boolean): FilterNode => (yes ? { not: n } : n);
    const next = peek();
    if (isWord("is")) {
      at++;
      const not = isWord("not") ? (at++, true) : false;
      if (!isWord("null")) throw new Error("IS takes NULL or NOT NULL");
      at++;
      return { ...subject, op: not ? "IS NOT NULL" : "IS NULL" };
    }
    const not = isWord("not") ? (at++, true) : false;
    if (isWord("in")) {
      at++;
      expect("(");
      const values: Value[] = [upper(literal())];
      while (peek()?.text === ",") {
        at++;
        values.push(upper(literal()));
      }
      expect(")");
      return negate({ ...subject, op: "IN", values }, not);
    }
    if (isWord("like")) {
      at++;
      const pattern = literal();
      const like = typeof pattern === "string" ? likeOf(pattern) : undefined;
      if (!like) {
        throw new Error(`LIKE ${quote(pattern)}: only 'abc%', '%abc' and '%abc%' are supported`);
      }
      return negate({ ...subject, op: like.op, value: like.value }, not);
    }
    if (not) throw new Error("NOT here takes IN or LIKE");
    if (next?.kind !== "op" || next.text.startsWith("-")) throw new Error(`expected an operator after '${t.text}'${next ? `, not '${next.text}'` : ""}`);
    at++;
    return { ...subject, op: next.text as Op, value: upper(literal()) };
  };
  const unary = (): FilterNode => {
    if (isWord("not")) {
      at++;
      return { not: unary() };
    }
    if (peek()?.text === "(") {
      at++;
      const inner = or();
      expect(")");
      return inner;
    }
    return condition();
  };
  const and = (): FilterNode => {
    const items = [unary()];
    while (isWord("and")) {
      at++;
      items.push(unary());
    }
    return items.length === 1 ? (items[0] as FilterNode) : { and: items.flatMap((n) => ("and" in n ? n.and : [n])) };
  };
  const or = (): FilterNode => {
    const items = [and()];
    while (isWord("or")) {
      at++;
      items.push(and());
    }
    return items.length === 1 ? (items[0] as FilterNode) : { or: items.flatMap((n) => ("or" in n ? n.or : [n])) };
  };
  const tree = or();
  if (at < tokens.length) throw new Error(`unexpected '${tokens[at]?.text}' after the condition`);
  return tree;
}

/** Whether `tree` has a condition on a business column (which needs the type's table). */
export function hasColumnCondition(tree: FilterNode | undefined): boolean {
  if (!tree) return false;
  if ("and" in tree) return tree.and.some(hasColumnCondition);
  if ("or" in tree) return tree.or.some(hasColumnCondition);
  if ("not" in tree) return hasColumnCondition(tree.not);
  return "column" in tree;
}
