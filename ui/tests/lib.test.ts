import { describe, expect, test } from 'vitest';
import { ClickIdentity, emptyConcepto, hasRetencion, ivaOf, withIva, withRetencion } from '../src/lib/emit';
import { errorMessage, errorsFor, fieldLabel, fieldMessage } from '../src/lib/errors';
import { deadline, formatAmount } from '../src/lib/format';
import { toUiError, type UiError } from '../src/lib/ipc';
import { setLocale, t } from '../src/lib/i18n/index.svelte';
import { href, parseRoute } from '../src/lib/router.svelte';
import type { AppError } from '../src/lib/ipc/bindings/AppError';
import type { UpdateProblem } from '../src/lib/ipc/bindings/UpdateProblem';

// Every code Rust can send; `satisfies` makes a new AppError variant a type error here until
// it is listed (svelte-check runs over tests).
const SAMPLES = {
  validation: { code: 'validation', details: { errors: [{ field: 'receptor.rfc', code: 'rfc_invalido', message: 'x' }] } },
  idempotency_conflict: { code: 'idempotency_conflict', details: { key: 'k', sale_id: 's-1', invoice_id: 1 } },
  idempotency_in_progress: { code: 'idempotency_in_progress', details: { key: 'k', retry_after_seconds: 3 } },
  not_configured: { code: 'not_configured' },
  csd_locked: { code: 'csd_locked', details: { password_env: 'TIMBRA_CSD_PASSWORD' } },
  csd: { code: 'csd', details: { problem: 'wrong_password', message: 'x' } },
  csd_not_newer: {
    code: 'csd_not_newer',
    details: { no_certificado: '2', valid_to: '2027-05-18', current_no_certificado: '1', current_valid_to: '2027-05-18' },
  },
  seal: { code: 'seal', details: { message: 'm' } },
  not_found: { code: 'not_found', details: { what: 'invoice', id: '9' } },
  note_already_resolved: { code: 'note_already_resolved', details: { note_id: 1 } },
  db_missing: { code: 'db_missing', details: { path: '/p' } },
  db_read_only: { code: 'db_read_only', details: { path: '/p', detail: 'd' } },
  db_locked: { code: 'db_locked', details: { path: '/p', waited_ms: 1 } },
  db_corrupt: { code: 'db_corrupt', details: { path: '/p', detail: 'd' } },
  db_too_new: { code: 'db_too_new', details: { path: '/p', version: 9 } },
  db_unavailable: { code: 'db_unavailable', details: { path: '/p', detail: 'd' } },
  db_auth: { code: 'db_auth', details: { path: 'postgres://timbra@db:5432/timbra', detail: 'd' } },
  integrity: { code: 'integrity', details: { message: 'm' } },
  db: { code: 'db', details: { message: 'm' } },
  db_full: { code: 'db_full', details: { path: '/datos/timbra.db', detail: 'disco lleno' } },
  startup: { code: 'startup', details: { cause: { code: 'db_locked', details: { path: '/p', waited_ms: 1 } } } },
  credential_store: { code: 'credential_store', details: { message: 'm' } },
  forbidden: { code: 'forbidden', details: { action: 'save_pacs', role: 'personal' } },
  role_locked: { code: 'role_locked', details: { action: 'cancelar el CFDI', role: 'contador' } },
  contador_pin_missing: { code: 'contador_pin_missing', details: { action: 'cancelar el CFDI' } },
  unsupported: { code: 'unsupported', details: { feature: 'f' } },
  file: { code: 'file', details: { path: '/p', message: 'm' } },
  sandbox_only: { code: 'sandbox_only' },
  action_refused: { code: 'action_refused', details: { action: 'failover', reason: 'resultado_desconocido', evidence: [7, 8] } },
  pac_has_open_attempts: { code: 'pac_has_open_attempts', details: { pac: 'sw-pruebas', attempts: 2, changed: 'url' } },
  api_listen: { code: 'api_listen', details: { listen: '127.0.0.1:8787', message: 'Address in use' } },
  pdf: { code: 'pdf', details: { uuid: 'U-1', message: 'm' } },
  email_not_configured: { code: 'email_not_configured' },
  update: { code: 'update', details: { problem: 'bad_signature', detail: 'signature verification failed' } },
} satisfies { [C in AppError['code']]: Extract<AppError, { code: C }> };

