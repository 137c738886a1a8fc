//! Writes sample PDFs (and their stamped XML) into a folder, to look at them:
//! `cargo run -p timbra-pdf --example samples -- /tmp/timbra-pdf`.
//! Uses the test generators: SAT's test CSD and the PAC simulator, in-process.

#[path = "../tests/common/mod.rs"]
mod common;

fn sample(name: &str) -> String {
    String::from_utf8(common::read(&format!("cfdi/samples/{name}"))).unwrap_or_default()
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "/tmp/timbra-pdf".into()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("{}: {e}", dir.display());
        std::process::exit(1);
    }
    let samples = [
        ("ingreso", common::ingreso(), false),
        ("ingreso-sandbox", common::ingreso(), true),
        ("egreso", common::egreso(), false),
        ("pago", common::pago(), false),
        ("usd", common::usd(), false),
        ("retenciones", common::retenciones(), false),
        ("300-conceptos", common::many(300), true),
        ("descuentos-otro-pac", sample("timbrado-ingreso-descuentos-eku.xml"), false),
    ];
    for (name, xml, sandbox) in samples {
        let started = std::time::Instant::now();
        let bytes = common::render(&xml, sandbox);
        let took = started.elapsed();
        let write = |ext: &str, data: &[u8]| {
            let path = dir.join(format!("{name}.{ext}"));
            std::fs::write(&path, data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        };
        write("xml", xml.as_bytes());
        write("pdf", &bytes);
        println!("{name}: {} bytes, {:.1} ms", bytes.len(), took.as_secs_f64() * 1000.0);
    }
}
