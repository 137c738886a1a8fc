//! What [`crate::ipc_list`] generates inside the app: typed emitters for the events, the
//! capability file, the UI's `api`/`events` module, and the TypeScript of every type the surface
//! reaches. `tests/generated.rs` compares the rendered files with the committed ones.

use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet};

use cfdi::catalog::options::OpcionesFiscales;
use cfdi::catalog::Catalogo;
use cfdi::precio::PrecioSinIva;
use cfdi::report::MonthReport;
use cfdi::sale_draft::SaleDraft;
use outbox::backup_schedule::BackupPolicy;
use outbox::bulk::BulkRow;
use outbox::counter::{DayTickets, InvoiceAside};
use outbox::csd::CertificateInfo;
use outbox::csd_validity::CsdStanding;
use outbox::customers::{Customer, CustomerInput};
use outbox::dashboard::Dashboard;
use outbox::drain::DrainProgress;
use outbox::duplicates::{CancellationPreview, DuplicateGroup};
use outbox::follow_up::{FollowUpDraft, FollowUpKind};
use outbox::global_invoice::{GlobalInvoicePreview, GlobalInvoiceResult};
use outbox::logo::LogoInfo;
use outbox::master_csv::CsvImport;
use outbox::model::{Counts, InvoicePage, Note, Recorded};
use outbox::payments::{InvoiceBalance, PaymentPage};
use outbox::products::ProductInput;
use outbox::reconciliation::ImportReport;
use outbox::sat_reconcile::SatUnknownCfdi;
use outbox::sat_status::SatCheck;
use outbox::screening::{ScreeningImport, ScreeningStatus};
use outbox::settings::DrainSettings;
use outbox::workers::WorkerInfo;
use outbox::Role;
use pac::account::ConnectionReport;
use ts_rs::{Config, TypeVisitor, TS};

use crate::dto::*;
use crate::error::AppError;

/// One command as the UI calls it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub name: &'static str,
    /// (argument name, TypeScript type), in order.
    pub args: Vec<(&'static str, String)>,
    /// The TypeScript type of the answer.
    pub answer: String,
}

/// One event as the UI listens to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSpec {
    /// The Rust name (`invoice_changed`).
    pub key: &'static str,
    /// The name on the wire (`invoice-changed`).
    pub name: &'static str,
    pub payload: String,
    pub doc: &'static str,
}

/// The whole IPC surface, described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Surface {
    pub commands: Vec<CommandSpec>,
    pub events: Vec<EventSpec>,
    /// TypeScript name → binding file (relative to `bindings/`) of every named type a command
    /// or event mentions directly.
    pub imports: BTreeMap<String, String>,
}

/// ts-rs settings: ids are JavaScript numbers (they stay far below 2^53), not bigint.
pub fn config() -> Config {
    Config::new().with_large_int("number")
}

/// Adds the binding files `T` names directly: itself when it has one, else the types it wraps
/// (`Vec<WorkerInfo>` and `Option<SecretText>` name `WorkerInfo` and `SecretText`).
fn imports_of<T: TS + 'static + ?Sized>(cfg: &Config, out: &mut BTreeMap<String, String>) {
    struct Wrapped<'a>(&'a Config, &'a mut BTreeMap<String, String>);
    impl TypeVisitor for Wrapped<'_> {
        fn visit<U: TS + 'static + ?Sized>(&mut self) {
            imports_of::<U>(self.0, self.1);
        }
    }
    match T::output_path() {
        Some(p) => {
            out.insert(T::ident(cfg), p.display().to_string());
        }
        None => T::visit_generics(&mut Wrapped(cfg, out)),
    }
}

macro_rules! describe {
    (
        commands { $($name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty ;)* }
        events { $($(#[doc = $doc:literal])* $ev:ident = $evname:literal : $evty:ty ;)* }
    ) => {
        /// The surface as [`crate::ipc_list`] declares it.
        pub fn surface(cfg: &Config) -> Surface {
            let mut imports = BTreeMap::new();
            $($(imports_of::<$ty>(cfg, &mut imports);)* imports_of::<$ret>(cfg, &mut imports);)*
            $(imports_of::<$evty>(cfg, &mut imports);)*
            Surface {
                commands: vec![$(CommandSpec {
                    name: stringify!($name),
                    args: vec![$((stringify!($arg), <$ty as TS>::name(cfg))),*],
                    answer: <$ret as TS>::name(cfg),
                }),*],
                events: vec![$(EventSpec {
                    key: stringify!($ev),
                    name: $evname,
                    payload: <$evty as TS>::name(cfg),
                    doc: concat!($($doc),*),
                }),*],
                imports,
            }
        }

        /// Visits every type a command or event mentions (and the error every command may answer).
        fn visit_roots(v: &mut impl TypeVisitor) {
            v.visit::<AppError>();
            $($(v.visit::<$ty>();)* v.visit::<$ret>();)*
            $(v.visit::<$evty>();)*
        }

        /// Emits each event with its payload type (the only way the app emits one).
        pub mod emit {
            use super::*;
            use tauri::{AppHandle, Emitter};
            $(
                $(#[doc = $doc])*
                pub fn $ev(app: &AppHandle, payload: &$evty) {
                    if let Err(e) = app.emit($evname, payload) {
                        tracing::warn!(event = $evname, error = %e, "no se pudo avisar a la ventana");
                    }
                }
            )*
        }
    };
}

ipc_surface!(describe);

/// Collects every exportable type reachable from the surface, once each.
struct Collect<'a> {
    cfg: &'a Config,
    seen: BTreeSet<TypeId>,
    files: Vec<(String, String)>,
}

impl TypeVisitor for Collect<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if !self.seen.insert(TypeId::of::<T>()) {
            return;
        }
        if let Some(path) = T::output_path() {
            let text = T::export_to_string(self.cfg).unwrap_or_else(|e| format!("// ts-rs failed for {}: {e}\n", T::name(self.cfg)));
            self.files.push((path.display().to_string(), text));
        }
        T::visit_dependencies(self);
        T::visit_generics(self);
    }
}

/// (file under `ui/src/lib/ipc/bindings/`, contents) of every type the surface reaches, sorted.
pub fn bindings() -> Vec<(String, String)> {
    let cfg = config();
    let mut c = Collect {
        cfg: &cfg,
        seen: BTreeSet::new(),
        files: Vec::new(),
    };
    visit_roots(&mut c);
    let mut files = c.files;
    files.sort();
    files
}

fn kebab(name: &str) -> String {
    name.replace('_', "-")
}

fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for ch in name.chars() {
        if ch == '_' {
            upper = true;
        } else if upper {
            out.extend(ch.to_uppercase());
            upper = false;
        } else {
            out.push(ch);
        }
    }
    out
}

