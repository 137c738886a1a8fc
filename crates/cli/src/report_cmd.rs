//! `timbra report month AAAA-MM [--csv|--json] [--zip ARCHIVO.zip]`: the contador's month.
//!
//! Every figure comes from the stamped XMLs (`Outbox::month_report`, computed by
//! `cfdi::report`). `--zip` writes every stamped XML of the month named by its UUID, with its
//! PDF (`pdf::render`) beside it, in a ZIP written here (deflate via flate2, CRC-32 below).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use flate2::write::DeflateEncoder;
use flate2::Compression;

use cfdi::report::MonthReport;

use crate::shell::{failure, open, print_json, print_out, runtime};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum ReportCommand {
    /// El mes del contador: facturas, egresos, pagos y cancelaciones por RFC del receptor,
    /// totales de IVA por tasa y retenciones, y las PPD con saldo; todo de los XML timbrados.
    Month(MonthArgs),
}

#[derive(Args)]
pub struct MonthArgs {
    /// El mes, AAAA-MM.
    month: String,
    /// Imprime el reporte en CSV (una sección por tabla).
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    #[arg(long)]
    json: bool,
    /// Escribe un ZIP con cada XML del mes (UUID.xml) y su PDF (UUID.pdf).
    #[arg(long, value_name = "ARCHIVO.zip")]
    zip: Option<PathBuf>,
    /// Marca los PDF "SIN VALIDEZ FISCAL" (documentos de prueba o del simulador).
    #[arg(long)]
    sin_validez: bool,
}

fn parse_month(s: &str) -> Result<(i32, u32), Failure> {
    let bad = || Failure::invalid(format!("{s:?} no es un mes AAAA-MM"));
    let (y, m) = s.trim().split_once('-').ok_or_else(bad)?;
    let (y, m): (i32, u32) = (y.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if y.to_string().len() != 4 || !cfdi::report::valid_month(y, m) {
        return Err(bad());
    }
    Ok((y, m))
}

pub fn run(db: Option<&str>, cmd: ReportCommand) -> Result<u8, Failure> {
    let ReportCommand::Month(a) = cmd;
    let (year, month) = parse_month(&a.month)?;
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let report = o.month_report(year, month).await.map_err(|e| failure(e, ""))?;
        let docs = if a.zip.is_some() {
            o.month_documents(year, month).await.map_err(|e| failure(e, ""))?
        } else {
            vec![]
        };
        o.store().close().await;
        if let Some(path) = &a.zip {
            let mut entries = Vec::new();
            for d in &docs {
                let pdf = pdf::render(&d.xml, &pdf::RenderOptions { sandbox: a.sin_validez })
                    .map_err(|e| Failure::invalid(format!("el PDF del CFDI {} no se pudo generar: {e}", d.uuid)))?;
                entries.push((format!("{}.xml", d.uuid), d.xml.clone()));
                entries.push((format!("{}.pdf", d.uuid), pdf));
            }
            write_zip(path, &entries)?;
        }
        if a.json {
            print_json(&report)?;
        } else if a.csv {
            print_out(&cfdi::report::to_csv(&report))?;
        } else {
            let mut text = describe(&report);
            if let Some(path) = &a.zip {
                text.push_str(&format!("\nZIP: {} ({} CFDI, XML y PDF)", path.display(), docs.len()));
            }
            print_out(&text)?;
        }
        Ok(exit::OK)
    })
}

fn describe(r: &MonthReport) -> String {
    let mut s = format!("mes {:04}-{:02} (MXN; de los XML timbrados)", r.year, r.month);
    for (name, t) in [("ingresos", &r.ingresos), ("egresos", &r.egresos)] {
        s.push_str(&format!(
            "\n{name}: {} CFDI · subtotal {} · descuento {} · IVA 16% {} (base {}) · IVA 8% {} (base {}) · IVA 0% base {} · exento base {} · IVA retenido {} · ISR retenido {} · total {}",
            t.documentos, t.subtotal, t.descuento, t.iva16, t.base_iva16, t.iva8, t.base_iva8, t.base_iva0, t.base_iva_exento, t.iva_retenido, t.isr_retenido, t.total
        ));
    }
    let p = &r.pagos;
    s.push_str(&format!(
        "\npagos: {} CFDI · monto {} · IVA 16% {} (base {}) · IVA 8% {} (base {}) · IVA 0% base {} · exento base {} · IVA retenido {} · ISR retenido {}",
        p.documentos, p.monto, p.iva16, p.base_iva16, p.iva8, p.base_iva8, p.base_iva0, p.base_iva_exento, p.iva_retenido, p.isr_retenido
    ));
    s.push_str("\npor receptor:");
    for l in &r.por_receptor {
        s.push_str(&format!(
            "\n  {} {} · ingresos {} ({}) · egresos {} ({}) · pagos {} ({}) · cancelados {} ({})",
            l.rfc,
            l.nombre,
            l.ingresos.documentos,
            l.ingresos.importe,
            l.egresos.documentos,
            l.egresos.importe,
            l.pagos.documentos,
            l.pagos.importe,
            l.cancelados.documentos,
            l.cancelados.importe
        ));
    }
    s.push_str(&format!("\ncancelados: {}", r.cancelados.len()));
    for c in &r.cancelados {
        s.push_str(&format!(
            "\n  {} {} {} {} {}",
            c.uuid, c.tipo, c.fecha, c.receptor_rfc, c.importe_mxn
        ));
    }
    s.push_str(&format!("\nPPD con saldo al cierre: {}", r.ppd_con_saldo.len()));
    for o in &r.ppd_con_saldo {
        s.push_str(&format!(
            "\n  {} {} {} total {} {} · pagado {} · saldo {}",
            o.uuid, o.fecha, o.receptor_rfc, o.total, o.moneda, o.pagado, o.saldo
        ));
    }
    s
}

