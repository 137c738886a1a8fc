import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Bandeja from '../src/pages/Bandeja.svelte';
import Mostrador from '../src/pages/Mostrador.svelte';
import { row } from './fixtures';

const GLOBAL = { invoice_id: 50, kind: 'global' as const, serie: 'G', folio: '7', uuid: null };

describe('tickets and payments in the Bandeja', () => {
  test('a ticket in a factura global says so (never held or late); a payment shows its amount', async () => {
    const asked: number[][] = [];
    mockIPC(
      (cmd, args) => {
        if (cmd === 'invoice_counts') return { total: 3, by_state: {}, by_badge: {} };
        if (cmd === 'list_invoices') {
          const items = [
            row(3, { kind: 'pago', total: '0', moneda: 'XXX', serie: null, folio: null }),
            // A ticket: held, no attempt, its Fecha long past the 72 hours.
            row(2, { state: 'held', attempts_count: 0, current_attempt_no: 0, fecha_deadline: '2020-01-01T00:00:00Z', receptor_rfc: 'XAXX010101000' }),
            row(1),
          ];
          return { items, next: null };
        }
        if (cmd === 'invoice_asides') {
          asked.push((args as { invoiceIds: number[] }).invoiceIds);
          return [
            { invoice_id: 2, ticket_document: GLOBAL, payment: null },
            { invoice_id: 3, ticket_document: null, payment: { amount: '580.00', moneda: 'MXN' } },
          ];
        }
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(Bandeja);
    await waitFor(() => expect(document.querySelector('a.tr[data-invoice-id="2"] [data-testid=ticket-place]')?.textContent).toBe('En factura global G-7'));
    // Only the ticket's and the payment's rows are asked about.
    expect(asked).toEqual([[3, 2]]);
    const ticket = document.querySelector('a.tr[data-invoice-id="2"]')!;
    expect(ticket.textContent).not.toContain('Fuera de las 72 h');
    expect(ticket.textContent).not.toContain('Detenida');
    const pago = document.querySelector('a.tr[data-invoice-id="3"] [data-testid=row-total]')!;
    expect(pago.textContent).toBe('$580.00');
    expect(document.querySelector('a.tr[data-invoice-id="3"]')!.textContent).not.toContain('XXX');
  });
});

describe('Venta de mostrador', () => {
  test('Enter records the ticket with its click id; quick products add lines; the day lists its tickets', async () => {
    const recorded: Record<string, unknown>[] = [];
    let tickets: unknown[] = [];
    mockIPC(
      (cmd, args) => {
        const a = (args ?? {}) as Record<string, unknown>;
        switch (cmd) {
          case 'local_now':
            return '2026-11-29T12:00:00';
          case 'products':
            return [
              {
                product: { sku: 'CAFE', descripcion: 'Café de olla', precio: '30.00' },
                concepto: { clave_prod_serv: '50201706', cantidad: '1', clave_unidad: 'H87', descripcion: 'Café de olla', valor_unitario: '30.00', objeto_imp: '02', traslados: [], retenciones: [] },
              },
            ];
          case 'tickets_of_day':
            return { day: '2026-11-29', tickets, total: tickets.length ? '34.80' : '0' };
          case 'record_ticket':
            recorded.push(a);
            tickets = [
              { invoice_id: 9, sale_id: a.saleId, time: '12:00', total: '34.80', descripcion: 'Café de olla', more_lines: 0, forma_pago: '01', document: null },
            ];
            return { invoice_id: 9, sale_id: a.saleId, state: 'held', replayed: false, warnings: [] };
        }
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(Mostrador);
    await waitFor(() => expect(screen.getAllByTestId('quick-product')).toHaveLength(1));
    await fireEvent.keyDown(window, { key: '1', code: 'Digit1', altKey: true });
    const desc = document.querySelector<HTMLInputElement>("[name='lines[0].descripcion']")!;
    await waitFor(() => expect(desc.value).toBe('Café de olla'));
    await fireEvent.submit(screen.getByTestId('mostrador-form'));
    await waitFor(() => expect(screen.getByTestId('ticket-recorded').textContent).toBe('Ticket registrado por $34.80.'));
    expect(recorded).toHaveLength(1);
    expect(String(recorded[0].saleId)).toMatch(/^ticket-/);
    const t = recorded[0].ticket as { occurred_at: string; forma_pago: string; conceptos: { descripcion: string }[] };
    expect([t.occurred_at, t.forma_pago, t.conceptos.map((c) => c.descripcion)]).toEqual(['2026-11-29T12:00:00', '01', ['Café de olla']]);
    expect(screen.getByTestId('day-total').textContent).toBe('1 tickets · $34.80');
    expect(screen.getByTestId('day-tickets').textContent).toContain('Espera la factura global');
    // The form is blank again for the next ticket.
    expect(document.querySelector<HTMLInputElement>("[name='lines[0].descripcion']")!.value).toBe('');
  });
});
