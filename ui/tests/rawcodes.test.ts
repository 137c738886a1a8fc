// No raw code reaches a person in Spanish mode (issue 30, acceptance 2): the Bandeja, the
// Factura page (state, next step, reasons, every hint, the tables, the timeline) and the
// Timeline's PAC answers are rendered from fixtures of the strategy situations, and their
// visible text — tooltips and the options of the selects included — is scanned for snake_case
// words, an HTTP status with a colon ("401:"), "evidencia #" and "bytes". What sits behind a
// closed <details> (the *Detalle técnico* of each entry, the sale's JSON) is not visible and is
// not scanned; neither is anything marked as technical detail when open.
import { describe, expect, test } from 'vitest';
import { render, waitFor } from '@testing-library/svelte';
import { mockIPC } from '@tauri-apps/api/mocks';
import Bandeja from '../src/pages/Bandeja.svelte';
import Factura from '../src/pages/Factura.svelte';
import { session } from '../src/lib/session.svelte';
import { setLocale } from '../src/lib/i18n/index.svelte';
import type { AppStatusDto } from '../src/lib/ipc/bindings/AppStatusDto';
import type { Badge } from '../src/lib/ipc/bindings/Badge';
import type { StrategyDto } from '../src/lib/ipc/bindings/StrategyDto';
import type { TimelineEntry } from '../src/lib/ipc/bindings/TimelineEntry';
import type { AttemptInfo } from '../src/lib/ipc/bindings/AttemptInfo';
import { action, detail, reanudar, reprocesar, row, timbrada } from './fixtures';

