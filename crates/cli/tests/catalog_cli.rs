//! `timbra catalog …` as a user runs it: plain lines, JSON, exit codes.

#[path = "common/clock.rs"]
mod clock;

use std::process::Output;

fn timbra(args: &[&str]) -> Output {
    clock::command(env!("CARGO_BIN_EXE_timbra")).args(args).output().unwrap()
}

fn stdout(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// `timbra catalog search ARGS`: its first lines are exactly `first` (`code  description`).
fn check(args: &[&str], first: &[&str]) {
    let mut all = vec!["catalog", "search"];
    all.extend_from_slice(args);
    let text = stdout(&timbra(&all));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.starts_with(first), "{args:?}: expected {first:?} first, got {lines:?}");
}

#[test]
fn search_prints_code_and_description() {
    check(
        &["prodserv", "tortilla"],
        &[
            "52151909  Cacerolas para hacer tortillas para uso doméstico",
            "50221300  Harina y productos de molinos",
        ],
    );
    check(
        &["prodserv", "TORTÍLLA"],
        &["52151909  Cacerolas para hacer tortillas para uso doméstico"],
    );
    // Several words without quotes; all must match.
    check(
        &["prodserv", "tortillas", "de", "maíz"],
        &["50221300  Harina y productos de molinos"],
    );
    check(
        &["prodserv", "5019", "--limit", "2"],
        &["50191500  Sopas y estofados", "50191505  Sopas o sudados preparados fresco"],
    );
    check(&["unidad", "pieza"], &["H87  Pieza"]);
    check(&["cp", "42000"], &["42000  Pachuca de Soto, Hidalgo"]);
    check(&["regimen", "626"], &["626  Régimen Simplificado de Confianza"]);
    check(&["uso", "gastos", "en", "general"], &["G03  Gastos en general"]);
    check(&["forma-pago", "efectivo"], &["01  Efectivo"]);

    let text = stdout(&timbra(&["catalog", "search", "prodserv", "5019", "--limit", "3"]));
    assert_eq!(text.lines().count(), 3);
    // Nothing found: no lines, a note on stderr, success.
    let out = timbra(&["catalog", "search", "prodserv", "zzzzqqq"]);
    assert_eq!(stdout(&out), "");
    assert!(String::from_utf8_lossy(&out.stderr).contains("sin resultados"));
}

#[test]
fn search_json_is_an_array_of_entries() {
    let text = stdout(&timbra(&["catalog", "search", "cp", "4250", "--limit", "3", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 3);
    assert_eq!(arr[0]["code"], "42500");
    assert_eq!(arr[0]["catalogo"], "c_CodigoPostal");
    assert_eq!(arr[0]["detalle"]["estado"], "HID");
    assert_eq!(arr[0]["detalle"]["municipio_nombre"], "Actopan");
    let text = stdout(&timbra(&["catalog", "search", "unidad", "zzzzqqq", "--json"]));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), serde_json::json!([]));
}

#[test]
fn version_and_bad_arguments() {
    let text = stdout(&timbra(&["catalog", "version"]));
    assert!(text.contains("satcfdi 26.10.1") && text.contains("fecha: 2026-10-19"), "{text}");
    let out = timbra(&["catalog", "search", "planetas", "marte"]);
    assert_eq!(out.status.code(), Some(2));
    let out = timbra(&["catalog", "search", "prodserv"]);
    assert_eq!(out.status.code(), Some(2));
}
