import { describe, expect, test, vi } from 'vitest';
import { fireEvent, render, screen } from '@testing-library/svelte';
import MonthPicker from '../src/components/MonthPicker.svelte';
import { setLocale } from '../src/lib/i18n/index.svelte';

describe('MonthPicker', () => {
  test('months in Spanish whatever the OS locale; a choice gives AAAA-MM', async () => {
    setLocale('es-MX');
    const onchange = vi.fn();
    render(MonthPicker, { value: '2026-12', label: 'Mes', testid: 'm', onchange });
    const select = screen.getByTestId('m').querySelector('select')!;
    expect([...select.options].map((o) => o.textContent)).toEqual([
      'Enero', 'Febrero', 'Marzo', 'Abril', 'Mayo', 'Junio', 'Julio', 'Agosto', 'Septiembre', 'Octubre', 'Noviembre', 'Diciembre',
    ]);
    expect(select.value).toBe('12');
    await fireEvent.change(select, { target: { value: '3' } });
    expect(screen.getByTestId('m').getAttribute('data-value')).toBe('2026-03');
    expect(onchange).toHaveBeenCalledOnce();
  });
});
