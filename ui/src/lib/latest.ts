// Answers to concurrent requests can arrive out of order (Tauri runs commands concurrently; a
// change event during an action starts a read). A page asks `ask()` for a ticket before each
// request and applies the answer only while that ticket is still the newest, so an older state
// never replaces a newer one.

/** A counter of requests: `ask()` returns a check that holds while no later request was asked. */
export function latestOnly(): { ask: () => () => boolean } {
  let newest = 0;
  return {
    ask() {
      const mine = ++newest;
      return () => mine === newest;
    },
  };
}
