// What the Factura page shows of the strategy : badge tone, reasons in words, and
// each action button's state. The verdict itself comes from Rust (the evidence-derived
// strategy); this only presents it: a button is enabled exactly when Rust says the action is
// allowed, hidden when the operator's role may never take it, and a disabled button's tooltip
// names the evidence that refuses it. Rust re-checks every action anyway.
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

/** Why an action is refused, naming the evidence that decides it. */
export function refusalText(r: RefusalDto | null): string {
  if (!r) return t('refusal.generic');
  const base = tDynamic(`refusal.${r.code}`) ?? r.code;
  if (r.evidence_id === null) return base;
  return `${base} ${t('refusal.evidence', { id: r.evidence_id, evidence: evidenceWords(r.evidence ?? '') })}`.trim();
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
    return { action, visible, enabled, label, tooltip, needsNote: NOTE_REQUIRED.includes(action) };
  });
}
