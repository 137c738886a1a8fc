import { describe, expect, test } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Emitir from '../src/pages/Emitir.svelte';
import Clientes from '../src/pages/Clientes.svelte';
import { ClickIdentity } from '../src/lib/emit';
import { fiscalOptions } from './fixtures';

type Call = { cmd: string; args: Record<string, unknown> };

const customer = {
  id: 7,
  rfc: 'URE180429TM6',
  nombre: 'UNIVERSIDAD ROBOTICA ESPAÑOLA',
  cp: '86991',
  regimen: '601',
  uso: 'G01',
  forma_pago: '03',
  metodo_pago: 'PUE',
  emails: [],
  updated_at: '2026-11-29T18:30:00+00:00',
  updated_by: { name: 'ana', role: 'personal' },
};

function product(sku: string, descripcion: string, precio: string) {
  return {
    product: { id: sku.length, sku, descripcion, clave_prod_serv: '50201706', clave_unidad: 'H87', unidad: null, precio, objeto_imp: '02', iva: '16', ieps: null, ret_isr: null, ret_iva: null, updated_at: '', updated_by: { name: 'ana', role: 'personal' } },
    concepto: {
      clave_prod_serv: '50201706',
      no_identificacion: sku,
      cantidad: '1',
      clave_unidad: 'H87',
      unidad: null,
      descripcion,
      valor_unitario: precio,
      descuento: null,
      objeto_imp: '02',
      traslados: [{ impuesto: '002', tipo_factor: 'Tasa', tasa_o_cuota: '0.160000' }],
      retenciones: [],
    },
  };
}

function backend(extra: (cmd: string, a: Record<string, unknown>) => unknown = () => undefined) {
  const calls: Call[] = [];
  mockIPC(
    (cmd, args) => {
      const a = (args ?? {}) as Record<string, unknown>;
      calls.push({ cmd, args: a });
      const x = extra(cmd, a);
      if (x !== undefined) return x;
      switch (cmd) {
        case 'local_now':
          return '2026-11-29T12:00:00';
        case 'preview_sale':
          return { totals: null, errors: [] };
        case 'fiscal_options':
          return fiscalOptions(String(a.rfc), (a.metodoPago as string | null) ?? null);
        case 'customers':
          return String(a.query ?? '').toLowerCase().startsWith('univ') || String(a.query ?? '').startsWith('URE') ? [customer] : [];
        case 'products': {
          const q = String(a.query ?? '').toLowerCase();
          return [product('CAF-01', 'Café de olla', '50'), product('TOR-01', 'Tortillas', '22.5')].filter(
            (p) => p.product.sku.toLowerCase().startsWith(q) || p.product.descripcion.toLowerCase().includes(q),
          );
        }
        case 'record_sale':
          return { invoice_id: 1, sale_id: String(a.saleId), state: 'pending', replayed: false, warnings: [] };
      }
      throw new Error(`unexpected ${cmd}`);
    },
    { shouldMockEvents: true },
  );
  return calls;
}

const field = (name: string) => document.querySelector<HTMLInputElement>(`[name='${name}']`)!;

async function typeAndEnter(name: string, text: string) {
  await fireEvent.input(field(name), { target: { value: text } });
  await waitFor(() => expect(screen.getByTestId(`ac-${name}-list`)).toBeTruthy());
  await fireEvent.keyDown(field(name), { key: 'Enter' });
}

/** Picks in a searchable catalog select (CatalogSelect) by typing and Enter. */
async function choose(name: string, typed: string) {
  await fireEvent.focus(field(name));
  await waitFor(() => expect(screen.getByTestId(`cs-${name}-list`).querySelectorAll('button[data-code]').length).toBeGreaterThan(0));
  await fireEvent.input(field(name), { target: { value: typed } });
  await fireEvent.keyDown(field(name), { key: 'Enter' });
}

const choices = (name: string) => [...screen.getByTestId(`cs-${name}-list`).querySelectorAll<HTMLElement>('button[data-code]')].map((b) => b.dataset.code);

