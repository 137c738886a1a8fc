// The SAT page's small decisions, kept out of the component so vitest checks them: the period
// it proposes, whether a period can be sent, and the e.firma's state in words' keys.
import type { EFirmaDto } from './ipc/bindings/EFirmaDto';
import type { SatRequestDto } from './ipc/bindings/SatRequestDto';

/** The first day of `today`'s month (AAAA-MM-DD). */
export function monthStart(today: string): string {
  return /^\d{4}-\d{2}-\d{2}$/.test(today) ? `${today.slice(0, 8)}01` : today;
}

/** Why a period cannot be sent to SAT, or null when it can. */
export function periodProblem(desde: string, hasta: string, today: string): 'sat.period.format' | 'sat.period.order' | 'sat.period.future' | null {
  const ok = (d: string) => /^\d{4}-\d{2}-\d{2}$/.test(d) && !Number.isNaN(Date.parse(`${d}T00:00:00Z`));
  if (!ok(desde) || !ok(hasta)) return 'sat.period.format';
  if (desde > hasta) return 'sat.period.order';
  if (/^\d{4}-\d{2}-\d{2}$/.test(today) && hasta > today) return 'sat.period.future';
  return null;
}

export type EFirmaState = 'missing' | 'no_password' | 'expired' | 'expiring' | 'ok';

/** The e.firma's state: missing, its password not on this machine, expired, ending within 30 days, or fine. */
export function efirmaState(e: EFirmaDto | null): EFirmaState {
  if (!e) return 'missing';
  if (!e.vigente || e.days_left < 0) return 'expired';
  if (!e.password_kept) return 'no_password';
  return e.days_left <= 30 ? 'expiring' : 'ok';
}

/** Requests still moving first (newest first), then the settled ones (newest first). */
export function orderRequests(rs: SatRequestDto[]): SatRequestDto[] {
  return [...rs].sort((a, b) => Number(b.live) - Number(a.live) || b.id - a.id);
}

/** How many requests are still moving. */
export function liveCount(rs: SatRequestDto[]): number {
  return rs.filter((r) => r.live).length;
}
