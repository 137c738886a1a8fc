//! Windows by construction (issue 25): Timbra cannot be compiled for Windows here, so every
//! Unix-only piece of code says what Windows does instead. Each `cfg(unix)` in the workspace's
//! Rust (crates, the app, the E2E tests) has either a Windows counterpart within the next 30
//! lines (`cfg(not(unix))` or `cfg(windows)`) or a comment naming Windows on its line or in the
//! three lines above it, saying why none is needed. The test lists every one it found.

use std::path::{Path, PathBuf};

use tidy::{root, rust_files};

/// A `cfg(unix)` site: file, 1-based line, and whether it is answered for Windows.
struct Site {
    file: PathBuf,
    line: usize,
    answered: Option<&'static str>,
}

/// Whether `line` has a Unix-only cfg in code (not in a comment, not inside a string: the
/// pattern right after a quote is text, like this file's own).
fn is_unix_only(line: &str) -> bool {
    let code = line.split("//").next().unwrap_or_default();
    ["#[cfg(unix)]", "cfg!(unix)", "#[cfg(target_family = \"unix\")]"]
        .iter()
        .any(|p| code.match_indices(p).any(|(i, _)| !code[..i].ends_with('"')))
}

fn is_windows_counterpart(line: &str) -> bool {
    let code = line.split("//").next().unwrap_or_default();
    [
        "cfg(not(unix))",
        "cfg(windows)",
        "cfg!(windows)",
        "cfg!(not(unix))",
        "cfg(target_os = \"windows\")",
    ]
    .iter()
    .any(|c| code.contains(c))
}

fn mentions_windows_in_comment(line: &str) -> bool {
    line.split_once("//").is_some_and(|(_, c)| c.contains("Windows"))
}

/// Every `cfg(unix)` of one file's text.
fn sites(file: &Path, text: &str) -> Vec<Site> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !is_unix_only(l) {
            continue;
        }
        let counterpart = lines.iter().skip(i + 1).take(30).any(|l| is_windows_counterpart(l));
        let comment = lines[i.saturating_sub(3)..=i].iter().any(|l| mentions_windows_in_comment(l));
        out.push(Site {
            file: file.to_path_buf(),
            line: i + 1,
            answered: if counterpart {
                Some("counterpart")
            } else if comment {
                Some("comment")
            } else {
                None
            },
        });
    }
    out
}

#[test]
fn every_unix_only_cfg_says_what_windows_does() {
    let root = root();
    let mut dirs: Vec<PathBuf> = vec![root.join("src-tauri/src"), root.join("src-tauri/tests"), root.join("tests")];
    for c in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        dirs.push(c.path().join("src"));
        dirs.push(c.path().join("tests"));
        dirs.push(c.path().join("benches"));
    }
    let mut all = Vec::new();
    for d in dirs.iter().filter(|d| d.is_dir()) {
        for f in rust_files(d) {
            let text = std::fs::read_to_string(&f).unwrap();
            all.extend(sites(&f, &text));
        }
    }
    all.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    let shown = |s: &Site| format!("{}:{}", s.file.strip_prefix(&root).unwrap_or(&s.file).display(), s.line);
    for s in &all {
        println!("{} — {}", shown(s), s.answered.unwrap_or("UNANSWERED"));
    }
    let bare: Vec<String> = all.iter().filter(|s| s.answered.is_none()).map(shown).collect();
    assert!(
        bare.is_empty(),
        "cfg(unix) without a Windows counterpart or a comment saying why none is needed:\n  {}",
        bare.join("\n  ")
    );
    assert!(
        all.len() >= 10,
        "the scan found only {} sites: is it reading the sources?",
        all.len()
    );
}

#[test]
fn the_scan_tells_answered_from_bare() {
    let text = [
        "#[cfg(unix)]",
        "fn a() {}",
        "#[cfg(not(unix))]",
        "fn a() {}",
        "",
        "// Windows: no mode bits; the folder's ACL applies.",
        "#[cfg(unix)]",
        "fn b() {}",
        "",
        "",
        "",
        "",
        "#[cfg(unix)] // only Unix",
        "fn c() {}",
    ]
    .join("\n");
    let found: Vec<_> = sites(Path::new("x.rs"), &text).into_iter().map(|s| (s.line, s.answered)).collect();
    assert_eq!(found, [(1, Some("counterpart")), (7, Some("comment")), (13, None)]);
}