describe('SAT catalogs in the forms', () => {
  test('Emitir asks Rust for the choices of the RFC typed; a persona física is not offered 601; words find a régimen', async () => {
    const calls = backend();
    render(Emitir, { identity: new ClickIdentity(() => 'click-3') });
    await fireEvent.input(field('receptor.rfc'), { target: { value: 'CACX7605101P8' } });
    await waitFor(() => expect(calls.some((c) => c.cmd === 'fiscal_options' && c.args.rfc === 'CACX7605101P8')).toBe(true));
    await fireEvent.focus(field('receptor.regimen_fiscal'));
    await waitFor(() => expect(choices('receptor.regimen_fiscal')).toEqual(['612', '626']));
    await fireEvent.input(field('receptor.regimen_fiscal'), { target: { value: '601' } });
    await waitFor(() => expect(screen.getByTestId('cs-receptor.regimen_fiscal-list').textContent).toContain('Ninguna opción'));
    await fireEvent.keyDown(field('receptor.regimen_fiscal'), { key: 'Escape' });
    await choose('receptor.regimen_fiscal', 'simplificado confianza');
    await waitFor(() => expect(field('receptor.regimen_fiscal').dataset.value).toBe('626'));
    await waitFor(() => expect(calls.some((c) => c.cmd === 'fiscal_options' && c.args.regimen === '626')).toBe(true));
    // PPD leaves one forma de pago (99): it is taken.
    await choose('metodo_pago', 'PPD');
    await waitFor(() => expect(field('forma_pago').dataset.value).toBe('99'));
  });

  test('Guardar cliente saves the receptor typed in Emitir, updating the customer with that RFC', async () => {
    const calls = backend((cmd, a) => (cmd === 'save_customer' ? { ...customer, ...(a.input as object), id: 7 } : undefined));
    render(Emitir, { identity: new ClickIdentity(() => 'click-4') });
    await fireEvent.input(field('receptor.rfc'), { target: { value: 'URE180429TM6' } });
    await fireEvent.input(field('receptor.nombre'), { target: { value: 'UNIVERSIDAD ROBOTICA ESPAÑOLA' } });
    await fireEvent.input(field('receptor.domicilio_fiscal'), { target: { value: '86991' } });
    await fireEvent.click(screen.getByTestId('emitir-save-customer'));
    await waitFor(() => expect(screen.getByTestId('emitir-customer-saved').textContent).toContain('UNIVERSIDAD ROBOTICA ESPAÑOLA'));
    const saved = calls.find((c) => c.cmd === 'save_customer')!.args;
    expect(saved.id).toBe(7);
    expect(saved.input).toMatchObject({ rfc: 'URE180429TM6', cp: '86991', regimen: '601', uso: 'G03', forma_pago: '01', metodo_pago: 'PUE' });
  });

  test('a price with IVA included becomes the valor unitario Rust computes, and the hint says it was rounded to total the price', async () => {
    const calls = backend((cmd) =>
      cmd === 'price_without_iva'
        ? { valor_unitario: '86.21', importe: '86.21', iva: '13.79', total: '100.00', objetivo: '100.00', exacto: true }
        : undefined,
    );
    render(Emitir, { identity: new ClickIdentity(() => 'click-5') });
    await fireEvent.input(field('conceptos[0].valor_unitario'), { target: { value: '100' } });
    await fireEvent.click(screen.getByTestId('con-iva'));
    await waitFor(() => expect(screen.getByTestId('con-iva-hint').textContent).toContain('86.21'));
    expect(screen.getByTestId('con-iva-hint').textContent).toContain('redondeado');
    expect(calls.find((c) => c.cmd === 'price_without_iva')!.args).toEqual({ precio: '100', cantidad: '1', tasa: '0.160000', moneda: 'MXN' });
    // The box keeps the price typed; the draft carries the valor unitario without IVA.
    expect(field('conceptos[0].valor_unitario').value).toBe('100');
    await waitFor(() => {
      const previews = calls.filter((c) => c.cmd === 'preview_sale');
      const last = previews[previews.length - 1]?.args.draft as { conceptos: { valor_unitario: string }[] } | undefined;
      expect(last?.conceptos[0].valor_unitario).toBe('86.21');
    });
  });

  test('Clientes uses the same selects: the RFC decides the régimenes, and the code chosen is what is saved', async () => {
    const calls = backend((cmd, a) => (cmd === 'customers' ? [] : cmd === 'save_customer' ? { ...customer, ...(a.input as object) } : undefined));
    render(Clientes);
    await fireEvent.click(screen.getByTestId('cliente-nuevo'));
    await fireEvent.input(field('rfc'), { target: { value: 'URE180429TM6' } });
    await waitFor(() => expect(calls.some((c) => c.cmd === 'fiscal_options' && c.args.rfc === 'URE180429TM6')).toBe(true));
    await fireEvent.focus(field('regimen'));
    await waitFor(() => expect(choices('regimen')).toEqual(['601', '626']));
    await fireEvent.keyDown(field('regimen'), { key: 'Escape' });
    await choose('regimen', 'general de ley');
    await choose('uso', 'G03');
    await fireEvent.click(screen.getByTestId('cliente-guardar'));
    await waitFor(() => expect(calls.some((c) => c.cmd === 'save_customer')).toBe(true));
    expect(calls.find((c) => c.cmd === 'save_customer')!.args.input).toMatchObject({ rfc: 'URE180429TM6', regimen: '601', uso: 'G03', forma_pago: null });
  });
});

