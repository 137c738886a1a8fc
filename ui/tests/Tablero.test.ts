import { describe, expect, test } from 'vitest';
import { render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Tablero from '../src/pages/Tablero.svelte';
import type { Dashboard } from '../src/lib/ipc/bindings/Dashboard';

const zero = { documents: 0, invoices: 0, amount: '0', iva_trasladado: '0', iva_retenido: '0', unreadable: 0 };

const board: Dashboard = {
  generated_at: '2026-11-30T18:00:00Z',
  utc_offset_minutes: -360,
  pacs: [
    {
      pac: 'sandbox',
      tries_24h: 10,
      answered_24h: 9,
      failed_24h: 3,
      unanswered_24h: 1,
      error_rate_pct: '33.33',
      latency_p50_ms: 412,
      latency_p95_ms: 3050,
      last_success_at: '2026-11-30T17:59:00Z',
      last_outage: {
        started_at: '2026-11-30T17:00:00Z',
        ended_at: null,
        failures: 3,
        outcome: 'unknown',
        cause: 'timeout',
        cause_detail: null,
      },
    },
  ],
  stamps_per_hour: Array.from({ length: 24 }, (_, i) => ({ hour_start: '2026-11-30T00:00:00Z', stamps: i === 23 ? 4 : 0 })),
  days: [{ day: '2026-11-30', recorded: 5, stamped: 4, now_pending: 1, now_held: 0, now_stamped: 4 }],
  today: { documents: 4, invoices: 4, amount: '464.00', iva_trasladado: '64.00', iva_retenido: '0', unreadable: 0 },
  month: { ...zero, documents: 4, invoices: 4, amount: '464.00', iva_trasladado: '64.00' },
  live_workers: [
    {
      id: 'srv@servidor:812:abc',
      worker: 'srv',
      program: 'timbra drain',
      host: 'servidor',
      pid: 812,
      started_at: '2026-11-30T08:00:00Z',
      heartbeat_at: '2026-11-30T17:59:55Z',
    },
    {
      id: 'app-9@caja-1:9:def',
      worker: 'app-9',
      program: 'timbra-app',
      host: 'caja-1',
      pid: 9,
      started_at: '2026-11-30T09:00:00Z',
      heartbeat_at: '2026-11-30T17:59:58Z',
    },
  ],
};

describe('Tablero', () => {
  test('shows the PAC health and the totals the database computed', async () => {
    mockIPC(
      (cmd) => {
        if (cmd === 'invoice_counts') return { total: 5, by_state: {}, by_badge: { timbrada: 4 }, open_candidates: 0, pending_cancellations: 0 };
        if (cmd === 'dashboard') return board;
      },
      { shouldMockEvents: true },
    );
    render(Tablero);
    // Answer times in seconds a shopkeeper reads; the milliseconds are in the tooltip.
    await waitFor(() => expect(screen.getByTestId('p50').textContent).toBe('0.4 s'));
    const row = screen.getByTestId('pac-health').querySelector('tr[data-pac=sandbox]')!;
    expect(row.querySelector('[data-testid=p95]')?.textContent).toBe('3.1 s');
    expect(row.querySelector('[data-testid=p95]')?.getAttribute('title')).toBe('3050 ms');
    expect(screen.getByTestId('pac-health').textContent).not.toMatch(/p50|p95|Latencia/);
    expect(row.querySelector('[data-testid=error-rate]')?.textContent).toContain('33.33 %');
    expect(row.querySelector('[data-testid=outage]')?.textContent).toContain('el PAC no contestó a tiempo');
    expect(row.querySelector('[data-testid=outage]')?.textContent).toContain('sigue sin responder');
    const totals = screen.getByTestId('totals');
    expect(totals.querySelector('tr[data-total=amount]')?.textContent).toContain('$464.00');
    expect(totals.querySelector('tr[data-total=iva_trasladado]')?.textContent).toContain('$64.00');
    expect(screen.getByTestId('per-hour').textContent).toContain('Timbradas en las últimas 24 horas: 4');
    // The drain processes live on this database, as Rust counted them.
    const live = screen.getByTestId('live-workers');
    expect(live.getAttribute('data-count')).toBe('2');
    expect(screen.getByTestId('live-workers-count').textContent).toBe('2 proceso(s) timbrando ahora.');
    // The process id is technical detail (a tooltip), never the words; no "drenado".
    expect(live.querySelector('li[data-worker=srv]')?.textContent).toContain('timbra drain en servidor');
    expect(live.textContent).not.toMatch(/pid|drenado/);
    expect(live.querySelector('li[data-worker=srv]')?.getAttribute('title')).toContain('pid 812');
  });

  test('no live drain process is said plainly', async () => {
    mockIPC(
      (cmd) => {
        if (cmd === 'invoice_counts') return { total: 0, by_state: {}, by_badge: {}, open_candidates: 0, pending_cancellations: 0 };
        if (cmd === 'dashboard') return { ...board, live_workers: [] };
      },
      { shouldMockEvents: true },
    );
    render(Tablero);
    await waitFor(() => expect(screen.getByTestId('live-workers').getAttribute('data-count')).toBe('0'));
    expect(screen.getByTestId('live-workers-count').textContent).toContain('Nada está timbrando');
  });
});
