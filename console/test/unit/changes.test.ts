import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { type Change, withFirstPage, withNextPage } from "../../src/changes.js";

const change = (changeId: number): Change => ({ changeId, changedTimestampMs: changeId * 1000, changedBy: "ops" });
const ids = (shown: { changes: Change[] }) => shown.changes.map((c) => c.changeId);

describe("audit histories", () => {
  it("shows the first page as read, with the token of the next", () => {
    assert.deepEqual(withFirstPage(undefined, { changes: [] }), { changes: [] });
    assert.deepEqual(withFirstPage(undefined, { changes: [change(5), change(4)], nextPageToken: "t4" }), { changes: [change(5), change(4)], nextPageToken: "t4" });
    assert.deepEqual(withFirstPage(undefined, { changes: [change(2)], nextPageToken: null }), { changes: [change(2)] });
  });

  it("puts the changes made since on top, keeping the older pages read", () => {
    const shown = withNextPage(withFirstPage(undefined, { changes: [change(5), change(4)], nextPageToken: "t4" }), {
      changes: [change(3), change(2)],
      nextPageToken: "t2",
    });
    assert.deepEqual(ids(shown), [5, 4, 3, 2]);
    assert.equal(shown.nextPageToken, "t2");
    // Nothing new: the same.
    assert.equal(withFirstPage(shown, { changes: [change(5), change(4)], nextPageToken: "t4" }), shown);
    // One new: on top, the older pages and their token kept.
    const refreshed = withFirstPage(shown, { changes: [change(6), change(5)], nextPageToken: "t5" });
    assert.deepEqual(ids(refreshed), [6, 5, 4, 3, 2]);
    assert.equal(refreshed.nextPageToken, "t2");
    // A change committed after a newer one was read goes in its place.
    assert.deepEqual(ids(withFirstPage(refreshed, { changes: [change(6), change(5), change(4), change(1)] })), [6, 5, 4, 3, 2, 1]);
  });

  it("starts again from the first page when more changes were made since than a page holds", () => {
    const shown = withFirstPage(undefined, { changes: [change(2), change(1)] });
    const refreshed = withFirstPage(shown, { changes: [change(9), change(8)], nextPageToken: "t8" });
    assert.deepEqual(refreshed, { changes: [change(9), change(8)], nextPageToken: "t8" });
    // As many new changes as the page holds, but no more pages: nothing is missing.
    assert.deepEqual(ids(withFirstPage(shown, { changes: [change(4), change(3)] })), [4, 3, 2, 1]);
  });

  it("appends the next page, without the changes already shown, and takes its token", () => {
    const shown = withFirstPage(undefined, { changes: [change(6), change(5)], nextPageToken: "t5" });
    const more = withNextPage(shown, { changes: [change(5), change(4)], nextPageToken: null });
    assert.deepEqual(ids(more), [6, 5, 4]);
    assert.equal(more.nextPageToken, undefined);
  });
});
