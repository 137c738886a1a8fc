import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import PaymentsPanel from '../src/components/PaymentsPanel.svelte';
import ScreeningWarning from '../src/components/ScreeningWarning.svelte';
import Reportes from '../src/pages/Reportes.svelte';
import FacturaGlobal from '../src/pages/FacturaGlobal.svelte';
import ScreeningSettings from '../src/components/ScreeningSettings.svelte';
import { receptorBars } from '../src/lib/report';
import type { InvoiceBalance } from '../src/lib/ipc/bindings/InvoiceBalance';
import type { MonthReport } from '../src/lib/ipc/bindings/MonthReport';
import type { ReceptorLine } from '../src/lib/ipc/bindings/ReceptorLine';

const UUID = '5FB2822E-396D-4725-8521-CDC4BDD20CCF';

function balance(paid: string, saldo: string, payments: InvoiceBalance['payments'] = []): InvoiceBalance {
  return { invoice_id: 7, sale_id: 'v-7', uuid: UUID, receptor_rfc: 'URE180429TM6', moneda: 'MXN', total: '1160.00', credited: '0.00', paid, balance: saldo, next_parcialidad: payments.length + 1, payments, credit_notes: [] };
}

const firstPayment = {
  payment_invoice_id: 8,
  sale_id: 'pago-v-7-1',
  uuid: 'AAAAAAAA-396D-4725-8521-CDC4BDD20CCF',
  num_parcialidad: 1,
  imp_saldo_ant: '1160.00',
  imp_pagado: '500.00',
  imp_saldo_insoluto: '660.00',
  status: 'timbrado' as const,
  badge: 'timbrada' as const,
};

function line(rfc: string, ingresos: string, pagos: string): ReceptorLine {
  return {
    rfc,
    nombre: `Cliente ${rfc}`,
    ingresos: { documentos: 1, importe: ingresos },
    egresos: { documentos: 0, importe: '0' },
    pagos: { documentos: pagos === '0' ? 0 : 1, importe: pagos },
    cancelados: { documentos: 0, importe: '0' },
  };
}

describe('Pagos panel', () => {
  test('shows the balance and each payment with its parcialidad and CFDI state', async () => {
    mockIPC((cmd) => {
      if (cmd === 'invoice_balance') return balance('500.00', '660.00', [firstPayment]);
    }, { shouldMockEvents: true });
    render(PaymentsPanel, { invoiceId: 7 });
    await waitFor(() => expect(screen.getByTestId('balance').textContent).toBe('$660.00'));
    expect(screen.getByTestId('balance-paid').textContent).toBe('$500.00');
    const row = screen.getByTestId('payment-rows').querySelector('tbody tr')!;
    expect(row.getAttribute('data-status')).toBe('timbrado');
    expect(row.textContent).toContain('$1,160.00');
    expect(row.textContent).toContain('$660.00');
    expect(row.textContent).toContain('Timbrado');
    const link = row.querySelector('a')!;
    expect(link.getAttribute('href')).toBe('#/factura/8');
    expect(link.textContent).toBe('AAAAAAAA');
    expect(link.getAttribute('title')).toContain(firstPayment.uuid);
  });

  test('records the typed payment and words a refusal over the balance with its numbers', async () => {
    const calls: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === 'invoice_balance') return balance('500.00', '660.00', [firstPayment]);
      if (cmd === 'local_now') return '2026-12-01T10:15:00';
      if (cmd === 'record_payment')
        throw { code: 'validation', details: { errors: [{ field: 'amount', code: 'excede_saldo', message: 'el pago de 2000.00 MXN excede…' }] } };
    }, { shouldMockEvents: true });
    render(PaymentsPanel, { invoiceId: 7 });
    await fireEvent.click(await screen.findByTestId('payment-open'));
    const amount = document.querySelector<HTMLInputElement>('input[name=amount]')!;
    // The form starts with the balance and the local time of now.
    await waitFor(() => expect(amount.value).toBe('660.00'));
    expect(document.querySelector<HTMLInputElement>('input[name=fecha_pago]')!.value).toBe('2026-12-01T10:15');
    await fireEvent.input(amount, { target: { value: '2000.00' } });
    await fireEvent.click(screen.getByTestId('payment-submit'));
    await waitFor(() =>
      expect(screen.getByTestId('payment-error').textContent).toBe(
        'El pago de $2,000.00 excede el saldo de la factura: saldo $660.00 (total $1,160.00, pagado $500.00). No se registró nada.',
      ),
    );
    expect(calls).toContainEqual([
      'record_payment',
      { invoiceId: 7, payment: { amount: '2000.00', forma_pago: '03', fecha_pago: '2026-12-01T10:15', moneda: null, tipo_cambio: null, num_operacion: null, amount_to_invoice: null } },
    ]);
  });

  test('a payment in another currency asks for the amount applied to the invoice', async () => {
    const calls: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === 'invoice_balance') return balance('0.00', '1160.00');
      if (cmd === 'local_now') return '2026-12-01T10:15:00';
      if (cmd === 'record_payment') return { invoice_id: 9, sale_id: 'pago-v-7-1', state: 'pending', replayed: false, warnings: [] };
    }, { shouldMockEvents: true });
    render(PaymentsPanel, { invoiceId: 7 });
    await fireEvent.click(await screen.findByTestId('payment-open'));
    expect(document.querySelector('input[name=amount_to_invoice]')).toBeNull();
    const moneda = document.querySelector<HTMLSelectElement>('select[name=moneda]')!;
    moneda.value = 'USD';
    await fireEvent.change(moneda);
    await fireEvent.input(document.querySelector('input[name=amount]')!, { target: { value: '50.00' } });
    await fireEvent.input(document.querySelector('input[name=tipo_cambio]')!, { target: { value: '18.50' } });
    await fireEvent.input(document.querySelector('input[name=amount_to_invoice]')!, { target: { value: '925.00' } });
    await fireEvent.click(screen.getByTestId('payment-submit'));
    await waitFor(() => expect(screen.getByTestId('payment-recorded').textContent).toContain('pago-v-7-1'));
    expect(calls).toContainEqual([
      'record_payment',
      { invoiceId: 7, payment: { amount: '50.00', forma_pago: '03', fecha_pago: '2026-12-01T10:15', moneda: 'USD', tipo_cambio: '18.50', num_operacion: null, amount_to_invoice: '925.00' } },
    ]);
  });

  test('a paid-off invoice offers no new payment', async () => {
    mockIPC((cmd) => {
      if (cmd === 'invoice_balance') return balance('1160.00', '0.00', [firstPayment, { ...firstPayment, payment_invoice_id: 9, num_parcialidad: 2, imp_saldo_ant: '660.00', imp_pagado: '660.00', imp_saldo_insoluto: '0.00' }]);
    }, { shouldMockEvents: true });
    render(PaymentsPanel, { invoiceId: 7 });
    await waitFor(() => expect(screen.getByTestId('balance').textContent).toBe('$0.00'));
    expect(screen.queryByTestId('payment-open')).toBeNull();
    expect(screen.getByTestId('payment-rows').querySelectorAll('tbody tr')).toHaveLength(2);
  });
});