describe('Emitir from saved customers and products', () => {
  test('the customer search fills the receptor and its defaults; Enter in the product search adds lines; Ctrl+Enter emits', async () => {
    const calls = backend();
    render(Emitir, { identity: new ClickIdentity(() => 'click-1') });
    // The customer search takes the focus first.
    await waitFor(() => expect(document.activeElement).toBe(field('customer-search')));
    await typeAndEnter('customer-search', 'univ');
    await waitFor(() => expect(field('receptor.rfc').value).toBe('URE180429TM6'));
    expect(field('receptor.nombre').value).toBe('UNIVERSIDAD ROBOTICA ESPAÑOLA');
    expect(field('receptor.domicilio_fiscal').value).toBe('86991');
    expect(document.querySelector<HTMLInputElement>("[name='forma_pago']")!.dataset.value).toBe('03');
    // Still editable per invoice.
    await fireEvent.input(field('receptor.domicilio_fiscal'), { target: { value: '42501' } });

    await typeAndEnter('product-search', 'caf');
    await waitFor(() => expect(field('conceptos[0].descripcion').value).toBe('Café de olla'));
    expect(field('product-search').value).toBe('');
    // ArrowDown moves to the second suggestion; Enter takes it.
    await fireEvent.input(field('product-search'), { target: { value: 'o' } });
    await waitFor(() => expect(screen.getByTestId('ac-product-search-list').querySelectorAll('li').length).toBe(2));
    await fireEvent.keyDown(field('product-search'), { key: 'ArrowDown' });
    await fireEvent.keyDown(field('product-search'), { key: 'Enter' });
    await waitFor(() => expect(field('conceptos[1].descripcion').value).toBe('Tortillas'));
    expect(field('conceptos[1].valor_unitario').value).toBe('22.5');

    await fireEvent.keyDown(field('conceptos[1].cantidad'), { key: 'Enter', ctrlKey: true });
    await waitFor(() => expect(calls.some((c) => c.cmd === 'record_sale')).toBe(true));
    const draft = calls.find((c) => c.cmd === 'record_sale')!.args.draft as {
      receptor: { rfc: string; domicilio_fiscal: string; uso_cfdi: string };
      conceptos: { no_identificacion: string }[];
    };
    expect(draft.receptor).toMatchObject({ rfc: 'URE180429TM6', domicilio_fiscal: '42501', uso_cfdi: 'G01' });
    expect(draft.conceptos.map((c) => c.no_identificacion)).toEqual(['CAF-01', 'TOR-01']);
  });

  test('shortcuts: Alt+C and Alt+P reach the searches, Alt+N adds a blank line, Alt+Supr removes the focused one, Escape closes suggestions', async () => {
    const calls = backend();
    render(Emitir, { identity: new ClickIdentity(() => 'click-2') });
    await waitFor(() => expect(document.activeElement).toBe(field('customer-search')));
    // The hint names every shortcut.
    expect(screen.getByTestId('emitir-shortcuts').textContent).toContain('Alt+C');
    expect(screen.getByTestId('emitir-shortcuts').textContent).toContain('Alt+Supr');
    await fireEvent.keyDown(field('customer-search'), { key: 'p', code: 'KeyP', altKey: true });
    expect(document.activeElement).toBe(field('product-search'));
    await typeAndEnter('product-search', 'caf');
    await waitFor(() => expect(field('conceptos[0].descripcion').value).toBe('Café de olla'));
    // Escape closes the suggestions and leaves the text.
    await fireEvent.input(field('product-search'), { target: { value: 'tor' } });
    await waitFor(() => expect(screen.getByTestId('ac-product-search-list')).toBeTruthy());
    await fireEvent.keyDown(field('product-search'), { key: 'Escape' });
    await waitFor(() => expect(screen.queryByTestId('ac-product-search-list')).toBeNull());
    expect(field('product-search').value).toBe('tor');
    // Alt+N: a blank second line, with the focus in its description.
    await fireEvent.keyDown(field('product-search'), { key: 'n', code: 'KeyN', altKey: true });
    await waitFor(() => expect(document.activeElement).toBe(field('conceptos[1].descripcion')));
    expect(field('conceptos[1].descripcion').value).toBe('');
    // Alt+Supr in that line removes it; the focus goes back to the line before.
    await fireEvent.keyDown(field('conceptos[1].descripcion'), { key: 'Delete', altKey: true });
    await waitFor(() => expect(document.querySelector("[name='conceptos[1].descripcion']")).toBeNull());
    expect(document.activeElement).toBe(field('conceptos[0].descripcion'));
    expect(field('conceptos[0].descripcion').value).toBe('Café de olla');
    // Alt+Supr outside a line does nothing.
    await fireEvent.keyDown(field('product-search'), { key: 'Delete', altKey: true });
    expect(field('conceptos[0].descripcion').value).toBe('Café de olla');
    // Alt+C: back to the customer search.
    await fireEvent.keyDown(document.body, { key: 'c', code: 'KeyC', altKey: true });
    expect(document.activeElement).toBe(field('customer-search'));
    expect(calls.some((c) => c.cmd === 'record_sale')).toBe(false);
  });

  test('Enter in a search box never submits the form', async () => {
    const calls = backend();
    render(Emitir, { identity: new ClickIdentity(() => 'click-2') });
    await fireEvent.input(field('product-search'), { target: { value: 'zzz' } });
    await fireEvent.keyDown(field('product-search'), { key: 'Enter' });
    await new Promise((r) => setTimeout(r, 200));
    expect(calls.some((c) => c.cmd === 'record_sale')).toBe(false);
  });
});

