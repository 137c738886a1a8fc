// The contador's Duplicados queue shows a *CFDI desconocido en el SAT* (issue 28) in Spanish:
// what SAT says of it, the sale it resembles, no survivor radio nor cancellation form, and its
// own decision: "Es de otro sistema: registrar" with a note (contador only), then the history.
import { beforeEach, describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Duplicados from '../src/pages/Duplicados.svelte';
import { session } from '../src/lib/session.svelte';
import { setLocale } from '../src/lib/i18n/index.svelte';
import type { AppStatusDto } from '../src/lib/ipc/bindings/AppStatusDto';

const UUID1 = 'A1B2C3D4-0000-4000-8000-000000000001';
const UUID2 = 'A1B2C3D4-0000-4000-8000-000000000002';

const unknown = (invoice_id: number, has_xml: boolean, UUID = invoice_id ? UUID1 : UUID2) => ({
  key: `sat-${UUID}`,
  kind: 'cfdi_desconocido',
  invoice_id,
  reason: invoice_id ? 'likeness' : 'cfdi_desconocido',
  cfdis: [
    {
      invoice_id: null,
      sale_id: null,
      uuid: UUID,
      pac: 'SPR190613I52',
      attempt_no: null,
      fecha: '2026-11-29T10:00:00',
      fecha_timbrado: null,
      total: '116.00',
      has_xml,
      shown: false,
      sat_status: 'Vigente',
      cancellation_status: null,
      foreign: true,
    },
  ],
  differences: [],
  evidence: [],
  decided_by: null,
  open_cancellations: 0,
  sat_unknown: {
    uuid: UUID,
    invoice_id: invoice_id || null,
    rfc_emisor: 'EKU9003173C9',
    nombre_emisor: 'ESCUELA KEMPER URGATE',
    rfc_receptor: 'URE180429TM6',
    nombre_receptor: 'UNIVERSIDAD ROBOTICA ESPAÑOLA',
    rfc_pac: 'SPR190613I52',
    fecha_emision: '2026-11-29T10:00:00',
    total: '116.00',
    efecto: 'ingreso',
    estatus: 'vigente',
    fecha_cancelacion: null,
    has_xml,
    found_at_ms: 0,
  },
});

describe('Duplicados: CFDI desconocido en el SAT', () => {
  beforeEach(() => setLocale('es-MX'));

  test('a row in words, linked to the sale it resembles', async () => {
    mockIPC((cmd) => {
      if (cmd === 'decided_sat_unknowns') return [];
      if (cmd === 'duplicate_queue') {
        return [{ rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', current: true, groups: [unknown(7, false), unknown(0, true)], error: null }];
      }
      return undefined;
    });
    session.set({ operator: { name: 'Carla', role: 'contador' } } as unknown as AppStatusDto);
    render(Duplicados);
    await waitFor(() => expect(screen.getAllByTestId('duplicate-group').length).toBe(2));
    const [linked, alone] = screen.getAllByTestId('duplicate-group');
    expect(linked.textContent).toContain('CFDI desconocido en el SAT');
    expect(linked.querySelector('a[href="#/factura/7"]')).not.toBeNull();
    expect(linked.querySelector('[data-testid=sat-unknown]')?.textContent).toContain('URE180429TM6');
    expect(linked.textContent).toContain('Timbra lo pide al SAT por sí solo');
    expect(alone.querySelector('a[href^="#/factura/"]')).toBeNull();
    expect(alone.textContent).toContain('no se parece a ninguna venta');
    for (const g of [linked, alone]) {
      expect(g.querySelector('[data-testid=decide-form]')).toBeNull();
      expect(g.querySelector('[data-testid=survivor]')).toBeNull();
    }
  });

  test('the contador registers one as another system\'s with a note; it moves to the history', async () => {
    let decided = false;
    const calls: Record<string, unknown>[] = [];
    mockIPC((cmd, args) => {
      if (cmd === 'duplicate_queue') {
        return [{ rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', current: true, groups: decided ? [] : [unknown(0, true)], error: null }];
      }
      if (cmd === 'decided_sat_unknowns') {
        return decided
          ? [
              {
                ...unknown(0, true).sat_unknown,
                decision: {
                  kind: 'otro_sistema',
                  invoice_id: null,
                  note: 'lo emitió la tienda en línea',
                  decided_by: { name: 'Carla', role: 'contador' },
                  decided_at: '2026-12-01T18:00:00Z',
                },
              },
            ]
          : [];
      }
      if (cmd === 'acknowledge_sat_unknown') {
        calls.push(args as Record<string, unknown>);
        decided = true;
        return [];
      }
      return undefined;
    });
    session.set({ operator: { name: 'Carla', role: 'contador' } } as unknown as AppStatusDto);
    render(Duplicados);
    const button = (await screen.findByTestId('sat-unknown-otro-sistema')) as HTMLButtonElement;
    expect(button.textContent).toContain('Es de otro sistema: registrar');
    expect(button.disabled).toBe(true);
    await fireEvent.input(screen.getByTestId('sat-unknown-note'), { target: { value: 'lo emitió la tienda en línea' } });
    expect(button.disabled).toBe(false);
    await fireEvent.click(button);
    await waitFor(() => expect(calls.length).toBe(1));
    expect(calls[0]).toMatchObject({ uuid: UUID2, note: 'lo emitió la tienda en línea', emisor: 'EKU9003173C9' });
    const history = await screen.findByTestId('sat-unknown-history');
    expect(history.textContent).toContain('CFDI desconocidos ya decididos (1)');
    expect(history.textContent).toContain('de otro sistema');
    expect(history.textContent).toContain('lo emitió la tienda en línea');
    expect(screen.queryByTestId('sat-unknown-form')).toBeNull();
  });

  test('only the contador sees the decision', async () => {
    mockIPC((cmd) => {
      if (cmd === 'decided_sat_unknowns') return [];
      if (cmd === 'duplicate_queue') {
        return [{ rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', current: true, groups: [unknown(0, true)], error: null }];
      }
      return undefined;
    });
    session.set({ operator: { name: 'Ana', role: 'personal' } } as unknown as AppStatusDto);
    render(Duplicados);
    await waitFor(() => expect(screen.getAllByTestId('duplicate-group').length).toBe(1));
    expect(screen.queryByTestId('sat-unknown-form')).toBeNull();
  });
});
