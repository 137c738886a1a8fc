import { describe, expect, test } from 'vitest';
import { render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import CredentialStoreNotice from '../src/components/CredentialStoreNotice.svelte';

describe('CredentialStoreNotice', () => {
  test('says in Spanish that passwords are kept encrypted here when the OS has no store', async () => {
    mockIPC((cmd) => {
      if (cmd === 'credential_store') return { os_store: false };
      throw new Error(`unexpected ${cmd}`);
    });
    render(CredentialStoreNotice);
    await waitFor(() =>
      expect(screen.getByTestId('credential-store-local').textContent).toContain('cifradas en este equipo'),
    );
  });

  test('says nothing when the OS store answers', async () => {
    let asked = false;
    mockIPC((cmd) => {
      if (cmd === 'credential_store') {
        asked = true;
        return { os_store: true };
      }
      throw new Error(`unexpected ${cmd}`);
    });
    render(CredentialStoreNotice);
    await waitFor(() => expect(asked).toBe(true));
    expect(screen.queryByTestId('credential-store-local')).toBeNull();
  });
});
