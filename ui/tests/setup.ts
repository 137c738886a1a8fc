// Every test starts from a clean fake backend and the es-MX locale.
import { afterEach } from 'vitest';
import { cleanup } from '@testing-library/svelte';
import { clearMocks } from '@tauri-apps/api/mocks';
import { setLocale } from '../src/lib/i18n/index.svelte';

afterEach(() => {
  cleanup();
  clearMocks();
  setLocale('es-MX');
});

// jsdom has no layout: ResizeObserver (used by bind:clientHeight) is a no-op stand-in.
if (!('ResizeObserver' in globalThis)) {
  class NoLayoutResizeObserver {
    observe() {}
    unobserve() {}
    disconnect() {}
  }
  (globalThis as unknown as { ResizeObserver: unknown }).ResizeObserver = NoLayoutResizeObserver;
}
