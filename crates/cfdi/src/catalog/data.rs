//! SAT's catalogs as data: the files of `crates/cfdi/catalogs/`, embedded with `include_bytes!`,
//! decompressed and parsed once per catalog file on first use (`OnceLock`), then looked up by
//! binary search (every file is sorted by code; checked when it is parsed).
//!
//! Three gzip'd TSV files (format in `scripts/catalogs/generate.py`, which writes them):
//! `c_ClaveProdServ.tsv.gz`, `c_CodigoPostal.tsv.gz` and `catalogos.tsv.gz` (everything else).
//! A file is parsed only when one of its catalogs is first used: validating a sale touches all
//! three, the CLI's `catalog search unidad` only the last one.

use std::io::Read;
use std::sync::OnceLock;

use serde::{Serialize, Serializer};

static PROD_SERV_GZ: &[u8] = include_bytes!("../../catalogs/c_ClaveProdServ.tsv.gz");
static CODIGO_POSTAL_GZ: &[u8] = include_bytes!("../../catalogs/c_CodigoPostal.tsv.gz");
static OTROS_GZ: &[u8] = include_bytes!("../../catalogs/catalogos.tsv.gz");
static VERSION: &str = include_str!("../../catalogs/version.txt");

/// One of SAT's CFDI 4.0 catalogs that Timbra embeds. On the wire (the app's catalog pickers)
/// by short snake_case names: `prod_serv`, `unidad`, `codigo_postal`, `regimen`, `uso`, ….
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Catalogo {
    #[serde(rename = "prod_serv")]
    ClaveProdServ,
    #[serde(rename = "unidad")]
    ClaveUnidad,
    CodigoPostal,
    #[serde(rename = "regimen")]
    RegimenFiscal,
    #[serde(rename = "uso")]
    UsoCfdi,
    FormaPago,
    MetodoPago,
    Moneda,
    Pais,
    ObjetoImp,
    Impuesto,
    TipoRelacion,
    Exportacion,
    Periodicidad,
    Meses,
    TipoDeComprobante,
}

impl Catalogo {
    /// Every embedded catalog.
    pub const ALL: [Catalogo; 16] = [
        Catalogo::ClaveProdServ,
        Catalogo::ClaveUnidad,
        Catalogo::CodigoPostal,
        Catalogo::RegimenFiscal,
        Catalogo::UsoCfdi,
        Catalogo::FormaPago,
        Catalogo::MetodoPago,
        Catalogo::Moneda,
        Catalogo::Pais,
        Catalogo::ObjetoImp,
        Catalogo::Impuesto,
        Catalogo::TipoRelacion,
        Catalogo::Exportacion,
        Catalogo::Periodicidad,
        Catalogo::Meses,
        Catalogo::TipoDeComprobante,
    ];

    /// SAT's name of the catalog, e.g. `c_ClaveProdServ`.
    pub fn name(self) -> &'static str {
        match self {
            Catalogo::ClaveProdServ => "c_ClaveProdServ",
            Catalogo::ClaveUnidad => "c_ClaveUnidad",
            Catalogo::CodigoPostal => "c_CodigoPostal",
            Catalogo::RegimenFiscal => "c_RegimenFiscal",
            Catalogo::UsoCfdi => "c_UsoCFDI",
            Catalogo::FormaPago => "c_FormaPago",
            Catalogo::MetodoPago => "c_MetodoPago",
            Catalogo::Moneda => "c_Moneda",
            Catalogo::Pais => "c_Pais",
            Catalogo::ObjetoImp => "c_ObjetoImp",
            Catalogo::Impuesto => "c_Impuesto",
            Catalogo::TipoRelacion => "c_TipoRelacion",
            Catalogo::Exportacion => "c_Exportacion",
            Catalogo::Periodicidad => "c_Periodicidad",
            Catalogo::Meses => "c_Meses",
            Catalogo::TipoDeComprobante => "c_TipoDeComprobante",
        }
    }

    /// The catalog SAT calls `name` (`c_ClaveProdServ`, ...).
    pub fn from_name(name: &str) -> Option<Catalogo> {
        Catalogo::ALL.into_iter().find(|c| c.name() == name)
    }

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

