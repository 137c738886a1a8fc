import { describe, expect, it } from 'vitest';
import { efirmaState, liveCount, monthStart, orderRequests, periodProblem } from './sat';
import type { EFirmaDto } from './ipc/bindings/EFirmaDto';
import type { SatRequestDto } from './ipc/bindings/SatRequestDto';

const efirma = (over: Partial<EFirmaDto>): EFirmaDto => ({
  rfc: 'EKU9003173C9',
  no_certificado: '30001000000500003415',
  valid_from: '2023-05-18T00:00:00Z',
  valid_to: '2027-05-17T00:00:00Z',
  vigente: true,
  days_left: 160,
  password_kept: true,
  ...over,
});

const req = (id: number, live: boolean): SatRequestDto => ({
  id,
  direction: 'emitidos',
  tipo: 'metadata',
  desde: '2026-12-01 00:00:00',
  hasta: '2026-12-01 23:59:59',
  state: live ? 'en_proceso' : 'terminada',
  live,
  state_words: '',
  progress: '',
  message: '',
  id_solicitud: null,
  numero_cfdis: null,
  paquetes: 0,
  created_at: '2026-12-01T00:00:00Z',
  settled_at: null,
});

describe('SAT page', () => {
  it('proposes the month so far', () => {
    expect(monthStart('2026-12-06')).toBe('2026-12-01');
    expect(monthStart('')).toBe('');
  });

  it('refuses a period SAT cannot answer', () => {
    expect(periodProblem('2026-12-01', '2026-12-06', '2026-12-06')).toBeNull();
    expect(periodProblem('2026-12-07', '2026-12-06', '2026-12-06')).toBe('sat.period.order');
    expect(periodProblem('2026-12-01', '2026-12-09', '2026-12-06')).toBe('sat.period.future');
    expect(periodProblem('1/12/2026', '2026-12-06', '2026-12-06')).toBe('sat.period.format');
  });

  it('says the e.firma state', () => {
    expect(efirmaState(null)).toBe('missing');
    expect(efirmaState(efirma({}))).toBe('ok');
    expect(efirmaState(efirma({ days_left: 12 }))).toBe('expiring');
    expect(efirmaState(efirma({ vigente: false, days_left: -3 }))).toBe('expired');
    expect(efirmaState(efirma({ password_kept: false }))).toBe('no_password');
  });

  it('lists moving requests first', () => {
    const rs = [req(1, false), req(2, true), req(3, false)];
    expect(orderRequests(rs).map((r) => r.id)).toEqual([2, 3, 1]);
    expect(liveCount(rs)).toBe(1);
  });
});
