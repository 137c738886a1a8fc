// The native file chooser (Tauri's dialog plugin): titles and filters in the UI's language,
// answers a path (or paths) and nothing else. The page hands the path to a Timbra command, which
// checks it and reads the file in Rust; the webview never reads the file system. A cancelled
// chooser answers null / [] and the page does nothing.
import { open } from '@tauri-apps/plugin-dialog';
import { t, type MessageKey } from './i18n/index.svelte';

/** What a page asks the person to choose. */
export type ChooserKind = 'clientes_csv' | 'productos_csv' | 'lista_69b' | 'cer' | 'key' | 'cfdis' | 'respaldo';

const SPEC: Record<ChooserKind, { title: MessageKey; filter: MessageKey; extensions: string[] }> = {
  clientes_csv: { title: 'chooser.clientes_csv', filter: 'chooser.filter_csv', extensions: ['csv', 'txt'] },
  productos_csv: { title: 'chooser.productos_csv', filter: 'chooser.filter_csv', extensions: ['csv', 'txt'] },
  lista_69b: { title: 'chooser.lista_69b', filter: 'chooser.filter_csv', extensions: ['csv', 'txt'] },
  cer: { title: 'chooser.cer', filter: 'chooser.filter_cer', extensions: ['cer'] },
  key: { title: 'chooser.key', filter: 'chooser.filter_key', extensions: ['key'] },
  cfdis: { title: 'chooser.cfdis', filter: 'chooser.filter_cfdis', extensions: ['xml', 'zip'] },
  respaldo: { title: 'chooser.respaldo', filter: 'chooser.filter_respaldo', extensions: ['db'] },
};

function options(kind: ChooserKind, multiple: boolean) {
  const s = SPEC[kind];
  return { title: t(s.title), filters: [{ name: t(s.filter), extensions: s.extensions }], multiple, directory: false };
}

/** One file: its path, or null when the person cancelled. */
export async function chooseFile(kind: ChooserKind): Promise<string | null> {
  const chosen = await open(options(kind, false));
  return typeof chosen === 'string' && chosen ? chosen : null;
}

/** Several files: their paths ([] when the person cancelled). */
export async function chooseFiles(kind: ChooserKind): Promise<string[]> {
  const chosen = await open(options(kind, true));
  if (Array.isArray(chosen)) return chosen.filter((p) => typeof p === 'string' && p);
  return typeof chosen === 'string' && chosen ? [chosen] : [];
}

/** The file name of a chosen path, to show beside the button. */
export function fileName(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}
