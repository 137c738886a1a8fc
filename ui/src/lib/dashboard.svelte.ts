// Dashboard data kept while the app is open: count snapshots (states over time) and the
// stamps-per-hour histogram.
import type { Counts } from './ipc/bindings/Counts';

export type Snapshot = { at: number; pending: number; held: number; stamped: number };

let snapshots = $state<Snapshot[]>([]);

export const history = {
  get snapshots(): Snapshot[] {
    return snapshots;
  },
  record(c: Counts, at = Date.now()): void {
    const s = { at, pending: c.by_state.pending ?? 0, held: c.by_state.held ?? 0, stamped: c.by_state.stamped ?? 0 };
    const last = snapshots[snapshots.length - 1];
    if (last && last.pending === s.pending && last.held === s.held && last.stamped === s.stamped) return;
    snapshots = [...snapshots.slice(-199), s];
  },
};

/** How many of `instants` fall in each of the 24 hours before `now` (index 23 = the last hour). */
export function stampsPerHour(instants: string[], now: Date): number[] {
  const out = Array<number>(24).fill(0);
  const end = now.getTime();
  for (const iso of instants) {
    const ago = end - new Date(iso).getTime();
    if (ago < 0 || ago >= 24 * 3600 * 1000) continue;
    out[23 - Math.floor(ago / 3600_000)] += 1;
  }
  return out;
}
