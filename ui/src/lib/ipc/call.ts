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

/**
 * Asks the person at the desk for a locked role's PIN and unlocks it; resolves `true` when the
 * role is unlocked, `false` when they cancelled. Set by the app shell (`PinPrompt.svelte`).
 */
export type PinAsker = (role: string, action: string) => Promise<boolean>;
/** Window event: a role's unlock changed (unlocked at a prompt, or spent by a risky action). */
export const ROLE_LOCKS_CHANGED = 'timbra:role-locks';
let askPin: PinAsker | null = null;

/** Installs (or, with `null`, removes) the PIN prompt `call` offers on `role_locked`. */
export function setPinAsker(f: PinAsker | null): void {
  askPin = f;
}

/**
 * Calls one command of the shell. A `role_locked` refusal (the role has a PIN and is not
 * unlocked now: every risky action spends the unlock) offers the PIN prompt once and, when the
 * role was unlocked, sends the same call again: Rust refused before writing anything, so the
 * second call is the first one that acts.
 */
export async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (e) {
    const err = toUiError(e);
    if (err.code === 'role_locked' && askPin && (await askPin(err.details.role, err.details.action))) {
      try {
        return await invoke<T>(cmd, args);
      } catch (again) {
        throw new IpcError(toUiError(again));
      } finally {
        // The retried action spent the unlock (or failed for another reason): the sidebar
        // re-reads what is unlocked.
        window.dispatchEvent(new Event(ROLE_LOCKS_CHANGED));
      }
    }
    throw new IpcError(err);
  }
}

/** Listens to one event of the shell. */
export function on<T>(name: string, cb: (payload: T) => void): Promise<UnlistenFn> {
  return listen<T>(name, (e) => cb(e.payload));
}
