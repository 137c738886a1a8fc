// Ajustes › Emisor y CSD: the CSD's validity (No. de certificado, válido desde/hasta, days
// left), the certificates kept after a renewal, and *Renovar CSD* (the new files through the
// native chooser, the password, Rust's refusal in words).
import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import CsdRenewSettings from '../src/components/CsdRenewSettings.svelte';
import { session } from '../src/lib/session.svelte';
import type { AppStatusDto } from '../src/lib/ipc/bindings/AppStatusDto';

const emisor = {
  rfc: 'EKU9003173C9',
  nombre: 'ESCUELA KEMPER URGATE',
  regimen_fiscal: '601',
  lugar_expedicion: '42501',
  no_certificado: '30001000000500003416',
  certificate_valid_from: '2023-05-18T11:43:51Z',
  certificate_valid_to: '2027-05-18T11:43:51Z',
  test_csd: false,
};

function status(): AppStatusDto {
  return ({
    version: '0.1.0',
    mode: 'configured',
    database_path: '/tmp/t.db',
    emisor,
    pacs: { primary: { name: 'sw', pac: 'sw', environment: 'pruebas', url: '', user: '', has_credentials: true }, backup: null },
    drain: { concurrency: 2, max_tries: 5 },
    seat: { name: 'Yo', role: 'soporte', confirmed: true },
    operator: { name: 'Yo', role: 'contador' },
    database: { backend: 'sqlite', shown: '/tmp/t.db', source: 'environment', saved_postgres_url: null, has_password: false, restart_needed: false },
    drain_available: true,
    sandbox_pac_error: null,
    sandbox_fault: null,
    drain_error: null,
    drain_progress: null,
    startup_error: null,
  } as unknown) as AppStatusDto;
}

const standing = {
  no_certificado: '30001000000500003416',
  valid_to: '2027-05-18T11:43:51Z',
  days_left: 20,
  warning: 'dias_30',
  waiting_attempts: 0,
  waiting: [],
};

const cert = (no: string, to: string, current: boolean) => ({
  no_certificado: no,
  rfc: 'EKU9003173C9',
  valid_from: '2023-05-18T11:43:51Z',
  valid_to: to,
  added_at: '2026-11-29T18:30:00Z',
  current,
});

describe('CsdRenewSettings', () => {
  test('shows the number, the validity and the days left, and the certificates kept', async () => {
    session.set(status());
    mockIPC((cmd) => {
      if (cmd === 'csd_standing') return standing;
      if (cmd === 'csd_certificates')
        return [cert('30001000000500003416', '2027-05-18T11:43:51Z', true), cert('30001000000400002451', '2023-06-17T00:00:00Z', false)];
      throw new Error(`unexpected ${cmd}`);
    });
    render(CsdRenewSettings);
    const validity = await waitFor(() => screen.getByTestId('csd-validity'));
    expect(validity.textContent).toContain('No. de certificado 30001000000500003416');
    expect(validity.textContent).toContain('válido desde');
    await waitFor(() => expect(screen.getByTestId('csd-days').textContent).toContain('Quedan 20 días'));
    expect(validity.dataset.warning).toBe('dias_30');
    expect(screen.getByTestId('csd-previous').textContent).toContain('30001000000400002451');
  });

  test('Renovar CSD sends the chosen files and the password, and says Rust\'s refusal in words', async () => {
    session.set(status());
    const sent: unknown[] = [];
    let chosen = 0;
    mockIPC((cmd, args) => {
      if (cmd === 'csd_standing') return standing;
      if (cmd === 'csd_certificates') return [cert('30001000000500003416', '2027-05-18T11:43:51Z', true)];
      if (cmd === 'plugin:dialog|open') return ++chosen === 1 ? '/home/ana/nuevo.cer' : '/home/ana/nuevo.key';
      if (cmd === 'renew_csd') {
        sent.push(args);
        throw { code: 'csd', details: { problem: 'not_csd', message: 'es una e.firma' } };
      }
      throw new Error(`unexpected ${cmd}`);
    });
    render(CsdRenewSettings);
    await waitFor(() => screen.getByTestId('csd-renew'));
    // Without files nothing is sent: each missing file is named.
    await fireEvent.submit(screen.getByTestId('csd-renew'));
    expect(sent).toEqual([]);
    expect(screen.getByTestId('csd-renew').textContent).toContain('Es obligatorio');
    await fireEvent.click(screen.getByTestId('renew-choose-cer'));
    await waitFor(() => expect(screen.getByTestId('renew-chosen-cer').textContent).toBe('nuevo.cer'));
    await fireEvent.click(screen.getByTestId('renew-choose-key'));
    await waitFor(() => expect(screen.getByTestId('renew-chosen-key').textContent).toBe('nuevo.key'));
    await fireEvent.input(document.querySelector("input[name='renew-password']")!, { target: { value: 'clave-nueva' } });
    await fireEvent.submit(screen.getByTestId('csd-renew'));
    await waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0]).toEqual({ renewal: { cer_path: '/home/ana/nuevo.cer', key_path: '/home/ana/nuevo.key', password: 'clave-nueva' } });
  });

  test('the fields are disabled for a role that may not change settings', async () => {
    session.set(status());
    mockIPC((cmd) => {
      if (cmd === 'csd_standing') return standing;
      if (cmd === 'csd_certificates') return [];
      throw new Error(`unexpected ${cmd}`);
    });
    render(CsdRenewSettings, { disabled: true });
    await waitFor(() => screen.getByTestId('csd-renew'));
    expect(screen.getByTestId<HTMLButtonElement>('renew-submit').closest('fieldset')!.disabled).toBe(true);
  });
});
