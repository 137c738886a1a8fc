// Test data in the exact shapes the Rust DTOs serialize to (typed by the generated bindings).
import type { ActionDto } from '../src/lib/ipc/bindings/ActionDto';
import type { InvoiceDetailDto } from '../src/lib/ipc/bindings/InvoiceDetailDto';
import type { InvoiceSummary } from '../src/lib/ipc/bindings/InvoiceSummary';
import type { StrategyDto } from '../src/lib/ipc/bindings/StrategyDto';

export function row(id: number, over: Partial<InvoiceSummary> = {}): InvoiceSummary {
  return {
    id,
    sale_id: `pedido-${4470 + id}`,
    kind: 'ingreso',
    serie: 'F',
    folio: String(4470 + id),
    receptor_rfc: 'URE180429TM6',
    receptor_nombre: 'UNIVERSIDAD ROBOTICA ESPAÑOLA',
    total: '116.00',
    moneda: 'MXN',
    state: 'pending',
    badge: 'pendiente',
    state_reason: null,
    current_attempt_no: 1,
    attempts_count: 1,
    tries_count: 0,
    next_try_at: null,
    possible_duplicate: false,
    uuid: null,
    fecha: '2026-11-29T12:00:00',
    fecha_deadline: '2026-12-02T18:00:00Z',
    created_at: '2026-11-29T18:00:00Z',
    updated_at: '2026-11-29T18:00:00Z',
    active_notes: 0,
    ...over,
  };
}

export function action(a: Partial<ActionDto> & Pick<ActionDto, 'action'>): ActionDto {
  return { allowed: false, retry_mode: null, refusal: null, alternative_refusal: null, roles: ['soporte', 'contador'], ...a };
}

const ALL_ROLES: ActionDto['roles'] = ['personal', 'soporte', 'contador'];

/** Strategy case 3, as src-tauri converts the outbox's verdict: the try to SW timed out after
 *  the request was written. */
export const reanudar: StrategyDto = {
  badge: 'reanudar',
  reasons: [
    {
      code: 'resultado_desconocido',
      evidence_id: 7,
      params: { attempt_no: 1, pac: 'sandbox', outcome: 'unknown', code: 'timeout', message: null, uuid: null },
    },
  ],
  actions: [
    action({
      action: 'retry',
      allowed: true,
      retry_mode: 'resume',
      alternative_refusal: { code: 'resultado_desconocido', evidence_id: 7, evidence: 'pac_response: unknown timeout' },
    }),
    action({ action: 'finalize', refusal: { code: 'sin_cfdi', evidence_id: 7, evidence: 'pac_response: unknown timeout' } }),
    action({ action: 'failover', refusal: { code: 'resultado_desconocido', evidence_id: 7, evidence: 'pac_response: unknown timeout' } }),
    action({ action: 'force_failover', allowed: true, roles: ['contador'] }),
    action({ action: 'verify_absent', refusal: { code: 'sin_pregunta_abierta', evidence_id: null, evidence: null }, roles: ['contador'] }),
    action({ action: 'download_xml', refusal: { code: 'sin_cfdi', evidence_id: 7, evidence: 'pac_response: unknown timeout' }, roles: ALL_ROLES }),
  ],
  fecha_at_risk: false,
  open_questions: [],
};

/** Strategy case 7: SW rejected the document (CFDI40xxx). */
export const reprocesar: StrategyDto = {
  badge: 'reprocesar',
  reasons: [
    {
      code: 'rechazo_documento',
      evidence_id: 9,
      params: { attempt_no: 1, pac: 'sw', outcome: 'rejected', code: 'CFDI40101', message: 'Fecha fuera de rango', uuid: null },
    },
  ],
  actions: [
    action({
      action: 'retry',
      allowed: true,
      retry_mode: 'reprocess',
      alternative_refusal: { code: 'mismo_documento_fallaria', evidence_id: 9, evidence: 'pac_response: rejected CFDI40101' },
    }),
    action({ action: 'failover', refusal: { code: 'el_documento_es_el_problema', evidence_id: 9, evidence: 'pac_response: rejected CFDI40101' } }),
  ],
  fecha_at_risk: false,
  open_questions: [],
};

/** Strategy case 2: stamped and persisted. */
export const timbrada: StrategyDto = {
  badge: 'timbrada',
  reasons: [
    {
      code: 'timbrada',
      evidence_id: 3,
      params: { attempt_no: 1, pac: 'sw', outcome: 'stamped', code: null, message: null, uuid: '5FB2822E-396D-4725-8521-CDC4BDD20CCF' },
    },
  ],
  actions: [
    action({ action: 'retry', refusal: { code: 'cfdi_existe', evidence_id: 3, evidence: 'pac_response: stamped 5FB2822E' } }),
    action({ action: 'download_xml', allowed: true, roles: ALL_ROLES }),
  ],
  fecha_at_risk: false,
  open_questions: [],
};

export function detail(strategy: StrategyDto, over: Partial<InvoiceDetailDto> = {}): InvoiceDetailDto {
  return {
    invoice: row(1),
    fencing_token: 1,
    facts_version: 1,
    lease: null,
    tries: [],
    sale: {
      sale_id: 'pedido-4471',
      kind: 'ingreso',
      occurred_at: '2026-11-29T12:00:00',
      body: { sale_id: 'pedido-4471' },
      body_sha256: 'ab'.repeat(32),
      source: 'app',
      recorded_at: '2026-11-29T18:00:00Z',
      recorded_by: { name: 'Soporte', role: 'soporte' },
    },
    attempts: [],
    evidence: [],
    cfdis: [],
    notes: [],
    timeline: [],
    cancellations: [],
    strategy,
    ...over,
  };
}

/**
 * A `fiscal_options` answer (an excerpt of what Rust serves): a 13-character RFC offers personas
 * físicas' regímenes, a 12-character one personas morales', PPD only forma 99 unless `anyForma`.
 */
export function fiscalOptions(rfc: string, metodo: string | null, anyForma = false) {
  const o = (code: string, descripcion: string) => ({ code, descripcion });
  const fisica = rfc.length === 13;
  const moral = rfc.length === 12;
  const formas = [o('01', 'Efectivo'), o('03', 'Transferencia electrónica de fondos'), o('04', 'Tarjeta de crédito'), o('99', 'Por definir')];
  return {
    receptor: fisica ? 'fisica' : moral ? 'moral' : 'desconocido',
    regimenes: [
      ...(fisica ? [] : [o('601', 'General de Ley Personas Morales')]),
      ...(moral ? [] : [o('612', 'Personas Físicas con Actividades Empresariales y Profesionales')]),
      o('626', 'Régimen Simplificado de Confianza'),
    ],
    usos: [o('G01', 'Adquisición de mercancías'), o('G02', 'Devoluciones, descuentos o bonificaciones'), o('G03', 'Gastos en general'), o('S01', 'Sin efectos fiscales')],
    formas_pago: anyForma ? formas : formas.filter((f) => (metodo === 'PPD' ? f.code === '99' : metodo === 'PUE' ? f.code !== '99' : true)),
    metodos_pago: [o('PUE', 'Pago en una sola exhibición'), o('PPD', 'Pago en parcialidades o diferido')],
    objetos_imp: [o('01', 'No objeto de impuesto'), o('02', 'Sí objeto de impuesto')],
  };
}
