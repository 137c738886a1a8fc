import { describe, expect, test, vi } from 'vitest';
import { fireEvent, render, screen } from '@testing-library/svelte';
import DateField from '../src/components/DateField.svelte';
import { setLocale } from '../src/lib/i18n/index.svelte';

const field = () => screen.getByTestId('f');
const sel = (n: string) => field().querySelector<HTMLSelectElement>(`select[name='${n}']`)!;

describe('DateField', () => {
  test('día, mes by name in Spanish whatever the OS locale, año: a choice gives AAAA-MM-DD', async () => {
    setLocale('es-MX');
    const onchange = vi.fn();
    render(DateField, { value: '2026-12-06', name: 'd', label: 'Desde', testid: 'f', onchange });
    expect([...sel('d.mes').options].map((o) => o.textContent)).toEqual([
      'Enero', 'Febrero', 'Marzo', 'Abril', 'Mayo', 'Junio', 'Julio', 'Agosto', 'Septiembre', 'Octubre', 'Noviembre', 'Diciembre',
    ]);
    expect(sel('d.mes').value).toBe('12');
    expect(sel('d.dia').value).toBe('6');
    await fireEvent.change(sel('d.dia'), { target: { value: '31' } });
    expect(field().dataset.value).toBe('2026-12-31');
    // 31 de febrero is the month's last day.
    await fireEvent.change(sel('d.mes'), { target: { value: '2' } });
    expect(field().dataset.value).toBe('2026-02-28');
    expect(sel('d.dia').options).toHaveLength(28);
    await fireEvent.input(field().querySelector("input[name='d.anio']")!, { target: { value: '2028' } });
    expect(field().dataset.value).toBe('2028-02-28');
    // A half-typed year changes nothing.
    await fireEvent.input(field().querySelector("input[name='d.anio']")!, { target: { value: '20' } });
    expect(field().dataset.value).toBe('2028-02-28');
    expect(field().querySelector<HTMLInputElement>('input[type=hidden]')!.value).toBe('2028-02-28');
    expect(onchange).toHaveBeenCalledTimes(3);
  });

  test('optional: starts empty, a part fills the rest with today, "—" clears it', async () => {
    render(DateField, { value: '', name: 'l', label: 'Fecha', testid: 'f', optional: true });
    expect(sel('l.mes').value).toBe('0');
    await fireEvent.change(sel('l.mes'), { target: { value: '11' } });
    expect(field().dataset.value).toMatch(/^\d{4}-11-\d{2}$/);
    await fireEvent.change(sel('l.dia'), { target: { value: '0' } });
    expect(field().dataset.value).toBe('');
  });

  test('with time: hora and minuto as 24 h', async () => {
    render(DateField, { value: '2026-12-06T09:05', name: 'p', label: 'Fecha de pago', testid: 'f', time: true });
    expect(sel('p.hora').value).toBe('9');
    expect(sel('p.hora').selectedOptions[0].textContent).toBe('09');
    await fireEvent.change(sel('p.minuto'), { target: { value: '30' } });
    expect(field().dataset.value).toBe('2026-12-06T09:30');
  });
});