impl Serialize for Catalogo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl std::fmt::Display for Catalogo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One entry of a catalog: SAT's code, its description, and what else the catalog says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub catalogo: Catalogo,
    /// The code as it goes in the XML.
    pub code: &'static str,
    /// SAT's description. For c_CodigoPostal, where SAT has none, the place:
    /// `"Municipio, Estado"` (or just the estado when SAT gives no municipio).
    pub descripcion: &'static str,
    /// Catalog-specific columns; `null` in JSON when the catalog has none.
    pub detalle: Detalle,
}

/// The columns of an entry beyond code and description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Detalle {
    Ninguno,
    ClaveProdServ(DetalleProdServ),
    CodigoPostal(DetalleCodigoPostal),
    Moneda {
        /// Decimals SAT allows for amounts in this currency.
        decimales: u32,
    },
    /// c_RegimenFiscal: to which personas the régimen applies in CFDI 4.0.
    RegimenFiscal {
        fisica: bool,
        moral: bool,
    },
    /// c_UsoCFDI: to which receptor personas the use applies, and with which receptor regímenes.
    UsoCfdi {
        fisica: bool,
        moral: bool,
        regimenes_receptor: &'static [&'static str],
    },
}

/// c_ClaveProdServ columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DetalleProdServ {
    /// SAT's "Incluir IVA trasladado" is "Sí": the concepto must carry IVA trasladado.
    pub iva_trasladado: bool,
    /// SAT's "Incluir IEPS trasladado" is "Sí".
    pub ieps_trasladado: bool,
    /// Last day the code is valid (`AAAA-MM-DD`), when SAT ended its vigencia.
    pub fin_vigencia: Option<&'static str>,
    /// SAT's "Palabras similares" (comma-separated; may be empty). Searched after the description.
    pub palabras_similares: &'static str,
}

/// c_CodigoPostal columns, with the names of its estado, municipio and localidad.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DetalleCodigoPostal {
    /// c_Estado code, e.g. `HID`.
    pub estado: &'static str,
    pub estado_nombre: &'static str,
    /// c_Municipio code (within the estado), when SAT gives one.
    pub municipio: Option<&'static str>,
    pub municipio_nombre: Option<&'static str>,
    /// c_Localidad code (within the estado), when SAT gives one.
    pub localidad: Option<&'static str>,
    pub localidad_nombre: Option<&'static str>,
    /// SAT's "Estímulo Franja Fronteriza": 0 none, 1 región fronteriza norte, 2 región
    /// fronteriza sur.
    pub estimulo_franja_fronteriza: u8,
    /// SAT's time-zone reference, e.g. `Tiempo del Centro`.
    pub huso_horario: &'static str,
}

/// Where the embedded catalogs come from, for Ajustes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CatalogVersion {
    /// Source packages and SAT, in one sentence.
    pub fuente: &'static str,
    /// Date of the source snapshot (`AAAA-MM-DD`).
    pub fecha: &'static str,
}

