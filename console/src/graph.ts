// The state graph of a process type, as pure functions: the transitions its executions'
// histories show, live counts of state executions per state, and a layered left-to-right
// layout whose boxes and arrows the process type page draws as SVG.
import type { HistoryEvent, ProcessDefinition, StateDecision, StatesResponse } from "./types.js";

/** The pseudo-states an execution enters the graph from and leaves it to. */
export const START = "(start)";
export const END = "(end)";

/** An arrow: `seen` in histories (`count` times), or a declared failure `recovery`. */
export interface Edge {
  from: string;
  to: string;
  kind: "seen" | "recovery";
  count: number;
}

/** The state id of a `stateId-number` state execution id. */
export function stateIdOf(stateExecutionId: string): string {
  return stateExecutionId.replace(/-\d+$/, "");
}

/** The transitions one history shows: its start into its first state, and each
 * `EXECUTE_COMPLETED` from its state to the states it decided (or to the end when it
 * closed its thread). */
export function transitionsOf(events: HistoryEvent[]): { from: string; to: string }[] {
  const found: { from: string; to: string }[] = [];
  for (const event of events) {
    if (event.eventType === "PROCESS_STARTED") {
      const start = event.details.startStateId;
      if (typeof start === "string" && start) found.push({ from: START, to: start });
    } else if (event.eventType === "EXECUTE_COMPLETED") {
      const id = event.details.stateExecutionId;
      const decision = event.details.decision as StateDecision | undefined;
      if (typeof id !== "string" || !decision) continue;
      const from = stateIdOf(id);
      for (const next of decision.nextStates ?? []) found.push({ from, to: next.stateId });
      if (decision.threadCloseDecision) found.push({ from, to: END });
    }
  }
  return found;
}

/** The arrows of `histories` (each counted once per transition), then the failure
 * recoveries `definition` declares; in a stable order. */
export function deriveEdges(histories: HistoryEvent[][], definition?: ProcessDefinition): Edge[] {
  const seen = new Map<string, Edge>();
  for (const events of histories) {
    for (const { from, to } of transitionsOf(events)) {
      const key = JSON.stringify([from, to]);
      const edge = seen.get(key) ?? { from, to, kind: "seen" as const, count: 0 };
      edge.count += 1;
      seen.set(key, edge);
    }
  }
  const edges = [...seen.values()].sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to));
  for (const state of definition?.states ?? []) {
    const recovery = state.config?.stateFailureRecoveryOptions;
    const to = recovery?.stateFailureProceedStateId;
    if (recovery?.policy === "PROCEED_TO_CONFIGURED_STATE" && to) {
      edges.push({ from: state.id, to, kind: "recovery", count: 0 });
    }
  }
  return edges;
}

/** Live state executions of one state: running its waitUntil or execute, or waiting for
 * its commands; of the running, those parked and those backing off before a retry. */
export interface StateCount {
  running: number;
  waiting: number;
  parked: number;
  backingOff: number;
}

export function emptyCount(): StateCount {
  return { running: 0, waiting: 0, parked: 0, backingOff: 0 };
}

/** Counts per state id over the `states` of running executions, at `now`. */
export function countStates(responses: StatesResponse[], now: number): Map<string, StateCount> {
  const counts = new Map<string, StateCount>();
  for (const response of responses) {
    if (response.status !== "RUNNING") continue;
    for (const s of response.states) {
      const running = s.status === "WAIT_UNTIL_RUNNING" || s.status === "EXECUTE_RUNNING";
      if (!running && s.status !== "WAITING_COMMANDS") continue;
      const count = counts.get(s.stateId) ?? emptyCount();
      if (running) count.running += 1;
      else count.waiting += 1;
      const call = s.pendingCall;
      if (call?.phase === "PARKED") count.parked += 1;
      else if (call?.phase === "SCHEDULED" && call.attempt > 1 && call.dueTimestampMs > now) count.backingOff += 1;
      counts.set(s.stateId, count);
    }
  }
  return counts;
}

