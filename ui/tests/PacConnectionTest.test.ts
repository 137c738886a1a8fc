import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import PacConnectionTest from '../src/components/PacConnectionTest.svelte';
import PacSettings from '../src/components/PacSettings.svelte';
import { session } from '../src/lib/session.svelte';
import { secretKept } from '../src/lib/pacCheck';
import type { AppStatusDto } from '../src/lib/ipc/bindings/AppStatusDto';
import type { ConnectionReport } from '../src/lib/ipc/bindings/ConnectionReport';

describe('PacConnectionTest', () => {
  test('Probar conexión names the other RFC and says how to fix it', async () => {
    const asked: unknown[] = [];
    const report: ConnectionReport = {
      name: 'facturapi-pruebas',
      pac: 'facturapi',
      checks: [
        { step: 'credenciales', code: 'credenciales_aceptadas', found: null },
        { step: 'rfc', code: 'rfc_distinto', found: 'TSP260101AA1' },
        { step: 'csd', code: 'csd_distinto', found: '30001000000500003456' },
      ],
    };
    mockIPC((cmd, args) => {
      if (cmd === 'test_pac_connection') {
        asked.push(args);
        return report;
      }
      throw new Error(`unexpected ${cmd}`);
    });
    render(PacConnectionTest, { name: 'facturapi-pruebas' });
    await fireEvent.click(screen.getByTestId('pac-test-run'));
    await waitFor(() => expect(screen.getByTestId('pac-test-verdict').textContent).toContain('No está lista'));
    expect(asked).toEqual([{ name: 'facturapi-pruebas' }]);
    const rfc = document.querySelector('[data-step=rfc]')?.textContent ?? '';
    expect(rfc).toContain('otro RFC');
    expect(rfc).toContain('TSP260101AA1');
    expect(document.querySelector('[data-step=csd]')?.textContent).toContain('Suba al portal del PAC');
    // No raw code reaches the person.
    expect(document.body.textContent).not.toMatch(/rfc_distinto|csd_distinto/);
  });

  test('a ready account says so', async () => {
    mockIPC(() => ({
      name: 'sandbox',
      pac: 'sw',
      checks: [
        { step: 'credenciales', code: 'credenciales_aceptadas', found: null },
        { step: 'rfc', code: 'rfc_sin_consulta', found: null },
        { step: 'csd', code: 'csd_no_requerido', found: null },
      ],
    }));
    render(PacConnectionTest, { name: 'sandbox' });
    await fireEvent.click(screen.getByTestId('pac-test-run'));
    await waitFor(() => expect(screen.getByTestId('pac-test-verdict').textContent).toContain('Lista para timbrar'));
    expect(document.querySelector('[data-step=rfc]')?.textContent).toContain('no permite consultar');
  });
});

describe('the PAC secret field', () => {
  test('says guardada only for the saved PAC and environment', () => {
    const saved = { pac: 'sw', environment: 'pruebas', has_credentials: true };
    expect(secretKept(saved, { pac: 'sw', environment: 'pruebas' })).toBe(true);
    expect(secretKept(saved, { pac: 'finkok', environment: 'pruebas' })).toBe(false);
    expect(secretKept(saved, { pac: 'sw', environment: 'produccion' })).toBe(false);
    expect(secretKept({ ...saved, has_credentials: false }, { pac: 'sw', environment: 'pruebas' })).toBe(false);
    expect(secretKept(null, { pac: 'sw', environment: 'pruebas' })).toBe(false);
    // Modo sandbox: nothing saved, whatever the form shows.
    expect(secretKept({ pac: 'sandbox', environment: 'sandbox', has_credentials: false }, { pac: 'sw', environment: 'pruebas' })).toBe(false);
  });

  test('in Ajustes › PAC, choosing another PAC than the saved one empties the placeholder', async () => {
    const st: AppStatusDto = {
      version: '0.1.0',
      mode: 'configured',
      database_path: '/tmp/t.db',
      emisor: null,
      pacs: {
        primary: { name: 'sw-pruebas', pac: 'sw', environment: 'pruebas', url: '', user: '', has_credentials: true },
        backup: null,
      },
      drain: { concurrency: 2, max_tries: 5 },
      seat: { name: 'Yo', role: 'soporte', confirmed: true },
      operator: { name: 'Yo', role: 'soporte' },
      database: { backend: 'sqlite', shown: '/tmp/t.db', source: 'environment', saved_postgres_url: null, has_password: false, restart_needed: false },
      drain_available: true,
      sandbox_pac_error: null,
      sandbox_fault: null,
      drain_error: null,
      drain_progress: null,
      startup_error: null,
    } as unknown as AppStatusDto;
    session.set(st);
    mockIPC((cmd) => {
      if (cmd === 'app_status') return st;
      if (cmd === 'role_locks') return [];
      if (cmd === 'live_workers') return [];
      return undefined;
    });
    render(PacSettings);
    const secret = () => document.querySelector<HTMLInputElement>("input[name='primary.secret']");
    await waitFor(() => expect(secret()?.placeholder).toContain('guardada'));
    const select = document.querySelector<HTMLSelectElement>("select[name='primary.pac']");
    if (!select) throw new Error('no PAC select');
    await fireEvent.change(select, { target: { value: 'finkok' } });
    await waitFor(() => expect(secret()?.placeholder ?? '').not.toContain('guardada'));
    // Each saved PAC has its Probar conexión.
    expect(document.querySelector('[data-testid="pac-test-sw-pruebas"]')).not.toBeNull();
  });
});
