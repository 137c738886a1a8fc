// What the Bandeja and the Factura page show of the strategy: the invoice's state in words
// (Timbrada, En proceso, Necesita una decisión, Rechazada, Cancelada), the next step as one
// sentence when a person can act, reasons in words, and each action button's state with what
// it will do for the business. The verdict itself comes from Rust (the evidence-derived
// strategy: its badge, resume / reprocess, evidence-gated); this only presents it: a button is
// enabled exactly when Rust says the action is allowed, hidden when the operator's role may
// never take it, and a disabled button says why in words; the evidence that decides it (its id,
// kind and outcome) goes to the technical detail. Rust re-checks every action anyway.
import type { ActionDto } from './ipc/bindings/ActionDto';
import type { ActionKindDto } from './ipc/bindings/ActionKindDto';
import type { Badge } from './ipc/bindings/Badge';
import type { ReasonDto } from './ipc/bindings/ReasonDto';
import type { RefusalDto } from './ipc/bindings/RefusalDto';
import type { Role } from './ipc/bindings/Role';
import type { StrategyDto } from './ipc/bindings/StrategyDto';
import { t, tDynamic } from './i18n/index.svelte';

export const ACTION_ORDER: readonly ActionKindDto[] = [
  'retry',
  'finalize',
  'failover',
  'send_to_contador',
  'force_failover',
  'reprocess_accepting_risk',
  'verify_absent',
  'record_found',
  'download_xml',
  'cancel',
  'decide_duplicate',
];

/**
 * Actions that need a written note: the contador's risk-accepting actions and records (what was
 * accepted or checked, and where), and what the contador should look at when an invoice is sent
 * to them.
 */
const NOTE_REQUIRED: readonly ActionKindDto[] = [
  'force_failover',
  'reprocess_accepting_risk',
  'verify_absent',
  'record_found',
  'send_to_contador',
];

export type Tone = 'ok' | 'info' | 'warn' | 'bad';

export function badgeTone(b: Badge): Tone {
  switch (b) {
    case 'timbrada':
      return 'ok';
    case 'cancelada':
      return 'info';
    case 'pendiente':
      return 'info';
    case 'reanudar':
    case 'finalizar':
    case 'respaldo':
      return 'warn';
    case 'reprocesar':
    case 'duplicado':
    case 'atencion':
      return 'bad';
  }
}

export function badgeLabel(b: Badge): string {
  return tDynamic(`badge.${b}`) ?? b;
}

/** The invoice's state in words, what a shopkeeper reads first. */
export type Situation = 'en_proceso' | 'en_espera' | 'decision' | 'rechazada' | 'timbrada' | 'cancelada';

/** The situations the Bandeja counts and filters by (a waiting ticket counts as En proceso). */
export type ListedSituation = Exclude<Situation, 'en_espera'>;

export const SITUATIONS: readonly ListedSituation[] = ['en_proceso', 'decision', 'rechazada', 'timbrada', 'cancelada'];

/** The badges behind each situation, in the order the Bandeja's filter lists them. */
export const SITUATION_BADGES: Record<ListedSituation, readonly Badge[]> = {
  en_proceso: ['pendiente', 'reanudar', 'finalizar', 'respaldo'],
  decision: ['atencion', 'duplicado'],
  rechazada: ['reprocesar'],
  timbrada: ['timbrada'],
  cancelada: ['cancelada'],
};

/** The situation of a verdict; a held Pendiente (a ticket kept for the factura global) waits. */
export function situationOf(b: Badge, state?: string | null): Situation {
  switch (b) {
    case 'pendiente':
      return state === 'held' ? 'en_espera' : 'en_proceso';
    case 'reanudar':
    case 'finalizar':
    case 'respaldo':
      return 'en_proceso';
    case 'reprocesar':
      return 'rechazada';
    case 'duplicado':
    case 'atencion':
      return 'decision';
    case 'timbrada':
      return 'timbrada';
    case 'cancelada':
      return 'cancelada';
  }
}

export function situationTone(s: Situation): Tone {
  switch (s) {
    case 'timbrada':
      return 'ok';
    case 'en_proceso':
    case 'en_espera':
    case 'cancelada':
      return 'info';
    case 'rechazada':
      return 'warn';
    case 'decision':
      return 'bad';
  }
}

export function situationLabel(s: Situation): string {
  return tDynamic(`situation.${s}`) ?? s;
}

/** A badge in the Bandeja's filter: its situation and, when the situation has several, which. */
export function badgeFilterLabel(b: Badge): string {
  const detail = tDynamic(`badge.detail.${b}`);
  const s = situationLabel(situationOf(b));
  return detail ? `${s} · ${detail}` : s;
}

/**
 * The next step as one sentence, only when there is one: what Timbra is doing about it or who
 * decides, and what that means for the business. `reason` is the verdict's first reason code
 * (the row's `state_reason` in the Bandeja).
 */
