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
    expect(queries[0]).toEqual({ state: null, badge: null, flag: null, ppd_con_saldo: false, search: null, after: null, limit: 200 });

    await fireEvent.change(screen.getByTestId('badge-filter'), { target: { value: 'reanudar' } });
    await waitFor(() => expect(queries.at(-1)?.badge).toBe('reanudar'));

    await fireEvent.input(screen.getByTestId('search'), { target: { value: '  URE18 ' } });
    await waitFor(() => expect(queries.at(-1)?.search).toBe('URE18'));
    expect(queries.at(-1)?.badge).toBe('reanudar');
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
