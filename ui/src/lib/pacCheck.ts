// Probar conexión's words: each step and each code a connection test answers
// (pac::account::CheckCode, generated), in es-MX and English, typed by the generated unions so
// a new code without words does not compile. `found` (another RFC, another certificate number)
// is added where the PAC named it.
import type { CheckCode } from './ipc/bindings/CheckCode';
import type { CheckStep } from './ipc/bindings/CheckStep';
import type { Locale } from './i18n/index.svelte';

type Words = Record<Locale, string>;

export const STEP_WORDS: Record<CheckStep, Words> = {
  credenciales: { 'es-MX': 'Credenciales', en: 'Credentials' },
  rfc: { 'es-MX': 'RFC de la cuenta', en: 'Account RFC' },
  csd: { 'es-MX': 'CSD', en: 'CSD' },
};

export const CODE_WORDS: Record<CheckCode, Words> = {
  credenciales_aceptadas: { 'es-MX': 'El PAC aceptó las credenciales.', en: 'The PAC accepted the credentials.' },
  credenciales_rechazadas: {
    'es-MX': 'El PAC rechazó el usuario, la contraseña o la llave. Cópielos de nuevo del portal del PAC (del ambiente elegido: pruebas o producción) y guárdelos.',
    en: 'The PAC refused the user, password or key. Copy them again from the PAC portal (of the chosen environment) and save them.',
  },
  sin_conexion: {
    'es-MX': 'No hubo conexión con el PAC. Revise la conexión a internet y la URL del PAC (déjela vacía para usar la del ambiente).',
    en: 'No connection to the PAC. Check the internet connection and the PAC URL (leave it empty for the environment’s).',
  },
  respuesta_inesperada: {
    'es-MX': 'El PAC contestó algo que Timbra no entiende o no contestó a tiempo. Intente de nuevo en unos minutos; si sigue, revise la URL del PAC.',
    en: 'The PAC gave an answer Timbra cannot read, or none in time. Try again in a few minutes; if it persists, check the PAC URL.',
  },
  rfc_coincide: { 'es-MX': 'La cuenta es del RFC del emisor.', en: 'The account is the emisor’s RFC.' },
  rfc_distinto: {
    'es-MX': 'La cuenta del PAC es de otro RFC. Use la llave o el usuario de la cuenta del emisor, o corrija el RFC del emisor.',
    en: 'The PAC account belongs to another RFC. Use the emisor’s account key or user, or correct the emisor’s RFC.',
  },
  rfc_no_registrado: {
    'es-MX': 'El RFC del emisor no está dado de alta en la cuenta del PAC. Agréguelo como cliente en el portal del PAC.',
    en: 'The emisor’s RFC is not registered in the PAC account. Add it as a customer in the PAC portal.',
  },
  rfc_suspendido: {
    'es-MX': 'El RFC del emisor está suspendido en la cuenta del PAC. Actívelo en el portal del PAC.',
    en: 'The emisor’s RFC is suspended in the PAC account. Activate it in the PAC portal.',
  },
  rfc_sin_consulta: {
    'es-MX': 'Este PAC no permite consultar el RFC de la cuenta; el primer timbrado lo confirmará.',
    en: 'This PAC offers no query of the account’s RFC; the first stamp will confirm it.',
  },
  csd_registrado: { 'es-MX': 'El PAC tiene el CSD del emisor.', en: 'The PAC holds the emisor’s CSD.' },
  csd_faltante: {
    'es-MX': 'El PAC no tiene el CSD del emisor. Súbalo (.cer, .key y contraseña) en el portal del PAC.',
    en: 'The PAC does not hold the emisor’s CSD. Upload it (.cer, .key and password) in the PAC portal.',
  },
  csd_distinto: {
    'es-MX': 'El PAC tiene otro certificado que el de Ajustes. Suba al portal del PAC el mismo CSD que usa Timbra.',
    en: 'The PAC holds another certificate than the one in Ajustes. Upload the same CSD Timbra uses to the PAC portal.',
  },
  csd_no_requerido: {
    'es-MX': 'Timbra sella el XML con el CSD de Ajustes: este PAC no necesita tenerlo.',
    en: 'Timbra seals the XML with the CSD in Ajustes: this PAC does not need it.',
  },
  no_comprobado: { 'es-MX': 'No se comprobó: falló un paso anterior.', en: 'Not checked: an earlier step failed.' },
};

const FAILURES: ReadonlySet<CheckCode> = new Set<CheckCode>([
  'credenciales_rechazadas',
  'sin_conexion',
  'respuesta_inesperada',
  'rfc_distinto',
  'rfc_no_registrado',
  'rfc_suspendido',
  'csd_faltante',
  'csd_distinto',
]);

/** Whether the step failed (mirrors CheckCode::is_failure). */
export function isFailure(code: CheckCode): boolean {
  return FAILURES.has(code);
}

/** What a step found, with what the PAC named (another RFC, another certificate). */
export function checkWords(code: CheckCode, found: string | null, locale: Locale): string {
  const text = CODE_WORDS[code][locale];
  if (!found || code === 'rfc_coincide' || code === 'csd_registrado') return text;
  const label = locale === 'en' ? 'The PAC holds' : 'El PAC tiene';
  return `${text} (${label}: ${found})`;
}

/**
 * Whether the PAC form's secret field may say *guardada*: only when the saved PAC is the one
 * the form shows (same PAC and environment) and a secret was saved for it. Choosing another PAC
 * or environment in the form shows an empty field.
 */
export function secretKept(
  saved: { pac: string; environment: string | null; has_credentials: boolean } | null | undefined,
  form: { pac: string; environment: string },
): boolean {
  return !!saved && saved.has_credentials && saved.pac === form.pac && saved.environment === form.environment;
}
