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

  test('a restore: the chosen file, what will happen (Rust\'s preview), then the restore of that file', async () => {
    const calls: [string, unknown][] = [];
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'backups') return status();
        if (cmd === 'plugin:dialog|open') return '/datos/respaldos/timbra-20261201T150405Z.db';
        if (cmd === 'restore_preview')
          return { source: '/datos/respaldos/timbra-20261201T150405Z.db', database: '/datos/timbra.db', backup_at: '2026-12-01T15:04:05+00:00', backup_invoices: 3, current_invoices: 5, other_drains: [] };
        if (cmd === 'restore_backup')
          return { from: '/datos/respaldos/timbra-20261201T150405Z.db', previous: '/datos/timbra.db.antes-de-restaurar-20261206T120000Z', invoices: 3, backup_at: '2026-12-01T15:04:05+00:00', gap_id: 1 };
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(BackupSettings);
    await fireEvent.click(screen.getByTestId('restore-choose'));
    await waitFor(() => expect(screen.getByTestId('restore-preview').textContent).toContain('con 3 facturas; la base actual tiene 5'));
    expect(screen.getByTestId('restore-preview').textContent).toContain('quedan retenidos');
    expect(calls.some(([c]) => c === 'restore_backup')).toBe(false);
    await fireEvent.click(screen.getByTestId('restore-confirm'));
    await waitFor(() => expect(screen.getByTestId('restore-done').textContent).toContain('3 facturas'));
    expect(calls).toContainEqual(['restore_backup', { path: '/datos/respaldos/timbra-20261201T150405Z.db' }]);
  });
});
