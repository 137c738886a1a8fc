import { mount } from 'svelte';
import App from './App.svelte';
import './app.css';

// Uncaught errors are kept (the last 50) so the E2E suite can assert there were none and
// print them when a flow fails.
type ErrorLog = { __TIMBRA_ERRORS__?: string[] };
const log: string[] = [];
(window as unknown as ErrorLog).__TIMBRA_ERRORS__ = log;
const keep = (msg: string) => {
  log.push(msg);
  if (log.length > 50) log.shift();
};
window.addEventListener('error', (e) => keep(`error: ${e.message}`));
window.addEventListener('unhandledrejection', (e) => keep(`rejection: ${String((e as PromiseRejectionEvent).reason)}`));
document.addEventListener('securitypolicyviolation', (e) => keep(`csp: ${e.violatedDirective} ${e.blockedURI}`));

const target = document.getElementById('app');
if (target) mount(App, { target });
