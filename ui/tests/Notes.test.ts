import { describe, expect, test, vi } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Notes from '../src/components/Notes.svelte';
import type { Note } from '../src/lib/ipc/bindings/Note';

const active: Note = {
  id: 3,
  invoice_id: 9,
  text: 'Llamar al cliente',
  created_at: '2026-11-29T18:00:00Z',
  author: { name: 'Soporte', role: 'soporte' },
  resolved_at: null,
  resolved_by: null,
};

describe('Notes', () => {
  test('adds a note to this invoice and resolves an active one', async () => {
    const calls: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === 'add_note') return { ...active, id: 4, text: (args as { text: string }).text };
      if (cmd === 'resolve_note') return { ...active, resolved_at: '2026-11-29T19:00:00Z', resolved_by: active.author };
    });
    const onchanged = vi.fn();
    render(Notes, { invoiceId: 9, notes: [active], onchanged });
    expect(screen.getByText('Llamar al cliente')).toBeTruthy();

    const add = screen.getByText('Agregar nota') as HTMLButtonElement;
    expect(add.disabled).toBe(true);
    await fireEvent.input(document.querySelector('#note-text')!, { target: { value: 'Pidió el XML' } });
    await fireEvent.click(add);
    await waitFor(() => expect(onchanged).toHaveBeenCalledTimes(1));
    expect(calls[0]).toEqual(['add_note', { invoiceId: 9, text: 'Pidió el XML' }]);

    await fireEvent.click(document.querySelector('button[data-resolve="3"]')!);
    await waitFor(() => expect(onchanged).toHaveBeenCalledTimes(2));
    expect(calls[1]).toEqual(['resolve_note', { noteId: 3 }]);
  });

  test('a refused resolution is explained by its code', async () => {
    mockIPC(() => {
      throw { code: 'note_already_resolved', details: { note_id: 3 } };
    });
    const onchanged = vi.fn();
    render(Notes, { invoiceId: 9, notes: [active], onchanged });
    await fireEvent.click(document.querySelector('button[data-resolve="3"]')!);
    await waitFor(() => expect(screen.getByRole('alert').textContent).toBe('Esa nota ya estaba resuelta.'));
    expect(onchanged).not.toHaveBeenCalled();
  });

  test('resolved notes are listed apart, with who resolved them', () => {
    mockIPC(() => undefined);
    const resolved = { ...active, resolved_at: '2026-11-29T19:00:00Z', resolved_by: { name: 'Contador', role: 'contador' as const } };
    render(Notes, { invoiceId: 9, notes: [resolved], onchanged: vi.fn() });
    expect(screen.getByText('No hay notas activas.')).toBeTruthy();
    expect(screen.getByText('Notas resueltas (1)')).toBeTruthy();
    expect(document.querySelector('[data-resolved=true]')?.textContent).toContain('resuelta por Contador');
  });
});