/// Source and date of the embedded catalogs.
pub fn catalog_version() -> CatalogVersion {
    let get = |key: &str| {
        VERSION
            .lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
            .unwrap_or_else(|| panic!("catalogs/version.txt has no {key}"))
    };
    CatalogVersion {
        fuente: get("fuente"),
        fecha: get("fecha"),
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing

fn gunzip(name: &str, gz: &[u8]) -> String {
    let mut out = String::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_string(&mut out)
        .unwrap_or_else(|e| panic!("embedded catalog {name} is not valid gzip'd UTF-8: {e}"));
    out
}

/// The data lines of a TSV file (no headers), each split into exactly `N` fields.
fn lines<const N: usize>(name: &'static str, text: &'static str) -> impl Iterator<Item = [&'static str; N]> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(move |l| split::<N>(name, l))
}

fn split<const N: usize>(name: &str, line: &'static str) -> [&'static str; N] {
    let mut out = [""; N];
    let mut parts = line.split('\t');
    for slot in out.iter_mut() {
        *slot = parts.next().unwrap_or_else(|| panic!("{name}: short line {line:?}"));
    }
    assert!(parts.next().is_none(), "{name}: long line {line:?}");
    out
}

fn assert_sorted<T>(name: &str, rows: &[T], key: impl Fn(&T) -> &str) {
    assert!(
        rows.windows(2).all(|w| key(&w[0]) < key(&w[1])),
        "embedded catalog {name} is not sorted by code"
    );
}

fn flag(name: &str, v: &str) -> bool {
    match v {
        "1" => true,
        "0" => false,
        _ => panic!("{name}: flag {v:?}"),
    }
}

// --- c_ClaveProdServ ---------------------------------------------------------------------------

pub(super) struct ProdServRow {
    pub code: &'static str,
    pub descripcion: &'static str,
    pub palabras_similares: &'static str,
    fin_vigencia: &'static str,
    iva: bool,
    ieps: bool,
}

fn prod_serv_table() -> &'static [ProdServRow] {
    static TEXT: OnceLock<String> = OnceLock::new();
    static ROWS: OnceLock<Vec<ProdServRow>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let text = TEXT.get_or_init(|| gunzip("c_ClaveProdServ", PROD_SERV_GZ));
        let rows: Vec<ProdServRow> = lines::<6>("c_ClaveProdServ", text)
            .map(|[code, descripcion, iva, ieps, fin_vigencia, palabras_similares]| ProdServRow {
                code,
                descripcion,
                palabras_similares,
                fin_vigencia,
                iva: flag("c_ClaveProdServ", iva),
                ieps: flag("c_ClaveProdServ", ieps),
            })
            .collect();
        assert_sorted("c_ClaveProdServ", &rows, |r| r.code);
        rows
    })
}

fn prod_serv_entry(r: &'static ProdServRow) -> Entry {
    Entry {
        catalogo: Catalogo::ClaveProdServ,
        code: r.code,
        descripcion: r.descripcion,
        detalle: Detalle::ClaveProdServ(DetalleProdServ {
            iva_trasladado: r.iva,
            ieps_trasladado: r.ieps,
            fin_vigencia: (!r.fin_vigencia.is_empty()).then_some(r.fin_vigencia),
            palabras_similares: r.palabras_similares,
        }),
    }
}

// --- catalogos.tsv.gz: the small catalogs and the place names --------------------------------

pub(super) struct SimpleRow {
    pub code: &'static str,
    pub descripcion: &'static str,
    /// c_Moneda: decimales; empty elsewhere.
    extra: &'static str,
}

struct Estado {
    code: &'static str,
    nombre: &'static str,
}

/// A municipio or localidad: (estado, code, name).
struct Lugar {
    estado: &'static str,
    code: &'static str,
    nombre: &'static str,
}

struct Otros {
    /// Indexed by [`Catalogo::index`]; empty for the catalogs of the other files.
    simple: Vec<Vec<SimpleRow>>,
    estados: Vec<Estado>,
    municipios: Vec<Lugar>,
    localidades: Vec<Lugar>,
}

