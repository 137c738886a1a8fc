//! The invoice's sections, in reading order, as flows for the paginator.
//!
//! Owns what goes where on the page: the header (emisor and the document's identity), the
//! receptor, the payment data, CFDI relacionados, the conceptos table, the totals with the
//! amount in words, the Pagos 2.0 complement, the stamp block (QR, certificates, sellos,
//! cadena original del TFD), and the frame of every page (running header, footer with the
//! legend and "Página N de M", the sandbox mark). All text goes through [`text::wrap`], so no
//! value, however long, leaves its column.

use std::sync::Arc;

use crate::format::{self, amount, money};
use crate::invoice::{serie_folio, Invoice, Tax};
use crate::layout::{self, paint_all, zip, Align, Col, Flow, Op, Piece, QrMatrix, CONTENT_WIDTH, MARGIN};
use crate::text::{self, FontKind, Fonts, Line, Rgb, Span, Style};
use crate::words::importe_con_letra;

const INK: Rgb = Rgb(0x1d, 0x23, 0x2b);
const MUTED: Rgb = Rgb(0x55, 0x5e, 0x6b);
const ACCENT: Rgb = Rgb(0x1f, 0x3a, 0x5f);
const SHADE: Rgb = Rgb(0xea, 0xee, 0xf3);
const ZEBRA: Rgb = Rgb(0xf6, 0xf7, 0xf9);
const RULE: Rgb = Rgb(0xc4, 0xcb, 0xd4);
const WHITE: Rgb = Rgb(0xff, 0xff, 0xff);
/// The sandbox mark's red (the same as the diagonal's, see `emit`).
const MARK: Rgb = Rgb(0xc0, 0x1c, 0x28);

const BODY: Style = Style::new(FontKind::Regular, 7.5, INK);
const LABEL: Style = Style::new(FontKind::Bold, 7.5, INK);
const SMALL: Style = Style::new(FontKind::Regular, 6.3, MUTED);
const SMALL_LABEL: Style = Style::new(FontKind::Bold, 6.3, MUTED);
const CELL: Style = Style::new(FontKind::Regular, 7.0, INK);
const CELL_HEAD: Style = Style::new(FontKind::Bold, 6.5, INK);
const CELL_MONO: Style = Style::new(FontKind::Mono, 6.0, INK);
const MONO: Style = Style::new(FontKind::Mono, 5.8, INK);
const BAND: Style = Style::new(FontKind::Bold, 7.0, WHITE);

/// The side of the QR code, in points (SAT asks for at least 2.75 cm = 78 pt).
const QR_SIZE: f32 = 96.0;

/// The legend SAT requires on every printed CFDI.
pub const LEYENDA: &str = "Este documento es una representación impresa de un CFDI";
/// The sandbox mark.
pub const SIN_VALIDEZ: &str = "SIN VALIDEZ FISCAL";

struct Builder<'a> {
    fonts: &'a Fonts,
    inv: &'a Invoice,
    /// The emisor's logo and its size on the page (points).
    logo: Option<(Arc<crate::Logo>, (f32, f32))>,
}

/// Everything on the pages, in order, and the running header for pages after the first.
pub fn build(fonts: &Fonts, inv: &Invoice, qr: Arc<QrMatrix>, logo: Option<(Arc<crate::Logo>, (f32, f32))>) -> (Vec<Flow>, Vec<Piece>) {
    let b = Builder { fonts, inv, logo };
    let mut flows = vec![Flow::Group(b.header()), Flow::Gap(8.0), Flow::Group(b.receptor()), Flow::Gap(6.0)];
    flows.push(Flow::Group(b.datos_de_pago()));
    if let Some(g) = b.relacionados() {
        flows.push(Flow::Gap(6.0));
        flows.push(Flow::Group(g));
    }
    flows.push(Flow::Gap(8.0));
    flows.push(b.conceptos());
    flows.push(Flow::Gap(6.0));
    flows.push(Flow::Group(b.totales()));
    if inv.pagos.is_some() {
        flows.push(Flow::Gap(8.0));
        flows.extend(b.pagos());
    }
    flows.push(Flow::Gap(10.0));
    flows.push(Flow::Group(b.timbre(qr)));
    (flows, b.running_header())
}