/// CRC-32 (IEEE 802.3, the one ZIP uses), bitwise.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A ZIP (deflate entries, no ZIP64: each entry and the whole archive under 4 GiB).
fn zip_bytes(entries: &[(String, Vec<u8>)]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    let too_big = || "el ZIP excede 4 GiB".to_string();
    for (name, data) in entries {
        let mut enc = DeflateEncoder::new(Vec::new(), Compression::default());
        enc.write_all(data).map_err(|e| e.to_string())?;
        let packed = enc.finish().map_err(|e| e.to_string())?;
        let crc = crc32(data);
        let offset = u32::try_from(out.len()).map_err(|_| too_big())?;
        let (csize, usize_) = (
            u32::try_from(packed.len()).map_err(|_| too_big())?,
            u32::try_from(data.len()).map_err(|_| too_big())?,
        );
        let name_len = u16::try_from(name.len()).map_err(|_| format!("nombre demasiado largo: {name}"))?;
        // Local file header: version 2.0, flag 0x0800 (UTF-8 names), deflate (8), DOS time 0.
        let header = |sig: u32, central_dir: bool| {
            let mut h = Vec::new();
            h.extend_from_slice(&sig.to_le_bytes());
            if central_dir {
                h.extend_from_slice(&20u16.to_le_bytes());
            }
            h.extend_from_slice(&20u16.to_le_bytes());
            h.extend_from_slice(&0x0800u16.to_le_bytes());
            h.extend_from_slice(&8u16.to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes());
            h.extend_from_slice(&0x21u16.to_le_bytes()); // 1980-01-01
            h.extend_from_slice(&crc.to_le_bytes());
            h.extend_from_slice(&csize.to_le_bytes());
            h.extend_from_slice(&usize_.to_le_bytes());
            h.extend_from_slice(&name_len.to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes());
            h
        };
        out.extend(header(0x0403_4b50, false));
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&packed);
        let mut c = header(0x0201_4b50, true);
        c.extend_from_slice(&0u16.to_le_bytes()); // comment
        c.extend_from_slice(&0u16.to_le_bytes()); // disk
        c.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
        c.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        c.extend_from_slice(&offset.to_le_bytes());
        c.extend_from_slice(name.as_bytes());
        central.push(c);
    }
    let cd_offset = u32::try_from(out.len()).map_err(|_| too_big())?;
    let cd: Vec<u8> = central.concat();
    let count = u16::try_from(entries.len()).map_err(|_| "más de 65535 archivos en el ZIP".to_string())?;
    out.extend_from_slice(&cd);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&u32::try_from(cd.len()).map_err(|_| too_big())?.to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    Ok(out)
}

fn write_zip(path: &Path, entries: &[(String, Vec<u8>)]) -> Result<(), Failure> {
    let bytes = zip_bytes(entries).map_err(Failure::invalid)?;
    std::fs::write(path, bytes).map_err(|e| Failure::invalid(format!("no se pudo escribir {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn the_zip_is_read_back_by_unzip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mes.zip");
        let xml = "<cfdi:Comprobante Total=\"1160.00\"/>".repeat(50).into_bytes();
        write_zip(
            &path,
            &[("A-UUID.xml".into(), xml.clone()), ("A-UUID.pdf".into(), vec![0, 1, 2, 255])],
        )
        .unwrap();
        let test = std::process::Command::new("unzip")
            .arg("-t")
            .arg(&path)
            .output()
            .expect("unzip is installed");
        assert!(test.status.success(), "{}", String::from_utf8_lossy(&test.stdout));
        let out = std::process::Command::new("unzip")
            .arg("-p")
            .arg(&path)
            .arg("A-UUID.xml")
            .output()
            .unwrap();
        assert_eq!(out.stdout, xml);
        let out = std::process::Command::new("unzip")
            .arg("-p")
            .arg(&path)
            .arg("A-UUID.pdf")
            .output()
            .unwrap();
        assert_eq!(out.stdout, vec![0, 1, 2, 255]);
    }

    #[test]
    fn months_are_parsed_strictly() {
        assert_eq!(parse_month("2026-12").unwrap(), (2026, 12));
        for bad in ["2026-13", "26-12", "2026/12", "diciembre"] {
            assert!(parse_month(bad).is_err(), "{bad}");
        }
    }
}