fn otros() -> &'static Otros {
    static TEXT: OnceLock<String> = OnceLock::new();
    static OTROS: OnceLock<Otros> = OnceLock::new();
    OTROS.get_or_init(|| {
        let text = TEXT.get_or_init(|| gunzip("catalogos", OTROS_GZ));
        let mut o = Otros {
            simple: Catalogo::ALL.iter().map(|_| Vec::new()).collect(),
            estados: vec![],
            municipios: vec![],
            localidades: vec![],
        };
        for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let (catalog, rest) = line.split_once('\t').unwrap_or_else(|| panic!("catalogos: line {line:?}"));
            match catalog {
                "c_Moneda" => {
                    let [code, descripcion, extra] = split::<3>(catalog, rest);
                    o.simple[Catalogo::Moneda.index()].push(SimpleRow { code, descripcion, extra });
                }
                "c_Estado" => {
                    let [code, nombre, _pais] = split::<3>(catalog, rest);
                    o.estados.push(Estado { code, nombre });
                }
                "c_Municipio" | "c_Localidad" => {
                    let [estado, code, nombre] = split::<3>(catalog, rest);
                    let lugar = Lugar { estado, code, nombre };
                    if catalog == "c_Municipio" {
                        &mut o.municipios
                    } else {
                        &mut o.localidades
                    }
                    .push(lugar);
                }
                _ => {
                    let c = Catalogo::from_name(catalog).unwrap_or_else(|| panic!("catalogos: unknown catalog {catalog}"));
                    let [code, descripcion] = split::<2>(catalog, rest);
                    o.simple[c.index()].push(SimpleRow {
                        code,
                        descripcion,
                        extra: "",
                    });
                }
            }
        }
        for c in Catalogo::ALL {
            if !matches!(c, Catalogo::ClaveProdServ | Catalogo::CodigoPostal) {
                assert!(!o.simple[c.index()].is_empty(), "catalogos: {c} is missing");
                assert_sorted(c.name(), &o.simple[c.index()], |r| r.code);
            }
        }
        assert_sorted("c_Estado", &o.estados, |e| e.code);
        o
    })
}

fn simple_entry(c: Catalogo, r: &'static SimpleRow) -> Entry {
    let detalle = match c {
        Catalogo::Moneda => Detalle::Moneda {
            decimales: r
                .extra
                .parse()
                .unwrap_or_else(|_| panic!("c_Moneda {}: decimales {:?}", r.code, r.extra)),
        },
        // Applicability is not in SAT's published columns as the sources carry them: it comes
        // from the typed tables of `catalog.rs` (tested to have the same codes).
        Catalogo::RegimenFiscal => match super::regimen_fiscal(r.code) {
            Some(x) => Detalle::RegimenFiscal {
                fisica: x.fisica,
                moral: x.moral,
            },
            None => Detalle::Ninguno,
        },
        Catalogo::UsoCfdi => match super::uso_cfdi(r.code) {
            Some(x) => Detalle::UsoCfdi {
                fisica: x.fisica,
                moral: x.moral,
                regimenes_receptor: x.regimenes_receptor,
            },
            None => Detalle::Ninguno,
        },
        _ => Detalle::Ninguno,
    };
    Entry {
        catalogo: c,
        code: r.code,
        descripcion: r.descripcion,
        detalle,
    }
}