/// Adds the footer (legend, page number) and, in sandbox, the mark to every page: a large
/// diagonal across the page and "SIN VALIDEZ FISCAL" as text in the footer.
pub fn frame(fonts: &Fonts, pages: &mut [Vec<Op>], sandbox: bool) {
    let total = pages.len();
    let top = layout::content_bottom() + 6.0;
    for (i, page) in pages.iter_mut().enumerate() {
        let left = text::wrap(fonts, &[Span::new(format!("{LEYENDA}."), SMALL)], 250.0);
        let right = text::wrap(fonts, &[Span::new(format!("Página {} de {total}", i + 1), SMALL_LABEL)], 130.0);
        let mut cols = vec![
            Col {
                x: 0.0,
                width: 250.0,
                pad: 0.0,
                align: Align::Left,
                lines: left,
            },
            Col {
                x: CONTENT_WIDTH - 130.0,
                width: 130.0,
                pad: 0.0,
                align: Align::Right,
                lines: right,
            },
        ];
        if sandbox {
            let mark = text::wrap(fonts, &[Span::new(SIN_VALIDEZ, Style::new(FontKind::Bold, 7.5, MARK))], 130.0);
            cols.push(Col {
                x: 260.0,
                width: 130.0,
                pad: 0.0,
                align: Align::Center,
                lines: mark,
            });
        }
        let mut pieces = zip(&cols);
        let mut y = top;
        page.push(Op::Rect {
            x: MARGIN,
            y: y - 3.0,
            width: CONTENT_WIDTH,
            height: 0.5,
            fill: RULE,
        });
        for p in pieces.drain(..) {
            page.extend(p.ops.into_iter().map(|op| shift(op, MARGIN, y)));
            y += p.height;
        }
        if sandbox {
            page.push(Op::Watermark {
                text: SIN_VALIDEZ.to_string(),
            });
        }
    }
}

fn shift(op: Op, dx: f32, dy: f32) -> Op {
    match op {
        Op::Text { x, y, style, text } => Op::Text {
            x: x + dx,
            y: y + dy,
            style,
            text,
        },
        Op::Rect { x, y, width, height, fill } => Op::Rect {
            x: x + dx,
            y: y + dy,
            width,
            height,
            fill,
        },
        Op::Qr { x, y, size, code } => Op::Qr {
            x: x + dx,
            y: y + dy,
            size,
            code,
        },
        Op::Image { x, y, width, height, logo } => Op::Image {
            x: x + dx,
            y: y + dy,
            width,
            height,
            logo,
        },
        w @ Op::Watermark { .. } => w,
    }
}

/// Pieces side by side: piece *i* of the result holds piece *i* of each list.
fn beside(lists: Vec<Vec<Piece>>) -> Vec<Piece> {
    let n = lists.iter().map(Vec::len).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            let parts: Vec<&Piece> = lists.iter().filter_map(|l| l.get(i)).collect();
            Piece {
                height: parts.iter().map(|p| p.height).fold(0.0, f32::max),
                ops: parts.iter().flat_map(|p| p.ops.iter().cloned()).collect(),
            }
        })
        .collect()
}

