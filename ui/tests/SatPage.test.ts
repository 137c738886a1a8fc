import { describe, expect, it, test } from 'vitest';
import { efirmaState, liveCount, monthStart, orderRequests, periodProblem } from '../src/lib/sat';
import type { EFirmaDto } from '../src/lib/ipc/bindings/EFirmaDto';
import type { SatRequestDto } from '../src/lib/ipc/bindings/SatRequestDto';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Sat from '../src/pages/Sat.svelte';
import type { SatPageDto } from '../src/lib/ipc/bindings/SatPageDto';

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


const finished: SatPageDto = {
  efirma: efirma({}),
  service: { url: null, sandbox_url: 'http://127.0.0.1:40123', status_url: 'http://127.0.0.1:40124/ConsultaCFDIService.svc' },
  requests: [
    { ...req(7, false), state_words: 'terminada', progress: 'Terminada hace 2 min', numero_cfdis: 2 },
    { ...req(8, true), state_words: 'en proceso', progress: 'Solicitud al SAT en proceso desde hace 3 h' },
  ],
  last_reconciliation: {
    desde: '2026-12-01',
    hasta: '2026-12-06',
    at: '2026-12-06T12:00:00Z',
    sat_count: 2,
    unknown_count: 1,
    linked_count: 1,
    lacking_count: 1,
    status_updates: 1,
    actor: 'timbra-app',
  },
  unknown: [
    {
      uuid: '5A7E0C1D-28E2-4E00-9A11-0000000028E2',
      invoice_id: 4,
      rfc_emisor: 'EKU9003173C9',
      nombre_emisor: 'ESCUELA KEMPER URGATE',
      rfc_receptor: 'URE180429TM6',
      nombre_receptor: 'UNIVERSIDAD ROBOTICA ESPAÑOLA',
      rfc_pac: 'SPR190613I52',
      fecha_emision: '2026-12-06T10:00:00',
      total: '116.00',
      efecto: 'ingreso',
      estatus: 'vigente',
      fecha_cancelacion: null,
      has_xml: false,
      found_at_ms: 0,
    },
  ],
  publication_delay_hours: 72,
  today: '2026-12-06',
};

describe('Sat page', () => {
  test('shows the requests, the last reconciliation and the unknown CFDI; Conciliar sends the month so far', async () => {
    const calls: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === 'sat_page' || cmd === 'sat_reconcile') return finished;
      throw new Error(`unexpected ${cmd}`);
    });
    render(Sat);
    await waitFor(() => expect(screen.getByTestId('efirma-state').textContent).toContain('e.firma de EKU9003173C9 cargada'));
    expect(screen.getByTestId('sat-url').textContent).toContain('Modo sandbox');
    const rows = screen.getAllByTestId('sat-request');
    expect(rows[0].textContent).toContain('Solicitud al SAT en proceso desde hace 3 h');
    expect(rows[1].getAttribute('data-state')).toBe('terminada');
    expect(screen.getByTestId('sat-last-summary').textContent).toContain('1 desconocidos para Timbra');
    expect(screen.getByTestId('sat-lacking').textContent).toContain('1 CFDI de Timbra que el SAT aún no lista después de 72 h');
    const u = screen.getByTestId('sat-unknown-row');
    expect(u.textContent).toContain('URE180429TM6');
    expect(screen.getByTestId('sat-unknown-sale').getAttribute('href')).toBe('#/factura/4');
    expect(screen.getByTestId('sat-to-duplicados').getAttribute('href')).toBe('#/duplicados');
    await fireEvent.click(screen.getByTestId('sat-reconcile'));
    await waitFor(() => expect(calls.some(([c]) => c === 'sat_reconcile')).toBe(true));
    const sent = calls.find(([c]) => c === 'sat_reconcile')?.[1] as { desde: string; hasta: string };
    expect([sent.desde, sent.hasta]).toEqual(['2026-12-01', '2026-12-06']);
  });

  test('without an e.firma: says so and Conciliar waits for it', async () => {
    mockIPC((cmd) => {
      if (cmd === 'sat_page') return { ...finished, efirma: null, requests: [], last_reconciliation: null, unknown: [] };
      throw new Error(`unexpected ${cmd}`);
    });
    render(Sat);
    await waitFor(() => expect(screen.getByTestId('efirma-state').textContent).toContain('No hay e.firma'));
    expect((screen.getByTestId('sat-reconcile') as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('sat-requests').textContent).toContain('Todavía no hay solicitudes');
  });
});
