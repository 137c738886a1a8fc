// The Reportes page's chart data: receptors ranked by their ingresos of the month, each bar a
// fraction of the largest amount shown. Amounts stay decimal strings for every label; the
// fractions only size the bars (drawing, never arithmetic on money).
import type { ReceptorLine } from './ipc/bindings/ReceptorLine';

export type ReceptorBar = {
  rfc: string;
  /** Bar lengths, 0–1 of the largest amount among the rows shown. */
  ingresos: number;
  pagos: number;
  ingresosText: string;
  pagosText: string;
};

export function receptorBars(lines: ReceptorLine[], limit: number): { rows: ReceptorBar[]; more: number } {
  const ranked = [...lines].sort((a, b) => Number(b.ingresos.importe) - Number(a.ingresos.importe) || a.rfc.localeCompare(b.rfc));
  const shown = ranked.slice(0, limit);
  const max = Math.max(0, ...shown.flatMap((l) => [Number(l.ingresos.importe), Number(l.pagos.importe)]));
  const share = (v: string) => (max > 0 ? Math.max(0, Number(v)) / max : 0);
  return {
    rows: shown.map((l) => ({
      rfc: l.rfc,
      ingresos: share(l.ingresos.importe),
      pagos: share(l.pagos.importe),
      ingresosText: l.ingresos.importe,
      pagosText: l.pagos.importe,
    })),
    more: ranked.length - shown.length,
  };
}