fn find_lugar(table: &'static [Lugar], estado: &str, code: &str) -> Option<&'static Lugar> {
    table
        .binary_search_by(|l| (l.estado, l.code).cmp(&(estado, code)))
        .ok()
        .map(|i| &table[i])
}

// --- c_CodigoPostal ----------------------------------------------------------------------------

const NONE: u16 = u16::MAX;

/// One postal code, compact (95k of them): indices into the tables of [`CodigoPostalTable`].
struct CpRow {
    code: [u8; 5],
    estado: u8,
    estimulo: u8,
    huso: u8,
    municipio: u16,
    localidad: u16,
    descripcion: u16,
}

/// A municipio or localidad code a postal code refers to, with its name when SAT gives one.
struct CpLugar {
    code: Box<str>,
    nombre: Option<&'static str>,
}

struct CodigoPostalTable {
    rows: Vec<CpRow>,
    estados: Vec<&'static Estado>,
    municipios: Vec<CpLugar>,
    localidades: Vec<CpLugar>,
    husos: Vec<Box<str>>,
    descripciones: Vec<Box<str>>,
}

/// Interns `key` in `table` (linear: a few thousand distinct values, looked up with a map).
fn intern<K: Eq + std::hash::Hash + Clone>(map: &mut std::collections::HashMap<K, u16>, key: K, push: impl FnOnce() -> usize) -> u16 {
    if let Some(&i) = map.get(&key) {
        return i;
    }
    let i = u16::try_from(push()).expect("fewer than 65535 distinct values");
    assert!(i != NONE);
    map.insert(key, i);
    i
}

fn codigo_postal_table() -> &'static CodigoPostalTable {
    use std::collections::HashMap;
    static TABLE: OnceLock<CodigoPostalTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let o = otros();
        let text = gunzip("c_CodigoPostal", CODIGO_POSTAL_GZ);
        let mut t = CodigoPostalTable {
            rows: Vec::with_capacity(96_000),
            estados: o.estados.iter().collect(),
            municipios: vec![],
            localidades: vec![],
            husos: vec![],
            descripciones: vec![],
        };
        let (mut mun, mut loc, mut husos, mut descs) = (HashMap::new(), HashMap::new(), HashMap::new(), HashMap::new());
        for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let mut f = line.split('\t');
            let mut next = || f.next().unwrap_or_else(|| panic!("c_CodigoPostal: short line {line:?}"));
            let (code, estado, municipio, localidad, estimulo, huso) = (next(), next(), next(), next(), next(), next());
            let code: [u8; 5] = code
                .as_bytes()
                .try_into()
                .ok()
                .filter(|c: &[u8; 5]| c.iter().all(u8::is_ascii_digit))
                .unwrap_or_else(|| panic!("c_CodigoPostal: code {code:?}"));
            let e = o
                .estados
                .binary_search_by(|x| x.code.cmp(estado))
                .unwrap_or_else(|_| panic!("c_CodigoPostal: estado {estado:?}"));
            let lugar = |table: &'static [Lugar], codes: &mut Vec<CpLugar>, map: &mut HashMap<(usize, String), u16>, code: &str| {
                if code.is_empty() {
                    return NONE;
                }
                intern(map, (e, code.to_string()), || {
                    codes.push(CpLugar {
                        code: code.into(),
                        nombre: find_lugar(table, estado, code).map(|l| l.nombre),
                    });
                    codes.len() - 1
                })
            };
            let municipio = lugar(&o.municipios, &mut t.municipios, &mut mun, municipio);
            let localidad = lugar(&o.localidades, &mut t.localidades, &mut loc, localidad);
            let huso = intern(&mut husos, huso.to_string(), || {
                t.husos.push(huso.into());
                t.husos.len() - 1
            });
            let estado_nombre = o.estados[e].nombre;
            let municipio_nombre = (municipio != NONE).then(|| t.municipios[municipio as usize].nombre).flatten();
            let descripcion = intern(&mut descs, (e, municipio_nombre), || {
                t.descripciones.push(match municipio_nombre {
                    Some(m) => format!("{m}, {estado_nombre}").into(),
                    None => estado_nombre.into(),
                });
                t.descripciones.len() - 1
            });
            t.rows.push(CpRow {
                code,
                estado: u8::try_from(e).expect("fewer than 256 estados"),
                estimulo: estimulo.parse().unwrap_or_else(|_| panic!("c_CodigoPostal: estímulo {estimulo:?}")),
                huso: u8::try_from(huso).expect("few husos"),
                municipio,
                localidad,
                descripcion,
            });
        }
        assert!(
            t.rows.windows(2).all(|w| w[0].code < w[1].code),
            "embedded catalog c_CodigoPostal is not sorted by code"
        );
        t
    })
}

