// The strategy's reason and refusal codes (generated from Rust) must each have words in the
// Spanish catalogue — and so in English, which is typed by it. A code without text is a type
// error here that names the missing key (`npm run check` runs in `make test`).
import type { ReasonCode } from '../ipc/bindings/ReasonCode';
import type { RefusalCode } from '../ipc/bindings/RefusalCode';
import type { es } from './es';

type Missing<K extends string> = Exclude<K, keyof typeof es>;

export const everyReasonHasText: [Missing<`reason.${ReasonCode}`>] extends [never] ? true : Missing<`reason.${ReasonCode}`> = true;
export const everyRefusalHasText: [Missing<`refusal.${RefusalCode}`>] extends [never] ? true : Missing<`refusal.${RefusalCode}`> = true;
