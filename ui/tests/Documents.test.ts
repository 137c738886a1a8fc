import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import { emit } from '@tauri-apps/api/event';
import DocumentsPanel from '../src/components/DocumentsPanel.svelte';
import ChannelSettings from '../src/components/ChannelSettings.svelte';
import type { ChannelsDto } from '../src/lib/ipc/bindings/ChannelsDto';
import { detail, row, timbrada } from './fixtures';

const stamped = () =>
  detail(timbrada, {
    invoice: row(5, { badge: 'timbrada', state: 'stamped', uuid: 'U-1' }),
    cfdis: [{ id: 1, attempt_id: 1, uuid: 'U-1', pac: 'sw', fecha_timbrado: '2026-11-29T12:00:05', has_xml: true, xml_sha256: null, sat_status: null, sat_checked_at: null, cancellation_status: null, created_at: '2026-11-29T18:00:05Z' }],
  });

describe('Documentos on the Factura page', () => {
  test('Descargar PDF saves it and says where; nothing is shown before a CFDI with XML', async () => {
    const calls: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === 'email_recipients') return [];
      if (cmd === 'export_pdf') return { path: '/home/ana/Descargas/U-1.pdf' };
    });
    const { unmount } = render(DocumentsPanel, { detail: detail(timbrada), onchanged: () => {} });
    expect(document.querySelector('[data-testid=documents]')).toBeNull();
    unmount();
    render(DocumentsPanel, { detail: stamped(), onchanged: () => {} });
    await fireEvent.click(screen.getByTestId('download-pdf'));
    await waitFor(() => expect(screen.getByTestId('doc-saved').textContent).toBe('Guardado en /home/ana/Descargas/U-1.pdf'));
    expect(calls).toContainEqual(['export_pdf', { invoiceId: 5 }]);
  });

  test('Enviar por correo is prefilled, and a retry after a failure keeps the same request id', async () => {
    const sends: { to: string[]; requestId: string }[] = [];
    let fail = true;
    mockIPC((cmd, args) => {
      if (cmd === 'email_recipients') return ['compras@ure.mx'];
      if (cmd === 'email_invoice') {
        const a = args as { to: string[]; requestId: string };
        sends.push({ to: a.to, requestId: a.requestId });
        if (fail) {
          fail = false;
          throw { code: 'db_locked', details: { path: '/tmp/t.db', waited_ms: 5000 } };
        }
        return { request_id: a.requestId, recipients: a.to, created: true };
      }
    });
    render(DocumentsPanel, { detail: stamped(), onchanged: () => {} });
    await waitFor(() => expect((screen.getByTestId('email-to') as HTMLInputElement).value).toBe('compras@ure.mx'));
    await fireEvent.input(screen.getByTestId('email-to'), { target: { value: 'compras@ure.mx, ana@ure.mx' } });
    await fireEvent.submit(screen.getByTestId('email-form'));
    await waitFor(() => expect(screen.getByTestId('docs-error').textContent).toContain('ocupada'));
    await fireEvent.submit(screen.getByTestId('email-form'));
    await waitFor(() => expect(screen.getByTestId('email-queued').textContent).toContain('compras@ure.mx, ana@ure.mx'));
    expect(sends).toHaveLength(2);
    expect(sends[0].to).toEqual(['compras@ure.mx', 'ana@ure.mx']);
    expect(sends[1].requestId).toBe(sends[0].requestId);
  });
});

const channels = (over: Partial<ChannelsDto> = {}): ChannelsDto => ({
  api: { enabled: false, listen: '127.0.0.1:8787', running_at: null, error: null },
  tokens: [],
  webhook: null,
  smtp: null,
  ...over,
});

