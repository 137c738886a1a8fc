// SAT's status of a CFDI in words: the Factura page's SAT column ("Vigente · consultado hace
// 5 min"), the answer of *Consultar al SAT*, and SAT not answering ("no se pudo consultar al SAT
// desde …, N intentos"). Pure functions of the DTOs and the clock, so vitest checks them.
import type { CfdiInfo } from './ipc/bindings/CfdiInfo';
import type { SatCheck } from './ipc/bindings/SatCheck';
import type { SatUnreachable } from './ipc/bindings/SatUnreachable';
import { formatDateTime } from './format';
import { t } from './i18n/index.svelte';

/** SAT's Estado from `cfdis.sat_status` (`estado · es_cancelable · estatus_cancelacion`). */
export function estadoOf(satStatus: string | null | undefined): string | null {
  const e = (satStatus ?? '').split('·')[0]?.trim();
  return e ? e : null;
}

/** "hace 5 min", "hace 2 h", "hace 3 días" (never in the future: "hace un momento"). */
export function ago(iso: string, now: Date): string {
  const ms = now.getTime() - new Date(iso).getTime();
  const min = Math.floor(ms / 60_000);
  if (min < 1) return t('sat.ago.now');
  if (min < 60) return t('sat.ago.min', { n: min });
  const h = Math.floor(min / 60);
  if (h < 48) return t('sat.ago.h', { n: h });
  return t('sat.ago.d', { n: Math.floor(h / 24) });
}

/** The SAT column of a CFDI: "Vigente · consultado hace 5 min", or "—" when never asked. */
export function satLine(c: Pick<CfdiInfo, 'sat_status' | 'sat_checked_at'>, now: Date): string {
  const estado = estadoOf(c.sat_status);
  if (!estado) return '—';
  if (!c.sat_checked_at) return estado;
  return t('sat.line', { estado, ago: ago(c.sat_checked_at, now) });
}

/** "no se pudo consultar al SAT desde 6 dic 2026 10:15, 3 intentos". */
export function unreachableWords(u: SatUnreachable): string {
  return t(Number(u.tries) === 1 ? 'sat.unreachable.one' : 'sat.unreachable', {
    since: formatDateTime(u.since, 'short'),
    n: Number(u.tries),
  });
}

/** What a live query said, for a person. */
export function checkWords(c: SatCheck): string {
  if (c.unreachable) return unreachableWords(c.unreachable);
  const s = c.status;
  if (!s) return '—';
  if (!c.found) return t('sat.not_found_yet');
  const parts = [s.estado];
  if (s.es_cancelable.trim()) parts.push(s.es_cancelable);
  if (s.estatus_cancelacion.trim()) parts.push(s.estatus_cancelacion);
  return parts.join(' · ');
}