// Every reason an update is refused; `satisfies` makes a new UpdateProblem a type error here.
const UPDATE_PROBLEMS = {
  not_configured: true,
  no_public_key: true,
  bad_url: true,
  unreachable: true,
  bad_manifest: true,
  bad_signature: true,
  version_changed: true,
  not_installable: true,
  install_failed: true,
} satisfies Record<UpdateProblem, true>;

describe('coded errors', () => {
  test.each(['es-MX', 'en'] as const)('every update problem has its own words in %s', (locale) => {
    setLocale(locale);
    const seen = new Set<string>();
    for (const problem of Object.keys(UPDATE_PROBLEMS) as UpdateProblem[]) {
      const msg = errorMessage({ code: 'update', details: { problem, detail: 'x' } });
      expect(msg, problem).not.toBe('x');
      expect(seen.has(msg), problem).toBe(false);
      seen.add(msg);
    }
    setLocale('es-MX');
  });

  test.each(['es-MX', 'en'] as const)('every AppError code has words in %s', (locale) => {
    setLocale(locale);
    for (const [code, e] of Object.entries(SAMPLES)) {
      const msg = errorMessage(e as AppError);
      expect(msg, code).not.toBe(code);
      expect(msg, code).not.toMatch(/\{\w+\}/);
    }
  });

  test('details fill the message', () => {
    expect(errorMessage(SAMPLES.idempotency_in_progress)).toBe('Esta venta se está registrando; vuelva a intentar en 3 s.');
    expect(errorMessage(SAMPLES.validation)).toBe('Receptor · RFC: No tiene la forma de un RFC.');
    expect(errorMessage(SAMPLES.csd)).toBe('El CSD no sirve: la contraseña de la llave es incorrecta.');
    expect(errorMessage(SAMPLES.forbidden)).toBe('Con el rol Personal no puede hacer esto.');
    expect(errorMessage(SAMPLES.role_locked)).toBe(
      'El rol Contador está bloqueado para cancelar el CFDI: escriba su PIN. Cada acción de riesgo lo pide de nuevo.',
    );
    expect(errorMessage(SAMPLES.contador_pin_missing)).toContain('Configure el PIN del contador en Ajustes');
    expect(errorMessage(SAMPLES.db_auth)).toBe(
      'El servidor de la base de datos postgres://timbra@db:5432/timbra rechazó el usuario o la contraseña.',
    );
    expect(errorMessage(SAMPLES.db_full)).toContain('El disco donde está la base de datos /datos/timbra.db está lleno');
    expect(errorMessage(SAMPLES.startup)).toContain('está ocupada');
    expect(errorMessage(SAMPLES.action_refused)).toBe(
      'No se puede ahora: El PAC pudo haber timbrado: un envío terminó sin respuesta clara y nada lo ha aclarado.',
    );
  });

  test('anything thrown that is not an AppError becomes `ipc`', () => {
    expect(toUiError(SAMPLES.db)).toBe(SAMPLES.db);
    const e: UiError = toUiError('command invoice_detail not allowed by ACL');
    expect(e).toEqual({ code: 'ipc', details: { message: 'command invoice_detail not allowed by ACL' } });
  });

  test('field errors: Rust code translated, else its Spanish text; paths made readable', () => {
    expect(fieldMessage({ field: 'x', code: 'requerido', message: 'm' })).toBe('Es obligatorio.');
    expect(fieldMessage({ field: 'x', code: 'otro', message: 'texto de Rust' })).toBe('texto de Rust');
    expect(fieldLabel('conceptos[0].valor_unitario')).toBe('Concepto 1 · Precio unitario');
    const errs = [
      { field: 'conceptos[0].cantidad', code: 'a', message: '' },
      { field: 'conceptos[1].cantidad', code: 'b', message: '' },
      { field: 'conceptos[10].cantidad', code: 'c', message: '' },
    ];
    expect(errorsFor(errs, 'conceptos[1]').map((e) => e.code)).toEqual(['b']);
    expect(errorsFor(errs, 'conceptos[1].cantidad').map((e) => e.code)).toEqual(['b']);
  });
});

