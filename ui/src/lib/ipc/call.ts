// How the generated `api` and `events` (./index.ts, from src-tauri/src/ipc_list.rs) reach the
// Tauri shell. Errors are always `UiError`: the shell's coded `AppError`, or `ipc` when the call
// itself failed (never a bare string).
import { invoke } from '@tauri-apps/api/core';
import { listen, type UnlistenFn } from '@tauri-apps/api/event';
import type { AppError } from './bindings/AppError';

/** A failure as the UI handles it. */
export type UiError = AppError | { code: 'ipc'; details: { message: string } };

export class IpcError extends Error {
  readonly error: UiError;
  constructor(error: UiError) {
    super(error.code);
    this.error = error;
  }
  get code(): UiError['code'] {
    return this.error.code;
  }
}

function isAppError(x: unknown): x is AppError {
  return typeof x === 'object' && x !== null && typeof (x as { code?: unknown }).code === 'string';
}

/** Turns anything thrown by `invoke` into a `UiError`. */
export function toUiError(e: unknown): UiError {
  if (e instanceof IpcError) return e.error;
  if (isAppError(e)) return e;
  return { code: 'ipc', details: { message: e instanceof Error ? e.message : String(e) } };
}

/** Calls one command of the shell. */
export async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (e) {
    throw new IpcError(toUiError(e));
  }
}

/** Listens to one event of the shell. */
export function on<T>(name: string, cb: (payload: T) => void): Promise<UnlistenFn> {
  return listen<T>(name, (e) => cb(e.payload));
}
