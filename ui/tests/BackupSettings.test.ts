import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import BackupSettings from '../src/components/BackupSettings.svelte';

const status = (over: Record<string, unknown> = {}) => ({
  policy: { enabled: true, every_hours: 24, keep: 7 },
  folder: '/datos/respaldos',
  newest: '2026-12-01T15:00:00+00:00',
  count: 3,
  last_error: null,
  ...over,
});

describe('BackupSettings', () => {
  test('shows the newest copy and a full disk by name; saves the policy; copies now', async () => {
    const calls: [string, unknown][] = [];
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'backups') return status({ last_error: { code: 'db_full', details: { path: '/datos/timbra.db', detail: 'disco lleno' } } });
        if (cmd === 'save_backups') return status({ policy: (args as { policy: unknown }).policy });
        if (cmd === 'backup_now') return status({ count: 4 });
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(BackupSettings);
    await waitFor(() => expect(screen.getByTestId('backups-current').textContent).toContain('3 en la carpeta'));
    expect(screen.getByTestId('backups-last-error').textContent).toContain('está lleno');
    await fireEvent.input(screen.getByTestId('backups-every'), { target: { value: '6' } });
    await fireEvent.input(screen.getByTestId('backups-keep'), { target: { value: '10' } });
    await fireEvent.submit(screen.getByTestId('backups-form'));
    await waitFor(() => expect(calls).toContainEqual(['save_backups', { policy: { enabled: true, every_hours: 6, keep: 10 } }]));
    await fireEvent.click(screen.getByTestId('backups-now'));
    await waitFor(() => expect(screen.getByTestId('backups-current').textContent).toContain('4 en la carpeta'));
    expect(screen.queryByTestId('backups-last-error')).toBeNull();
  });
});