const PATTERNS: [string, RegExp][] = [
  ['snake_case', /\b[a-z]+(?:_[a-z0-9]+)+\b/],
  ['HTTP status with colon', /\b[1-5]\d\d:/],
  ['evidencia #', /evidencia #/i],
  ['bytes', /\bbytes\b/i],
];

/** The text a person can see (or hover) on the page, technical detail left out. */
function visibleText(root: HTMLElement): string {
  const copy = root.cloneNode(true) as HTMLElement;
  copy.querySelectorAll('details:not([open]) > :not(summary)').forEach((e) => e.remove());
  copy.querySelectorAll('details.tech > :not(summary), [data-testid$=technical] > :not(summary)').forEach((e) => e.remove());
  const titles = [...copy.querySelectorAll('[title]')].map((e) => e.getAttribute('title') ?? '');
  const labels = [...copy.querySelectorAll('[aria-label], [placeholder], optgroup[label]')].map(
    (e) => `${e.getAttribute('aria-label') ?? ''} ${e.getAttribute('placeholder') ?? ''} ${e.getAttribute('label') ?? ''}`,
  );
  return [copy.textContent ?? '', ...titles, ...labels].join('\n');
}

function rawCodes(text: string): string[] {
  const hits: string[] = [];
  for (const [name, re] of PATTERNS) {
    const g = new RegExp(re.source, re.flags.includes('g') ? re.flags : `${re.flags}g`);
    for (const m of text.matchAll(g)) {
      const at = m.index ?? 0;
      hits.push(`${name}: «${text.slice(Math.max(0, at - 30), at + m[0].length + 30).replace(/\s+/g, ' ')}»`);
    }
  }
  return hits;
}

function status(): AppStatusDto {
  return {
    version: '0.1.0',
    mode: 'sandbox',
    database_path: '/tmp/t.db',
    emisor: null,
    pacs: { primary: { name: 'sandbox', pac: 'sandbox', environment: 'sandbox', url: '', user: '', has_credentials: true }, backup: null },
    drain: { concurrency: 2, max_tries: 5 },
    seat: { name: 'Soporte', role: 'soporte', confirmed: true },
    operator: { name: 'Soporte', role: 'contador' },
    database: { backend: 'sqlite', shown: '/tmp/t.db', source: 'environment', saved_postgres_url: null, has_password: false, restart_needed: false },
    drain_available: true,
    sandbox_pac_error: null,
    sandbox_fault: 'none',
    drain_error: null,
    drain_progress: null,
    startup_error: null,
  };
}

const ev = { code: 'resultado_desconocido', evidence_id: 7, evidence: 'pac_response: unknown timeout' } as const;

/** The seven strategy situations of the E2E suite, as verdicts. */
const SITUATIONS: [string, StrategyDto, Badge][] = [
  ['timeout after certify', reanudar, 'reanudar'],
  [
    'outage, failover',
    {
      badge: 'respaldo',
      reasons: [{ code: 'pac_no_disponible', evidence_id: 4, params: { pac: 'sandbox', outcome: 'not_sent', code: 'connection_refused' } }],
      actions: [
        action({ action: 'failover', allowed: true }),
        action({ action: 'retry', allowed: true, retry_mode: 'resume', alternative_refusal: { code: 'documento_correcto', evidence_id: 4, evidence: 'pac_response: not_sent' } }),
      ],
      fecha_at_risk: false,
      open_questions: [],
    },
    'respaldo',
  ],
  ['rejected Fecha', { ...reprocesar, reasons: [{ code: 'fecha_fuera_de_rango', evidence_id: 9, params: { pac: 'sandbox', code: '401', message: 'Fecha fuera de rango' } }] }, 'reprocesar'],
  [
    '307 without XML',
    {
      badge: 'finalizar',
      reasons: [{ code: 'cfdi_sin_datos', evidence_id: 5, params: { pac: 'finkok', outcome: 'already_stamped', code: '307' } }],
      actions: [action({ action: 'finalize', allowed: true }), action({ action: 'retry', refusal: { code: 'cfdi_existe', evidence_id: 5, evidence: 'pac_response: already_stamped 307' } })],
      fecha_at_risk: false,
      open_questions: [],
    },
    'finalizar',
  ],
  [
    'forced failover duplicate',
    {
      badge: 'duplicado',
      reasons: [{ code: 'dos_cfdi', evidence_id: 11, params: {} }],
      actions: [
        action({ action: 'decide_duplicate', allowed: true, roles: ['contador'] }),
        action({ action: 'retry', refusal: { code: 'duplicado_decide_contador', evidence_id: 11, evidence: 'pac_response: stamped' } }),
        action({ action: 'cancel', refusal: { code: 'decidir_duplicado_primero', evidence_id: 11, evidence: 'pac_response: stamped' }, roles: ['contador'] }),
      ],
      fecha_at_risk: false,
      open_questions: [],
    },
    'duplicado',
  ],
  [
    'Facturapi pending',
    { ...reanudar, reasons: [{ code: 'pendiente_en_pac', evidence_id: 6, params: { pac: 'facturapi', code: 'pending' } }] },
    'reanudar',
  ],
  [
    'tries exhausted',
    {
      badge: 'atencion',
      reasons: [{ code: 'max_intentos', evidence_id: 8, params: { pac: 'sandbox' } }],
      actions: [
        action({ action: 'retry', allowed: true, retry_mode: 'resume', alternative_refusal: { code: 'documento_correcto', evidence_id: 8, evidence: 'pac_response: unavailable' } }),
        action({ action: 'send_to_contador', allowed: true, roles: ['personal', 'soporte'] }),
        action({ action: 'force_failover', refusal: ev, roles: ['contador'] }),
        action({ action: 'reprocess_accepting_risk', refusal: { code: 'solo_con_resultado_desconocido', evidence_id: null, evidence: null }, roles: ['contador'] }),
        action({ action: 'verify_absent', refusal: { code: 'sin_pregunta_abierta', evidence_id: null, evidence: null }, roles: ['contador'] }),
        action({ action: 'record_found', refusal: { code: 'intento_sin_pregunta_abierta', evidence_id: null, evidence: null }, roles: ['contador'] }),
      ],
      fecha_at_risk: false,
      open_questions: [],
    },
    'atencion',
  ],
  [
    'rejection after an unknown outcome',
    {
      badge: 'atencion',
      reasons: [{ code: 'rechazo_tras_resultado_desconocido', evidence_id: 9, params: { attempt_no: 1, pac: 'sw', code: '401' } }],
      actions: [
        action({ action: 'retry', allowed: true, retry_mode: 'resume', alternative_refusal: { code: 'rechazo_tras_resultado_desconocido', evidence_id: 9, evidence: 'pac_response: rejected 401' } }),
        action({ action: 'reprocess_accepting_risk', allowed: true, roles: ['contador'] }),
        action({ action: 'force_failover', refusal: { code: 'respaldo_inutil_fecha_vencida', evidence_id: 9, evidence: 'pac_response: rejected 401' }, roles: ['contador'] }),
      ],
      fecha_at_risk: true,
      open_questions: [1],
    },
    'atencion',
  ],
  ['stamped', timbrada, 'timbrada'],
];

const attempt: AttemptInfo = {
  id: 1,
  attempt_no: 1,
  reason: 'initial',
  previous_attempt_id: null,
  pac: 'sandbox',
  body_format: 'xml',
  body_len: 4210,
  body_sha256: 'ab'.repeat(32),
  fecha: '2026-11-29T12:00:00',
  fecha_utc: '2026-11-29T18:00:00Z',
  fecha_source: 'occurred_at',
  pac_idempotency_key: 'timbra:pedido-4471:1',
  mapping_version: 1,
  no_certificado: null,
  pac_identity: null,
  resolution: 'open',
  resolved_at: null,
  created_at: '2026-11-29T18:00:00Z',
  created_by: { name: 'Soporte', role: 'soporte' },
} as AttemptInfo;

const timeline: TimelineEntry[] = [
  {
    at: '2026-11-30T12:00:05Z',
    source: 'evidence',
    ref_id: 2,
    kind: 'pac_response',
    actor: { name: 'app-32535', role: 'sistema' },
    detail: { attempt_id: 1, outcome: 'rejected', code: '401', message: 'Fecha fuera de rango', detail: { exchanges: [{ status: 401 }] } },
    said: [
      { code: 'outcome_rejected', params: { pac: 'sandbox' } },
      { code: 'answer_fecha_window', params: { pac: 'sandbox', code: '401' } },
    ],
  },
  {
    at: '2026-11-30T12:00:06Z',
    source: 'evidence',
    ref_id: 3,
    kind: 'cancellation',
    actor: { name: 'app-32535', role: 'sistema' },
    detail: { outcome: 'refused', code: 'no_cancelable', message: 'no cancelable' },
    said: [
      { code: 'outcome_refused', params: { pac: 'sandbox' } },
      { code: 'answer_cancel_not_cancelable', params: { pac: 'sandbox', code: 'no_cancelable' } },
    ],
  },
  {
    at: '2026-11-30T12:00:07Z',
    source: 'evidence',
    ref_id: 4,
    kind: 'pac_response',
    actor: { name: 'app-32535', role: 'sistema' },
    detail: { attempt_id: 1, outcome: 'unknown', message: 'HTTP 500: x', detail: { exchanges: [{ status: 500 }] } },
    said: [
      { code: 'outcome_unknown', params: { pac: 'sandbox' } },
      { code: 'transport_http_status', params: { status: '500' } },
    ],
  },
];

describe('no raw code is visible in Spanish mode', () => {
  test('the patterns catch what they must', () => {
    expect(rawCodes('Respuesta sin clasificar no_cancelable')).toHaveLength(1);
    expect(rawCodes('401: 401 -')).toHaveLength(1);
    expect(rawCodes('(evidencia #43: x)')).toHaveLength(1);
    expect(rawCodes('Reenvía los mismos bytes')).toHaveLength(1);
    expect(rawCodes('Timbra está confirmando con el PAC; no se duplicará. 12:00')).toHaveLength(0);
  });

  test.each(SITUATIONS)('Factura page: %s', async (_name, strategy, badge) => {
    setLocale('es-MX');
    session.set(status());
    mockIPC(
      (cmd) => {
        if (cmd === 'invoice_detail')
          return detail(strategy, {
            invoice: row(5, { badge, state: badge === 'timbrada' ? 'stamped' : 'pending' }),
            attempts: [attempt],
            timeline,
          });
        if (cmd === 'screening_check') return null;
        return null;
      },
      { shouldMockEvents: true },
    );
    const { container, unmount } = render(Factura, { id: 5 });
    await waitFor(() => expect(container.querySelector('[data-testid=strategy] [data-badge]')?.getAttribute('data-badge')).toBe(badge));
    // Open "¿Por qué no puedo…?": the refused actions' reasons are visible then.
    container.querySelectorAll<HTMLDetailsElement>('[data-testid=why-not]').forEach((d) => (d.open = true));
    const text = visibleText(container);
    // The scan reads the page: the timeline's answers and, but for a Timbrada, the next step.
    expect(text).toContain('La Fecha del documento está fuera de las 72 horas que acepta el SAT');
    if (badge !== 'timbrada') expect(container.querySelector('[data-testid=next-step]')?.textContent).toBeTruthy();
    expect(rawCodes(text)).toEqual([]);
    unmount();
  });

  test('Bandeja: every state in words, every next step', async () => {
    setLocale('es-MX');
    session.set(status());
    const badges: Badge[] = ['pendiente', 'reanudar', 'finalizar', 'respaldo', 'reprocesar', 'duplicado', 'atencion', 'timbrada', 'cancelada'];
    const reasons = ['pendiente', 'resultado_desconocido', 'cfdi_sin_datos', 'pac_no_disponible', 'fecha_fuera_de_rango', 'dos_cfdi', 'max_intentos', 'timbrada', 'todos_cancelados'];
    mockIPC(
      (cmd) => {
        if (cmd === 'invoice_counts')
          return { total: 9, by_state: { pending: 7, stamped: 2 }, by_badge: Object.fromEntries(badges.map((b) => [b, 1])), open_candidates: 0, pending_cancellations: 0 };
        if (cmd === 'list_invoices')
          return { items: badges.map((b, i) => row(i + 1, { badge: b, state_reason: reasons[i], possible_duplicate: b === 'timbrada' })), next: null };
        return null;
      },
      { shouldMockEvents: true },
    );
    const { container } = render(Bandeja);
    await waitFor(() => expect(container.querySelectorAll('a.tr[data-invoice-id]')).toHaveLength(9));
    expect(rawCodes(visibleText(container))).toEqual([]);
    const states = [...container.querySelectorAll('a.tr [data-badge]')].map((e) => e.textContent?.replace(/\s+/g, ' ').trim());
    expect(new Set(states)).toEqual(new Set(['En proceso', 'Rechazada', 'Necesita una decisión', 'Timbrada · posible duplicado', 'Cancelada']));
  });
});
