import { mount } from 'svelte';
import App from './App.svelte';
import './app.css';
import { startTheme } from './lib/theme.svelte';

// Uncaught errors are kept (the last 50) so the E2E suite can assert there were none and
// print them when a flow fails.
type ErrorLog = { __TIMBRA_ERRORS__?: string[] };
const log: string[] = [];
(window as unknown as ErrorLog).__TIMBRA_ERRORS__ = log;
const keep = (msg: string) => {
  log.push(msg);
  if (log.length > 50) log.shift();
};
// "ResizeObserver loop completed with undelivered notifications" is the browser saying it
// deferred a resize callback to the next frame (the spec's own wording: not an error of the
// page); under a loaded CPU it comes and goes with layout timing, so it is not kept.
const BENIGN = [/^ResizeObserver loop (completed with undelivered notifications|limit exceeded)/];
window.addEventListener('error', (e) => {
  if (!BENIGN.some((b) => b.test(e.message ?? ''))) keep(`error: ${e.message}`);
});
window.addEventListener('unhandledrejection', (e) => keep(`rejection: ${String((e as PromiseRejectionEvent).reason)}`));
document.addEventListener('securitypolicyviolation', (e) => keep(`csp: ${e.violatedDirective} ${e.blockedURI}`));

// Light or dark before the first paint (the OS's unless chosen in Ajustes).
startTheme();

const target = document.getElementById('app');
if (target) mount(App, { target });
