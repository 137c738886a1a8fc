import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import { emit } from '@tauri-apps/api/event';
import Factura from '../src/pages/Factura.svelte';
import { session } from '../src/lib/session.svelte';
import type { AppStatusDto } from '../src/lib/ipc/bindings/AppStatusDto';
import { detail, reanudar, row, timbrada } from './fixtures';

function status(role: 'personal' | 'soporte' | 'contador'): AppStatusDto {
  return {
    version: '0.1.0',
    mode: 'sandbox',
    database_path: '/tmp/t.db',
    emisor: null,
    pacs: { primary: { name: 'sandbox', pac: 'sandbox', environment: 'sandbox', url: '', user: '', has_credentials: true }, backup: null },
    drain: { concurrency: 2, max_tries: 5 },
    seat: { name: 'Soporte', role: role === 'contador' ? 'soporte' : role, confirmed: true },
    operator: { name: 'Soporte', role },
    database: { backend: 'sqlite', shown: '/tmp/t.db', source: 'environment', saved_postgres_url: null, has_password: false, restart_needed: false },
    drain_available: true,
    sandbox_pac_error: null,
    sandbox_fault: 'none',
    drain_error: null,
    drain_progress: null,
    startup_error: null,
  };
}

describe('Factura', () => {
  test('Reintentar asks Rust for the action and shows the new verdict', async () => {
    session.set(status('soporte'));
    const calls: [string, unknown][] = [];
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'invoice_detail') return detail(reanudar, { invoice: row(5, { badge: 'reanudar' }) });
        if (cmd === 'invoice_action') return detail(timbrada, { invoice: row(5, { badge: 'timbrada', state: 'stamped', uuid: '5FB2822E-396D-4725-8521-CDC4BDD20CCF' }) });
      },
      { shouldMockEvents: true },
    );
    render(Factura, { id: 5 });
    await waitFor(() => expect(document.querySelector('[data-testid=strategy] [data-badge]')?.getAttribute('data-badge')).toBe('reanudar'));
    await fireEvent.click(document.querySelector('button[data-action=retry]')!);
    await waitFor(() => expect(document.querySelector('[data-testid=strategy] [data-badge]')?.getAttribute('data-badge')).toBe('timbrada'));
    expect(calls).toContainEqual(['invoice_action', { invoiceId: 5, action: 'retry', note: null, found: null }]);
    expect(screen.getByTestId('uuid').textContent).toBe('5FB2822E-396D-4725-8521-CDC4BDD20CCF');
  });

  test("a refusal from Rust (the API re-checks) is shown with the evidence it names", async () => {
    session.set(status('soporte'));
    mockIPC(
      (cmd) => {
        if (cmd === 'invoice_detail') return detail(reanudar, { invoice: row(5, { badge: 'reanudar' }) });
        if (cmd === 'invoice_action') throw { code: 'action_refused', details: { action: 'reanudar', reason: 'cfdi_existe', evidence: [12] } };
      },
      { shouldMockEvents: true },
    );
    render(Factura, { id: 5 });
    await waitFor(() => expect(document.querySelector('button[data-action=retry]')).not.toBeNull());
    await fireEvent.click(document.querySelector('button[data-action=retry]')!);
    await waitFor(() =>
      expect(screen.getByTestId('factura-error').textContent).toBe('No se puede ahora: Ya existe un CFDI para esta venta.'),
    );
  });

  test('an older answer arriving late never replaces a newer one (the page stays on the latest state)', async () => {
    session.set(status('soporte'));
    // The first read is slow and sees the old state; the read the change event asks for answers
    // first with the new state. Tauri runs commands concurrently, so this order happens.
    let reads = 0;
    let releaseFirst: () => void = () => {};
    mockIPC(
      (cmd) => {
        if (cmd !== 'invoice_detail') return undefined;
        reads += 1;
        if (reads === 1) {
          const stale = detail(reanudar, { invoice: row(5, { badge: 'reanudar' }) });
          return new Promise((resolve) => (releaseFirst = () => resolve(stale)));
        }
        return detail(timbrada, { invoice: row(5, { badge: 'timbrada', state: 'stamped', uuid: 'U-NEW' }) });
      },
      { shouldMockEvents: true },
    );
    render(Factura, { id: 5 });
    await waitFor(() => expect(reads).toBe(1));
    await emit('invoice-changed', { invoice_id: 5 });
    await waitFor(() => expect(document.querySelector('[data-testid=strategy] [data-badge]')?.getAttribute('data-badge')).toBe('timbrada'));
    releaseFirst();
    await new Promise((r) => setTimeout(r, 20));
    expect(document.querySelector('[data-testid=strategy] [data-badge]')?.getAttribute('data-badge')).toBe('timbrada');
    expect(screen.getByTestId('uuid').textContent).toBe('U-NEW');
  });

  test('the download saves the live CFDI and says where', async () => {
    session.set(status('personal'));
    const calls: [string, unknown][] = [];
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'invoice_detail')
          return detail(timbrada, {
            invoice: row(5, { badge: 'timbrada', state: 'stamped', uuid: 'U-1' }),
            cfdis: [{ id: 1, attempt_id: 1, uuid: 'U-1', pac: 'sw', fecha_timbrado: '2026-11-29T12:00:05', has_xml: true, xml_sha256: null, sat_status: null, sat_checked_at: null, cancellation_status: null, created_at: '2026-11-29T18:00:05Z' }],
          });
        if (cmd === 'export_xml') return { path: '/home/ana/Descargas/U-1.xml' };
      },
      { shouldMockEvents: true },
    );
    render(Factura, { id: 5 });
    await waitFor(() => expect(document.querySelector('button[data-action=download_xml]')).not.toBeNull());
    // Personal sees only the download.
    expect(document.querySelectorAll('[data-testid=actions] button[data-action]')).toHaveLength(1);
    await fireEvent.click(document.querySelector('button[data-action=download_xml]')!);
    await waitFor(() => expect(screen.getByRole('status').textContent).toBe('Guardado en /home/ana/Descargas/U-1.xml'));
    expect(calls).toContainEqual(['export_xml', { invoiceId: 5, source: { kind: 'cfdi', uuid: 'U-1' } }]);
  });
});
