import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import RoleLock from '../src/components/RoleLock.svelte';

describe('RoleLock', () => {
  test('a locked contador unlocks with the PIN; a wrong PIN is refused in words', async () => {
    const calls: [string, unknown][] = [];
    const locked = [{ role: 'contador', has_credential: true, unlocked_until: null }, { role: 'soporte', has_credential: false, unlocked_until: null }];
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'role_locks') return locked;
        if (cmd === 'unlock_role') {
          const a = args as { pin: string };
          if (a.pin !== '246810') throw { code: 'forbidden', details: { action: 'desbloquearse: la credencial no es correcta', role: 'contador' } };
          return [{ role: 'contador', has_credential: true, unlocked_until: '2026-12-01T15:00:00Z' }, locked[1]];
        }
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(RoleLock, { role: 'contador' });
    await waitFor(() => expect(screen.getByTestId('role-lock').getAttribute('data-locked')).toBe('true'));
    await fireEvent.input(screen.getByTestId('role-pin'), { target: { value: '111111' } });
    await fireEvent.click(screen.getByTestId('role-unlock'));
    await waitFor(() => expect(screen.getByTestId('role-lock-error').textContent).toBe('El PIN no es correcto.'));
    await fireEvent.input(screen.getByTestId('role-pin'), { target: { value: '246810' } });
    await fireEvent.click(screen.getByTestId('role-unlock'));
    await waitFor(() => expect(screen.getByTestId('role-lock').getAttribute('data-locked')).toBe('false'));
    expect(screen.getByTestId('role-lock').textContent).toContain('Desbloqueado hasta');
    expect(calls).toContainEqual(['unlock_role', { role: 'contador', pin: '246810' }]);
  });

  test('a role without a PIN can set one; personal has none to show', async () => {
    mockIPC(
      (cmd, args) => {
        if (cmd === 'role_locks') return [{ role: 'contador', has_credential: false, unlocked_until: null }];
        if (cmd === 'set_role_pin') {
          expect(args).toEqual({ pin: '135790' });
          return [{ role: 'contador', has_credential: true, unlocked_until: null }];
        }
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    const { unmount } = render(RoleLock, { role: 'contador' });
    await fireEvent.click(await screen.findByTestId('role-set-pin'));
    await fireEvent.input(screen.getByTestId('role-pin'), { target: { value: '135790' } });
    await fireEvent.click(screen.getByTestId('role-unlock'));
    await waitFor(() => expect(screen.getByTestId('role-lock').getAttribute('data-locked')).toBe('true'));
    unmount();
    render(RoleLock, { role: 'personal' });
    await new Promise((r) => setTimeout(r, 20));
    expect(screen.queryByTestId('role-lock')).toBeNull();
  });
});
