// Messages for coded errors: the UI words every `AppError` code in the current locale, with its
// details; field errors are matched to form inputs by their path.
import type { FieldErrorDto } from './ipc/bindings/FieldErrorDto';
import type { UiError } from './ipc';
import { t, tDynamic } from './i18n/index.svelte';

export function errorMessage(e: UiError): string {
  switch (e.code) {
    case 'validation':
      return e.details.errors.length === 1
        ? `${fieldLabel(e.details.errors[0].field)}: ${fieldMessage(e.details.errors[0])}`
        : t('error.validation', { n: e.details.errors.length });
    case 'idempotency_conflict':
      return t('error.idempotency_conflict', { sale: e.details.sale_id });
    case 'idempotency_in_progress':
      return t('error.idempotency_in_progress', { s: e.details.retry_after_seconds });
    case 'csd':
      return `${t('error.csd')} ${tDynamic(`csd.${e.details.problem}`) ?? e.details.message}`;
    case 'csd_not_newer':
      return t('error.csd_not_newer', { no: e.details.no_certificado, current: e.details.current_no_certificado });
    case 'seal':
      return `${t('error.seal')} ${e.details.message}`;
    case 'not_found':
      return t('error.not_found', { id: e.details.id });
    case 'note_already_resolved':
      return t('error.note_already_resolved');
    case 'db_missing':
    case 'db_read_only':
    case 'db_locked':
    case 'db_corrupt':
    case 'db_too_new':
    case 'db_unavailable':
    case 'db_auth':
      return tDynamic(`error.${e.code}`, { path: e.details.path }) ?? e.code;
    case 'integrity':
    case 'db':
      return `${tDynamic(`error.${e.code}`) ?? e.code} ${e.details.message}`;
    case 'startup':
      return `${t('error.startup')} ${errorMessage(e.details.cause)}`;
    case 'credential_store':
      return `${t('error.credential_store')} ${e.details.message}`;
    case 'forbidden':
      return t('error.forbidden', { role: tDynamic(`role.${e.details.role}`) ?? e.details.role });
    case 'role_locked':
      // A role with a credential that is not unlocked now (never, expired, or spent by the
      // previous risky action); `call` has already offered the PIN prompt once.
      return t('error.role_locked', { role: tDynamic(`role.${e.details.role}`) ?? e.details.role, action: e.details.action });
    case 'contador_pin_missing':
      // Nobody acts as contador until the contador has a PIN (set in Ajustes with the CSD key's
      // password): no prompt can help, so the words say where to go.
      return t('error.contador_pin_missing');
    case 'db_full':
      return t('error.db_full', { path: e.details.path });
    case 'unsupported':
      return t('error.unsupported');
    case 'file':
      return t('error.file', { path: e.details.path, message: e.details.message });
    case 'action_refused':
      // The evidence rows it rests on stay in the details (the timeline's Detalle técnico shows
      // them); the words say what blocks the action.
      return t('error.action_refused', { reason: tDynamic(`refusal.${e.details.reason}`) ?? e.details.reason });
    case 'pac_has_open_attempts':
      return t('error.pac_has_open_attempts', { pac: e.details.pac, attempts: e.details.attempts, changed: e.details.changed });
    case 'ipc':
      return `${t('error.ipc')} ${e.details.message}`;
    case 'api_listen':
      return t('error.api_listen', { listen: e.details.listen, message: e.details.message });
    case 'pdf':
      return t('error.pdf', { uuid: e.details.uuid, message: e.details.message });
    case 'update':
      // Why an update was not checked or installed; a bad signature says nothing was installed.
      return tDynamic(`error.update.${e.details.problem}`, { detail: e.details.detail }) ?? e.details.detail;
    case 'not_configured':
    case 'csd_locked':
    case 'sandbox_only':
    case 'email_not_configured':
      return tDynamic(`error.${e.code}`) ?? e.code;
  }
}

/** The message for one field error: the UI's words for its code, else Rust's Spanish text. */
export function fieldMessage(f: FieldErrorDto): string {
  return tDynamic(`field.${f.code}`) ?? f.message;
}

/** A readable name for a field path (`conceptos[0].cantidad` → "Concepto 1 · Cantidad"). */
export function fieldLabel(path: string): string {
  const parts = path.split('.');
  return parts
    .map((p) => {
      const m = /^(\w+)\[(\d+)\]$/.exec(p);
      if (m) return `${tDynamic(`fieldname.${m[1]}`) ?? m[1]} ${Number(m[2]) + 1}`;
      return tDynamic(`fieldname.${p}`) ?? p;
    })
    .join(' · ');
}

/** Field errors whose path is `path` or lies under it. */
export function errorsFor(errors: FieldErrorDto[], path: string): FieldErrorDto[] {
  return errors.filter((e) => e.field === path || e.field.startsWith(`${path}.`) || e.field.startsWith(`${path}[`));
}
