import { defineConfig } from 'vitest/config';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { svelteTesting } from '@testing-library/svelte/vite';

// The UI is embedded into the Tauri binary from ui/dist (tauri.conf.json > build.frontendDist).
export default defineConfig({
  plugins: [svelte(), svelteTesting()],
  clearScreen: false,
  base: './',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Tauri serves the files itself; no inline module-preload polyfill under a strict CSP.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  test: {
    environment: 'jsdom',
    include: ['tests/**/*.test.ts'],
    setupFiles: ['tests/setup.ts'],
  },
});
