import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import AboutTimbra from '../src/components/AboutTimbra.svelte';

const about = {
  version: '0.1.0',
  catalog_source: 'SAT',
  catalog_date: '2026-11-01',
  database_kind: 'SQLite',
  database_place: '/home/caja/.local/share/timbra/timbra.db',
  schema_version: 9,
  data_folder: '/home/caja/.local/share/timbra',
  log_folder: '/home/caja/.local/share/timbra/registros',
  system: 'linux x86_64',
};

describe('AboutTimbra', () => {
  test('shows versions, the database and the folders; exports the diagnostic', async () => {
    const calls: string[] = [];
    mockIPC((cmd) => {
      calls.push(cmd);
      if (cmd === 'about_timbra') return about;
      if (cmd === 'export_diagnostic') return { path: '/home/caja/Descargas/timbra-diagnostico-20261206-101500.zip' };
      throw new Error(`unexpected ${cmd}`);
    });
    render(AboutTimbra);
    await waitFor(() => expect(screen.getByTestId('about-version').textContent).toBe('Timbra 0.1.0'));
    expect(screen.getByTestId('about-database').textContent).toContain('SQLite');
    expect(screen.getByTestId('about-database').textContent).toContain('timbra.db');
    expect(screen.getByTestId('about-logs').textContent).toContain('registros');
    expect(screen.getByTestId('about').textContent).toContain('Versión del esquema');
    await fireEvent.click(screen.getByTestId('export-diagnostic'));
    await waitFor(() => expect(screen.getByTestId('diagnostic-saved').textContent).toContain('timbra-diagnostico-20261206-101500.zip'));
    expect(calls).toContain('export_diagnostic');
  });
});