describe('69-B warning', () => {
  test('warns for a listed receptor with the list date, and says nothing for one not listed', async () => {
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd !== 'screening_check') return;
      asked.push(args);
      const rfc = (args as { rfc: string }).rfc;
      const list = { id: 1, list_date: '2026-11-15', source: 'sat.csv', entries: 3, skipped_lines: [], imported_at: '2026-11-20T10:00:00Z', imported_by: { name: 'Soporte', role: 'soporte', channel: 'app' } };
      return rfc === 'AAA010101AAA'
        ? { rfc, list, entry: { line_no: 4, rfc, nombre: 'X', situacion: 'definitivo', fecha_situacion: '2025-03-01' }, warns: true }
        : { rfc, list, entry: null, warns: false };
    });
    const { rerender } = render(ScreeningWarning, { rfc: 'AAA010101AAA' });
    await waitFor(() =>
      expect(screen.getByTestId('screening-warning').textContent).toContain('aparece como definitivo desde el 2025-03-01 en la lista 69-B del SAT del 2026-11-15'),
    );
    await rerender({ rfc: 'URE180429TM6' });
    await waitFor(() => expect(screen.queryByTestId('screening-warning')).toBeNull());
    // Partial RFCs are not looked up.
    await rerender({ rfc: 'URE18' });
    expect(asked).toEqual([{ rfc: 'AAA010101AAA' }, { rfc: 'URE180429TM6' }]);
  });
});