impl Builder<'_> {
    fn wrap(&self, spans: &[Span], width: f32) -> Vec<Line> {
        text::wrap(self.fonts, spans, width)
    }

    /// `Label: value` wrapped to a column.
    fn field(&self, label: &str, value: &str, width: f32) -> Vec<Line> {
        self.wrap(&[Span::new(format!("{label}: "), LABEL), Span::new(value, BODY)], width)
    }

    fn col(&self, x: f32, width: f32, pad: f32, align: Align, lines: Vec<Line>) -> Col {
        Col {
            x,
            width,
            pad,
            align,
            lines,
        }
    }

    /// A section title: white on the accent colour, the full width.
    fn band(&self, title: &str) -> Vec<Piece> {
        let lines = self.wrap(&[Span::new(title, BAND)], CONTENT_WIDTH - 10.0);
        let mut pieces = vec![Piece::space(2.0)];
        pieces.extend(zip(&[self.col(0.0, CONTENT_WIDTH, 5.0, Align::Left, lines)]));
        pieces.push(Piece::space(2.0));
        paint_all(&mut pieces, 0.0, CONTENT_WIDTH, ACCENT);
        pieces
    }

    fn header(&self) -> Vec<Piece> {
        let inv = self.inv;
        let s = &inv.summary;
        let lw = 300.0;
        let (rx, rw, pad) = (312.0, CONTENT_WIDTH - 312.0, 7.0);
        let rin = Col::inner(rw, pad);
        let name = if s.nombre_emisor.is_empty() {
            &s.rfc_emisor
        } else {
            &s.nombre_emisor
        };
        let mut left = self.wrap(&[Span::new(name, Style::new(FontKind::Bold, 12.0, ACCENT))], lw);
        left.extend(self.field("RFC", &s.rfc_emisor, lw));
        if let Some(r) = &inv.regimen_fiscal_emisor {
            left.extend(self.field("Régimen fiscal", &format::regimen_fiscal(r), lw));
        }
        left.extend(self.field("Lugar de expedición (C.P.)", &s.lugar_expedicion, lw));

        // The document's name leads: its kind and Serie-Folio ("FACTURA F-1042").
        let heading = match inv.serie_folio() {
            Some(sf) => format!("{} {sf}", inv.title().to_uppercase()),
            None => inv.title().to_uppercase(),
        };
        let mut right = self.wrap(&[Span::new(heading, Style::new(FontKind::Bold, 13.0, ACCENT))], rin);
        if let Some(sf) = inv.serie_folio() {
            right.extend(self.field("Serie y folio", &sf, rin));
        }
        right.extend(self.field("Fecha de emisión", &s.fecha.format("%Y-%m-%dT%H:%M:%S").to_string(), rin));
        right.extend(self.wrap(&[Span::new("Folio fiscal (UUID):", LABEL)], rin));
        right.extend(self.wrap(&[Span::new(&inv.tfd.uuid, Style::new(FontKind::Mono, 7.5, INK))], rin));
        right.extend(self.field("Tipo de comprobante", &format::tipo_de_comprobante(&s.tipo_de_comprobante), rin));
        if let Some(e) = &inv.exportacion {
            right.extend(self.field("Exportación", &format::exportacion(e), rin));
        }
        let mut pieces = vec![Piece::space(6.0)];
        pieces.extend(zip(&[
            self.col(0.0, lw, 0.0, Align::Left, left),
            self.col(rx, rw, pad, Align::Left, right),
        ]));
        pieces.push(Piece::space(6.0));
        paint_all(&mut pieces, rx, rw, SHADE);
        // The emisor's logo above the emisor's name, in its own strip.
        if let Some((logo, (width, height))) = &self.logo {
            pieces.insert(
                0,
                Piece {
                    height: height + 4.0,
                    ops: vec![Op::Image {
                        x: 0.0,
                        y: 0.0,
                        width: *width,
                        height: *height,
                        logo: logo.clone(),
                    }],
                },
            );
        }
        pieces
    }

    fn receptor(&self) -> Vec<Piece> {
        let r = &self.inv.receptor;
        let (lw, rx) = (300.0, 305.0);
        let rw = CONTENT_WIDTH - rx;
        let (lin, rin) = (Col::inner(lw, 5.0), Col::inner(rw, 5.0));
        let name = if r.nombre.is_empty() { &r.rfc } else { &r.nombre };
        let mut left = self.wrap(&[Span::new(name, Style::new(FontKind::Bold, 8.5, INK))], lin);
        left.extend(self.field("RFC", &r.rfc, lin));
        if let Some(cp) = &r.domicilio_fiscal {
            left.extend(self.field("Domicilio fiscal (C.P.)", cp, lin));
        }
        if let Some(res) = &r.residencia_fiscal {
            left.extend(self.field("Residencia fiscal", res, lin));
        }
        if let Some(n) = &r.num_reg_id_trib {
            left.extend(self.field("Núm. de registro de identidad fiscal", n, lin));
        }
        let mut right = Vec::new();
        if let Some(reg) = &r.regimen_fiscal {
            right.extend(self.field("Régimen fiscal", &format::regimen_fiscal(reg), rin));
        }
        if let Some(uso) = &r.uso_cfdi {
            right.extend(self.field("Uso del CFDI", &format::uso_cfdi(uso), rin));
        }
        let mut pieces = self.band("RECEPTOR");
        pieces.push(Piece::space(3.0));
        pieces.extend(zip(&[
            self.col(0.0, lw, 5.0, Align::Left, left),
            self.col(rx, rw, 5.0, Align::Left, right),
        ]));
        pieces
    }

    fn datos_de_pago(&self) -> Vec<Piece> {
        let inv = self.inv;
        let mut fields: Vec<(&str, String)> = Vec::new();
        if let Some(f) = &inv.forma_pago {
            fields.push(("Forma de pago", format::forma_pago(f)));
        }
        if let Some(m) = &inv.metodo_pago {
            fields.push(("Método de pago", format::metodo_pago(m)));
        }
        fields.push(("Moneda", inv.summary.moneda.clone()));
        if let Some(t) = &inv.tipo_cambio {
            fields.push(("Tipo de cambio", t.clone()));
        }
        if let Some(c) = &inv.condiciones_de_pago {
            fields.push(("Condiciones de pago", c.clone()));
        }
        if let Some(g) = &inv.informacion_global {
            fields.push(("Periodicidad", format::periodicidad(&g.periodicidad)));
            fields.push(("Meses", format::meses(&g.meses)));
            fields.push(("Año", g.anio.clone()));
        }
        let mut pieces = self.band("DATOS DE PAGO");
        pieces.push(Piece::space(3.0));
        pieces.extend(self.grid(&fields, 3));
        pieces
    }

    /// Fields in `n` columns, filled row by row.
    fn grid(&self, fields: &[(&str, String)], n: usize) -> Vec<Piece> {
        let w = CONTENT_WIDTH / n as f32;
        let mut pieces = Vec::new();
        for row in fields.chunks(n) {
            let cols: Vec<Col> = row
                .iter()
                .enumerate()
                .map(|(i, (label, value))| {
                    let x = i as f32 * w;
                    self.col(x, w, 5.0, Align::Left, self.field(label, value, Col::inner(w, 5.0)))
                })
                .collect();
            pieces.extend(zip(&cols));
        }
        pieces
    }

    fn relacionados(&self) -> Option<Vec<Piece>> {
        if self.inv.relacionados.is_empty() {
            return None;
        }
        let inner = Col::inner(CONTENT_WIDTH, 5.0);
        let mut pieces = self.band("CFDI RELACIONADOS");
        pieces.push(Piece::space(3.0));
        for r in &self.inv.relacionados {
            let mut lines = self.field("Tipo de relación", &format::tipo_relacion(&r.tipo_relacion), inner);
            lines.extend(self.wrap(
                &[
                    Span::new("UUID relacionados: ", LABEL),
                    Span::new(r.uuids.join(" "), Style::new(FontKind::Mono, 7.0, INK)),
                ],
                inner,
            ));
            pieces.extend(zip(&[self.col(0.0, CONTENT_WIDTH, 5.0, Align::Left, lines)]));
        }
        Some(pieces)
    }

    /// A table header row: bold labels on the shade, each wrapped in its column.
    fn table_header(&self, columns: &[(f32, f32, Align, &str)]) -> Vec<Piece> {
        let cols: Vec<Col> = columns
            .iter()
            .map(|&(x, w, align, title)| self.col(x, w, 3.0, align, self.wrap(&[Span::new(title, CELL_HEAD)], Col::inner(w, 3.0))))
            .collect();
        let mut pieces = vec![Piece::space(2.5)];
        pieces.extend(zip(&cols));
        pieces.push(Piece::space(2.5));
        paint_all(&mut pieces, 0.0, CONTENT_WIDTH, SHADE);
        pieces
    }

    /// One table row: cells, then an optional detail line from `detail_x`, a hairline below.
    fn table_row(&self, cells: Vec<Col>, detail: Vec<Span>, detail_x: f32, shaded: bool) -> Vec<Piece> {
        let mut pieces = vec![Piece::space(2.0)];
        pieces.extend(zip(&cells));
        if !detail.is_empty() {
            let w = CONTENT_WIDTH - detail_x;
            let lines = self.wrap(&detail, Col::inner(w, 3.0));
            pieces.extend(zip(&[self.col(detail_x, w, 3.0, Align::Left, lines)]));
        }
        pieces.push(Piece::space(2.0));
        if shaded {
            paint_all(&mut pieces, 0.0, CONTENT_WIDTH, ZEBRA);
        }
        if let Some(last) = pieces.last_mut() {
            last.ops.push(Op::Rect {
                x: 0.0,
                y: last.height - 0.4,
                width: CONTENT_WIDTH,
                height: 0.4,
                fill: RULE,
            });
        }
        pieces
    }

    fn cell(&self, x: f32, w: f32, align: Align, spans: &[Span]) -> Col {
        self.col(x, w, 3.0, align, self.wrap(spans, Col::inner(w, 3.0)))
    }

    fn conceptos(&self) -> Flow {
        const COLS: [(f32, f32, Align, &str); 7] = [
            (0.0, 52.0, Align::Left, "Clave prod./serv."),
            (52.0, 44.0, Align::Right, "Cantidad"),
            (96.0, 46.0, Align::Left, "Clave unidad"),
            (142.0, 176.0, Align::Left, "Descripción"),
            (318.0, 70.0, Align::Right, "Valor unitario"),
            (388.0, 56.0, Align::Right, "Descuento"),
            (444.0, 78.0, Align::Right, "Importe"),
        ];
        let header = self.table_header(&COLS);
        let rows = self
            .inv
            .conceptos
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let values: [Vec<Span>; 7] = [
                    vec![Span::new(&c.clave_prod_serv, CELL)],
                    vec![Span::new(amount(&c.cantidad), CELL)],
                    match &c.unidad {
                        Some(u) => vec![Span::new(format!("{} ", c.clave_unidad), CELL), Span::new(u, SMALL)],
                        None => vec![Span::new(&c.clave_unidad, CELL)],
                    },
                    vec![Span::new(&c.descripcion, CELL)],
                    vec![Span::new(amount(&c.valor_unitario), CELL)],
                    vec![Span::new(c.descuento.as_deref().map(amount).unwrap_or_default(), CELL)],
                    vec![Span::new(amount(&c.importe), CELL)],
                ];
                let cells = COLS
                    .iter()
                    .zip(values.iter())
                    .map(|(&(x, w, align, _), spans)| self.cell(x, w, align, spans))
                    .collect();
                let mut detail = Vec::new();
                let mut push = |label: &str, value: String| {
                    if !detail.is_empty() {
                        detail.push(Span::new("  ·  ", SMALL));
                    }
                    detail.push(Span::new(format!("{label}: "), SMALL_LABEL));
                    detail.push(Span::new(value, SMALL));
                };
                if let Some(n) = &c.no_identificacion {
                    push("No. identificación", n.clone());
                }
                if let Some(o) = &c.objeto_imp {
                    push("Objeto de impuesto", o.clone());
                }
                for t in &c.impuestos {
                    let (label, value) = tax_detail(t);
                    push(label, value);
                }
                for p in &c.cuenta_predial {
                    push("Cuenta predial", p.clone());
                }
                for p in &c.informacion_aduanera {
                    push("Pedimento", p.clone());
                }
                self.table_row(cells, detail, COLS[3].0, i % 2 == 1)
            })
            .collect();
        Flow::Table {
            intro: self.band("CONCEPTOS"),
            header,
            rows,
        }
    }

    /// Label/amount pairs right-aligned in the totals box.
    fn amount_lines(&self, pairs: &[(String, String, bool)], x: f32, w: f32) -> Vec<Piece> {
        let lw = w * 0.55;
        let mut pieces = Vec::new();
        for (label, value, strong) in pairs {
            let (ls, vs) = if *strong {
                (Style::new(FontKind::Bold, 9.0, ACCENT), Style::new(FontKind::Bold, 9.0, ACCENT))
            } else {
                (LABEL, BODY)
            };
            pieces.extend(zip(&[
                self.cell(x, lw, Align::Left, &[Span::new(label, ls)]),
                self.cell(x + lw, w - lw, Align::Right, &[Span::new(value, vs)]),
            ]));
        }
        pieces
    }

    fn totales(&self) -> Vec<Piece> {
        let inv = self.inv;
        let moneda = inv.summary.moneda.as_str();
        let mut pairs = vec![("Subtotal".to_string(), money(&inv.sub_total, moneda), false)];
        if let Some(d) = &inv.descuento {
            pairs.push(("Descuento".to_string(), money(d, moneda), false));
        }
        for t in &inv.traslados {
            let label = format!(
                "Traslado {} {}",
                format::impuesto(&t.impuesto),
                format::tasa(t.tipo_factor.as_deref(), t.tasa_o_cuota.as_deref())
            );
            let value = t
                .importe
                .as_deref()
                .map(|i| money(i, moneda))
                .unwrap_or_else(|| "Exento".to_string());
            pairs.push((label, value, false));
        }
        for t in &inv.retenciones {
            let value = t.importe.as_deref().map(|i| money(i, moneda)).unwrap_or_default();
            pairs.push((format!("Retención {}", format::impuesto(&t.impuesto)), value, false));
        }
        pairs.push(("Total".to_string(), money(&inv.total, moneda), true));
        let (rx, rw) = (CONTENT_WIDTH - 210.0, 210.0);
        let mut right = vec![Piece::space(3.0)];
        right.extend(self.amount_lines(&pairs, rx, rw));
        right.push(Piece::space(3.0));
        paint_all(&mut right, rx, rw, SHADE);

        let lw = rx - 12.0;
        let mut left_lines = Vec::new();
        if inv.summary.tipo_de_comprobante != "P" {
            let words = format::decimal(&inv.total)
                .map(|d| importe_con_letra(d, moneda))
                .unwrap_or_else(|| inv.total.clone());
            left_lines.extend(self.wrap(&[Span::new("Importe con letra:", LABEL)], lw));
            left_lines.extend(self.wrap(&[Span::new(words, BODY)], lw));
        }
        let mut left = vec![Piece::space(3.0)];
        left.extend(zip(&[self.col(0.0, lw, 0.0, Align::Left, left_lines)]));
        beside(vec![left, right])
    }

    fn pagos(&self) -> Vec<Flow> {
        let Some(p) = &self.inv.pagos else { return Vec::new() };
        let mut flows = Vec::new();
        let inner = Col::inner(CONTENT_WIDTH, 5.0);
        let mut intro = self.band("COMPLEMENTO PARA RECEPCIÓN DE PAGOS 2.0");
        intro.push(Piece::space(3.0));
        if let Some(m) = &p.monto_total_pagos {
            // MontoTotalPagos is always in MXN (Pagos 2.0, Totales).
            let words = format::decimal(m).map(|d| importe_con_letra(d, "MXN")).unwrap_or_else(|| m.clone());
            let lines = self.wrap(
                &[
                    Span::new("Monto total de pagos: ", LABEL),
                    Span::new(format!("{}   ", money(m, "MXN")), Style::new(FontKind::Bold, 7.5, ACCENT)),
                    Span::new(format!("({words})"), BODY),
                ],
                inner,
            );
            intro.extend(zip(&[self.col(0.0, CONTENT_WIDTH, 5.0, Align::Left, lines)]));
        }
        let totales: Vec<(&str, String)> = p.totales.iter().map(|(l, v)| (*l, amount(v))).collect();
        intro.extend(self.grid(&totales, 3));
        flows.push(Flow::Group(intro));

        const COLS: [(f32, f32, Align, &str); 7] = [
            (0.0, 140.0, Align::Left, "Id. documento (UUID)"),
            (140.0, 60.0, Align::Left, "Serie y folio"),
            (200.0, 52.0, Align::Left, "Moneda / equiv."),
            (252.0, 54.0, Align::Right, "Parcialidad"),
            (306.0, 72.0, Align::Right, "Saldo anterior"),
            (378.0, 72.0, Align::Right, "Importe pagado"),
            (450.0, 72.0, Align::Right, "Saldo insoluto"),
        ];
        let count = p.pagos.len();
        for (n, pago) in p.pagos.iter().enumerate() {
            let mut spans = vec![Span::new(
                format!("Pago {} de {count}", n + 1),
                Style::new(FontKind::Bold, 7.5, ACCENT),
            )];
            let mut add = |label: &str, value: String| {
                spans.push(Span::new(format!("   {label}: "), LABEL));
                spans.push(Span::new(value, BODY));
            };
            add("Fecha de pago", pago.fecha_pago.clone());
            add("Forma de pago", format::forma_pago(&pago.forma_de_pago));
            add("Moneda", pago.moneda.clone());
            if let Some(t) = &pago.tipo_cambio {
                add("Tipo de cambio", t.clone());
            }
            add("Monto", money(&pago.monto, &pago.moneda));
            if let Some(o) = &pago.num_operacion {
                add("Núm. de operación", o.clone());
            }
            let mut intro = vec![Piece::space(4.0)];
            intro.extend(zip(&[self.col(0.0, CONTENT_WIDTH, 5.0, Align::Left, self.wrap(&spans, inner))]));
            intro.push(Piece::space(2.0));
            let rows = pago
                .documentos
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let moneda = match (&d.moneda, &d.equivalencia) {
                        (Some(m), Some(e)) => format!("{m} / {e}"),
                        (Some(m), None) => m.clone(),
                        (None, Some(e)) => format!("/ {e}"),
                        (None, None) => String::new(),
                    };
                    let values: [Vec<Span>; 7] = [
                        vec![Span::new(&d.id_documento, CELL_MONO)],
                        vec![Span::new(
                            serie_folio(d.serie.as_deref(), d.folio.as_deref()).unwrap_or_default(),
                            CELL,
                        )],
                        vec![Span::new(moneda, CELL)],
                        vec![Span::new(d.num_parcialidad.clone().unwrap_or_default(), CELL)],
                        vec![Span::new(d.imp_saldo_ant.as_deref().map(amount).unwrap_or_default(), CELL)],
                        vec![Span::new(d.imp_pagado.as_deref().map(amount).unwrap_or_default(), CELL)],
                        vec![Span::new(d.imp_saldo_insoluto.as_deref().map(amount).unwrap_or_default(), CELL)],
                    ];
                    let cells = COLS
                        .iter()
                        .zip(values.iter())
                        .map(|(&(x, w, align, _), spans)| self.cell(x, w, align, spans))
                        .collect();
                    let mut detail = Vec::new();
                    if let Some(o) = &d.objeto_imp {
                        detail.push(Span::new("Objeto de impuesto: ", SMALL_LABEL));
                        detail.push(Span::new(o, SMALL));
                    }
                    for t in &d.impuestos {
                        let (label, value) = tax_detail(t);
                        if !detail.is_empty() {
                            detail.push(Span::new("  ·  ", SMALL));
                        }
                        detail.push(Span::new(format!("{label}: "), SMALL_LABEL));
                        detail.push(Span::new(value, SMALL));
                    }
                    self.table_row(cells, detail, COLS[1].0, i % 2 == 1)
                })
                .collect();
            flows.push(Flow::Table {
                intro,
                header: self.table_header(&COLS),
                rows,
            });
        }
        flows
    }

    fn timbre(&self, qr: Arc<QrMatrix>) -> Vec<Piece> {
        let inv = self.inv;
        let tfd = &inv.tfd;
        let x = QR_SIZE + 12.0;
        let w = CONTENT_WIDTH - x;
        let inner = Col::inner(w, 0.0);
        let mut lines = self.field("Folio fiscal (UUID)", &tfd.uuid, inner);
        lines.extend(self.field("No. de certificado del emisor", &inv.no_certificado, inner));
        lines.extend(self.field("No. de certificado del SAT", &tfd.no_certificado_sat, inner));
        lines.extend(self.field(
            "Fecha y hora de certificación",
            &tfd.fecha_timbrado.format("%Y-%m-%dT%H:%M:%S").to_string(),
            inner,
        ));
        lines.extend(self.field("RFC del proveedor de certificación", &tfd.rfc_prov_certif, inner));
        if let Some(l) = &tfd.leyenda {
            lines.extend(self.field("Leyenda", l, inner));
        }
        let mut block = |title: &str, value: &str| {
            lines.push(Line::default());
            lines.extend(self.wrap(&[Span::new(title, SMALL_LABEL)], inner));
            lines.extend(self.wrap(&[Span::new(value, MONO)], inner));
        };
        block("Sello digital del CFDI:", &inv.sello);
        block("Sello del SAT:", &tfd.sello_sat);
        block("Cadena original del complemento de certificación digital del SAT:", &inv.cadena_tfd);
        // An empty line stands for a small gap.
        let mut right: Vec<Piece> = Vec::new();
        for line in lines {
            if line.runs.is_empty() {
                right.push(Piece::space(3.0));
            } else {
                right.extend(zip(&[self.col(x, w, 0.0, Align::Left, vec![line])]));
            }
        }
        let mut pieces = self.band("TIMBRE FISCAL DIGITAL");
        pieces.push(Piece::space(5.0));
        pieces.extend(with_qr(qr, right));
        pieces.push(Piece::space(4.0));
        pieces.extend(zip(&[self.col(
            0.0,
            CONTENT_WIDTH,
            0.0,
            Align::Center,
            self.wrap(&[Span::new(LEYENDA, Style::new(FontKind::Bold, 7.5, ACCENT))], CONTENT_WIDTH),
        )]));
        pieces
    }

    fn running_header(&self) -> Vec<Piece> {
        let inv = self.inv;
        let s = &inv.summary;
        let name = if s.nombre_emisor.is_empty() {
            &s.rfc_emisor
        } else {
            &s.nombre_emisor
        };
        let mut ident = inv.title().to_string();
        if let Some(sf) = inv.serie_folio() {
            ident.push(' ');
            ident.push_str(&sf);
        }
        ident.push_str(" · Folio fiscal ");
        ident.push_str(&inv.tfd.uuid);
        let half = CONTENT_WIDTH / 2.0;
        let mut pieces = zip(&[
            self.col(0.0, half, 0.0, Align::Left, self.wrap(&[Span::new(name, SMALL_LABEL)], half - 6.0)),
            self.col(half, half, 0.0, Align::Right, self.wrap(&[Span::new(ident, SMALL)], half)),
        ]);
        pieces.push(Piece {
            height: 8.0,
            ops: vec![Op::Rect {
                x: 0.0,
                y: 2.0,
                width: CONTENT_WIDTH,
                height: 0.5,
                fill: RULE,
            }],
        });
        pieces
    }
}

