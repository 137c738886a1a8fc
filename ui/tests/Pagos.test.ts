import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Pagos from '../src/pages/Pagos.svelte';
import type { InvoiceBalance } from '../src/lib/ipc/bindings/InvoiceBalance';
import type { PaymentSummary } from '../src/lib/ipc/bindings/PaymentSummary';
import { row } from './fixtures';

function balance(id: number, saldo: string): InvoiceBalance {
  return {
    invoice_id: id,
    sale_id: `v-${id}`,
    uuid: 'AB12CD34-0000-4000-8000-000000000001',
    receptor_rfc: 'URE180429TM6',
    moneda: 'MXN',
    total: '116.00',
    credited: '0.00',
    paid: '0.00',
    balance: saldo,
    next_parcialidad: 1,
    payments: [],
    credit_notes: [],
  };
}

const payment: PaymentSummary = {
  payment_invoice_id: 9,
  sale_id: 'pago-v-1-1',
  serie: null,
  folio: null,
  receptor_rfc: 'URE180429TM6',
  receptor_nombre: 'UNIVERSIDAD ROBOTICA ESPAÑOLA',
  fecha_pago: '2026-12-01T10:15:00',
  monto: '100.00',
  moneda: 'MXN',
  forma_pago: '03',
  rep: 'timbrado',
  badge: 'timbrada',
  uuid: 'CCCCCCCC-396D-4725-8521-CDC4BDD20CCF',
  recorded_at: '2026-12-01T16:15:00Z',
  invoices: [
    { invoice_id: 1, sale_id: 'v-1', serie: 'F', folio: '4471', num_parcialidad: 1, imp_saldo_ant: '116.00', imp_pagado: '50.00', imp_saldo_insoluto: '66.00', moneda: 'MXN' },
    { invoice_id: 2, sale_id: 'v-2', serie: 'F', folio: '4472', num_parcialidad: 1, imp_saldo_ant: '116.00', imp_pagado: '50.00', imp_saldo_insoluto: '66.00', moneda: 'MXN' },
  ],
};

describe('Pagos', () => {
  test('one payment for two invoices: each saldo, the amounts, a refusal next to its invoice', async () => {
    const calls: [string, unknown][] = [];
    let refuse = true;
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'local_now') return '2026-12-01T10:15:00';
        if (cmd === 'list_invoices') return { items: [row(1, { state: 'stamped' }), row(2, { state: 'stamped' })], next: null };
        if (cmd === 'invoice_balance') return balance((args as { invoiceId: number }).invoiceId, '116.00');
        if (cmd === 'payments') return { items: refuse ? [] : [payment], next: null };
        if (cmd === 'record_payment_for') {
          if (refuse) {
            refuse = false;
            throw {
              code: 'validation',
              details: { errors: [{ field: 'invoices[1]', code: 'receptor_distinto', message: 'la factura v-2 es de AAA010101AAA y la primera de URE180429TM6' }] },
            };
          }
          return { invoice_id: 9, sale_id: 'pago-v-1-1', state: 'pending', badge: 'pendiente', replayed: false, warnings: [] };
        }
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(Pagos, {});
    await waitFor(() => expect(document.querySelectorAll('[data-testid=pay-pick]')).toHaveLength(2));
    const query = calls.find(([c]) => c === 'list_invoices')![1] as { query: { ppd_con_saldo: boolean } };
    expect(query.query.ppd_con_saldo).toBe(true);
    await fireEvent.click(document.querySelector('[data-testid=pay-pick][data-invoice-id="1"]')!);
    await fireEvent.click(document.querySelector('[data-testid=pay-pick][data-invoice-id="2"]')!);
    await waitFor(() => expect(document.querySelectorAll('[data-testid=pay-saldo]')[1].textContent).toBe('$116.00'));
    await fireEvent.input(document.querySelector('input[name="invoices[0].amount"]')!, { target: { value: '50.00' } });
    await fireEvent.input(document.querySelector('input[name=amount]')!, { target: { value: '100.00' } });
    await fireEvent.click(screen.getByTestId('pay-submit'));
    const refusal = await screen.findByTestId('pay-refusal');
    expect(refusal.getAttribute('data-invoice-id')).toBe('2');
    expect(refusal.textContent).toContain('F-4472: es de otro cliente');
    expect(calls).toContainEqual([
      'record_payment_for',
      {
        invoices: [
          { invoice_id: 1, amount: '50.00' },
          { invoice_id: 2, amount: null },
        ],
        payment: {
          amount: '100.00',
          forma_pago: '03',
          fecha_pago: '2026-12-01T10:15',
          moneda: null,
          tipo_cambio: null,
          num_operacion: null,
          amount_to_invoice: null,
        },
      },
    ]);
    await fireEvent.click(screen.getByTestId('pay-submit'));
    await waitFor(() => expect(screen.getByTestId('pay-recorded').textContent).toContain('pago-v-1-1'));
    expect(screen.queryByTestId('pay-refusal')).toBeNull();
    // The list: the payment, both invoices with what each received, the REP with its UUID.
    const listed = await waitFor(() => {
      const r = document.querySelector('[data-testid=payments-list] tr[data-payment-id="9"]');
      expect(r).toBeTruthy();
      return r!;
    });
    expect(listed.getAttribute('data-rep')).toBe('timbrado');
    expect(listed.textContent).toContain('F-4471');
    expect(listed.textContent).toContain('F-4472');
    expect(listed.textContent).toContain('$50.00');
    expect(listed.textContent).toContain('Timbrado');
    expect(listed.textContent).toContain(payment.uuid!);
    expect(listed.querySelector('[data-testid=payment-link]')!.getAttribute('href')).toBe('#/factura/9');
  });
});
