// Ajustes shows a section only once its parts have read what they show: a part that loads
// (settings, PIN states, the database) holds the section's layout until its first answer, so
// nothing moves under the cursor while the page loads and typing never lands in a field that
// was pushed down (issue 30). Outside a section (a test rendering a part alone) holding is a
// no-op.
import { getContext, setContext } from 'svelte';

const KEY = Symbol('layout-hold');

export interface LayoutHold {
  /** Holds the layout; the answer releases it (once; later calls do nothing). */
  hold(): () => void;
}

export function provideLayoutHold(h: LayoutHold): void {
  setContext(KEY, h);
}

/** Call while a component initializes; call the answer after its first load (also on failure). */
export function holdLayout(): () => void {
  const h = getContext<LayoutHold | undefined>(KEY);
  return h ? h.hold() : () => {};
}
