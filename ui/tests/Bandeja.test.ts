import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import { emit } from '@tauri-apps/api/event';
import Bandeja from '../src/pages/Bandeja.svelte';
import type { ListQueryDto } from '../src/lib/ipc/bindings/ListQueryDto';
import { row } from './fixtures';

function backend(initial: number) {
  const queries: ListQueryDto[] = [];
  let total = initial;
  mockIPC(
    (cmd, args) => {
      if (cmd === 'invoice_counts') return { total, by_state: { pending: total }, by_badge: { pendiente: total - 1, reanudar: 1 } };
      if (cmd === 'list_invoices') {
        const q = (args as { query: ListQueryDto }).query;
        queries.push(q);
        const start = q.after ? Number(q.after) : 0;
        const n = Math.min(q.limit, total - start);
        const items = Array.from({ length: n }, (_, i) =>
          row(total - start - i, { badge: start + i === 0 ? 'reanudar' : 'pendiente', active_notes: start + i === 0 ? 2 : 0 }),
        );
        return { items, next: start + n < total ? String(start + n) : null };
      }
      throw new Error(`unexpected ${cmd}`);
    },
    { shouldMockEvents: true },
  );
  return Object.assign(queries, { setTotal: (n: number) => (total = n) });
}

describe('Bandeja', () => {
  test('renders only the rows in view of a large outbox, with counts and chips', async () => {
    backend(100_000);
    render(Bandeja);
    await waitFor(() => expect(screen.getByTestId('count-total').textContent).toBe('100000'));
    await waitFor(() => expect(document.querySelectorAll('a.tr[data-invoice-id]').length).toBeGreaterThan(0));
    // 200 rows loaded, far fewer in the DOM (virtualized).
    expect(document.querySelectorAll('a.tr[data-invoice-id]').length).toBeLessThan(60);
    const first = document.querySelector('a.tr[data-invoice-id]')!;
    expect(first.getAttribute('href')).toBe('#/factura/100000');
    // The state in words, then the next step as one sentence.
    expect(first.querySelector('[data-badge]')?.textContent).toBe('En proceso');
    expect(first.querySelector('[data-testid=row-next]')?.textContent).toBe('Timbra está confirmando con el PAC; no se duplicará.');
    expect(first.textContent).toContain('$116.00');
    expect(first.textContent).toContain('✎ 2');
    // One compact filter: counts by state in words, the strategy's badges inside the select.
    expect(document.querySelector('[data-count-situation=en_proceso] .n')?.textContent).toBe('100000');
    expect(document.querySelector('[data-count-badge=reanudar]')?.textContent).toBe('En proceso · confirmando con el PAC (1)');
    expect(document.querySelectorAll('.chip-button')).toHaveLength(0);
  });

  test('an empty outbox offers the first steps: the first invoice and connecting the PAC', async () => {
    backend(0);
    render(Bandeja);
    await waitFor(() => expect(screen.getByTestId('first-steps')).toBeTruthy());
    expect(screen.getByTestId('first-invoice').getAttribute('href')).toBe('#/emitir');
    expect(screen.getByTestId('first-pac').textContent).toBe('Conectar mi PAC');
  });

  test('badge filter and search go to Rust as a query', async () => {
    const queries = backend(30);
    render(Bandeja);
    await waitFor(() => expect(queries).toHaveLength(1));
    expect(queries[0]).toEqual({
      state: null,
      badge: null,
      flag: null,
      ppd_con_saldo: false,
      search: null,
      customer: null,
      desde: null,
      hasta: null,
      after: null,
      limit: 200,
    });

    await fireEvent.change(screen.getByTestId('badge-filter'), { target: { value: 'reanudar' } });
    await waitFor(() => expect(queries.at(-1)?.badge).toBe('reanudar'));

    await fireEvent.input(screen.getByTestId('search'), { target: { value: '  URE18 ' } });
    await waitFor(() => expect(queries.at(-1)?.search).toBe('URE18'));
    expect(queries.at(-1)?.badge).toBe('reanudar');
  });

  test('the customer and the days go to Rust with the other filters', async () => {
    const queries = backend(30);
    render(Bandeja);
    await waitFor(() => expect(queries).toHaveLength(1));
    await fireEvent.change(screen.getByTestId('state-filter'), { target: { value: 'held' } });
    await fireEvent.input(screen.getByTestId('customer-search'), { target: { value: ' robotica ' } });
    await waitFor(() => expect(queries.at(-1)?.customer).toBe('robotica'));
    expect(queries.at(-1)?.state).toBe('held');
    expect(screen.getByTestId('clear-filters')).toBeTruthy();
    await fireEvent.click(screen.getByTestId('clear-filters'));
    await waitFor(() => expect(queries.at(-1)?.customer).toBeNull());
    expect(queries.at(-1)?.state).toBeNull();
  });

  test('selected rows are retried together; a refused row says why in words', async () => {
    const asked: unknown[] = [];
    mockIPC(
      (cmd, args) => {
        if (cmd === 'invoice_counts') return { total: 3, by_state: { pending: 3 }, by_badge: { pendiente: 3 } };
        if (cmd === 'list_invoices') return { items: [row(3), row(2, { state: 'stamped', badge: 'timbrada' }), row(1)], next: null };
        if (cmd === 'bulk_action') {
          asked.push(args);
          return [
            { invoice_id: 3, outcome: { status: 'done', retry: 'resume' } },
            {
              invoice_id: 2,
              outcome: { status: 'refused', error: { code: 'action_refused', details: { action: 'resume', reason: 'ya_timbrada', evidence: [] } } },
            },
          ];
        }
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(Bandeja);
    await waitFor(() => expect(document.querySelectorAll('[data-testid=select-row]')).toHaveLength(3));
    expect(screen.queryByTestId('bulk-bar')).toBeNull();
    await fireEvent.click(document.querySelector('[data-select-id="3"]')!);
    await fireEvent.click(document.querySelector('[data-select-id="2"]')!);
    await waitFor(() => expect(screen.getByTestId('bulk-bar').textContent).toContain('2 seleccionadas'));
    await fireEvent.click(screen.getByTestId('bulk-retry'));
    await waitFor(() => expect(screen.getByTestId('bulk-result').textContent).toContain('Reintentadas: 1.'));
    expect(asked).toEqual([{ invoiceIds: [3, 2], action: 'retry', note: null }]);
    const refused = screen.getByTestId('bulk-result').querySelector('li[data-invoice-id="2"]')!;
    expect(refused.textContent).toContain('F-4472');
    expect(refused.textContent).not.toMatch(/ya_timbrada|action_refused/);
    expect(refused.textContent!.split(':')[1].trim().length).toBeGreaterThan(10);
    expect(document.querySelector('.line [data-outcome=refused]')).toBeTruthy();
    // Select all, then none.
    await fireEvent.click(screen.getByTestId('select-all'));
    await waitFor(() => expect(screen.getByTestId('bulk-bar').textContent).toContain('3 seleccionadas'));
    await fireEvent.click(screen.getByTestId('bulk-clear'));
    await waitFor(() => expect(screen.queryByTestId('bulk-bar')).toBeNull());
  });

  test('Enviar al contador asks for the note before anything is sent', async () => {
    const asked: unknown[] = [];
    mockIPC(
      (cmd, args) => {
        if (cmd === 'invoice_counts') return { total: 1, by_state: { pending: 1 }, by_badge: { pendiente: 1 } };
        if (cmd === 'list_invoices') return { items: [row(1)], next: null };
        if (cmd === 'bulk_action') {
          asked.push(args);
          return [{ invoice_id: 1, outcome: { status: 'done', retry: null } }];
        }
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(Bandeja);
    await waitFor(() => expect(document.querySelectorAll('[data-testid=select-row]')).toHaveLength(1));
    await fireEvent.click(document.querySelector('[data-select-id="1"]')!);
    await fireEvent.click(screen.getByTestId('bulk-contador'));
    expect(asked).toHaveLength(0);
    await fireEvent.input(screen.getByTestId('bulk-note'), { target: { value: 'revisar el RFC' } });
    await fireEvent.click(screen.getByTestId('bulk-contador'));
    await waitFor(() => expect(screen.getByTestId('bulk-result').textContent).toContain('Enviadas al contador: 1.'));
    expect(asked).toEqual([{ invoiceIds: [1], action: 'send_to_contador', note: 'revisar el RFC' }]);
  });

  test('"PPD con saldo" is its own filter in Rust, not a mark', async () => {
    const queries = backend(3);
    render(Bandeja);
    await waitFor(() => expect(queries).toHaveLength(1));
    const marks = screen.getByTestId('flag-filter') as HTMLSelectElement;
    expect([...marks.options].map((o) => o.textContent)).toContain('PPD con saldo');
    marks.value = 'ppd_con_saldo';
    await fireEvent.change(marks);
    await waitFor(() => expect(queries.at(-1)?.ppd_con_saldo).toBe(true));
    expect(queries.at(-1)?.flag).toBeNull();
    marks.value = 'cancelada';
    await fireEvent.change(marks);
    await waitFor(() => expect(queries.at(-1)?.flag).toBe('cancelada'));
    expect(queries.at(-1)?.ppd_con_saldo).toBe(false);
  });

  test('a counts-changed event refreshes counts and rows', async () => {
    const queries = backend(3);
    render(Bandeja);
    await waitFor(() => expect(queries).toHaveLength(1));
    await waitFor(() => expect(screen.getByTestId('count-total').textContent).toBe('3'));
    queries.setTotal(4);
    await emit('counts-changed', { total: 4, by_state: { pending: 4 }, by_badge: { pendiente: 4 } });
    await waitFor(() => expect(screen.getByTestId('count-total').textContent).toBe('4'));
    await waitFor(() => expect(queries.length).toBeGreaterThanOrEqual(2));
    await waitFor(() => expect(document.querySelectorAll('a.tr[data-invoice-id]')).toHaveLength(4));
  });

  test('an error from Rust is shown in words, not as a code', async () => {
    mockIPC(() => {
      throw { code: 'db_locked', details: { path: '/tmp/t.db', waited_ms: 5000 } };
    }, { shouldMockEvents: true });
    render(Bandeja);
    await waitFor(() => expect(screen.getByRole('alert').textContent).toContain('está ocupada por otro proceso'));
  });
});
