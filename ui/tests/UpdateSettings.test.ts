import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import UpdateSettings from '../src/components/UpdateSettings.svelte';

const URL = 'https://actualizaciones.timbra.test/latest.json';
const settings = (url: string | null, key = true) => ({ url, has_public_key: key, current_version: '0.1.0' });
const offer = { version: '0.2.0', current_version: '0.1.0', notes: 'Corrige la factura global.', date: '2026-12-01' };

describe('UpdateSettings', () => {
  test('off until a URL is saved; shows the new version and its notes; installs it', async () => {
    const calls: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === 'update_settings') return settings(null);
      if (cmd === 'save_update_url') return settings((args as { url: string | null }).url);
      if (cmd === 'check_update') return offer;
      if (cmd === 'install_update') return { version: (args as { version: string }).version };
      throw new Error(`unexpected ${cmd}`);
    });
    render(UpdateSettings);
    // Loaded (the form is no longer busy): typing now is not overwritten by the load.
    await waitFor(() => expect((screen.getByRole('button', { name: 'Guardar' }) as HTMLButtonElement).disabled).toBe(false));
    expect((screen.getByTestId('update-check') as HTMLButtonElement).disabled).toBe(true);
    await fireEvent.input(screen.getByTestId('update-url'), { target: { value: URL } });
    await fireEvent.submit(screen.getByTestId('updates-form'));
    await waitFor(() => expect(calls).toContainEqual(['save_update_url', { url: URL }]));
    await waitFor(() => expect((screen.getByTestId('update-check') as HTMLButtonElement).disabled).toBe(false));
    await fireEvent.click(screen.getByTestId('update-check'));
    await waitFor(() => expect(screen.getByTestId('update-offer').textContent).toContain('Hay una versión nueva: 0.2.0 (usted tiene 0.1.0)'));
    expect(screen.getByTestId('update-notes').textContent).toBe('Corrige la factura global.');
    await fireEvent.click(screen.getByTestId('update-install'));
    await waitFor(() => expect(calls).toContainEqual(['install_update', { version: '0.2.0' }]));
    await waitFor(() => expect(screen.getByTestId('update-installed').textContent).toContain('0.2.0 quedó instalada con su firma verificada'));
  });

  test('a package whose signature is not Timbra\'s is refused in Spanish, and nothing is installed', async () => {
    mockIPC((cmd) => {
      if (cmd === 'update_settings') return settings(URL);
      if (cmd === 'check_update') return offer;
      if (cmd === 'install_update') throw { code: 'update', details: { problem: 'bad_signature', detail: 'Minisign: signature verification failed' } };
      throw new Error(`unexpected ${cmd}`);
    });
    render(UpdateSettings);
    await waitFor(() => expect((screen.getByTestId('update-check') as HTMLButtonElement).disabled).toBe(false));
    await fireEvent.click(screen.getByTestId('update-check'));
    await waitFor(() => screen.getByTestId('update-install'));
    await fireEvent.click(screen.getByTestId('update-install'));
    await waitFor(() =>
      expect(screen.getByTestId('update-error').textContent).toBe(
        'La actualización no se instaló: su firma no es la de Timbra (el archivo se alteró o no viene de Timbra). Su versión actual sigue igual.',
      ),
    );
    expect(screen.queryByTestId('update-installed')).toBeNull();
  });

  test('the newest version, and a build without the release key, are said as such', async () => {
    mockIPC((cmd) => {
      if (cmd === 'update_settings') return settings(URL, false);
      if (cmd === 'check_update') return null;
      throw new Error(`unexpected ${cmd}`);
    });
    render(UpdateSettings);
    await waitFor(() => screen.getByTestId('updates-no-key'));
    await fireEvent.click(screen.getByTestId('update-check'));
    await waitFor(() => expect(screen.getByTestId('update-none').textContent).toBe('Tiene la versión más reciente (0.1.0).'));
  });
});
