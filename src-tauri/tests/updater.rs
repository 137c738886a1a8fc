//! Updates end to end, through Tauri's updater plugin on a mock app (`tauri::test`): a local
//! HTTP server serves a `latest.json` manifest and a package signed in the test with a minisign
//! key generated here (the format `tauri signer` writes: Base64 of the signature file, the
//! version in the trusted comment). `crate::updates` offers the signed update with its version
//! and notes, the plugin's own verification accepts it, and the install writes it to a scratch
//! "executable"; a package with one byte flipped after signing, one signed by another key and
//! one signed for another version are refused as `update`/`bad_signature`, and nothing is
//! installed. The running test binary is never replaced.

use std::path::Path;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use tauri::test::{mock_builder, mock_context, noop_assets, MockRuntime};
use tauri::AppHandle;
use timbra_app::error::{AppError, UpdateProblem};
use timbra_app::updates;

const NOTES: &str = "Timbra 0.1.1: corrige la factura global de fin de mes.";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A key pair as `tauri signer generate` makes one; the public key as the app is given it.
fn key_pair() -> (minisign::KeyPair, String) {
    let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
    let public = kp.pk.to_box().unwrap().into_string();
    (kp, b64(public.as_bytes()))
}

/// The `.sig` file of `bytes` for `version`, Base64 (what the manifest's `signature` holds).
fn sign(kp: &minisign::KeyPair, bytes: &[u8], version: &str) -> String {
    let trusted = format!("timestamp:1765000000\tfile:Timbra.AppImage\tversion:{version}");
    let sig = minisign::sign(
        Some(&kp.pk),
        &kp.sk,
        std::io::Cursor::new(bytes),
        Some(&trusted),
        Some("signature from tauri secret key"),
    )
    .unwrap();
    b64(sig.into_string().as_bytes())
}

/// An update package the Linux installer accepts (an ELF header, then content).
fn package() -> Vec<u8> {
    let mut p = vec![0x7F, b'E', b'L', b'F', 2, 1, 1, 0];
    p.extend((0..4096u32).map(|i| (i % 251) as u8));
    p
}

/// What the server serves now.
#[derive(Clone, Default)]
struct Release {
    manifest: String,
    package: Vec<u8>,
}

/// A local HTTP server: `/latest.json` and `/Timbra.AppImage`.
async fn serve(release: Arc<Mutex<Release>>) -> String {
    use axum::routing::get;
    let manifest = {
        let r = release.clone();
        move || {
            let r = r.clone();
            async move { r.lock().unwrap().manifest.clone() }
        }
    };
    let pkg = move || {
        let r = release.clone();
        async move { r.lock().unwrap().package.clone() }
    };
    let app = axum::Router::new()
        .route("/latest.json", get(manifest))
        .route("/Timbra.AppImage", get(pkg));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// The plugin's target for this computer (`linux-x86_64`, `darwin-aarch64`, …).
fn target() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    format!("{os}-{}", std::env::consts::ARCH)
}

fn manifest(base: &str, version: &str, signature: &str) -> String {
    serde_json::json!({
        "version": version,
        "notes": NOTES,
        "pub_date": "2026-12-01T12:00:00Z",
        "platforms": { target(): { "url": format!("{base}/Timbra.AppImage"), "signature": signature } }
    })
    .to_string()
}

fn mock_app() -> (tauri::App<MockRuntime>, AppHandle<MockRuntime>) {
    let mut ctx = mock_context(noop_assets());
    // The app's tauri.conf.json has the same: the key comes from the build, not the config.
    ctx.config_mut()
        .plugins
        .0
        .insert("updater".into(), serde_json::json!({ "pubkey": "" }));
    let app = mock_builder().plugin(updates::plugin()).build(ctx).unwrap();
    let handle = app.handle().clone();
    (app, handle)
}

fn next_version(app: &AppHandle<MockRuntime>) -> String {
    let v = &app.package_info().version;
    format!("{}.{}.{}", v.major, v.minor, v.patch + 1)
}

