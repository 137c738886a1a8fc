import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import PinPrompt from '../src/components/PinPrompt.svelte';
import { api, toUiError } from '../src/lib/ipc';
import { errorMessage } from '../src/lib/errors';

const locked = { code: 'role_locked' as const, details: { action: 'importar CFDI', role: 'contador' } };
const report = { files: [] };

/** A backend where the contador's unlock is spent by each import, as Rust does. */
function backend(calls: string[]) {
  let unlocked = false;
  mockIPC(
    (cmd, args) => {
      calls.push(cmd === 'unlock_role' ? `unlock_role:${(args as { pin: string }).pin}` : cmd);
      if (cmd === 'unlock_role') {
        if ((args as { pin: string }).pin !== '246810') {
          throw { code: 'forbidden', details: { action: 'desbloquearse: la credencial no es correcta', role: 'contador' } };
        }
        unlocked = true;
        return [{ role: 'contador', has_credential: true, unlocked_until: '2026-12-01T15:00:00Z' }];
      }
      if (cmd === 'import_cfdis') {
        if (!unlocked) throw locked;
        unlocked = false;
        return report;
      }
      throw new Error(`unexpected ${cmd}`);
    },
    { shouldMockEvents: true },
  );
}

describe('PinPrompt', () => {
  test('a risky action asks for the PIN, a wrong one is refused, the right one sends the call again', async () => {
    const calls: string[] = [];
    backend(calls);
    render(PinPrompt);
    const first = api.importCfdis([]);
    await screen.findByTestId('pin-prompt');
    expect(screen.getByTestId('pin-prompt-action').textContent).toBe('importar CFDI');
    await fireEvent.input(screen.getByTestId('pin-prompt-input'), { target: { value: '111111' } });
    await fireEvent.click(screen.getByTestId('pin-prompt-confirm'));
    await waitFor(() => expect(screen.getByTestId('pin-prompt-error').textContent).toBe('El PIN no es correcto.'));
    await fireEvent.input(screen.getByTestId('pin-prompt-input'), { target: { value: '246810' } });
    await fireEvent.click(screen.getByTestId('pin-prompt-confirm'));
    await expect(first).resolves.toEqual(report);
    expect(screen.queryByTestId('pin-prompt')).toBeNull();
    expect(calls).toEqual(['import_cfdis', 'unlock_role:111111', 'unlock_role:246810', 'import_cfdis']);

    // The unlock was spent: the next risky action asks again.
    const second = api.importCfdis([]);
    await screen.findByTestId('pin-prompt');
    await fireEvent.input(screen.getByTestId('pin-prompt-input'), { target: { value: '246810' } });
    await fireEvent.click(screen.getByTestId('pin-prompt-confirm'));
    await expect(second).resolves.toEqual(report);
    expect(calls.filter((c) => c === 'import_cfdis')).toHaveLength(4);
  });

  test('cancelling the prompt leaves the refusal, worded from its code', async () => {
    const calls: string[] = [];
    backend(calls);
    render(PinPrompt);
    const attempt = api.importCfdis([]).catch((e: unknown) => toUiError(e));
    await fireEvent.click(await screen.findByTestId('pin-prompt-cancel'));
    const err = await attempt;
    expect(err).toEqual(locked);
    expect(errorMessage(locked)).toBe(
      'El rol Contador está bloqueado para importar CFDI: escriba su PIN. Cada acción de riesgo lo pide de nuevo.',
    );
    expect(calls).toEqual(['import_cfdis']);
  });
});
