import { describe, expect, test } from 'vitest';

// Every .svelte file's source, as text.
const sources = import.meta.glob('../src/**/*.svelte', { query: '?raw', import: 'default', eager: true }) as Record<string, string>;

describe('dates in the console', () => {
  test("no native date, month or time input: they follow the OS locale, not the console's (DateField, MonthPicker)", () => {
    expect(Object.keys(sources).length).toBeGreaterThan(20);
    const native = Object.entries(sources)
      // The markup only: the scripts' comments may name what is not used.
      .map(([file, text]) => [file, text.replace(/<script[\s\S]*?<\/script>/g, '').replace(/<!--[\s\S]*?-->/g, '')])
      .filter(([, markup]) => /type=["'](date|month|datetime-local|time|week)["']/.test(markup))
      .map(([file]) => file);
    expect(native).toEqual([]);
  });
});
