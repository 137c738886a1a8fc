//! The installers' configuration (the root tauri.conf.json): every target the issue asks for,
//! the icon set with the frames Windows needs, the version from the workspace, and the
//! identifier that names the app's folders (outbox::location::APP_IDENTIFIER).

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn config() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(root().join("tauri.conf.json")).unwrap()).unwrap()
}

#[test]
fn the_bundle_names_every_installer_and_windows_installs_per_user_in_spanish() {
    let c = config();
    let b = &c["bundle"];
    assert_eq!(b["active"], true);
    let targets: Vec<&str> = b["targets"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for t in ["nsis", "msi", "deb", "rpm", "dmg", "app"] {
        assert!(targets.contains(&t), "falta {t} en {targets:?}");
    }
    assert_eq!(b["windows"]["nsis"]["installMode"], "currentUser");
    assert_eq!(b["windows"]["nsis"]["languages"], serde_json::json!(["Spanish"]));
    assert_eq!(b["windows"]["wix"]["language"], "es-ES");
    assert_eq!(b["windows"]["webviewInstallMode"]["type"], "downloadBootstrapper");
    assert!(b["publisher"].is_string() && b["license"].is_string());
    // The version is the workspace's (Cargo), never a second copy here.
    assert!(c.get("version").is_none());
    assert_eq!(c["identifier"], outbox::location::APP_IDENTIFIER);
}

/// Windows' build step needs an .ico; it has the 16, 32, 48 and 256 px frames; every icon
/// named exists.
#[test]
fn the_icon_set_has_an_ico_with_the_windows_frames() {
    let c = config();
    let icons: Vec<&str> = c["bundle"]["icon"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    for i in &icons {
        assert!(root().join(i).is_file(), "{i}");
    }
    let ico = icons.iter().find(|i| i.ends_with(".ico")).expect("un .ico");
    assert!(icons.iter().any(|i| i.ends_with(".icns")));
    let d = std::fs::read(root().join(ico)).unwrap();
    assert_eq!(&d[..4], &[0, 0, 1, 0]);
    let n = u16::from_le_bytes([d[4], d[5]]) as usize;
    let sizes: Vec<u32> = (0..n)
        .map(|i| if d[6 + 16 * i] == 0 { 256 } else { d[6 + 16 * i] as u32 })
        .collect();
    for s in [16, 32, 48, 256] {
        assert!(sizes.contains(&s), "falta el cuadro de {s} px: {sizes:?}");
    }
}