/// `Traslado IVA 16%: base 100.00, importe 16.00`.
fn tax_detail(t: &Tax) -> (&'static str, String) {
    let label = if t.retencion { "Retención" } else { "Traslado" };
    let mut value = format!(
        "{} {}",
        format::impuesto(&t.impuesto),
        format::tasa(t.tipo_factor.as_deref(), t.tasa_o_cuota.as_deref())
    );
    if let Some(b) = &t.base {
        value.push_str(&format!(", base {}", amount(b)));
    }
    if let Some(i) = &t.importe {
        value.push_str(&format!(", importe {}", amount(i)));
    }
    (label, value.trim().to_string())
}

/// The QR code at the left of the first pieces of `right`: the first piece is as tall as
/// the code and holds as many of `right`'s pieces as fit beside it; the rest follow.
fn with_qr(qr: Arc<QrMatrix>, right: Vec<Piece>) -> Vec<Piece> {
    let mut first = Piece {
        height: QR_SIZE,
        ops: vec![Op::Qr {
            x: 0.0,
            y: 0.0,
            size: QR_SIZE,
            code: qr,
        }],
    };
    let mut y = 0.0;
    let mut rest = right.into_iter().peekable();
    while let Some(p) = rest.next_if(|p| y + p.height <= QR_SIZE) {
        first.ops.extend(p.ops.into_iter().map(|op| shift(op, 0.0, y)));
        y += p.height;
    }
    let mut out = vec![first];
    out.extend(rest);
    out
}
