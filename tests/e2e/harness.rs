//! The E2E environment: a private Xvfb display, one `tauri-driver` (which runs Debian's
//! `WebKitWebDriver`) per flow with the app's environment (temporary database, export folder
//! and XDG folders, so nothing of the developer's own Timbra is touched), and a fantoccini
//! WebDriver session on the real `timbra-app` binary in its real webview.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};

pub type Res<T = ()> = Result<T, String>;

/// Extra environment variables a flow starts the app with (e.g. `TIMBRA_SANDBOX_PRIMARY`); an
/// empty value removes the variable (`TIMBRA_DATABASE_URL` empty: the app's default database).
pub type Env = Vec<(&'static str, &'static str)>;

/// tauri-driver's WebDriver port, and the port it gives WebKitWebDriver (both fixed by it).
const DRIVER_PORT: u16 = 4444;
const NATIVE_PORT: u16 = 4445;

/// The binary the flows drive: the one cargo built for this test, or the one
/// `TIMBRA_E2E_APP` names (an installed Timbra: `make test` unpacks its .deb and runs the
/// `instalada` flow against `usr/bin/timbra-app` inside it).
pub const APP_ENV: &str = "TIMBRA_E2E_APP";

pub fn app_binary() -> PathBuf {
    std::env::var_os(APP_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_timbra-app")))
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where the screenshots go (named in the README; git-ignored).
pub fn screenshot_dir() -> PathBuf {
    std::env::var_os("TIMBRA_SCREENSHOT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("artifacts/screenshots"))
}

fn find_program(name: &str, extra: &[PathBuf]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(extra.iter().cloned())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn port_open(port: u16) -> bool {
    TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200)).is_ok()
}

/// SIGTERM, then wait (SIGKILL only as a last resort: it would orphan WebKitWebDriver).
fn terminate(child: &mut Child, grace: Duration) {
    let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
    let start = Instant::now();
    while start.elapsed() < grace {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A private X display.
pub struct Display {
    child: Child,
    pub name: String,
}

impl Display {
    pub fn start() -> Res<Display> {
        let xvfb = find_program("Xvfb", &[]).ok_or("Xvfb no está instalado (apt-get install xvfb; `make test` lo instala)")?;
        for n in 90..140 {
            if Path::new(&format!("/tmp/.X{n}-lock")).exists() || Path::new(&format!("/tmp/.X11-unix/X{n}")).exists() {
                continue;
            }
            let child = Command::new(&xvfb)
                .args([format!(":{n}").as_str(), "-screen", "0", "1440x960x24", "-nolisten", "tcp"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("Xvfb: {e}"))?;
            let mut d = Display {
                child,
                name: format!(":{n}"),
            };
            let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(10) {
                if socket.exists() {
                    return Ok(d);
                }
                if let Ok(Some(_)) = d.child.try_wait() {
                    break; // lost a race for this display number; try the next
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            terminate(&mut d.child, Duration::from_secs(2));
        }
        Err("no se pudo iniciar Xvfb en ningún display libre (:90–:139)".into())
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        terminate(&mut self.child, Duration::from_secs(3));
    }
}

/// One running app under WebDriver, on its own temporary folders.
pub struct App {
    driver: Child,
    pub client: Client,
    /// What the native file chooser answers (the app's E2E stand-in of the dialog plugin:
    /// `TIMBRA_E2E_FILE_CHOOSER`, test-only; see src-tauri/src/file_chooser.rs).
    chooser: PathBuf,
    /// The app's temporary folders (database, exports, XDG); removed when the flow ends.
    dir: tempfile::TempDir,
}

impl App {
    /// Starts tauri-driver with the app's environment and opens a session on `timbra-app`,
    /// after `prepare` ran on the app's temporary folder (where `timbra.db` will be); the app
    /// gets the environment variables `prepare` returns.
    pub async fn start(display: &Display, prepare: impl FnOnce(&Path) -> Res<Env>) -> Res<App> {
        let home_cargo = std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(".cargo/bin"))
            .into_iter()
            .collect::<Vec<_>>();
        let driver_bin = find_program("tauri-driver", &home_cargo)
            .ok_or("tauri-driver no está instalado (cargo install tauri-driver --locked; `make test` lo instala)")?;
        let native = find_program("WebKitWebDriver", &[])
            .ok_or("WebKitWebDriver no está instalado (apt-get install webkit2gtk-driver; `make test` lo instala)")?;
        for port in [DRIVER_PORT, NATIVE_PORT] {
            if port_open(port) {
                return Err(format!(
                    "el puerto {port} ya está en uso: ¿otra corrida E2E, o un WebKitWebDriver huérfano?"
                ));
            }
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let extra_env = prepare(dir.path())?;
        let xdg = |sub: &str| {
            let p = dir.path().join(sub);
            let _ = std::fs::create_dir_all(&p);
            p
        };
        let chooser = dir.path().join("selector-de-archivos.txt");
        let mut command = Command::new(driver_bin);
        command
            .arg("--native-driver")
            .arg(&native)
            .env("DISPLAY", &display.name)
            .env("TIMBRA_DATABASE_URL", dir.path().join("timbra.db"))
            .env("TIMBRA_EXPORT_DIR", xdg("descargas"))
            .env("XDG_DATA_HOME", xdg("data"))
            .env("XDG_CONFIG_HOME", xdg("config"))
            .env("XDG_CACHE_HOME", xdg("cache"))
            // Software rendering under Xvfb: no shader cache to write (or to race at teardown).
            .env("MESA_SHADER_CACHE_DISABLE", "true")
            .env("TIMBRA_LOG", "warn")
            // WebDriver cannot drive a native dialog: the app's chooser answers from this file.
            .env("TIMBRA_E2E_FILE_CHOOSER", &chooser)
            // Nor see a PDF viewer: *Imprimir* logs the file it would open (test-only).
            .env("TIMBRA_E2E_OPENER", dir.path().join("visor-de-pdf.txt"))
            .envs(extra_env.iter().filter(|(_, v)| !v.is_empty()).copied())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (k, _) in extra_env.iter().filter(|(_, v)| v.is_empty()) {
            command.env_remove(k);
        }
        let mut driver = command.spawn().map_err(|e| format!("tauri-driver: {e}"))?;
        let start = Instant::now();
        while !port_open(DRIVER_PORT) {
            if start.elapsed() > Duration::from_secs(20) {
                terminate(&mut driver, Duration::from_secs(3));
                return Err("tauri-driver no abrió su puerto en 20 s".into());
            }
            if let Ok(Some(status)) = driver.try_wait() {
                return Err(format!("tauri-driver terminó: {status}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), "wry".into());
        caps.insert("tauri:options".into(), serde_json::json!({ "application": app_binary() }));
        // tauri-driver may open its port a moment before it answers: a few tries.
        let mut client = Err(String::new());
        for _ in 0..4 {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            client = ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{DRIVER_PORT}"))
                .await
                .map_err(|e| e.to_string());
            if client.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                terminate(&mut driver, Duration::from_secs(3));
                return Err(format!("no se abrió la sesión WebDriver: {e}"));
            }
        };
        Ok(App {
            driver,
            client,
            chooser,
            dir,
        })
    }

    /// Ends the session (the app exits) and stops tauri-driver.
    pub async fn stop(mut self) {
        let _ = self.client.clone().close().await;
        terminate(&mut self.driver, Duration::from_secs(5));
        let start = Instant::now();
        while port_open(NATIVE_PORT) && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The app's temporary folder: `data/`, `config/` and `cache/` are its XDG folders.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    // Helpers ----------------------------------------------------------------------------------

    /// What the next native file chooser answers, as a person picking these files would (none:
    /// the person cancels). Used once, by the next chooser opened.
    pub fn choose_next(&self, files: &[&Path]) -> Res {
        let text: String = files.iter().map(|f| format!("{}\n", f.display())).collect();
        std::fs::write(&self.chooser, text).map_err(|e| format!("{}: {e}", self.chooser.display()))
    }

    /// Every file *Imprimir* opened with the system's viewer so far, in order (the app's E2E
    /// stand-in: `TIMBRA_E2E_OPENER`, see src-tauri/src/commands/counter.rs).
    pub fn opened_files(&self) -> Vec<PathBuf> {
        let text = std::fs::read_to_string(self.dir.path().join("visor-de-pdf.txt")).unwrap_or_default();
        text.lines().filter(|l| !l.trim().is_empty()).map(PathBuf::from).collect()
    }

    /// The title of every native file chooser the app opened so far, in order.
    pub fn chooser_titles(&self) -> Res<Vec<String>> {
        let mut log = self.chooser.clone().into_os_string();
        log.push(".pedidos");
        let text = std::fs::read_to_string(PathBuf::from(log)).unwrap_or_default();
        text.lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).map_err(|e| format!("pedido {l}: {e}"))?;
                Ok(v["options"]["title"].as_str().unwrap_or_default().to_string())
            })
            .collect()
    }

    /// Navigates to a hash route (`#/emitir`); a full URL is cut down to its hash. An Ajustes
    /// section is waited for until it shows.
    pub async fn go(&self, hash: &str) -> Res {
        let hash = hash.find('#').map(|i| &hash[i..]).unwrap_or(hash);
        self.client
            .execute(&format!("location.hash = {hash:?};"), vec![])
            .await
            .map_err(|e| format!("go {hash}: {e}"))?;
        // An Ajustes section shows once its parts have loaded (ui/src/lib/layout-hold.ts):
        // wait for it as a person waits for the page, so a click never hits a hidden field.
        if let Some(rest) = hash.strip_prefix("#/ajustes") {
            let section = rest.trim_start_matches('/');
            let section = if section.is_empty() { "equipo" } else { section };
            self.find(&format!("[data-testid=settings-section][data-section={section}][data-ready=true]"))
                .await?;
        }
        Ok(())
    }

    /// Calls one of the app's own IPC commands from the page (as its UI would), for steps that
    /// must happen faster than a person clicks.
    pub async fn invoke(&self, cmd: &str, args: serde_json::Value) -> Res<serde_json::Value> {
        let script = "const [cmd, args, done] = arguments; window.__TAURI_INTERNALS__.invoke(cmd, args).then((r) => done({ ok: r }), (e) => done({ err: e }));";
        let v = self
            .client
            .execute_async(script, vec![cmd.into(), args])
            .await
            .map_err(|e| format!("invoke {cmd}: {e}"))?;
        match v.get("ok") {
            Some(ok) => Ok(ok.clone()),
            None => Err(format!("invoke {cmd}: {}", v.get("err").cloned().unwrap_or_default())),
        }
    }

    /// Waits for an element (10 s).
    pub async fn find(&self, css: &str) -> Res<Element> {
        self.client
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css(css))
            .await
            .map_err(|e| format!("no apareció {css}: {e}"))
    }

    pub async fn all(&self, css: &str) -> Res<Vec<Element>> {
        self.client.find_all(Locator::Css(css)).await.map_err(|e| format!("{css}: {e}"))
    }

    /// Waits until the text of `css` satisfies `ok` (10 s); returns it.
    pub async fn wait_text(&self, css: &str, what: &str, ok: impl Fn(&str) -> bool) -> Res<String> {
        self.wait_text_for(css, what, ok, Duration::from_secs(10)).await
    }

    /// As [`App::wait_text`], waiting up to `limit`.
    pub async fn wait_text_for(&self, css: &str, what: &str, ok: impl Fn(&str) -> bool, limit: Duration) -> Res<String> {
        let start = Instant::now();
        let mut last = String::new();
        while start.elapsed() < limit {
            if let Ok(e) = self.client.find(Locator::Css(css)).await {
                if let Ok(t) = e.text().await {
                    if ok(&t) {
                        return Ok(t);
                    }
                    last = t;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("{css}: se esperaba {what}; el texto era {last:?}"))
    }

    pub async fn wait_contains(&self, css: &str, needle: &str) -> Res<String> {
        self.wait_text(css, &format!("que contuviera {needle:?}"), |t| t.contains(needle))
            .await
    }

    pub async fn type_into(&self, css: &str, text: &str) -> Res {
        let e = self.find(css).await?;
        e.clear().await.map_err(|e| format!("clear {css}: {e}"))?;
        if text.is_empty() {
            return Ok(());
        }
        e.send_keys(text).await.map_err(|e| format!("teclear en {css}: {e}"))
    }

    /// Picks `value` in the select `css`, brought to the middle of the window first (as
    /// [`App::click`]: WebKit clicks the option, which must be in view).
    pub async fn select(&self, css: &str, value: &str) -> Res {
        let e = self.find(css).await?;
        let target = serde_json::to_value(&e).map_err(|err| format!("{css}: {err}"))?;
        self.client
            .execute("arguments[0].scrollIntoView({block: 'center', inline: 'nearest'});", vec![target])
            .await
            .map_err(|err| format!("desplazar a {css}: {err}"))?;
        e.select_by_value(value).await.map_err(|e| format!("elegir {value} en {css}: {e}"))
    }

    /// Picks `code` in the searchable catalog select named `name` (ui/src/components/
    /// CatalogSelect.svelte) as a person would: a click in the box, `typed` (a code or words of
    /// its description) and Enter; waits until the select holds `code`. The choices arrive from
    /// Rust as the form changes, so a pick made before they did is typed again.
    pub async fn choose(&self, scope: &str, name: &str, typed: &str, code: &str) -> Res {
        let css = format!("{scope} [data-testid='cs-{name}']").trim().to_string();
        let mut held = String::new();
        for _ in 0..5 {
            self.click(&css).await?;
            let e = self.find(&css).await?;
            e.send_keys(&format!("{typed}\u{E007}"))
                .await
                .map_err(|e| format!("teclear en {css}: {e}"))?;
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(2) {
                held = self.attr(&css, "data-value").await?.unwrap_or_default();
                if held == code {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Err(format!("{css}: se tecleó {typed:?} y Enter para elegir {code}; quedó {held:?}"))
    }

    /// Clicks `css` as a person would: first brought to the middle of the window, so the
    /// sticky sandbox banner never covers it (WebKit scrolls a target only to the window's edge).
    pub async fn click(&self, css: &str) -> Res {
        let e = self.find(css).await?;
        let target = serde_json::to_value(&e).map_err(|err| format!("{css}: {err}"))?;
        self.client
            .execute("arguments[0].scrollIntoView({block: 'center', inline: 'nearest'});", vec![target])
            .await
            .map_err(|err| format!("desplazar a {css}: {err}"))?;
        e.click().await.map_err(|e| format!("clic en {css}: {e}"))
    }

    pub async fn attr(&self, css: &str, name: &str) -> Res<Option<String>> {
        self.find(css).await?.attr(name).await.map_err(|e| format!("{css}@{name}: {e}"))
    }

    /// Waits (30 s) until the Factura page's strategy badge is `badge`.
    pub async fn wait_badge(&self, badge: &str) -> Res {
        let start = Instant::now();
        let mut last = None;
        while start.elapsed() < Duration::from_secs(30) {
            if let Ok(e) = self.client.find(Locator::Css("[data-testid=strategy] [data-badge]")).await {
                last = e.attr("data-badge").await.ok().flatten();
                if last.as_deref() == Some(badge) {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        // What the page says, so a failure in CI tells why without a rerun.
        let mut seen = Vec::new();
        for css in ["[data-testid=reasons]", "[role=alert]", "[data-testid=timeline] li:first-child"] {
            if let Ok(e) = self.client.find(Locator::Css(css)).await {
                if let Ok(t) = e.text().await {
                    seen.push(format!("{css}: {}", t.split_whitespace().collect::<Vec<_>>().join(" ")));
                }
            }
        }
        // The whole timeline, folded details included (textContent): a PAC's raw answer says
        // why an attempt ended as it did.
        if let Ok(v) = self
            .client
            .execute(
                "return [...document.querySelectorAll('[data-testid=timeline] li')].map(l => l.textContent);",
                vec![],
            )
            .await
        {
            for (i, li) in v.as_array().into_iter().flatten().enumerate() {
                let text = li.as_str().unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ");
                seen.push(format!("timeline[{i}]: {text}"));
            }
        }
        Err(format!(
            "la insignia nunca fue {badge:?}; es {last:?}\n      {}",
            seen.join("\n      ")
        ))
    }

    /// Uncaught errors and CSP violations the page recorded (see ui/src/main.ts).
    pub async fn page_errors(&self) -> Res<Vec<String>> {
        let v = self
            .client
            .execute("return window.__TIMBRA_ERRORS__ || [];", vec![])
            .await
            .map_err(|e| format!("errores de la página: {e}"))?;
        Ok(v.as_array()
            .map(|a| a.iter().map(|x| x.as_str().unwrap_or_default().to_string()).collect())
            .unwrap_or_default())
    }

    /// Saves a PNG of the window as `<screenshot dir>/<name>.png`.
    pub async fn screenshot(&self, name: &str) -> Res<PathBuf> {
        // Let transitions and pending renders settle.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let png = self.client.screenshot().await.map_err(|e| format!("captura {name}: {e}"))?;
        if !png.starts_with(b"\x89PNG") {
            return Err(format!("captura {name}: no es un PNG"));
        }
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }
}
