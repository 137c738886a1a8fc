// A tiny hash router: #/bandeja, #/factura/<id>, #/emitir, #/ajustes, #/tablero, #/duplicados,
// #/global (factura global), #/reportes.
export type Route =
  | { page: 'bandeja' }
  | { page: 'factura'; id: number }
  | { page: 'emitir' }
  | { page: 'ajustes' }
  | { page: 'tablero' }
  | { page: 'duplicados' }
  | { page: 'global' }
  | { page: 'reportes' };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean);
  switch (parts[0]) {
    case 'factura': {
      const id = Number(parts[1]);
      return Number.isInteger(id) && id > 0 ? { page: 'factura', id } : { page: 'bandeja' };
    }
    case 'emitir':
    case 'ajustes':
    case 'tablero':
    case 'duplicados':
    case 'global':
    case 'reportes':
      return { page: parts[0] };
    default:
      return { page: 'bandeja' };
  }
}

export function href(r: Route): string {
  return r.page === 'factura' ? `#/factura/${r.id}` : `#/${r.page}`;
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
