// The app-wide status (mode, emisor, operator, settings) loaded once and refreshed after a
// settings change; pages read it reactively.
import type { AppStatusDto } from './ipc/bindings/AppStatusDto';
import { api, toUiError, type UiError } from './ipc';

let status = $state<AppStatusDto | null>(null);
let error = $state<UiError | null>(null);

export const session = {
  get status(): AppStatusDto | null {
    return status;
  },
  get error(): UiError | null {
    return error;
  },
  async refresh(): Promise<void> {
    try {
      status = await api.appStatus();
      error = null;
    } catch (e) {
      error = toUiError(e);
    }
  },
  set(s: AppStatusDto): void {
    status = s;
  },
};
