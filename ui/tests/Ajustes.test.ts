import { describe, expect, test } from 'vitest';
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Ajustes from '../src/pages/Ajustes.svelte';
import { session } from '../src/lib/session.svelte';
import type { AppStatusDto } from '../src/lib/ipc/bindings/AppStatusDto';
import type { Role } from '../src/lib/ipc/bindings/Role';

function status(role: Role): AppStatusDto {
  return {
    version: '0.1.0',
    mode: 'sandbox',
    database_path: '/tmp/t.db',
    emisor: {
      rfc: 'EKU9003173C9',
      nombre: 'ESCUELA KEMPER URGATE',
      regimen_fiscal: '601',
      lugar_expedicion: '42501',
      no_certificado: '30001000000500003416',
      certificate_valid_from: '2023-05-18T11:43:51Z',
      certificate_valid_to: '2027-05-18T11:43:51Z',
      test_csd: true,
    },
    pacs: { primary: { name: 'sandbox', pac: 'sandbox', environment: 'sandbox', url: '', user: '', has_credentials: true }, backup: null },
    drain: { concurrency: 2 },
    operators: [{ name: 'Yo', role }],
    operator: { name: 'Yo', role },
    drain_available: true,
    sandbox_pac_error: null,
    sandbox_fault: 'none',
    drain_error: null,
    drain_progress: null,
    startup_error: null,
  };
}

describe('Ajustes', () => {
  test('a PAC is sent with its URL and credentials; Rust field errors land under their inputs', async () => {
    session.set(status('soporte'));
    const sent: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === 'save_pacs') {
        sent.push(args);
        throw { code: 'validation', details: { errors: [{ field: 'primary.url', code: 'formato', message: 'x' }] } };
      }
      if (cmd === 'app_status') return status('soporte');
    });
    render(Ajustes);
    const url = document.querySelector<HTMLInputElement>("input[name='primary.url']")!;
    await fireEvent.input(url, { target: { value: 'sw.example' } });
    await fireEvent.input(document.querySelector("input[name='primary.secret']")!, { target: { value: 'token-secreto' } });
    await fireEvent.submit(document.querySelector('[data-testid=pac-form]')!);
    await waitFor(() => expect(document.querySelector('[data-testid=pac-form] .field-error')?.textContent).toBe('Formato incorrecto.'));
    expect(sent[0]).toEqual({
      primary: { pac: 'sw', environment: 'pruebas', url: 'sw.example', user: '', secret: 'token-secreto', replace_open: false },
      backup: null,
    });
  });

  test('replacing a PAC with unresolved attempts asks first, then sends the acceptance', async () => {
    session.set(status('contador'));
    const sent: { primary: { replace_open: boolean } }[] = [];
    mockIPC((cmd, args) => {
      if (cmd === 'save_pacs') {
        const a = args as { primary: { replace_open: boolean } };
        sent.push(a);
        if (!a.primary.replace_open) throw { code: 'pac_has_open_attempts', details: { pac: 'sw-pruebas', attempts: 2, changed: 'url' } };
        return status('contador').pacs;
      }
      if (cmd === 'app_status') return status('contador');
    });
    render(Ajustes);
    await fireEvent.input(document.querySelector("input[name='primary.url']")!, { target: { value: 'https://otro.example' } });
    await fireEvent.input(document.querySelector("input[name='primary.secret']")!, { target: { value: 't' } });
    await fireEvent.submit(document.querySelector('[data-testid=pac-form]')!);
    await waitFor(() => expect(document.querySelector('[role=alert]')?.textContent).toContain('2 intento(s) sin resolver'));
    const box = document.querySelector<HTMLInputElement>('[data-testid=replace-open] input')!;
    await fireEvent.click(box);
    await fireEvent.submit(document.querySelector('[data-testid=pac-form]')!);
    await waitFor(() => expect(sent).toHaveLength(2));
    expect(sent.map((s) => s.primary.replace_open)).toEqual([false, true]);
  });

  test('the sandbox fault selector drives the simulator', async () => {
    session.set(status('soporte'));
    const faults: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === 'set_sandbox_fault') {
        faults.push(args);
        return (args as { fault: string }).fault;
      }
      if (cmd === 'app_status') return status('soporte');
    });
    render(Ajustes);
    await fireEvent.change(document.querySelector('[data-testid=sandbox-fault]')!, { target: { value: 'timeout_after_certify' } });
    await waitFor(() => expect(faults).toEqual([{ fault: 'timeout_after_certify' }]));
  });

  test('personal reads the settings but may not change them', () => {
    session.set(status('personal'));
    mockIPC(() => undefined);
    render(Ajustes);
    for (const id of ['emisor-form', 'pac-form', 'drain-form', 'operators-form']) {
      const fieldsets = document.querySelectorAll<HTMLFieldSetElement>(`[data-testid=${id}] fieldset`);
      expect(fieldsets.length, id).toBeGreaterThan(0);
      fieldsets.forEach((f) => expect(f.disabled, id).toBe(true));
    }
    expect(document.querySelector('.ajustes')?.textContent).toContain('solo lectura');
  });
});
