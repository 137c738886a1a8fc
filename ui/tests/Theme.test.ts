import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen } from '@testing-library/svelte';
import AppearanceSettings from '../src/components/AppearanceSettings.svelte';
import { getTheme, resolveTheme, setTheme } from '../src/lib/theme.svelte';

describe('theme', () => {
  test("Sistema follows the OS; Claro and Oscuro are this computer's choice", () => {
    expect(resolveTheme('system', true)).toBe('dark');
    expect(resolveTheme('system', false)).toBe('light');
    expect(resolveTheme('light', true)).toBe('light');
    expect(resolveTheme('dark', false)).toBe('dark');
  });

  test('chosen in Idioma y apariencia: applied to the page and kept like the language', async () => {
    setTheme('system');
    render(AppearanceSettings);
    const select = screen.getByTestId('theme') as HTMLSelectElement;
    expect([...select.options].map((o) => o.textContent)).toEqual(['Como el sistema', 'Claro', 'Oscuro']);
    await fireEvent.change(select, { target: { value: 'dark' } });
    expect(getTheme()).toBe('dark');
    expect(document.documentElement.dataset.theme).toBe('dark');
    expect(localStorage.getItem('timbra.theme')).toBe('dark');
    await fireEvent.change(select, { target: { value: 'light' } });
    expect(document.documentElement.dataset.theme).toBe('light');
    setTheme('system');
  });
});