describe('Clientes', () => {
  test('an import lists each bad line with its number, field and reason', async () => {
    const calls = backend((cmd) => {
      if (cmd === 'customers') return [customer];
      // The native chooser (Tauri's dialog plugin) answers the path the person chose.
      if (cmd === 'plugin:dialog|open') return '/home/ana/clientes.csv';
      if (cmd === 'import_customers')
        return { added: 1, updated: 0, bad_lines: [{ line: 3, field: 'cp', message: 'el código postal 00001 no existe en el catálogo c_CodigoPostal del SAT' }] };
      return undefined;
    });
    render(Clientes);
    await waitFor(() => expect(screen.getByTestId('clientes-table').textContent).toContain('URE180429TM6'));
    await fireEvent.click(screen.getByTestId('clientes-import'));
    await waitFor(() => expect(screen.getByTestId('clientes-bad-lines').textContent).toContain('línea 3: cp: el código postal 00001 no existe'));
    expect(screen.getByTestId('clientes-imported').textContent).toContain('1 agregados');
    // Rust gets the path (and reads the file); the webview never read it.
    expect(calls.find((c) => c.cmd === 'import_customers')?.args).toEqual({ path: '/home/ana/clientes.csv' });
  });

  test('a refused save shows the field errors under their inputs', async () => {
    backend((cmd) => {
      if (cmd === 'customers') return [];
      if (cmd === 'save_customer')
        throw { code: 'validation', message: 'x', details: { errors: [{ field: 'regimen', code: 'combinacion', message: 'el régimen 605 no aplica a personas morales (RFC de 12 caracteres)' }] } };
      return undefined;
    });
    render(Clientes);
    await fireEvent.click(screen.getByTestId('cliente-nuevo'));
    await fireEvent.click(screen.getByTestId('cliente-guardar'));
    await waitFor(() => expect(document.querySelector("[data-error-for='regimen']")).toBeTruthy());
  });
});