describe('formatting', () => {
  test('amounts as strings, never through floats', () => {
    expect(formatAmount('15499')).toBe('$15,499.00');
    expect(formatAmount('1234567.5')).toBe('$1,234,567.50');
    expect(formatAmount('0.123456')).toBe('$0.123456');
    expect(formatAmount('99999999999999999.99')).toBe('$99,999,999,999,999,999.99');
    expect(formatAmount('-5.1', 'USD')).toBe('-$5.10 USD');
    expect(formatAmount('abc')).toBe('abc');
  });

  test('the 72-hour deadline', () => {
    const now = new Date('2026-11-30T00:00:00Z');
    expect(deadline('2026-11-30T10:30:00Z', now)).toEqual({ hoursLeft: 10, minutesLeft: 30, expired: false, atRisk: true });
    expect(deadline('2026-12-01T00:00:00Z', now)).toMatchObject({ hoursLeft: 24, atRisk: false, expired: false });
    expect(deadline('2026-11-29T23:00:00Z', now)).toMatchObject({ expired: true, atRisk: false });
  });
});

describe('Emitir helpers', () => {
  test('a click identity survives retries and is renewed only after success', async () => {
    let n = 0;
    let clock = 0;
    const id = new ClickIdentity(() => `n${++n}`);
    const now = async () => `2026-11-29T12:00:0${clock++}`;
    const a = await id.forSubmit(now);
    const b = await id.forSubmit(now);
    expect(b).toEqual(a);
    expect(a).toEqual({ saleId: 'emitir-n1', occurredAt: '2026-11-29T12:00:00' });
    id.succeeded();
    expect(id.current).toBeNull();
    expect(await id.forSubmit(now)).toEqual({ saleId: 'emitir-n2', occurredAt: '2026-11-29T12:00:01' });
  });

  test('a related sale records under the id Rust derived, kept across retries, then ids are random again', async () => {
    let n = 0;
    const id = new ClickIdentity(() => `n${++n}`);
    const now = async () => '2026-11-29T12:00:00';
    id.fix('nc-pedido-4471');
    expect((await id.forSubmit(now)).saleId).toBe('nc-pedido-4471');
    id.fix('nc-otra');
    expect((await id.forSubmit(now)).saleId).toBe('nc-pedido-4471');
    id.succeeded();
    expect((await id.forSubmit(now)).saleId).toBe('emitir-n1');
  });

  test('the default ids are unique', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const c = new ClickIdentity();
      ids.add((await c.forSubmit(async () => 'x')).saleId);
    }
    expect(ids.size).toBe(50);
  });

  test('IVA and retenciones edit only their own tax line', () => {
    let c = emptyConcepto();
    expect(ivaOf(c)).toBe('0.160000');
    c = withIva(c, '0.080000');
    expect(c.traslados).toEqual([{ impuesto: '002', tipo_factor: 'Tasa', tasa_o_cuota: '0.080000' }]);
    c = withRetencion(withRetencion(c, 'isr', true), 'iva', true);
    expect(hasRetencion(c, 'isr') && hasRetencion(c, 'iva')).toBe(true);
    c = withRetencion(c, 'isr', false);
    expect(c.retenciones).toEqual([{ impuesto: '002', tipo_factor: 'Tasa', tasa_o_cuota: '0.106667' }]);
  });
});

describe('routes and locale', () => {
  test('hash routes', () => {
    expect(parseRoute('#/factura/12')).toEqual({ page: 'factura', id: 12 });
    expect(parseRoute('#/factura/abc')).toEqual({ page: 'bandeja' });
    expect(parseRoute('#/ajustes')).toEqual({ page: 'ajustes' });
    expect(parseRoute('')).toEqual({ page: 'bandeja' });
    expect(parseRoute('#/emitir/nc/7')).toEqual({ page: 'emitir', followUp: { kind: 'credit_note', id: 7 } });
    expect(parseRoute('#/emitir/sust/7')).toEqual({ page: 'emitir', followUp: { kind: 'substitute', id: 7 } });
    expect(parseRoute('#/emitir/otro/7')).toEqual({ page: 'emitir' });
    expect(href({ page: 'emitir', followUp: { kind: 'credit_note', id: 7 } })).toBe('#/emitir/nc/7');
  });

  test('English switch keeps fiscal terms', () => {
    setLocale('en');
    expect(t('nav.bandeja')).toBe('Outbox');
    expect(t('emitir.uso')).toBe('Uso del CFDI');
    setLocale('es-MX');
    expect(t('nav.bandeja')).toBe('Bandeja');
  });
});
