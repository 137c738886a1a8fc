// es-MX first, English second. `t` reads the current locale (a rune), so every template that
// calls it re-renders on a switch. Fiscal terms (Fecha, UUID, PAC, CFDI, RFC, motivo) stay in
// Spanish in both catalogues. Missing English keys are a type error (en.ts is typed by es.ts).
import { es } from './es';
import { en } from './en';

export type Locale = 'es-MX' | 'en';
export type MessageKey = keyof typeof es;
type Params = Record<string, string | number>;

const catalogues: Record<Locale, Record<MessageKey, string>> = { 'es-MX': es, en };
const STORAGE_KEY = 'timbra.locale';

function initial(): Locale {
  try {
    return globalThis.localStorage?.getItem(STORAGE_KEY) === 'en' ? 'en' : 'es-MX';
  } catch {
    return 'es-MX';
  }
}

let current = $state<Locale>(initial());

function fill(text: string, params?: Params): string {
  if (!params) return text;
  return text.replace(/\{(\w+)\}/g, (m, k: string) => (k in params ? String(params[k]) : m));
}

/** The message for `key` in the current locale. */
export function t(key: MessageKey, params?: Params): string {
  return fill(catalogues[current][key], params);
}

/** The message for a key built at run time (`badge.${code}`), or null when there is none. */
export function tDynamic(key: string, params?: Params): string | null {
  const cat = catalogues[current] as Record<string, string>;
  return key in cat ? fill(cat[key], params) : null;
}

export function hasKey(key: string): boolean {
  return key in es;
}

export function getLocale(): Locale {
  return current;
}

export function setLocale(l: Locale): void {
  current = l;
  try {
    globalThis.localStorage?.setItem(STORAGE_KEY, l);
  } catch {
    /* a locked-down storage only loses the preference */
  }
  if (typeof document !== 'undefined') document.documentElement.lang = l;
}

/** Intl locale tag for dates and numbers. */
export function intlLocale(): string {
  return current === 'en' ? 'en-US' : 'es-MX';
}
