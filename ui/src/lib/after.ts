// What follows Emitir and the counter: an invoice's name as a shopkeeper says it (Serie-Folio,
// "F-1042"; the serie alone, or the receptor, when there is no folio) and the short message
// for WhatsApp.
import { t } from './i18n/index.svelte';

type Named = { serie: string | null; folio: string | null; receptor_nombre: string };

/** `F-1042`; `F` (no folio); `1042` (no serie); else the receptor's name. */
export function invoiceName(inv: Named): string {
  const sf = [inv.serie, inv.folio].map((x) => (x ?? '').trim()).filter(Boolean);
  return sf.length ? sf.join('-') : inv.receptor_nombre;
}

/** The message for WhatsApp: the business, the invoice's name, its total and its UUID. */
export function whatsappText(p: { business: string; name: string; total: string; uuid: string }): string {
  return p.business
    ? t('after.whatsapp_text', { business: p.business, name: p.name, total: p.total, uuid: p.uuid })
    : t('after.whatsapp_text_no_business', { name: p.name, total: p.total, uuid: p.uuid });
}