export function nextStep(b: Badge, reason: string | null | undefined, possibleDuplicate = false): string | null {
  const specific = reason ? tDynamic(`next.${b}.${reason}`) : null;
  if (specific) return specific;
  if (b === 'timbrada' && possibleDuplicate) return t('next.timbrada.posible_duplicado');
  return tDynamic(`next.${b}`);
}

function flatParams(params: unknown): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  if (params && typeof params === 'object') {
    for (const [k, v] of Object.entries(params as Record<string, unknown>)) {
      if (typeof v === 'string' || typeof v === 'number') out[k] = v;
      else if (v === null || v === undefined) out[k] = '';
      else out[k] = JSON.stringify(v);
    }
  }
  return out;
}

/** A reason for the badge in plain words (the code itself when the UI has no text for it). */
export function reasonText(r: ReasonDto): string {
  const text = tDynamic(`reason.${r.code}`, flatParams(r.params));
  if (text === null) return r.code;
  // Parameters the evidence did not have leave no empty "( )" or double spaces behind.
  return text.replace(/\(\s*\)/g, '').replace(/\s+([.,;:])/g, '$1').replace(/\s{2,}/g, ' ').trim();
}

/**
 * An evidence row as Rust names it (`kind: outcome code uuid`) in words: the kind and the
 * outcome class translated; the PAC's code and the UUID stay as they are.
 */
export function evidenceWords(text: string): string {
  const m = /^([a-z_]+)(?::\s*(.*))?$/.exec(text.trim());
  if (!m) return text;
  const kind = tDynamic(`timeline.${m[1]}`) ?? m[1];
  if (!m[2]) return kind;
  const [first, ...rest] = m[2].split(/\s+/);
  const outcome = tDynamic(`outcome.${first}`);
  return `${kind}: ${[outcome ?? first, ...rest].join(' ')}`;
}

/** Why an action is refused, in words (the evidence that decides it: [`refusalEvidence`]). */
export function refusalText(r: RefusalDto | null): string {
  if (!r) return t('refusal.generic');
  const base = tDynamic(`refusal.${r.code}`) ?? t('refusal.generic');
  // What it would mean for the business, where that is not plain from the reason.
  const risk = tDynamic(`refusal.risk.${r.code}`);
  return risk ? `${base} ${risk}` : base;
}

/** The evidence that decides a refusal, for the technical detail (`#7 · Respuesta del PAC: …`). */
export function refusalEvidence(r: RefusalDto | null): string | null {
  if (!r || r.evidence_id === null) return null;
  return t('refusal.evidence', { id: r.evidence_id, evidence: evidenceWords(r.evidence ?? '') });
}

export type ButtonState = {
  action: ActionKindDto;
  visible: boolean;
  enabled: boolean;
  label: string;
  /** What the action will do (enabled) or why it may not (disabled). */
  tooltip: string;
  /** The action needs a written note (the contador's forced failover). */
  needsNote: boolean;
  /** The evidence behind a refusal, for the technical detail only. */
  evidence: string[];
};

export function actionLabel(a: ActionDto | { action: ActionKindDto; retry_mode: ActionDto['retry_mode'] }): string {
  if (a.action === 'retry') {
    if (a.retry_mode === 'resume') return t('action.retry.resume');
    if (a.retry_mode === 'reprocess') return t('action.retry.reprocess');
    return t('action.retry');
  }
  return tDynamic(`action.${a.action}`) ?? a.action;
}

/** The state of every action button for `role`, in display order. */
export function buttonStates(strategy: StrategyDto, role: Role): ButtonState[] {
  return ACTION_ORDER.map((action) => {
    const dto = strategy.actions.find((a) => a.action === action);
    const visible = !!dto && dto.roles.includes(role);
    const enabled = visible && !!dto && dto.allowed;
    const label = dto ? actionLabel(dto) : actionLabel({ action, retry_mode: null });
    let tooltip = !dto
      ? ''
      : dto.allowed
        ? (tDynamic(`action.${action}${action === 'retry' && dto.retry_mode ? `.${dto.retry_mode}` : ''}.hint`) ?? label)
        : refusalText(dto.refusal);
    if (dto?.allowed && dto.alternative_refusal && dto.retry_mode) {
      // Reintentar resumes: say why it does not reprocess (and the reverse).
      const other = dto.retry_mode === 'resume' ? 'reprocess' : 'resume';
      tooltip = `${tooltip}. ${t(`retry.not.${other}`)} ${refusalText(dto.alternative_refusal)}`;
    }
    const evidence = [dto && !dto.allowed ? refusalEvidence(dto.refusal) : null, dto?.alternative_refusal ? refusalEvidence(dto.alternative_refusal) : null].filter(
      (e): e is string => !!e,
    );
    return { action, visible, enabled, label, tooltip, needsNote: NOTE_REQUIRED.includes(action), evidence };
  });
}