describe('Reportes', () => {
  test('the chart ranks receptors by ingresos, bars relative to the largest amount', () => {
    const bars = receptorBars([line('B', '100.00', '0'), line('A', '400.00', '200.00'), line('C', '50.00', '0')], 2);
    expect(bars.rows.map((r) => r.rfc)).toEqual(['A', 'B']);
    expect(bars.rows[0].ingresos).toBe(1);
    expect(bars.rows[0].pagos).toBe(0.5);
    expect(bars.rows[1].ingresos).toBe(0.25);
    expect(bars.more).toBe(1);
  });

  test('loads the current month, draws the chart and saves the CSV', async () => {
    const zero = { documentos: 0, subtotal: '0', descuento: '0', base_iva16: '0', iva16: '0', base_iva8: '0', iva8: '0', base_iva0: '0', iva0: '0', base_iva_exento: '0', iva_retenido: '0', isr_retenido: '0', total: '0' };
    const report: MonthReport = {
      year: 2026,
      month: 12,
      ingresos: { ...zero, documentos: 1, subtotal: '1000.00', base_iva16: '1000.00', iva16: '160.00', total: '1160.00' },
      egresos: zero,
      pagos: { documentos: 1, monto: '500.00', base_iva16: '431.03', iva16: '68.97', base_iva8: '0', iva8: '0', base_iva0: '0', iva0: '0', base_iva_exento: '0', iva_retenido: '0', isr_retenido: '0' },
      por_receptor: [line('URE180429TM6', '1160.00', '500.00')],
      cancelados: [],
      ppd_con_saldo: [{ uuid: UUID, fecha: '2026-12-01T10:00:00', serie: null, folio: null, receptor_rfc: 'URE180429TM6', moneda: 'MXN', total: '1160.00', notas_credito: '0.00', pagado: '500.00', saldo: '660.00' }],
      documentos: [],
    };
    const calls: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === 'local_now') return '2026-12-01T10:15:00';
      if (cmd === 'month_report') return report;
      if (cmd === 'export_month') return { path: '/home/ana/Descargas/reporte-2026-12.csv' };
    });
    render(Reportes);
    await waitFor(() => expect(screen.getByTestId('report-chart').textContent).toContain('URE180429TM6'));
    expect(calls).toContainEqual(['month_report', { month: '2026-12' }]);
    expect(screen.getByTestId('report-totals').querySelector('tr[data-row=ingresos]')!.textContent).toContain('$160.00');
    expect(screen.getByTestId('report-ppd').textContent).toContain('$660.00');
    expect(screen.getByTestId('report-chart').querySelectorAll('rect.bar.ingresos').length).toBeGreaterThanOrEqual(1);
    await fireEvent.click(screen.getByTestId('export-csv'));
    await waitFor(() => expect(screen.getByTestId('report-saved').textContent).toBe('Guardado en /home/ana/Descargas/reporte-2026-12.csv'));
    expect(calls).toContainEqual(['export_month', { month: '2026-12', format: 'csv' }]);
  });
});

describe('Factura global', () => {
  test('previews the tickets that go in and those left out, then creates it', async () => {
    const calls: [string, unknown][] = [];
    const preview = {
      sale_id: 'global-01-2026-12-01-2026-12-01',
      existing_invoice_id: null,
      tickets: [
        { invoice_id: 1, sale_id: 't-1', day: '2026-12-01', total: '116.00', excluded: null },
        { invoice_id: 2, sale_id: 't-2', day: '2026-12-01', total: '58.00', excluded: 'facturado a un cliente con nombre (factura 9): no entra en ninguna factura global' },
      ],
      total: '116.00',
    };
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === 'local_now') return '2026-12-01T10:15:00';
      if (cmd === 'global_invoice_preview') return preview;
      if (cmd === 'create_global_invoice')
        return { recorded: { invoice_id: 10, sale_id: preview.sale_id, state: 'pending', replayed: false, warnings: [] }, tickets: ['t-1'], added: 1, excluded_named: ['t-2'], left_out: [] };
    });
    render(FacturaGlobal);
    await waitFor(() => expect(document.querySelector<HTMLInputElement>('input[name=desde]')!.value).toBe('2026-12-01'));
    await fireEvent.click(screen.getByTestId('global-preview'));
    await waitFor(() => expect(screen.getByTestId('global-tickets').textContent).toContain('Entran 1 tickets · $116.00'));
    expect(screen.getByTestId('global-excluded').textContent).toContain('facturado a un cliente con nombre');
    await fireEvent.click(screen.getByTestId('global-create'));
    await waitFor(() => expect(screen.getByTestId('global-created').textContent).toContain('registrada con 1 tickets'));
    expect(calls).toContainEqual(['create_global_invoice', { periodicidad: '01', desde: '2026-12-01', hasta: '2026-12-01' }]);
  });
});

describe('69-B list in Ajustes', () => {
  test('shows the current list and names each bad line of a refused file', async () => {
    const calls: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === 'screening_check') return { rfc: '', list: null, entry: null, warns: false };
      if (cmd === 'plugin:dialog|open') return '/home/ana/Descargas/lista.csv';
      if (cmd === 'import_screening_list')
        throw {
          code: 'validation',
          details: {
            errors: [
              { field: 'línea 6', code: 'lista_69b', message: 'el RFC "XYZ" no es válido' },
              { field: 'línea 8', code: 'lista_69b', message: 'situación desconocida: "Quién sabe"' },
            ],
          },
        };
    });
    render(ScreeningSettings);
    await waitFor(() => expect(screen.getByTestId('screening-current').textContent).toContain('Aún no se ha importado'));
    expect(screen.getByTestId('screening-import').hasAttribute('disabled')).toBe(true);
    await fireEvent.click(screen.getByTestId('screening-choose'));
    await waitFor(() => expect(screen.getByTestId('screening-file').textContent).toBe('lista.csv'));
    await fireEvent.click(screen.getByTestId('screening-import'));
    await waitFor(() => expect(screen.getByTestId('screening-error').textContent).toContain('línea 6: el RFC "XYZ" no es válido'));
    expect(screen.getByTestId('screening-error').textContent).toContain('línea 8');
    const sent = calls.find(([c]) => c === 'import_screening_list')![1] as { path: string; listDate: string | null; skipBadLines: boolean };
    expect(sent.path).toBe('/home/ana/Descargas/lista.csv');
    expect(sent.listDate).toBeNull();
    expect(sent.skipBadLines).toBe(false);
  });
});