fn refused_for_signature(r: Result<impl Sized, AppError>) -> bool {
    matches!(
        r,
        Err(AppError::Update {
            problem: UpdateProblem::BadSignature,
            ..
        })
    )
}

fn scratch_executable(dir: &Path) -> std::path::PathBuf {
    let exe = dir.join("Timbra.AppImage");
    std::fs::write(&exe, b"la version instalada").unwrap();
    exe
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_update_is_offered_verified_and_installed_and_a_tampered_one_is_refused() {
    let (_app, handle) = mock_app();
    let (kp, pubkey) = key_pair();
    let version = next_version(&handle);
    let release = Arc::new(Mutex::new(Release::default()));
    let base = serve(release.clone()).await;
    let url = format!("{base}/latest.json");
    let dir = tempfile::tempdir().unwrap();
    let exe = scratch_executable(dir.path());

    // Signed: offered with its version and notes, verified, installed (in the scratch place).
    let pkg = package();
    *release.lock().unwrap() = Release {
        manifest: manifest(&base, &version, &sign(&kp, &pkg, &version)),
        package: pkg.clone(),
    };
    let update = updates::check(&handle, &url, &pubkey, Some(&exe))
        .await
        .unwrap()
        .expect("a newer version is offered");
    let offer = updates::offer(&update);
    assert_eq!(offer.version, version);
    assert_eq!(offer.current_version, handle.package_info().version.to_string());
    assert_eq!(offer.notes.as_deref(), Some(NOTES));
    assert_eq!(offer.date.as_deref(), Some("2026-12-01"));
    let bytes = updates::download(&update).await.expect("the signature verifies");
    assert_eq!(bytes, pkg);
    // Installing replaces the AppImage at the executable path (Linux, the only system that
    // runs this suite; a macOS or Windows install starts other programs).
    if cfg!(target_os = "linux") {
        updates::install(&update, &bytes).expect("installed");
        assert_eq!(std::fs::read(&exe).unwrap(), pkg, "the scratch executable is the new version");
    }

    // Tampered: one byte flipped after signing, with the original's signature.
    let exe = scratch_executable(dir.path());
    let mut tampered = pkg.clone();
    tampered[2048] ^= 0x01;
    release.lock().unwrap().package = tampered.clone();
    let update = updates::check(&handle, &url, &pubkey, Some(&exe)).await.unwrap().expect("offered");
    assert!(
        refused_for_signature(updates::download(&update).await),
        "a tampered package is refused"
    );
    assert!(refused_for_signature(updates::install(&update, &tampered)), "never installed");
    assert_eq!(std::fs::read(&exe).unwrap(), b"la version instalada", "nothing was installed");

    // Signed by another key, and signed for another version: refused too.
    let (other, _) = key_pair();
    for signature in [sign(&other, &pkg, &version), sign(&kp, &pkg, "0.0.9")] {
        *release.lock().unwrap() = Release {
            manifest: manifest(&base, &version, &signature),
            package: pkg.clone(),
        };
        let update = updates::check(&handle, &url, &pubkey, Some(&exe)).await.unwrap().expect("offered");
        assert!(refused_for_signature(updates::download(&update).await));
    }
    assert_eq!(std::fs::read(&exe).unwrap(), b"la version instalada");

    // The running version, or an older one: nothing is offered.
    let current = handle.package_info().version.to_string();
    release.lock().unwrap().manifest = manifest(&base, &current, &sign(&kp, &pkg, &current));
    assert!(updates::check(&handle, &url, &pubkey, Some(&exe)).await.unwrap().is_none());

    // A server that does not answer a manifest is named as such.
    release.lock().unwrap().manifest = "<html>no</html>".into();
    let e = updates::check(&handle, &url, &pubkey, Some(&exe)).await.err();
    assert!(
        matches!(
            e,
            Some(AppError::Update {
                problem: UpdateProblem::BadManifest,
                ..
            })
        ),
        "{e:?}"
    );
}
