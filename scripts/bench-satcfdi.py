#!/usr/bin/env python3
"""python-satcfdi on the same work as Timbra's CFDI benchmark (run by scripts/bench-cfdi-baseline
inside a virtualenv with satcfdi installed). Prints microseconds per document, one `key value`
line each:

  lxml-xslt-cadena    lxml parses the bytes and runs SAT's CFDI 4.0 XSLT (as satcfdi loads it,
                      compiled once): what lxml's XSLT costs per document
  satcfdi-cadena      satcfdi.cfdi.CFDI.from_string(bytes).cadena_original()
  satcfdi-build-seal  the sale of tests/fixtures/sales/ingreso-pedido-4471.json built with
                      satcfdi.create.cfd.cfdi40, signed with the same CSD, serialized

Each cadena is checked equal to the stored SAT cadena first (the same work, the same answer).
The time per document is the median of several repeats.
"""
import json
import os
import statistics
import sys
import time
from datetime import datetime
from decimal import Decimal

from lxml import etree
from satcfdi.cfdi import CFDI
from satcfdi.create.cfd import cfdi40
from satcfdi.models import Signer
from satcfdi.transform import xslt_transform

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
fixtures = os.path.join(root, "tests", "fixtures")
samples_dir = os.path.join(fixtures, "cfdi", "samples")
names = sorted(n for n in os.listdir(samples_dir) if n.endswith(".xml"))
docs = [open(os.path.join(samples_dir, n), "rb").read() for n in names]
expected = [open(os.path.join(samples_dir, n[:-4] + ".cadena.txt"), "rb").read().decode() for n in names]
repeats = int(os.environ.get("BENCH_PY_REPEATS", "7"))


def per_doc_us(fn, loops):
    """Median over repeats of the time per call of fn() (which handles every document once)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        times.append((time.perf_counter() - t0) / loops)
    return statistics.median(times) * 1e6


# lxml's XSLT on SAT's stylesheet, the one satcfdi ships and caches.
transform = xslt_transform("{http://www.sat.gob.mx/cfd/4}Comprobante", "4.0")
for d, e in zip(docs, expected):
    assert str(transform(etree.fromstring(d))) == e, "lxml's cadena differs from SAT's"
    assert CFDI.from_string(d).cadena_original() == e, "satcfdi's cadena differs from SAT's"


def lxml_all():
    for d in docs:
        str(transform(etree.fromstring(d)))


def satcfdi_all():
    for d in docs:
        CFDI.from_string(d).cadena_original()


print(f"lxml-xslt-cadena {per_doc_us(lxml_all, 40) / len(docs):.1f}")
print(f"satcfdi-cadena {per_doc_us(satcfdi_all, 20) / len(docs):.1f}")

certs = os.path.join(fixtures, "cfdi", "certs")
signer = Signer.load(
    certificate=open(os.path.join(certs, "EKU9003173C9.cer"), "rb").read(),
    key=open(os.path.join(certs, "EKU9003173C9.key"), "rb").read(),
    password="12345678a",
)
sale = json.load(open(os.path.join(fixtures, "sales", "ingreso-pedido-4471.json")))
emisor_profile = {"rfc": "EKU9003173C9", "nombre": "ESCUELA KEMPER URGATE", "regimen_fiscal": "601", "lugar_expedicion": "42501"}


def build_seal():
    r = sale["receptor"]
    conceptos = []
    for c in sale["conceptos"]:
        traslados = [cfdi40.Traslado(impuesto=t["impuesto"], tipo_factor=t["tipo_factor"], tasa_o_cuota=Decimal(t["tasa_o_cuota"])) for t in c["traslados"]]
        conceptos.append(
            cfdi40.Concepto(
                clave_prod_serv=c["clave_prod_serv"],
                cantidad=Decimal(c["cantidad"]),
                clave_unidad=c["clave_unidad"],
                unidad=c.get("unidad"),
                descripcion=c["descripcion"],
                valor_unitario=Decimal(c["valor_unitario"]),
                objeto_imp=c["objeto_imp"],
                impuestos=cfdi40.Impuestos(traslados=traslados) if traslados else None,
            )
        )
    invoice = cfdi40.Comprobante(
        emisor=cfdi40.Emisor(rfc=emisor_profile["rfc"], nombre=emisor_profile["nombre"], regimen_fiscal=emisor_profile["regimen_fiscal"]),
        lugar_expedicion=emisor_profile["lugar_expedicion"],
        receptor=cfdi40.Receptor(
            rfc=r["rfc"],
            nombre=r["nombre"],
            domicilio_fiscal_receptor=r["domicilio_fiscal"],
            regimen_fiscal_receptor=r["regimen_fiscal"],
            uso_cfdi=r["uso_cfdi"],
        ),
        conceptos=conceptos,
        moneda=sale["moneda"],
        serie=sale["serie"],
        folio=sale["folio"],
        forma_pago=sale["forma_pago"],
        metodo_pago=sale["metodo_pago"],
        fecha=datetime.fromisoformat(sale["occurred_at"]),
    )
    invoice.sign(signer)
    return invoice.xml_bytes()


built = build_seal()
assert b'Sello="' in built and b"Total=\"116.00\"" in built, built[:400]
print(f"satcfdi-build-seal {per_doc_us(build_seal, 20):.1f}")
sys.stdout.flush()
