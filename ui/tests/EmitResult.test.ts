import { describe, expect, test, vi } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import EmitResult from '../src/components/EmitResult.svelte';
import TicketPlace from '../src/components/TicketPlace.svelte';
import { invoiceName } from '../src/lib/after';
import { session } from '../src/lib/session.svelte';
import { detail, reprocesar, row, timbrada } from './fixtures';

const UUID = '5FB2822E-396D-4725-8521-CDC4BDD20CCF';
const recorded = { invoice_id: 1, sale_id: 'emitir-abc', state: 'pending' as const, replayed: false, warnings: [] };

function backend(answer: () => unknown) {
  const calls: string[] = [];
  mockIPC(
    (cmd) => {
      calls.push(cmd);
      switch (cmd) {
        case 'invoice_detail':
          return answer();
        case 'print_pdf':
          return { path: '/descargas/F-12 5FB2822E.pdf' };
        case 'export_pdf':
          return { path: `/descargas/${UUID}.pdf` };
        case 'app_status':
          return { emisor: { nombre: 'PAPELERÍA LA ESQUINA' } };
      }
      throw new Error(`unexpected ${cmd}`);
    },
    { shouldMockEvents: true },
  );
  return calls;
}

describe('after Emitir', () => {
  test('an invoice is named by its Serie-Folio, the serie alone or its receptor', () => {
    expect(invoiceName({ serie: 'F', folio: '12', receptor_nombre: 'X' })).toBe('F-12');
    expect(invoiceName({ serie: 'F', folio: null, receptor_nombre: 'X' })).toBe('F');
    expect(invoiceName({ serie: null, folio: ' ', receptor_nombre: 'PUBLICO EN GENERAL' })).toBe('PUBLICO EN GENERAL');
  });

  test('follows the sale until Timbrada, then prints, and copies the WhatsApp text naming what to attach', async () => {
    let stamped = false;
    const calls = backend(() =>
      stamped
        ? detail(timbrada, { invoice: row(1, { serie: 'F', folio: '12', state: 'stamped', badge: 'timbrada', uuid: UUID }) })
        : detail({ ...timbrada, badge: 'pendiente', reasons: [], actions: [] }, { invoice: row(1, { serie: 'F', folio: '12' }) }),
    );
    await session.refresh();
    const onnew = vi.fn();
    render(EmitResult, { recorded, onnew });
    await waitFor(() => expect(screen.getByTestId('emit-status').textContent).toContain('Timbrando F-12'));
    stamped = true;
    await waitFor(() => expect(screen.getByTestId('emit-name').textContent).toBe('F-12'), { timeout: 3000 });
    expect(screen.getByTestId('emit-uuid').textContent).toBe(UUID);
    expect(screen.getByTestId('emit-status').textContent).toContain('Timbrada');

    await fireEvent.click(screen.getByTestId('emit-print'));
    await waitFor(() => expect(screen.getByTestId('emit-done').textContent).toContain('visor de PDF'));
    expect(calls).toContain('print_pdf');

    const writeText = vi.fn(async () => {});
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    await fireEvent.click(screen.getByTestId('emit-whatsapp'));
    await waitFor(() => expect(screen.getByTestId('whatsapp-status').textContent).toContain('Mensaje copiado'));
    const text = (screen.getByTestId('whatsapp-text') as HTMLTextAreaElement).value;
    expect(text).toContain('PAPELERÍA LA ESQUINA');
    expect(text).toContain('F-12');
    expect(text).toContain(UUID);
    expect(text).toContain('$116.00');
    expect(writeText).toHaveBeenCalledWith(text);
    // Honest about what a desktop can do: it names the PDF to attach.
    await waitFor(() =>
      expect(screen.getByTestId('whatsapp-status').textContent).toContain(`adjunte usted el PDF guardado en /descargas/${UUID}.pdf`),
    );

    await fireEvent.click(screen.getByTestId('emit-new'));
    expect(onnew).toHaveBeenCalled();
  });

  test('a sale that needs a person says so in words with a link to its page', async () => {
    backend(() => detail(reprocesar, { invoice: row(1, { serie: 'F', folio: '13', state: 'held', badge: 'reprocesar' }) }));
    render(EmitResult, { recorded, onnew: () => {} });
    await waitFor(() => expect(screen.getByTestId('emit-status').textContent).toContain('F-13 no se timbró sola'));
    expect(screen.getByTestId('emit-open').getAttribute('href')).toBe('#/factura/1');
    expect(screen.queryByTestId('emit-print')).toBeNull();
  });

  test('a ticket in a factura global says so and links to it; one waiting never says late', () => {
    render(TicketPlace, { document: { invoice_id: 9, kind: 'global', serie: 'G', folio: '3', uuid: null } });
    const place = screen.getByTestId('ticket-place');
    expect(place.textContent).toBe('En factura global G-3');
    expect(place.getAttribute('href')).toBe('#/factura/9');
  });
});
