// Display formatting. Amounts arrive as decimal strings and are formatted as strings (never
// through floats); instants arrive as RFC 3339 UTC.
import { intlLocale } from './i18n/index.svelte';

/** "15499.5" → "$15,499.50" (grouping and two decimals at least; more decimals kept). */
export function formatAmount(amount: string, moneda = 'MXN'): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(amount.trim());
  if (!m) return amount;
  const [, sign, int, frac = ''] = m;
  const grouped = int.replace(/^0+(?=\d)/, '').replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const decimals = frac.length >= 2 ? frac : frac.padEnd(2, '0');
  const symbol = moneda === 'MXN' || moneda === 'USD' ? '$' : '';
  const suffix = moneda === 'MXN' ? '' : ` ${moneda}`;
  return `${sign}${symbol}${grouped}.${decimals}${suffix}`;
}

export function formatDateTime(iso: string | null | undefined, style: 'medium' | 'short' = 'medium'): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return new Intl.DateTimeFormat(intlLocale(), { dateStyle: style, timeStyle: 'short' }).format(d);
}

/** A CFDI Fecha (local time at LugarExpedicion, `AAAA-MM-DDThh:mm:ss`) for reading. */
export function formatFecha(fecha: string): string {
  return fecha.replace('T', ' ');
}

export type Deadline = { hoursLeft: number; minutesLeft: number; expired: boolean; atRisk: boolean };

/** How much of SAT's 72-hour window is left; at risk under 12 hours. */
export function deadline(deadlineIso: string, now: Date): Deadline {
  const ms = new Date(deadlineIso).getTime() - now.getTime();
  const minutes = Math.floor(ms / 60000);
  return {
    hoursLeft: Math.floor(minutes / 60),
    minutesLeft: ((minutes % 60) + 60) % 60,
    expired: ms <= 0,
    atRisk: ms > 0 && ms < 12 * 3600 * 1000,
  };
}

export function shortHash(h: string): string {
  return h.length > 12 ? `${h.slice(0, 12)}…` : h;
}