export interface Box {
  id: string;
  kind: "state" | "start" | "end";
  /** Whether the definition declares it (a history may name a state a later revision removed). */
  declared: boolean;
  layer: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Arrow extends Edge {
  /** SVG path data: one cubic Bézier curve. */
  path: string;
  labelX: number;
  labelY: number;
}

export interface Layout {
  width: number;
  height: number;
  boxes: Box[];
  arrows: Arrow[];
}

export const BOX_WIDTH = 190;
export const BOX_HEIGHT = 70;
const TERMINAL = 26;
const GAP_X = 90;
const GAP_Y = 30;
/** Room above the boxes for self-loops, below them for arrows going back. */
const MARGIN_TOP = 44;
const MARGIN_BOTTOM = 60;
const MARGIN_X = 16;
/** Where arrows over a column bend to: above the boxes. */
const ARCH_Y = 0;

/**
 * Lays out `states` (in declared order) and the states `edges` name: columns by the
 * shortest distance from the start (states reached from nowhere after the rest, the end
 * after the last state that closes a thread), each column in declared order and centred;
 * forward arrows run right to left sides (arching over the columns they skip), arrows
 * within a column curve out on the right, arrows back curve below, self-loops on top.
 */
export function layoutGraph(states: string[], startStates: string[], edges: Edge[]): Layout {
  const declared = new Set(states);
  const order = [...states];
  for (const e of edges) {
    for (const id of [e.from, e.to]) if (id !== START && id !== END && !order.includes(id)) order.push(id);
  }
  const hasStart = edges.some((e) => e.from === START) || startStates.length > 0;
  const hasEnd = edges.some((e) => e.to === END);
  const out = new Map<string, string[]>();
  for (const e of edges) out.set(e.from, [...(out.get(e.from) ?? []), e.to]);
  const entry = [...new Set([...startStates, ...edges.filter((e) => e.from === START).map((e) => e.to)])];
  if (entry.length === 0 && order[0] !== undefined) entry.push(order[0]);

  // Shortest distance from the start; the start is column 0 when drawn.
  const layer = new Map<string, number>();
  const first = hasStart ? 1 : 0;
  const queue: string[] = [];
  for (const id of entry) {
    if (!layer.has(id)) {
      layer.set(id, first);
      queue.push(id);
    }
  }
  while (queue.length > 0) {
    const id = queue.shift() as string;
    for (const next of out.get(id) ?? []) {
      if (next === END || next === START || layer.has(next)) continue;
      layer.set(next, (layer.get(id) ?? first) + 1);
      queue.push(next);
    }
  }
  const reached = [...layer.values()];
  const unreachedLayer = (reached.length > 0 ? Math.max(...reached) : first - 1) + 1;
  for (const id of order) if (!layer.has(id)) layer.set(id, unreachedLayer);
  // The end right after the last state that closes a thread.
  const endLayer = 1 + Math.max(first - 1, ...edges.filter((e) => e.to === END).map((e) => layer.get(e.from) ?? first));

  const columns: Box[][] = [];
  const place = (box: Omit<Box, "x" | "y">) => (columns[box.layer] ??= []).push({ ...box, x: 0, y: 0 });
  if (hasStart) place({ id: START, kind: "start", declared: true, layer: 0, width: TERMINAL, height: TERMINAL });
  for (const id of order) {
    place({ id, kind: "state", declared: declared.has(id), layer: layer.get(id) ?? first, width: BOX_WIDTH, height: BOX_HEIGHT });
  }
  if (hasEnd) place({ id: END, kind: "end", declared: true, layer: endLayer, width: TERMINAL, height: TERMINAL });

  const columnHeight = (column: Box[]) => column.reduce((sum, b) => sum + b.height, 0) + GAP_Y * Math.max(0, column.length - 1);
  const tallest = Math.max(0, ...columns.map((c) => (c ? columnHeight(c) : 0)));
  let x = MARGIN_X;
  const boxes: Box[] = [];
  for (const column of columns) {
    if (!column) continue;
    const width = Math.max(...column.map((b) => b.width));
    let y = MARGIN_TOP + (tallest - columnHeight(column)) / 2;
    for (const box of column) {
      box.x = x + (width - box.width) / 2;
      box.y = y;
      y += box.height + GAP_Y;
      boxes.push(box);
    }
    x += width + GAP_X;
  }
  const width = x - GAP_X + MARGIN_X + 40;
  const bottom = MARGIN_TOP + tallest;
  const byId = new Map(boxes.map((b) => [b.id, b]));
  const arrows: Arrow[] = [];
  for (const edge of edges) {
    const from = byId.get(edge.from);
    const to = byId.get(edge.to);
    if (from && to) arrows.push({ ...edge, ...route(from, to, bottom) });
  }
  const goesBack = arrows.some((a) => (byId.get(a.to)?.layer ?? 0) < (byId.get(a.from)?.layer ?? 0));
  return { width: Math.max(width, 200), height: bottom + (goesBack ? MARGIN_BOTTOM : MARGIN_X), boxes, arrows };
}

type Point = [number, number];

function route(from: Box, to: Box, bottom: number): { path: string; labelX: number; labelY: number } {
  let points: [Point, Point, Point, Point];
  if (from === to) {
    const left = from.x + from.width * 0.3;
    const right = from.x + from.width * 0.7;
    points = [[left, from.y], [left, from.y - 40], [right, from.y - 40], [right, from.y]];
  } else if (to.layer > from.layer) {
    const start: Point = [from.x + from.width, from.y + from.height / 2];
    const end: Point = [to.x, to.y + to.height / 2];
    const bend = (end[0] - start[0]) / 2;
    // Over a column: arch over its boxes rather than through them.
    const over = to.layer - from.layer > 1 ? [ARCH_Y, ARCH_Y] : [start[1], end[1]];
    points = [start, [start[0] + bend, over[0] as number], [end[0] - bend, over[1] as number], end];
  } else if (to.layer === from.layer) {
    const start: Point = [from.x + from.width, from.y + from.height / 2];
    const end: Point = [to.x + to.width, to.y + to.height / 2];
    points = [start, [start[0] + 45, start[1]], [end[0] + 45, end[1]], end];
  } else {
    const start: Point = [from.x + from.width / 2, from.y + from.height];
    const end: Point = [to.x + to.width / 2, to.y + to.height];
    const below = bottom + 40;
    points = [start, [start[0], below], [end[0], below], end];
  }
  const [p0, p1, p2, p3] = points;
  const f = (n: number) => String(Math.round(n * 10) / 10);
  return {
    path: `M ${f(p0[0])} ${f(p0[1])} C ${f(p1[0])} ${f(p1[1])}, ${f(p2[0])} ${f(p2[1])}, ${f(p3[0])} ${f(p3[1])}`,
    // The curve's midpoint (t = 1/2).
    labelX: (p0[0] + 3 * p1[0] + 3 * p2[0] + p3[0]) / 8,
    labelY: (p0[1] + 3 * p1[1] + 3 * p2[1] + p3[1]) / 8,
  };
}
