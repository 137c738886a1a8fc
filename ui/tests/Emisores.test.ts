import { beforeEach, describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import EmisorSwitcher from '../src/components/EmisorSwitcher.svelte';
import Emitir from '../src/pages/Emitir.svelte';
import Duplicados from '../src/pages/Duplicados.svelte';
import { ClickIdentity } from '../src/lib/emit';
import { session } from '../src/lib/session.svelte';
import { setLocale } from '../src/lib/i18n/index.svelte';
import type { AppStatusDto } from '../src/lib/ipc/bindings/AppStatusDto';
import type { EmisorEntryDto } from '../src/lib/ipc/bindings/EmisorEntryDto';
import type { EmisoresDto } from '../src/lib/ipc/bindings/EmisoresDto';

type Call = { cmd: string; args: Record<string, unknown> };

function status(rfc: string, nombre: string, role: 'soporte' | 'contador' = 'soporte'): AppStatusDto {
  return {
    version: '0.1.0',
    mode: 'sandbox',
    database_path: '/tmp/t.db',
    emisor: {
      rfc,
      nombre,
      regimen_fiscal: '601',
      lugar_expedicion: '42501',
      no_certificado: '30001000000500003416',
      certificate_valid_from: '2023-05-18T11:43:51Z',
      certificate_valid_to: '2027-05-18T11:43:51Z',
      test_csd: false,
    } as AppStatusDto['emisor'],
    pacs: { primary: { name: 'sandbox', pac: 'sandbox', environment: 'sandbox', url: '', user: '', has_credentials: true }, backup: null },
    drain: { concurrency: 2, max_tries: 5 },
    seat: { name: 'Yo', role: 'soporte', confirmed: true },
    operator: { name: 'Yo', role },
    database: { backend: 'sqlite', shown: '/tmp/t.db', source: 'environment', saved_postgres_url: null, has_password: false, restart_needed: false },
    drain_available: true,
    sandbox_pac_error: null,
    sandbox_fault: 'none',
    drain_error: null,
    drain_progress: null,
    startup_error: null,
  };
}

const entry = (rfc: string, nombre: string, over: Partial<EmisorEntryDto> = {}): EmisorEntryDto => ({
  rfc,
  nombre,
  home: false,
  archived: false,
  current: false,
  csd: null,
  error: null,
  ...over,
});

const EKU = 'EKU9003173C9';
const CACX = 'CACX7605101P8';

function emisores(current: string): EmisoresDto {
  return {
    emisores: [
      entry(EKU, 'ESCUELA KEMPER URGATE', { home: true, current: current === EKU }),
      entry(CACX, 'XOCHILT CASAS CHAVEZ', { current: current === CACX }),
      entry('AAA010101AAA', 'ARCHIVADA SA', { archived: true }),
    ],
    seat_limit: null,
    all_rfcs: [EKU, CACX, 'AAA010101AAA'],
  };
}

const settle = () => new Promise((r) => setTimeout(r, 30));

describe('several emisores', () => {
  beforeEach(() => setLocale('es-MX'));

  test('the switcher names the emisor on screen and switches to another (archived ones are not offered)', async () => {
    let current = EKU;
    const calls: Call[] = [];
    mockIPC((cmd, args) => {
      const a = (args ?? {}) as Record<string, unknown>;
      calls.push({ cmd, args: a });
      switch (cmd) {
        case 'list_emisores':
          return emisores(current);
        case 'switch_emisor':
          current = String(a.rfc);
          return emisores(current);
        case 'app_status':
          return current === EKU ? status(EKU, 'ESCUELA KEMPER URGATE') : status(CACX, 'XOCHILT CASAS CHAVEZ');
      }
      throw new Error(`unexpected ${cmd}`);
    });
    session.set(status(EKU, 'ESCUELA KEMPER URGATE'));
    render(EmisorSwitcher);
    await waitFor(() => expect(screen.getByTestId('emisor-select')).toBeTruthy());
    expect(screen.getByTestId('current-emisor-name').textContent).toBe('ESCUELA KEMPER URGATE');
    expect(screen.getByTestId('current-emisor-rfc').textContent).toBe(EKU);
    const select = screen.getByTestId('emisor-select') as HTMLSelectElement;
    expect([...select.options].map((o) => o.value)).toEqual([EKU, CACX]);

    await fireEvent.change(select, { target: { value: CACX } });
    await waitFor(() => expect(screen.getByTestId('current-emisor-rfc').textContent).toBe(CACX));
    expect(calls.filter((c) => c.cmd === 'switch_emisor').map((c) => c.args.rfc)).toEqual([CACX]);
    // The frame (and with it the page, keyed on the emisor) follows the switch.
    expect(calls.some((c) => c.cmd === 'app_status')).toBe(true);
    expect(session.status?.emisor?.rfc).toBe(CACX);
    expect(screen.getByTestId('current-emisor-name').textContent).toBe('XOCHILT CASAS CHAVEZ');
  });

  test('with one emisor there is nothing to choose, but its name and RFC are shown', async () => {
    mockIPC((cmd) => {
      if (cmd === 'list_emisores') return { emisores: [entry(EKU, 'ESCUELA KEMPER URGATE', { home: true, current: true })], seat_limit: null, all_rfcs: [EKU] };
      throw new Error(`unexpected ${cmd}`);
    });
    session.set(status(EKU, 'ESCUELA KEMPER URGATE'));
    render(EmisorSwitcher);
    await settle();
    expect(screen.getByTestId('current-emisor-rfc').textContent).toBe(EKU);
    expect(screen.queryByTestId('emisor-select')).toBeNull();
  });

  test('Emitir refuses to start while the emisor has no CSD or it ended', async () => {
    for (const [answer, reason] of [
      [null, 'missing'],
      [{ no_certificado: '1', valid_to: '2026-01-01T00:00:00Z', days_left: -3, warning: 'vencido', waiting_attempts: 0 }, 'expired'],
    ] as const) {
      mockIPC((cmd) => {
        if (cmd === 'csd_standing') return answer;
        if (cmd === 'local_now') return '2026-11-29T12:00:00';
        if (cmd === 'fiscal_options') return null;
        return undefined;
      });
      session.set(status(CACX, 'XOCHILT CASAS CHAVEZ'));
      const { unmount } = render(Emitir, { identity: new ClickIdentity(() => 'x') });
      const notice = await waitFor(() => screen.getByTestId('emitir-csd-blocked'));
      expect(notice.dataset.reason).toBe(reason);
      expect(notice.textContent).toContain(CACX);
      expect((screen.getByTestId('emitir-submit') as HTMLButtonElement).disabled).toBe(true);
      expect(document.querySelector<HTMLFieldSetElement>('#emitir-form fieldset.whole')?.disabled).toBe(true);
      unmount();
    }
  });

  test("the contador's queue names each group's emisor; another emisor's group is decided after switching to it", async () => {
    const group = (key: string, invoice_id: number) => ({
      key,
      kind: 'same_sale',
      invoice_id,
      cfdis: [],
      differences: [],
      evidence: [],
      decided_by: null,
      open_cancellations: 0,
    });
    const calls: Call[] = [];
    mockIPC((cmd, args) => {
      calls.push({ cmd, args: (args ?? {}) as Record<string, unknown> });
      switch (cmd) {
        case 'duplicate_queue':
          return [
            { rfc: EKU, nombre: 'ESCUELA KEMPER URGATE', current: true, groups: [group('invoice-1', 1)], error: null },
            { rfc: CACX, nombre: 'XOCHILT CASAS CHAVEZ', current: false, groups: [group('invoice-1', 1)], error: null },
          ];
        case 'switch_emisor':
          return emisores(CACX);
        case 'app_status':
          return status(CACX, 'XOCHILT CASAS CHAVEZ', 'contador');
      }
      return undefined;
    });
    session.set(status(EKU, 'ESCUELA KEMPER URGATE', 'contador'));
    render(Duplicados);
    await waitFor(() => expect(screen.getAllByTestId('duplicate-group').length).toBe(2));
    const groups = screen.getAllByTestId('duplicate-group');
    expect(groups.map((g) => g.dataset.emisor)).toEqual([EKU, CACX]);
    expect(screen.getAllByTestId('group-emisor').map((p) => p.textContent)).toEqual([
      expect.stringContaining(`ESCUELA KEMPER URGATE · ${EKU}`),
      expect.stringContaining(`XOCHILT CASAS CHAVEZ · ${CACX}`),
    ]);
    // The current emisor's group has the decision form; the other's only the switch.
    expect(groups[0].querySelector('[data-testid=decide-form]')).not.toBeNull();
    expect(groups[1].querySelector('[data-testid=decide-form]')).toBeNull();
    await fireEvent.click(groups[1].querySelector<HTMLButtonElement>('[data-testid=switch-to-emisor]')!);
    await waitFor(() => expect(calls.some((c) => c.cmd === 'switch_emisor' && c.args.rfc === CACX)).toBe(true));
    expect(calls.some((c) => c.cmd === 'decide_duplicate')).toBe(false);
  });
});
