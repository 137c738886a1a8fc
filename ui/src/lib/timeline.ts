// The timeline in words (see components/Timeline.svelte): the phrases Rust derived from each
// entry's codes, the event facts with their coded values translated, who acted (the drain
// worker is "Timbra (automático)"), and the technical detail that stays folded.
import type { ActedBy } from './ipc/bindings/ActedBy';
import type { Phrase } from './ipc/bindings/Phrase';
import type { TimelineEntry } from './ipc/bindings/TimelineEntry';
import { t, tDynamic } from './i18n/index.svelte';

/** Event fields shown in words (their values translated when they are codes). */
const EVENT_FIELDS = ['fecha', 'pac', 'attempt_no', 'action', 'text', 'reason', 'fecha_reason', 'to', 'status', 'smtp_code', 'smtp_reply', 'endpoint', 'event_type', 'http_status', 'payment_sale_id', 'num_parcialidad', 'imp_pagado', 'imp_saldo_insoluto', 'global_sale_id', 'uuid'];

function show(v: unknown): string {
  if (Array.isArray(v)) return v.map(String).join(', ');
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** A coded value of an event field in words; the value itself when it is not a code. */
export function valueText(field: string, v: string): string {
  return (
    tDynamic(`timeline.value.${field}.${v}`) ??
    (field === 'action' ? tDynamic(`action.${v}`) : null) ??
    (field === 'reason' ? tDynamic(`attempt.${v}`) : null) ??
    v
  );
}

/** One phrase in words; a phrase without words says that the detail has it (never the code). */
export function phraseText(p: Phrase | { code: string; params: Record<string, string> }): string {
  if (p.code.startsWith('kind:')) {
    const kind = p.code.slice(5);
    return tDynamic(`timeline.${kind}`) ?? t('timeline.kind_other');
  }
  const params: Record<string, string> = { ...(p.params as Record<string, string>) };
  if (p.code === 'operator_action' && params.action) params.action = tDynamic(`action.${params.action}`) ?? params.action;
  return tDynamic(`timeline.say.${p.code}`, params) ?? t('timeline.say.other');
}

export function actorText(a: ActedBy): string {
  if (a.role === 'sistema') return t('timeline.actor.automatic');
  return `${a.name} · ${tDynamic(`role.${a.role}`) ?? a.role}`;
}

/** The facts of an event in words (tries and evidence say theirs in phrases). */
export function entryFacts(e: TimelineEntry): [string, string][] {
  if (e.source !== 'event' && e.source !== 'note') return [];
  const d = (e.detail ?? {}) as Record<string, unknown>;
  return EVENT_FIELDS.filter((k) => d[k] !== null && d[k] !== undefined && d[k] !== '').map((k) => [
    tDynamic(`timeline.field.${k}`) ?? k,
    typeof d[k] === 'string' ? valueText(k, d[k] as string) : show(d[k]),
  ]);
}

const MAX_TECH = 4000;

/** Everything the entry carries, raw, for the folded technical detail. */
export function technicalFacts(e: TimelineEntry): [string, string][] {
  const d = (e.detail ?? {}) as Record<string, unknown>;
  const out: [string, string][] = [['origen', `${e.source} #${e.ref_id} · ${e.kind}`]];
  if (e.actor.role === 'sistema') out.push(['actor', e.actor.name]);
  for (const [k, v] of Object.entries(d)) {
    if (v === null || v === undefined || v === '') continue;
    if (typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0) continue;
    let text = typeof v === 'object' ? JSON.stringify(v, null, 1) : String(v);
    if (text.length > MAX_TECH) text = `${text.slice(0, MAX_TECH)}…`;
    out.push([k, text]);
  }
  return out;
}
