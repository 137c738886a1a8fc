import { describe, expect, test } from 'vitest';
import { render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import CsdNotice from '../src/components/CsdNotice.svelte';

const standing = (over: Record<string, unknown>) => ({
  no_certificado: '30001000000500003416',
  valid_to: '2027-05-18T11:43:51Z',
  days_left: 20,
  warning: 'dias_30',
  waiting_attempts: 0,
  waiting: [],
  ...over,
});

function answer(value: unknown) {
  mockIPC((cmd) => {
    if (cmd === 'csd_standing') return value;
    throw new Error(`unexpected ${cmd}`);
  });
}

describe('CsdNotice', () => {
  test('20 days before the end it says when and what to do, and names the waiting sales', async () => {
    answer(standing({ waiting_attempts: 2 }));
    render(CsdNotice);
    const notice = await waitFor(() => screen.getByTestId('csd-notice'));
    expect(notice.dataset.warning).toBe('dias_30');
    expect(notice.textContent).toContain('vence en 20 días');
    expect(notice.textContent).toContain('2 venta(s) selladas con él esperan su timbre');
  });

  test('names each sale sealed with a certificate that ends soon, with a link, even after a renewal', async () => {
    answer(
      standing({
        no_certificado: '99990000000000000001',
        days_left: 3300,
        warning: 'vigente',
        waiting: [{ invoice_id: 7, sale_id: 'pedido-7', no_certificado: '30001000000500003416', valid_to: '2027-05-18T11:43:51Z' }],
      }),
    );
    render(CsdNotice);
    const list = await waitFor(() => screen.getByTestId('csd-waiting'));
    const link = list.querySelector('a')!;
    expect(link.getAttribute('href')).toBe('#/factura/7');
    expect(link.textContent).toBe('pedido-7');
    expect(list.textContent).toContain('sellada con 30001000000500003416');
    expect(screen.getByTestId('csd-notice').textContent).not.toContain('vence en');
  });

  test('after the end it says new sales are refused until the new CSD is loaded', async () => {
    answer(standing({ days_left: -3, warning: 'vencido' }));
    render(CsdNotice);
    const notice = await waitFor(() => screen.getByTestId('csd-notice'));
    expect(notice.textContent).toContain('venció');
    expect(notice.textContent).toContain('las ventas nuevas se rechazan');
  });

  test('says nothing while more than 30 days are left, or without an emisor', async () => {
    answer(standing({ days_left: 200, warning: 'vigente' }));
    const { unmount } = render(CsdNotice);
    await new Promise((r) => setTimeout(r, 20));
    expect(screen.queryByTestId('csd-notice')).toBeNull();
    unmount();
    answer(null);
    render(CsdNotice);
    await new Promise((r) => setTimeout(r, 20));
    expect(screen.queryByTestId('csd-notice')).toBeNull();
  });
});
