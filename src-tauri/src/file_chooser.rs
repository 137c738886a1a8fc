//! The native file chooser and what a chosen path may be: the window asks Tauri's dialog plugin
//! for a path (the only plugin permissions it holds are `dialog:allow-open` and, for *PDF*'s
//! save dialog, `dialog:allow-save`), hands the path to a
//! Timbra command, and that command reads the file here — the webview never reads the file
//! system itself.
//!
//! A path from the window is treated like input to a public API: it must be absolute, without
//! `.`/`..` steps or control characters, end in one of the extensions the command expects, and
//! name a regular file within the command's size limit (read by
//! [`outbox::file_input::read_bounded`], the reader the CLI uses). Each refusal is a
//! a validation error naming the form's field with a stable code; nothing is written.
//!
//! **Test seam (E2E only):** WebDriver cannot drive a native dialog. When the environment names
//! [`E2E_CHOOSER_ENV`] (only `tests/e2e/harness.rs` sets it), the dialog plugin is replaced by a
//! stand-in with the same name and commands that answers from that file instead of opening a
//! window: its lines are the chosen paths (empty or absent: the person cancelled), each answer is
//! used once, and every request (title, filters) is appended as a JSON line to the same path
//! with `.pedidos` added, so a flow can check the words the chooser showed.

use std::path::{Component, Path, PathBuf};

use tauri::plugin::TauriPlugin;
use tauri::Runtime;

use crate::error::AppError;

/// The environment variable of the E2E stand-in (see the module docs). Test-only.
pub const E2E_CHOOSER_ENV: &str = "TIMBRA_E2E_FILE_CHOOSER";

/// Tauri's dialog plugin, or the E2E stand-in when [`E2E_CHOOSER_ENV`] is set.
pub fn plugin<R: Runtime>() -> TauriPlugin<R> {
    match std::env::var_os(E2E_CHOOSER_ENV).filter(|v| !v.is_empty()) {
        Some(answers) => {
            tracing::warn!(file = ?answers, "selector de archivos de prueba (E2E): no se abre ningún diálogo");
            e2e_stand_in::plugin(PathBuf::from(answers))
        }
        None => tauri_plugin_dialog::init(),
    }
}

/// What a command accepts from the chooser: the form field it reports under, the extensions
/// (lower case, no dot) and the size limit.
#[derive(Debug, Clone, Copy)]
pub struct Accept {
    pub field: &'static str,
    pub extensions: &'static [&'static str],
    pub max_bytes: u64,
}

/// A file read from a chosen path: its name (for labels and reports) and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

fn refuse(field: &str, code: &'static str, message: String) -> AppError {
    AppError::validation(field, code, message)
}

/// Checks `path` as the window sent it and reads the file.
pub fn read_chosen(path: &str, accept: Accept) -> Result<ChosenFile, AppError> {
    let field = accept.field;
    let shown: String = path.chars().filter(|c| !c.is_control()).take(300).collect();
    if path.trim().is_empty() {
        return Err(refuse(field, "requerido", "elija un archivo".into()));
    }
    if path.chars().any(char::is_control) {
        return Err(refuse(
            field,
            "ruta_invalida",
            format!("la ruta {shown} trae caracteres de control"),
        ));
    }
    let p = Path::new(path);
    if !p.is_absolute() || p.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)) {
        return Err(refuse(
            field,
            "ruta_invalida",
            format!("la ruta {shown} no es absoluta o tiene pasos . o .."),
        ));
    }
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = p.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    if !accept.extensions.contains(&ext.as_str()) {
        return Err(refuse(
            field,
            "archivo_extension",
            format!("{name}: se espera un archivo .{}", accept.extensions.join(", .")),
        ));
    }
    let bytes = outbox::file_input::read_bounded(p, accept.max_bytes).map_err(|e| refuse(field, e.code(), format!("{shown}: {e}")))?;
    Ok(ChosenFile { name, bytes })
}

/// The E2E stand-in of the dialog plugin (see the module docs).
mod e2e_stand_in {
    use std::io::Write;
    use std::path::PathBuf;

