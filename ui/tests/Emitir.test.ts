import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Emitir from '../src/pages/Emitir.svelte';
import { ClickIdentity } from '../src/lib/emit';
import { fiscalOptions } from './fixtures';

type Call = { cmd: string; args: Record<string, unknown> };

function backend(recordAnswers: ((args: Record<string, unknown>) => unknown)[]) {
  const calls: Call[] = [];
  let times = 0;
  mockIPC(
    (cmd, args) => {
      const a = (args ?? {}) as Record<string, unknown>;
      calls.push({ cmd, args: a });
      switch (cmd) {
        case 'local_now':
          times += 1;
          return `2026-11-29T12:0${times}:00`;
        case 'preview_sale': {
          const draft = a.draft as { receptor: { rfc: string } };
          return draft.receptor.rfc.length < 12
            ? { totals: null, errors: [{ field: 'receptor.rfc', code: 'rfc_invalido', message: 'no es un RFC' }] }
            : { totals: { subtotal: '100.00', descuento: null, traslados: '16.00', retenciones: null, total: '116.00', moneda: 'MXN' }, errors: [] };
        }
        case 'fiscal_options':
          return fiscalOptions(String(a.rfc), (a.metodoPago as string | null) ?? null);
        case 'record_sale': {
          const next = recordAnswers.shift();
          if (!next) throw new Error('unexpected record_sale');
          return next(a);
        }
      }
      throw new Error(`unexpected ${cmd}`);
    },
    { shouldMockEvents: true },
  );
  return calls;
}

function input(name: string): HTMLInputElement {
  const e = document.querySelector<HTMLInputElement>(`[name='${name}']`);
  if (!e) throw new Error(`no input ${name}`);
  return e;
}

async function fill(rfc: string) {
  await fireEvent.input(input('receptor.rfc'), { target: { value: rfc } });
  await fireEvent.input(input('receptor.nombre'), { target: { value: 'UNIVERSIDAD ROBOTICA ESPAÑOLA' } });
  await fireEvent.input(input('receptor.domicilio_fiscal'), { target: { value: '86991' } });
  await fireEvent.input(input('conceptos[0].descripcion'), { target: { value: 'Café de olla' } });
  await fireEvent.input(input('conceptos[0].cantidad'), { target: { value: '2' } });
  await fireEvent.input(input('conceptos[0].valor_unitario'), { target: { value: '50.00' } });
}

/** Picks in a searchable catalog select (CatalogSelect) by typing and Enter, as a person does. */
async function choose(name: string, typed: string) {
  const box = input(name);
  await fireEvent.focus(box);
  await waitFor(() => expect(screen.getByTestId(`cs-${name}-list`).querySelectorAll('button[data-code]').length).toBeGreaterThan(0));
  await fireEvent.input(box, { target: { value: typed } });
  await fireEvent.keyDown(box, { key: 'Enter' });
}

const submit = () => fireEvent.click(screen.getByTestId('emitir-submit'));
const records = (calls: Call[]) => calls.filter((c) => c.cmd === 'record_sale');