fn cp_code(r: &'static CpRow) -> &'static str {
    std::str::from_utf8(&r.code).expect("ASCII digits, checked when parsed")
}

fn cp_entry(t: &'static CodigoPostalTable, r: &'static CpRow) -> Entry {
    let lugar = |table: &'static [CpLugar], i: u16| (i != NONE).then(|| &table[i as usize]);
    let municipio = lugar(&t.municipios, r.municipio);
    let localidad = lugar(&t.localidades, r.localidad);
    let estado = t.estados[r.estado as usize];
    Entry {
        catalogo: Catalogo::CodigoPostal,
        code: cp_code(r),
        descripcion: &t.descripciones[r.descripcion as usize],
        detalle: Detalle::CodigoPostal(DetalleCodigoPostal {
            estado: estado.code,
            estado_nombre: estado.nombre,
            municipio: municipio.map(|m| &*m.code),
            municipio_nombre: municipio.and_then(|m| m.nombre),
            localidad: localidad.map(|l| &*l.code),
            localidad_nombre: localidad.and_then(|l| l.nombre),
            estimulo_franja_fronteriza: r.estimulo,
            huso_horario: &t.husos[r.huso as usize],
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Uniform access by position (entries are sorted by code): what lookups and search use.

/// Number of entries of `c`.
pub fn len(c: Catalogo) -> usize {
    match c {
        Catalogo::ClaveProdServ => prod_serv_table().len(),
        Catalogo::CodigoPostal => codigo_postal_table().rows.len(),
        _ => otros().simple[c.index()].len(),
    }
}

/// The code of the `i`-th entry of `c` (in code order).
pub(super) fn code_at(c: Catalogo, i: usize) -> &'static str {
    match c {
        Catalogo::ClaveProdServ => prod_serv_table()[i].code,
        Catalogo::CodigoPostal => cp_code(&codigo_postal_table().rows[i]),
        _ => otros().simple[c.index()][i].code,
    }
}

/// The `i`-th entry of `c` (in code order).
pub fn nth(c: Catalogo, i: usize) -> Option<Entry> {
    if i >= len(c) {
        return None;
    }
    Some(match c {
        Catalogo::ClaveProdServ => prod_serv_entry(&prod_serv_table()[i]),
        Catalogo::CodigoPostal => {
            let t = codigo_postal_table();
            cp_entry(t, &t.rows[i])
        }
        _ => simple_entry(c, &otros().simple[c.index()][i]),
    })
}

/// The text search looks at for the `i`-th entry: its description, and its similar words.
pub(super) fn searchable(c: Catalogo, i: usize) -> (&'static str, &'static str) {
    match c {
        Catalogo::ClaveProdServ => {
            let r = &prod_serv_table()[i];
            (r.descripcion, r.palabras_similares)
        }
        Catalogo::CodigoPostal => {
            let t = codigo_postal_table();
            (&t.descripciones[t.rows[i].descripcion as usize], "")
        }
        _ => (otros().simple[c.index()][i].descripcion, ""),
    }
}

/// Position of `code` in `c`, or where it would be.
fn position(c: Catalogo, code: &str) -> Result<usize, usize> {
    match c {
        Catalogo::ClaveProdServ => prod_serv_table().binary_search_by(|r| r.code.cmp(code)),
        Catalogo::CodigoPostal => codigo_postal_table()
            .rows
            .binary_search_by(|r| r.code.as_slice().cmp(code.as_bytes())),
        _ => otros().simple[c.index()].binary_search_by(|r| r.code.cmp(code)),
    }
}

/// Looks up `code` in `c`.
pub fn entry(c: Catalogo, code: &str) -> Option<Entry> {
    position(c, code).ok().and_then(|i| nth(c, i))
}

/// Every entry of `c`, in code order.
pub fn entries(c: Catalogo) -> impl ExactSizeIterator<Item = Entry> {
    (0..len(c)).map(move |i| nth(c, i).expect("in range"))
}