    use tauri::plugin::{Builder, TauriPlugin};
    use tauri::{Manager, Runtime, State};

    struct Answers(PathBuf);

    /// Logs the request, then takes (and clears) the queued answer: its non-empty lines.
    fn take(answers: &Answers, kind: &str, options: &serde_json::Value) -> Vec<String> {
        let mut log = answers.0.clone().into_os_string();
        log.push(".pedidos");
        let line = serde_json::json!({ "kind": kind, "options": options });
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(PathBuf::from(log)) {
            let _ = writeln!(f, "{line}");
        }
        let text = std::fs::read_to_string(&answers.0).unwrap_or_default();
        let _ = std::fs::write(&answers.0, "");
        text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
    }

    #[tauri::command]
    fn open(answers: State<'_, Answers>, options: serde_json::Value) -> serde_json::Value {
        let chosen = take(&answers, "open", &options);
        let multiple = options.get("multiple").and_then(serde_json::Value::as_bool).unwrap_or(false);
        match (chosen.first(), multiple) {
            (None, _) => serde_json::Value::Null,
            (Some(_), true) => serde_json::json!(chosen),
            (Some(first), false) => serde_json::json!(first),
        }
    }

    #[tauri::command]
    fn save(answers: State<'_, Answers>, options: serde_json::Value) -> Option<String> {
        take(&answers, "save", &options).into_iter().next()
    }

    pub fn plugin<R: Runtime>(answers: PathBuf) -> TauriPlugin<R> {
        Builder::new("dialog")
            .invoke_handler(tauri::generate_handler![open, save])
            .setup(move |app, _| {
                app.manage(Answers(answers));
                Ok(())
            })
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: Accept = Accept {
        field: "archivo",
        extensions: &["csv", "txt"],
        max_bytes: 16,
    };

    fn code(r: Result<ChosenFile, AppError>) -> String {
        match r {
            Err(e) if e.field_errors().is_some() => {
                let errors = e.field_errors().unwrap_or_default();
                assert_eq!(errors[0].field, "archivo");
                errors[0].code.to_string()
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn reads_a_chosen_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("Clientes.CSV");
        std::fs::write(&p, "rfc,nombre\n").unwrap();
        let f = read_chosen(p.to_str().unwrap(), CSV).unwrap();
        assert_eq!((f.name.as_str(), f.bytes.as_slice()), ("Clientes.CSV", b"rfc,nombre\n".as_slice()));
    }

    #[test]
    fn refuses_surprising_paths_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        std::fs::write(&p, "x").unwrap();
        let inside = p.to_str().unwrap();
        assert_eq!(code(read_chosen("", CSV)), "requerido");
        assert_eq!(code(read_chosen("c.csv", CSV)), "ruta_invalida");
        let dotted = format!(
            "{}/../{}/c.csv",
            dir.path().display(),
            dir.path().file_name().unwrap().to_string_lossy()
        );
        assert_eq!(code(read_chosen(&dotted, CSV)), "ruta_invalida");
        assert_eq!(code(read_chosen(&format!("{inside}\n"), CSV)), "ruta_invalida");
        assert_eq!(code(read_chosen("/etc/passwd", CSV)), "archivo_extension");
        assert_eq!(
            code(read_chosen(&format!("{}/nada.csv", dir.path().display()), CSV)),
            "archivo_inexistente"
        );
        std::fs::create_dir(dir.path().join("carpeta.csv")).unwrap();
        assert_eq!(
            code(read_chosen(&format!("{}/carpeta.csv", dir.path().display()), CSV)),
            "archivo_carpeta"
        );
        std::fs::write(&p, "0123456789abcdefg").unwrap();
        assert_eq!(code(read_chosen(inside, CSV)), "archivo_muy_grande");
        // Windows: no /dev/zero to link to (symlinks need a privilege there); the regular-file
        // check is the same code.
        #[cfg(unix)]
        {
            let link = dir.path().join("cero.csv");
            std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
            assert_eq!(code(read_chosen(link.to_str().unwrap(), CSV)), "archivo_no_regular");
        }
    }
}