describe('Canales in Ajustes', () => {
  test('a token is shown once; a non-local address is refused on its field', async () => {
    const calls: [string, unknown][] = [];
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'channel_settings')
          return channels({ tokens: [{ name: 'pos-1', prefix: 'tbr_12345678', created_at: '2026-12-01T12:00:00Z', created_by: 'Soporte', revoked_at: null, limit_per_second: null, limit_burst: null }] });
        if (cmd === 'create_api_token') return { name: 'pos-1', prefix: 'tbr_12345678', token: 'tbr_' + 'a'.repeat(64) };
        if (cmd === 'save_api')
          throw { code: 'validation', details: { errors: [{ field: 'listen', code: 'direccion_no_local', message: 'no es local' }] } };
      },
      { shouldMockEvents: true },
    );
    render(ChannelSettings, { disabled: false });
    await waitFor(() => expect(screen.getByTestId('tokens').textContent).toContain('tbr_12345678…'));
    await fireEvent.input(document.querySelector('input[name=token_name]')!, { target: { value: 'pos-1' } });
    await fireEvent.submit(screen.getByTestId('token-form'));
    await waitFor(() => expect(screen.getByTestId('token-value').textContent).toBe('tbr_' + 'a'.repeat(64)));
    expect(calls).toContainEqual(['create_api_token', { name: 'pos-1' }]);
    // The list shows the prefix only, never the token.
    expect(screen.getByTestId('tokens').textContent).not.toContain('a'.repeat(64));

    await fireEvent.input(document.querySelector('input[name=listen]')!, { target: { value: '0.0.0.0:8787' } });
    await fireEvent.submit(screen.getByTestId('api-form'));
    await waitFor(() => expect(screen.getByTestId('api-form').querySelector('.field-error')?.textContent).toContain('solo 127.0.0.1'));
    expect(calls).toContainEqual(['save_api', { enabled: false, listen: '0.0.0.0:8787' }]);
  });

  test("a token's rate limits are shown and edited in place; empty is the server's default", async () => {
    const calls: [string, unknown][] = [];
    const token = (limit_per_second: number | null, limit_burst: number | null) => ({
      name: 'erp',
      prefix: 'tbr_12345678',
      created_at: '2026-12-01T12:00:00Z',
      created_by: 'Soporte',
      revoked_at: null,
      limit_per_second,
      limit_burst,
    });
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'channel_settings') return channels({ tokens: [token(null, null)] });
        if (cmd === 'set_api_token_limits') return channels({ tokens: [token(200, null)] });
      },
      { shouldMockEvents: true },
    );
    render(ChannelSettings, { disabled: false });
    await waitFor(() => expect(screen.getByTestId('token-limits').textContent).toContain('del servidor/s · ráfaga del servidor'));
    await fireEvent.click(screen.getByTestId('edit-limits'));
    await fireEvent.input(document.querySelector('input[name=limit_per_second]')!, { target: { value: '200' } });
    await fireEvent.click(screen.getByTestId('save-limits'));
    await waitFor(() => expect(screen.getByTestId('token-limits').textContent).toContain('200/s · ráfaga del servidor'));
    expect(calls).toContainEqual(['set_api_token_limits', { name: 'erp', perSecond: 200, burst: null }]);
  });

  test('a bulk export shows its progress from export-progress and says where it wrote', async () => {
    let finish: (v: unknown) => void = () => {};
    const calls: [string, unknown][] = [];
    mockIPC(
      (cmd, args) => {
        calls.push([cmd, args]);
        if (cmd === 'channel_settings') return channels();
        if (cmd === 'export_documents') return new Promise((r) => (finish = r));
      },
      { shouldMockEvents: true },
    );
    render(ChannelSettings, { disabled: true });
    await waitFor(() => expect(calls.some(([c]) => c === 'channel_settings')).toBe(true));
    // Día, mes by name, año: the dates in Spanish whatever the OS locale.
    const pick = async (name: string, y: string, m: string, d: string) => {
      await fireEvent.input(document.querySelector(`input[name='${name}.anio']`)!, { target: { value: y } });
      await fireEvent.change(document.querySelector(`select[name='${name}.mes']`)!, { target: { value: m } });
      await fireEvent.change(document.querySelector(`select[name='${name}.dia']`)!, { target: { value: d } });
    };
    await pick('desde', '2026', '11', '1');
    await pick('hasta', '2026', '11', '30');
    expect([...document.querySelectorAll<HTMLOptionElement>("select[name='hasta.mes'] option")].map((o) => o.textContent)[10]).toBe('Noviembre');
    await fireEvent.submit(screen.getByTestId('export-form'));
    await waitFor(() => expect(calls).toContainEqual(['export_documents', { desde: '2026-11-01', hasta: '2026-11-30', zip: true }]));
    await emit('export-progress', { done: 1, total: 3, uuid: 'U-1' });
    await waitFor(() => expect(screen.getByTestId('export-form').textContent).toContain('1 de 3 facturas'));
    expect((screen.getByTestId('export-progress') as HTMLProgressElement).value).toBe(1);
    finish({ path: '/home/ana/Descargas/facturas-2026-11-01-a-2026-11-30.zip', invoices: 3, files: 6 });
    await waitFor(() =>
      expect(screen.getByTestId('channels-message').textContent).toBe('3 facturas exportadas a /home/ana/Descargas/facturas-2026-11-01-a-2026-11-30.zip'),
    );
    // Personal may export but not change settings.
    expect((document.querySelector('[data-testid=api-form] fieldset') as HTMLFieldSetElement).disabled).toBe(true);
  });
});
