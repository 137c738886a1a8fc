// A tiny hash router: #/bandeja, #/factura/<id>, #/emitir, #/emitir/nc/<id> and
// #/emitir/sust/<id> (a credit note or a substitute of invoice <id>), #/ajustes and
// #/ajustes/<section> (one of Ajustes' pages: equipo, emisor, pac…), #/tablero,
// #/duplicados, #/global (factura global), #/mostrador (venta de mostrador), #/reportes,
// #/clientes, #/productos, #/sat (the SAT page), #/pagos and #/pagos/<id> (a payment starting with invoice <id>).
export type Route =
  | { page: 'bandeja' }
  | { page: 'factura'; id: number }
  | { page: 'emitir'; followUp?: { kind: 'credit_note' | 'substitute'; id: number } }
  | { page: 'ajustes'; section?: string }
  | { page: 'tablero' }
  | { page: 'duplicados' }
  | { page: 'global' }
  | { page: 'mostrador' }
  | { page: 'reportes' }
  | { page: 'clientes' }
  | { page: 'productos' }
  | { page: 'sat' }
  | { page: 'pagos'; invoice?: number };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean);
  switch (parts[0]) {
    case 'factura': {
      const id = Number(parts[1]);
      return Number.isInteger(id) && id > 0 ? { page: 'factura', id } : { page: 'bandeja' };
    }
    case 'emitir': {
      const kind = parts[1] === 'nc' ? 'credit_note' : parts[1] === 'sust' ? 'substitute' : null;
      const id = Number(parts[2]);
      return kind && Number.isInteger(id) && id > 0 ? { page: 'emitir', followUp: { kind, id } } : { page: 'emitir' };
    }
    case 'ajustes':
      return parts[1] && /^[a-z]+$/.test(parts[1]) ? { page: 'ajustes', section: parts[1] } : { page: 'ajustes' };
    case 'pagos': {
      const id = Number(parts[1]);
      return Number.isInteger(id) && id > 0 ? { page: 'pagos', invoice: id } : { page: 'pagos' };
    }
    case 'tablero':
    case 'duplicados':
    case 'global':
    case 'mostrador':
    case 'reportes':
    case 'clientes':
    case 'productos':
    case 'sat':
      return { page: parts[0] };
    default:
      return { page: 'bandeja' };
  }
}

export function href(r: Route): string {
  if (r.page === 'factura') return `#/factura/${r.id}`;
  if (r.page === 'emitir' && r.followUp) return `#/emitir/${r.followUp.kind === 'credit_note' ? 'nc' : 'sust'}/${r.followUp.id}`;
  if (r.page === 'ajustes' && r.section) return `#/ajustes/${r.section}`;
  if (r.page === 'pagos' && r.invoice) return `#/pagos/${r.invoice}`;
  return `#/${r.page}`;
}

let current = $state<Route>(parseRoute(typeof location === 'undefined' ? '' : location.hash));

if (typeof window !== 'undefined') {
  window.addEventListener('hashchange', () => {
    current = parseRoute(location.hash);
  });
}

export const router = {
  get route(): Route {
    return current;
  },
  go(r: Route): void {
    location.hash = href(r);
    current = r;
  },
};
