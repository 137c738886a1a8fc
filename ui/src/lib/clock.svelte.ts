// "Now" for the UI's countdowns (the 72-hour Fecha window), ticking every 30 seconds.
let now = $state(new Date());
let timer: ReturnType<typeof setInterval> | null = null;

export const uiClock = {
  get now(): Date {
    if (timer === null && typeof window !== 'undefined') {
      timer = setInterval(() => (now = new Date()), 30_000);
    }
    return now;
  },
};
