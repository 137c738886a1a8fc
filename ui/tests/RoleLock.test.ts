import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import RoleLock from '../src/components/RoleLock.svelte';
import type { RoleLockDto } from '../src/lib/ipc/bindings/RoleLockDto';

const contadorSet: RoleLockDto = { role: 'contador', has_credential: true, unlocked_until: null };
const contadorNone: RoleLockDto = { role: 'contador', has_credential: false, unlocked_until: null };
const soporteNone: RoleLockDto = { role: 'soporte', has_credential: false, unlocked_until: null };

describe('RoleLock', () => {
  test("a desk whose role has a PIN unlocks with it; a wrong PIN is refused in words", async () => {
    const calls: [string, unknown][] = [];
    const locked: RoleLockDto[] = [contadorSet, { role: 'soporte', has_credential: true, unlocked_until: null }];
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'role_locks') return locked;
        if (cmd === 'unlock_role') {
          const a = args as { pin: string };
          if (a.pin !== '246810') throw { code: 'forbidden', details: { action: 'desbloquearse: la credencial no es correcta', role: 'soporte' } };
          return [contadorSet, { role: 'soporte', has_credential: true, unlocked_until: '2026-12-01T15:00:00Z' }];
        }
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(RoleLock, { role: 'soporte', acting: 'soporte' });
    await waitFor(() => expect(screen.getByTestId('role-lock').getAttribute('data-locked')).toBe('true'));
    await fireEvent.input(screen.getByTestId('role-pin'), { target: { value: '111111' } });
    await fireEvent.click(screen.getByTestId('role-unlock'));
    await waitFor(() => expect(screen.getByTestId('role-lock-error').textContent).toBe('El PIN no es correcto.'));
    await fireEvent.input(screen.getByTestId('role-pin'), { target: { value: '246810' } });
    await fireEvent.click(screen.getByTestId('role-unlock'));
    await waitFor(() => expect(screen.getByTestId('role-lock').getAttribute('data-locked')).toBe('false'));
    expect(screen.getByTestId('role-lock').textContent).toContain('Desbloqueado hasta');
    expect(calls).toContainEqual(['unlock_role', { role: 'soporte', pin: '246810' }]);
  });

  test('the contador is entered with its PIN, never picked; the console then acts as contador', async () => {
    const calls: [string, unknown][] = [];
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'role_locks') return [contadorSet, soporteNone];
        if (cmd === 'unlock_role') {
          if ((args as { pin: string }).pin !== '135790') throw { code: 'forbidden', details: { action: 'desbloquearse', role: 'contador' } };
          return [{ ...contadorSet, unlocked_until: '2026-12-01T15:00:00Z' }, soporteNone];
        }
        if (cmd === 'app_status') return null;
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(RoleLock, { role: 'soporte', acting: 'soporte' });
    await fireEvent.click(await screen.findByTestId('act-as-contador'));
    await fireEvent.input(screen.getByTestId('contador-pin'), { target: { value: '000000' } });
    await fireEvent.click(screen.getByTestId('contador-enter'));
    await waitFor(() => expect(screen.getByTestId('role-lock-error').textContent).toBe('El PIN no es correcto.'));
    await fireEvent.input(screen.getByTestId('contador-pin'), { target: { value: '135790' } });
    await fireEvent.click(screen.getByTestId('contador-enter'));
    await waitFor(() => expect(calls.filter(([c]) => c === 'app_status')).toHaveLength(1));
    expect(calls).toContainEqual(['unlock_role', { role: 'contador', pin: '135790' }]);
    // Nothing here sets a PIN: that is Ajustes' job, with proof of authority.
    expect(calls.some(([c]) => c === 'set_role_pin')).toBe(false);
  });

  test('without a contador PIN the sidebar says where to set it', async () => {
    mockIPC(
      (cmd) => {
        if (cmd === 'role_locks') return [contadorNone, soporteNone];
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(RoleLock, { role: 'personal', acting: 'personal' });
    await waitFor(() => expect(screen.getByTestId('contador-no-pin').textContent).toBe('Configure el PIN del contador en Ajustes.'));
    expect(screen.getByTestId('contador-no-pin').querySelector('a')?.getAttribute('href')).toBe('#/ajustes/equipo');
    expect(screen.queryByTestId('act-as-contador')).toBeNull();
  });

  test('acting as contador, the desk can lock the PIN (still contador) or go back to its own role', async () => {
    const calls: [string, unknown][] = [];
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'role_locks') return [{ ...contadorSet, unlocked_until: '2026-12-01T15:00:00Z' }, soporteNone];
        if (cmd === 'lock_role' || cmd === 'leave_role') return [contadorSet, soporteNone];
        if (cmd === 'app_status') return null;
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(RoleLock, { role: 'soporte', acting: 'contador' });
    await waitFor(() => expect(screen.getByTestId('acting-contador').textContent).toContain('Desbloqueado hasta'));
    await fireEvent.click(screen.getByTestId('role-lock-button'));
    await waitFor(() => expect(calls).toContainEqual(['lock_role', { role: 'contador' }]));
    await waitFor(() => expect(screen.getByTestId('acting-contador').textContent).not.toContain('Desbloqueado hasta'));
    expect(calls.some(([c]) => c === 'app_status')).toBe(false);
    await fireEvent.click(screen.getByTestId('leave-contador'));
    await waitFor(() => expect(calls).toContainEqual(['leave_role', { role: 'contador' }]));
    await waitFor(() => expect(calls.some(([c]) => c === 'app_status')).toBe(true));
  });
});
