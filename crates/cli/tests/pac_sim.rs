//! `timbra pac-sim` as a separate process: it prints its URL first, a third-party client
//! stamps through SW's documented endpoint, SIGTERM stops it cleanly, and a restart with the
//! same `--state-dir` remembers the ledger.

#[path = "common/clock.rs"]
mod clock;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use cfdi::csd::{Certificate, Csd};
use cfdi::sale::{EmisorProfile, Sale};
use cfdi::secret::Secret;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{FIX}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Starts the binary and returns it with its base URL (read from the first stdout line).
fn spawn(state_dir: &std::path::Path) -> (Child, String) {
    let mut child = clock::command(env!("CARGO_BIN_EXE_timbra"))
        .args([
            "pac-sim",
            "--listen",
            "127.0.0.1:0",
            "--flavor",
            "sw",
            "--faults",
            "latency_ms=0..5,sw_307_status=400",
            "--state-dir",
        ])
        .arg(state_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut first).unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line: {first:?}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (child, url)
}

fn terminate(mut child: Child) -> std::process::ExitStatus {
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    for _ in 0..100 {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("pac-sim did not stop on SIGTERM");
}

#[tokio::test]
async fn pac_sim_serves_a_third_party_sw_client_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (child, url) = spawn(dir.path());
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();

    // A Fecha inside the 72-hour window of the simulator's clock.
    let clock: Value = http.get(format!("{url}/_sim/clock")).send().await.unwrap().json().await.unwrap();
    let now: chrono::DateTime<chrono::Utc> = clock["now"].as_str().unwrap().parse().unwrap();
    let sale = Sale::from_json(&read("sales/ingreso-pedido-4471.json")).unwrap();
    let emisor: EmisorProfile = toml::from_str(&String::from_utf8(read("sales/emisor-eku.toml")).unwrap()).unwrap();
    let csd = Csd::load(
        &read("cfdi/certs/EKU9003173C9.cer"),
        &read("cfdi/certs/EKU9003173C9.key"),
        &Secret::new("12345678a"),
    )
    .unwrap();
    let fecha = cfdi::tz::local_at(now - chrono::Duration::minutes(30), &emisor.lugar_expedicion);
    let xml = cfdi::build(&sale, &emisor, fecha, Some(&csd)).unwrap().to_xml();

    // SW's documented stamp V4 call: multipart field `xml`, bearer token, customid header.
    let form = reqwest::multipart::Form::new().part(
        "xml",
        reqwest::multipart::Part::text(xml.clone())
            .file_name("xml")
            .mime_str("text/xml")
            .unwrap(),
    );
    let resp = http
        .post(format!("{url}/v4/cfdi33/stamp/v4"))
        .header("Authorization", "bearer sim-token-infinito")
        .header("customid", "pedido-4471")
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["status"], "success", "{body}");
    let uuid = body["data"]["uuid"].as_str().unwrap().to_string();
    let doc = cfdi::xml::Document::parse(body["data"]["cfdi"].as_str().unwrap().as_bytes()).unwrap();
    let der = http
        .get(format!("{url}/_sim/certificate"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let verification = cfdi::seal::verify(&doc, Some(&Certificate::from_der(&der).unwrap()));
    assert!(verification.is_valid(), "{verification:?}");

    let status = terminate(child);
    assert!(status.success(), "graceful exit on SIGTERM: {status:?}");

    // Restarted on the same state dir: same ledger, and the same bytes are a 307.
    let (child, url) = spawn(dir.path());
    let ledger: Value = http.get(format!("{url}/_sim/ledger")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ledger["count"], 1);
    assert_eq!(ledger["cfdis"][0]["uuid"], uuid.as_str());
    let form = reqwest::multipart::Form::new().part(
        "xml",
        reqwest::multipart::Part::text(xml).file_name("xml").mime_str("text/xml").unwrap(),
    );
    let again: Value = http
        .post(format!("{url}/v4/cfdi33/stamp/v4"))
        .header("Authorization", "bearer sim-token-infinito")
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(again["message"].as_str().unwrap().starts_with("307"), "{again}");
    assert_eq!(again["data"]["uuid"], uuid.as_str());
    assert!(terminate(child).success());
}

#[test]
fn pac_sim_refuses_bad_faults_text_naming_the_key() {
    let out = clock::command(env!("CARGO_BIN_EXE_timbra"))
        .args(["pac-sim", "--flavor", "sw", "--faults", "reset=7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--faults") && err.contains("reset"), "{err}");
    assert!(out.stdout.is_empty());
}