describe('Emitir', () => {
  test('live totals come from Rust; a field error lands under its input', async () => {
    const calls = backend([]);
    render(Emitir, { identity: new ClickIdentity(() => 'x') });
    await fill('URE18042');
    await fireEvent.blur(input('receptor.rfc'));
    await waitFor(() => expect(document.querySelector("[data-error-for='receptor.rfc']")?.textContent).toBe('No tiene la forma de un RFC.'));
    await fireEvent.input(input('receptor.rfc'), { target: { value: 'URE180429TM6' } });
    await waitFor(() => expect(document.querySelector('[data-total=total]')?.textContent).toBe('$116.00'));
    expect(document.querySelector("[data-error-for='receptor.rfc']")).toBeNull();
    const preview = calls.filter((c) => c.cmd === 'preview_sale').at(-1)!;
    expect((preview.args.draft as { occurred_at: string }).occurred_at).toBe('2026-11-29T12:01:00');
  });

  test('one click keeps its identity across retries and gets a new one after success', async () => {
    let n = 0;
    const calls = backend([
      () => {
        throw { code: 'validation', details: { errors: [{ field: 'receptor.rfc', code: 'rfc_invalido', message: 'no es un RFC' }] } };
      },
      (a) => {
        throw { code: 'idempotency_in_progress', details: { key: a.saleId, retry_after_seconds: 2 } };
      },
      (a) => ({ invoice_id: 7, sale_id: a.saleId, replayed: true }),
      (a) => ({ invoice_id: 8, sale_id: a.saleId, replayed: false }),
    ]);
    render(Emitir, { identity: new ClickIdentity(() => `id-${++n}`) });
    await fill('URE180429TM6');

    await submit();
    await waitFor(() => expect(document.querySelector("[data-error-for='receptor.rfc']")).not.toBeNull());
    expect(screen.getByTestId('click-id').textContent).toContain('emitir-id-1');

    await submit();
    await waitFor(() => expect(screen.getByTestId('emitir-error').textContent).toContain('se está registrando'));
    expect(screen.getByTestId('emitir-error').textContent).toContain('mismo identificador');

    await submit();
    await waitFor(() => expect(screen.getByTestId('emitir-recorded').textContent).toContain('ya estaba registrada'));

    const [first, second, third] = records(calls);
    for (const c of [first, second, third]) {
      expect(c.args.saleId).toBe('emitir-id-1');
      expect((c.args.draft as { occurred_at: string }).occurred_at).toBe('2026-11-29T12:02:00');
    }

    // After a success the next click is a new sale, with its own occurred_at.
    await fill('URE180429TM6');
    await submit();
    await waitFor(() => expect(screen.getByTestId('emitir-recorded').textContent).toContain('registrada; se timbrará'));
    const fourth = records(calls)[3];
    expect(fourth.args.saleId).toBe('emitir-id-2');
    expect((fourth.args.draft as { occurred_at: string }).occurred_at).toBe('2026-11-29T12:03:00');
    expect(screen.getByTestId('recorded-link').getAttribute('href')).toBe('#/factura/8');
  });

  test('the sale sent is the form, with its taxes', async () => {
    const calls = backend([(a) => ({ invoice_id: 1, sale_id: a.saleId, replayed: false })]);
    render(Emitir, { identity: new ClickIdentity(() => 'z') });
    await fill('URE180429TM6');
    await fireEvent.change(input('conceptos[0].iva'), { target: { value: 'exento' } });
    await submit();
    await waitFor(() => expect(records(calls)).toHaveLength(1));
    const draft = records(calls)[0].args.draft as {
      receptor: { rfc: string };
      conceptos: { cantidad: string; valor_unitario: string; traslados: unknown[] }[];
      forma_pago: string;
    };
    expect(draft.receptor.rfc).toBe('URE180429TM6');
    expect(draft.forma_pago).toBe('01');
    expect(draft.conceptos[0]).toMatchObject({ cantidad: '2', valor_unitario: '50.00' });
    expect(draft.conceptos[0].traslados).toEqual([{ impuesto: '002', tipo_factor: 'Exento', tasa_o_cuota: null }]);
  });

  test('a credit note opens prefilled from Rust and records under the derived id with its relation', async () => {
    const calls: Call[] = [];
    const uuid = '5FB2822E-396D-4725-8521-CDC4BDD20CCF';
    mockIPC(
      (cmd, args) => {
        const a = (args ?? {}) as Record<string, unknown>;
        calls.push({ cmd, args: a });
        switch (cmd) {
          case 'local_now':
            return '2026-11-29T12:05:00';
          case 'preview_sale':
            return { totals: null, errors: [] };
          case 'follow_up_draft':
            return {
              kind: 'credit_note',
              invoice_id: 5,
              uuid,
              sale_id: 'nc-pedido-4471',
              draft: {
                sale_id: 'nc-pedido-4471',
                kind: 'egreso',
                occurred_at: '',
                serie: 'F',
                folio: null,
                forma_pago: '01',
                metodo_pago: 'PUE',
                moneda: 'MXN',
                tipo_cambio: null,
                exportacion: null,
                condiciones_de_pago: null,
                receptor: { rfc: 'URE180429TM6', nombre: 'UNIVERSIDAD ROBOTICA ESPAÑOLA', domicilio_fiscal: '86991', regimen_fiscal: '601', uso_cfdi: 'G02' },
                conceptos: [
                  { clave_prod_serv: '01010101', no_identificacion: null, cantidad: '2', clave_unidad: 'H87', unidad: 'Pieza', descripcion: 'Café de olla', valor_unitario: '50.00', descuento: null, objeto_imp: '02', traslados: [], retenciones: [] },
                ],
                relacionados: [{ tipo_relacion: '01', uuids: [uuid] }],
              },
            };
          case 'record_sale':
            return { invoice_id: 9, sale_id: a.saleId, replayed: false };
        }
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(Emitir, { identity: new ClickIdentity(() => 'random'), followUp: { kind: 'credit_note', id: 5 } });
    await waitFor(() => expect(screen.getByTestId('emitir-related').textContent).toContain(uuid));
    expect(input('receptor.rfc').value).toBe('URE180429TM6');
    expect(calls).toContainEqual({ cmd: 'follow_up_draft', args: { invoiceId: 5, kind: 'credit_note' } });
    await submit();
    await waitFor(() => expect(records(calls)).toHaveLength(1));
    const rec = records(calls)[0].args;
    expect(rec.saleId).toBe('nc-pedido-4471');
    const draft = rec.draft as { kind: string; relacionados: unknown[]; occurred_at: string };
    expect(draft.kind).toBe('egreso');
    expect(draft.relacionados).toEqual([{ tipo_relacion: '01', uuids: [uuid] }]);
    expect(draft.occurred_at).toBe('2026-11-29T12:05:00');
  });
});

describe('Emitir and SAT matrix', () => {
  test('a matrix rule shows its words and SAT code beside the field, and the totals stay', async () => {
    const rule = {
      field: 'forma_pago',
      code: 'combinacion',
      message: 'Con método de pago PPD la forma de pago es 99 Por definir: cambie la forma de pago a 99, o el método a PUE si el cliente ya pagó (la forma de pago es 01)',
    };
    const totals = { subtotal: '100.00', descuento: null, traslados: '16.00', retenciones: null, total: '116.00', moneda: 'MXN' };
    mockIPC(
      (cmd, args) => {
        const a = (args ?? {}) as { draft?: { metodo_pago: string; forma_pago: string } };
        if (cmd === 'local_now') return '2026-11-29T12:00:00';
        // Every forma offered whatever the método, so the refusal can be seen and then fixed.
        if (cmd === 'fiscal_options') return fiscalOptions('URE180429TM6', null, true);
        if (cmd === 'preview_sale') {
          const broken = a.draft?.metodo_pago === 'PPD' && a.draft.forma_pago !== '99';
          return broken
            ? { totals, errors: [rule], rules: [{ field: rule.field, rule: 'CFDI40105', message: rule.message }] }
            : { totals, errors: [], rules: [] };
        }
        throw new Error(`unexpected ${cmd}`);
      },
      { shouldMockEvents: true },
    );
    render(Emitir, { identity: new ClickIdentity(() => 'x') });
    await fill('URE180429TM6');
    await waitFor(() => expect(document.querySelector('[data-total=total]')?.textContent).toBe('$116.00'));
    await choose('metodo_pago', 'PPD');
    await waitFor(() => expect(document.querySelector("[data-error-for='forma_pago']")).not.toBeNull());
    const shown = document.querySelector("[data-error-for='forma_pago']")!;
    expect(shown.getAttribute('data-rule')).toBe('CFDI40105');
    expect(shown.textContent).toContain('Con método de pago PPD la forma de pago es 99 Por definir: cambie la forma de pago a 99');
    expect(shown.textContent).toContain('CFDI40105');
    // The totals stay beside the refusal.
    expect(document.querySelector('[data-total=total]')?.textContent).toBe('$116.00');
    // Fixed: the refusal goes.
    await choose('forma_pago', 'por definir');
    await waitFor(() => expect(document.querySelector("[data-error-for='forma_pago']")).toBeNull());
  });
});