/// `capabilities/main.json`: the window may listen to events and call exactly the listed commands.
pub fn capability(s: &Surface) -> String {
    // The native file chooser answers a path and nothing else (no fs plugin is installed, so the
    // chosen path opens no file-system scope); Timbra's commands read the file, or write the
    // PDF where the save dialog answered (*PDF* after *Emitir*), checking the path as input.
    let mut permissions = vec![
        "core:event:allow-listen".to_string(),
        "core:event:allow-unlisten".to_string(),
        "dialog:allow-open".to_string(),
        "dialog:allow-save".to_string(),
    ];
    permissions.extend(s.commands.iter().map(|c| format!("allow-{}", kebab(c.name))));
    let json = serde_json::json!({
        "identifier": "main",
        "description": "What the console's one window may do: listen to Timbra's events, open the native file chooser and save dialog (which answer a path; Timbra's own commands read the file or write the PDF there) and call Timbra's own commands. No filesystem, shell, HTTP or other plugin access. Generated from src-tauri/src/ipc_list.rs.",
        "windows": ["main"],
        "permissions": permissions,
    });
    // A `Value` always serializes.
    let mut text = serde_json::to_string_pretty(&json).unwrap_or_default();
    text.push('\n');
    text
}

/// `ui/src/lib/ipc/index.ts`: one function per command and one listener per event.
pub fn typescript(s: &Surface) -> String {
    let mut t = String::new();
    t.push_str("// Generated from src-tauri/src/ipc_list.rs by `cargo test -p timbra-app --test generated`\n");
    t.push_str("// (TIMBRA_BLESS=1 rewrites it). Do not edit: change the list and regenerate.\n");
    t.push_str("import { call, on } from './call';\n");
    for (name, file) in &s.imports {
        let module = file.strip_suffix(".ts").unwrap_or(file);
        t.push_str(&format!("import type {{ {name} }} from './bindings/{module}';\n"));
    }
    t.push_str("\nexport * from './call';\n\n");
    t.push_str("export const api = {\n");
    for c in &s.commands {
        let params: Vec<String> = c.args.iter().map(|(a, ty)| format!("{}: {ty}", camel(a))).collect();
        let keys: Vec<String> = c.args.iter().map(|(a, _)| camel(a)).collect();
        let args = if keys.is_empty() {
            String::new()
        } else {
            format!(", {{ {} }}", keys.join(", "))
        };
        t.push_str(&format!(
            "  {}: ({}) => call<{}>('{}'{args}),\n",
            camel(c.name),
            params.join(", "),
            c.answer,
            c.name
        ));
    }
    t.push_str("};\n\nexport type Api = typeof api;\n\n");
    t.push_str("export const EVENTS = {\n");
    for e in &s.events {
        t.push_str(&format!("  {}: '{}',\n", camel(e.key), e.name));
    }
    t.push_str("} as const;\n\nexport const events = {\n");
    for e in &s.events {
        t.push_str(&format!("  /** {} */\n", e.doc.trim()));
        t.push_str(&format!(
            "  {k}: (cb: (payload: {p}) => void) => on<{p}>(EVENTS.{k}, cb),\n",
            k = camel(e.key),
            p = e.payload
        ));
    }
    t.push_str("};\n");
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_convert_for_each_side() {
        assert_eq!(camel("invoice_action"), "invoiceAction");
        assert_eq!(camel("local_now"), "localNow");
        assert_eq!(kebab("set_sandbox_fault"), "set-sandbox-fault");
    }

    #[test]
    fn optional_arguments_are_nullable_and_lists_import_their_items() {
        let s = surface(&config());
        let action = s.commands.iter().find(|c| c.name == "invoice_action").unwrap();
        assert_eq!(action.args[2], ("note", "string | null".to_string()));
        let workers = s.commands.iter().find(|c| c.name == "live_workers").unwrap();
        assert_eq!(workers.answer, "Array<WorkerInfo>");
        assert!(s.imports.contains_key("WorkerInfo"));
        let test = s.commands.iter().find(|c| c.name == "test_database").unwrap();
        assert_eq!(test.args[1], ("password", "SecretText | null".to_string()));
        let ts = typescript(&s);
        assert!(ts.contains("liveWorkers: () => call<Array<WorkerInfo>>('live_workers'),"));
        assert!(ts.contains("localNow: () => call<string>('local_now'),"));
    }
}
