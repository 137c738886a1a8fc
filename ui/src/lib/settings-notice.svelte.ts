// The result of a save in Ajustes, whichever section's part made it: the Ajustes page shows it
// as a toast at the bottom of the window (visible wherever the form was; it moves nothing).
import type { UiError } from './ipc';

let message = $state<string | null>(null);
let error = $state<UiError | null>(null);

export const settingsNotice = {
  get message(): string | null {
    return message;
  },
  get error(): UiError | null {
    return error;
  },
  saved(m: string): void {
    message = m;
    error = null;
  },
  failed(e: UiError): void {
    error = e;
    message = null;
  },
  clear(): void {
    message = null;
    error = null;
  },
};
