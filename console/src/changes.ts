// Pure parts of the audit histories (flow limits', schedules'): the changes shown, newest
// first, as pages are read. A refresh reads the first page again and puts the changes made
// since at the top, keeping the older pages read with "More".

/** What every change of an audit history has. */
export interface Change {
  changeId: number;
  changedTimestampMs: number;
  changedBy: string;
  reason?: string | null;
}

/** A page of a history, as the API answers it. */
export interface ChangePage<C extends Change> {
  changes: C[];
  nextPageToken?: string | null;
}

/** The changes shown, newest first, and the token of the page after the oldest of them
 * (absent: the oldest is the first change). */
export interface ShownChanges<C extends Change> {
  changes: C[];
  nextPageToken?: string;
}

const newestFirst = (a: Change, b: Change) => b.changeId - a.changeId;

/** `shown` (undefined before the first read) with the first page read again: the page's
 * changes not shown yet join them, by change id. When none of the page's changes was shown
 * and more pages follow, changes between would be missing: the page replaces them. */
export function withFirstPage<C extends Change>(shown: ShownChanges<C> | undefined, page: ChangePage<C>): ShownChanges<C> {
  const token = page.nextPageToken ?? undefined;
  if (!shown) return { changes: [...page.changes].sort(newestFirst), ...(token ? { nextPageToken: token } : {}) };
  const known = new Set(shown.changes.map((c) => c.changeId));
  const fresh = page.changes.filter((c) => !known.has(c.changeId));
  if (fresh.length === 0) return shown;
  if (token && fresh.length === page.changes.length) return { changes: [...page.changes].sort(newestFirst), nextPageToken: token };
  return { ...shown, changes: [...fresh, ...shown.changes].sort(newestFirst) };
}

/** `shown` with the page after its oldest change (read with its token) below. */
export function withNextPage<C extends Change>(shown: ShownChanges<C>, page: ChangePage<C>): ShownChanges<C> {
  const known = new Set(shown.changes.map((c) => c.changeId));
  const token = page.nextPageToken ?? undefined;
  return {
    changes: [...shown.changes, ...page.changes.filter((c) => !known.has(c.changeId))].sort(newestFirst),
    ...(token ? { nextPageToken: token } : {}),
  };
}
