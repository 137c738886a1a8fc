// The Emitir form's non-visual parts: the per-click identity (docs/intake.md), the empty draft, and
// the short SAT catalogue excerpts the selects offer (Rust validates against the full catalogues).
import type { ConceptoDraft } from './ipc/bindings/ConceptoDraft';
import type { SaleDraft } from './ipc/bindings/SaleDraft';

export type Click = { saleId: string; occurredAt: string };

function randomId(): string {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === 'function') return c.randomUUID();
  const b = new Uint8Array(16);
  c.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/**
 * The identity of one click on "Emitir": a sale_id (also the idempotency key) and the
 * occurred_at frozen at that click. Every retry after a failure reuses it — so a retry of a
 * sale that was in fact recorded answers "already recorded" instead of recording it twice — and
 * it is renewed only after a success.
 */
export class ClickIdentity {
  private pending: Click | null = null;
  /** The sale id the next new click takes instead of a random one (a credit note's `nc-…`). */
  private fixedId: string | null = null;

  constructor(private readonly newId: () => string = randomId) {}

  /** The next click records under `saleId` (derived by Rust for a related sale). */
  fix(saleId: string): void {
    if (!this.pending) this.fixedId = saleId;
  }

  /** The identity for this submit: the pending one (a retry) or a new one. */
  async forSubmit(localNow: () => Promise<string>): Promise<Click> {
    if (!this.pending) {
      this.pending = { saleId: this.fixedId ?? `emitir-${this.newId()}`, occurredAt: await localNow() };
    }
    return this.pending;
  }

  /** The sale was recorded: the next click is a new sale. */
  succeeded(): void {
    this.pending = null;
    this.fixedId = null;
  }

  get current(): Click | null {
    return this.pending;
  }
}

export function emptyConcepto(): ConceptoDraft {
  return {
    clave_prod_serv: '01010101',
    cantidad: '1',
    clave_unidad: 'H87',
    unidad: 'Pieza',
    descripcion: '',
    valor_unitario: '',
    descuento: null,
    objeto_imp: '02',
    traslados: [{ impuesto: '002', tipo_factor: 'Tasa', tasa_o_cuota: '0.160000' }],
    retenciones: [],
  };
}

export function emptyDraft(): SaleDraft {
  return {
    // The shell sets the sale's id from the click (`recordSale(saleId, draft)`).
    sale_id: '',
    kind: 'ingreso',
    occurred_at: '',
    serie: 'F',
    folio: null,
    forma_pago: '01',
    metodo_pago: 'PUE',
    moneda: 'MXN',
    receptor: { rfc: '', nombre: '', domicilio_fiscal: '', regimen_fiscal: '601', uso_cfdi: 'G03' },
    conceptos: [emptyConcepto()],
    relacionados: [],
  };
}

/** The IVA choice of a concepto, as the form shows it. */
export type IvaChoice = '0.160000' | '0.080000' | '0.000000' | 'exento';

export function ivaOf(c: ConceptoDraft): IvaChoice {
  const iva = c.traslados.find((t) => t.impuesto === '002');
  if (!iva) return '0.160000';
  if (iva.tipo_factor === 'Exento') return 'exento';
  return (iva.tasa_o_cuota as IvaChoice) ?? '0.160000';
}

export function withIva(c: ConceptoDraft, choice: IvaChoice): ConceptoDraft {
  const others = c.traslados.filter((t) => t.impuesto !== '002');
  const iva =
    choice === 'exento'
      ? { impuesto: '002', tipo_factor: 'Exento', tasa_o_cuota: null }
      : { impuesto: '002', tipo_factor: 'Tasa', tasa_o_cuota: choice };
  return { ...c, traslados: [iva, ...others] };
}

/** Retenciones the form offers: IVA 2/3 of 16 % and ISR 10 % (services by personas físicas). */
export const RETENCIONES = {
  iva: { impuesto: '002', tipo_factor: 'Tasa', tasa_o_cuota: '0.106667' },
  isr: { impuesto: '001', tipo_factor: 'Tasa', tasa_o_cuota: '0.100000' },
} as const;

export function hasRetencion(c: ConceptoDraft, which: keyof typeof RETENCIONES): boolean {
  return c.retenciones.some((r) => r.impuesto === RETENCIONES[which].impuesto);
}

export function withRetencion(c: ConceptoDraft, which: keyof typeof RETENCIONES, on: boolean): ConceptoDraft {
  const rest = c.retenciones.filter((r) => r.impuesto !== RETENCIONES[which].impuesto);
  return { ...c, retenciones: on ? [...rest, { ...RETENCIONES[which] }] : rest };
}

export const FORMAS_PAGO: [string, string][] = [
  ['01', 'Efectivo'],
  ['02', 'Cheque nominativo'],
  ['03', 'Transferencia electrónica de fondos'],
  ['04', 'Tarjeta de crédito'],
  ['28', 'Tarjeta de débito'],
  ['99', 'Por definir'],
];

/** The receptor a saved customer fills in (its default uso, else the form's current one). */
export function receptorOf(
  c: { rfc: string; nombre: string; cp: string; regimen: string; uso: string | null },
  currentUso: string,
): SaleDraft['receptor'] {
  return { rfc: c.rfc, nombre: c.nombre, domicilio_fiscal: c.cp, regimen_fiscal: c.regimen, uso_cfdi: c.uso ?? currentUso };
}

/** Whether a concepto line is still the untouched blank one (a picked product replaces it). */
export function conceptoIsBlank(c: ConceptoDraft): boolean {
  return !c.descripcion.trim() && !c.valor_unitario.trim() && !(c.no_identificacion ?? '').trim();
}
