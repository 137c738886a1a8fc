import { describe, expect, test } from 'vitest';
import { ago, checkWords, estadoOf, satLine, unreachableWords } from '../src/lib/satStatus';
import type { SatCheck } from '../src/lib/ipc/bindings/SatCheck';

const now = new Date('2026-12-06T12:00:00Z');

function check(over: Partial<SatCheck>): SatCheck {
  return {
    uuid: 'AB',
    invoice_id: 1,
    url: 'http://127.0.0.1:9/ConsultaCFDIService.svc',
    checked_at: now.toISOString(),
    status: null,
    found: false,
    unreachable: null,
    words: '',
    ...over,
  } as SatCheck;
}

describe('SAT status in words', () => {
  test('the SAT column says the estado and how long ago SAT said it', () => {
    expect(satLine({ sat_status: 'Vigente · Cancelable sin aceptación · ', sat_checked_at: '2026-12-06T11:55:00Z' }, now)).toBe(
      'Vigente · consultado hace 5 min',
    );
    expect(satLine({ sat_status: null, sat_checked_at: null }, now)).toBe('—');
    expect(satLine({ sat_status: 'Cancelado · No cancelable · Cancelado sin aceptación', sat_checked_at: null }, now)).toBe('Cancelado');
    expect(estadoOf(' · x')).toBeNull();
  });

  test('ago rounds to minutes, hours and days', () => {
    expect(ago('2026-12-06T11:59:40Z', now)).toBe('hace un momento');
    expect(ago('2026-12-06T09:00:00Z', now)).toBe('hace 3 h');
    expect(ago('2026-12-01T12:00:00Z', now)).toBe('hace 5 días');
  });

  test('SAT unreachable is said with since when and how many tries, never as waiting', () => {
    const words = unreachableWords({ since: '2026-12-06T10:15:00Z', tries: 4, cause: 'dns' } as never);
    expect(words).toMatch(/^no se pudo consultar al SAT desde .+, 4 intentos$/);
    expect(unreachableWords({ since: '2026-12-06T10:15:00Z', tries: 1, cause: 'dns' } as never)).toMatch(/1 intento$/);
    expect(checkWords(check({ unreachable: { since: '2026-12-06T10:15:00Z', tries: 2, cause: 'x' } as never }))).toMatch(/2 intentos/);
  });

  test('a live answer: found, or not yet published (not an error)', () => {
    const status = {
      codigo_estatus: 'S - Comprobante obtenido satisfactoriamente.',
      estado: 'Vigente',
      es_cancelable: 'Cancelable sin aceptación',
      estatus_cancelacion: '',
      validacion_efos: '200',
    };
    expect(checkWords(check({ status, found: true }))).toBe('Vigente · Cancelable sin aceptación');
    expect(checkWords(check({ status: { ...status, codigo_estatus: 'N - 602: Comprobante no encontrado.', estado: 'No Encontrado' } }))).toMatch(
      /aún no lo encuentra/,
    );
  });
});
