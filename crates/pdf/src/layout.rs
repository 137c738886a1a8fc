//! Page geometry and pagination: drawing operations, pieces, columns and the paginator.
//!
//! Owns the rule that nothing overlaps and nothing is lost at a page break. Everything on a
//! page is made of **pieces**: horizontal strips of the content width, each one line tall
//! (or a little more, e.g. the strip that holds the QR code), with drawing operations relative
//! to the strip's top-left corner. Pieces are stacked; the paginator only ever breaks
//! *between* pieces, so a line of text is never cut.
//!
//! * A [`Flow::Group`] is kept on one page when it fits on a page at all, else it flows on.
//! * A [`Flow::Table`] prints its intro once and repeats its column header on every page it
//!   continues on; each row is kept together unless it is taller than a page (a hostile
//!   description), and then it flows on line by line, under a repeated header.
//!
//! Coordinates are PDF points with the origin at the top-left of the page (y grows down), as
//! krilla draws them.

use std::sync::Arc;

use crate::text::{Line, Rgb, Style};

/// US Letter, the Mexican standard paper.
pub const PAGE_WIDTH: f32 = 612.0;
pub const PAGE_HEIGHT: f32 = 792.0;
/// 45 pt = 1.59 cm on every side.
pub const MARGIN: f32 = 45.0;
pub const CONTENT_WIDTH: f32 = PAGE_WIDTH - 2.0 * MARGIN;
/// Space kept at the bottom of every page for the footer (legend and page number).
pub const FOOTER_HEIGHT: f32 = 22.0;
const CONTENT_TOP: f32 = MARGIN;
const CONTENT_BOTTOM: f32 = PAGE_HEIGHT - MARGIN - FOOTER_HEIGHT;

/// The modules of a QR code, row by row (`true` = dark).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QrMatrix {
    pub width: usize,
    pub dark: Vec<bool>,
}

/// A drawing operation.
#[derive(Debug, Clone)]
pub enum Op {
    /// Text whose baseline starts at (`x`, `y`).
    Text { x: f32, y: f32, style: Style, text: String },
    /// A filled rectangle.
    Rect {
        x: f32,
        y: f32,
        width: f32,
        height: f32,
        fill: Rgb,
    },
    /// A QR code, `size` points square, top-left at (`x`, `y`).
    Qr { x: f32, y: f32, size: f32, code: Arc<QrMatrix> },
    /// The emisor's logo, `width`×`height` points, top-left at (`x`, `y`).
    Image {
        x: f32,
        y: f32,
        width: f32,
        height: f32,
        logo: Arc<crate::Logo>,
    },
    /// The sandbox mark across the whole page.
    Watermark { text: String },
}

impl Op {
    fn translated(&self, dx: f32, dy: f32) -> Op {
        let mut op = self.clone();
        match &mut op {
            Op::Text { x, y, .. } | Op::Rect { x, y, .. } | Op::Qr { x, y, .. } | Op::Image { x, y, .. } => {
                *x += dx;
                *y += dy;
            }
            Op::Watermark { .. } => {}
        }
        op
    }
}

/// A horizontal strip of the content width.
#[derive(Debug, Clone, Default)]
pub struct Piece {
    pub height: f32,
    pub ops: Vec<Op>,
}

impl Piece {
    /// Empty vertical space.
    pub fn space(height: f32) -> Piece {
        Piece { height, ops: Vec::new() }
    }

    /// Paints a band behind everything already in the piece.
    pub fn paint(&mut self, x: f32, width: f32, fill: Rgb) {
        self.ops.insert(
            0,
            Op::Rect {
                x,
                y: 0.0,
                width,
                height: self.height,
                fill,
            },
        );
    }
}

/// Paints the same band behind every piece (a shaded box that survives page breaks).
pub fn paint_all(pieces: &mut [Piece], x: f32, width: f32, fill: Rgb) {
    for p in pieces {
        p.paint(x, width, fill);
    }
}

/// Horizontal alignment of a column's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
    Center,
}

/// A column of wrapped lines at `x`, `width` wide, its text inset by `pad` on both sides.
#[derive(Debug, Clone)]
pub struct Col {
    pub x: f32,
    pub width: f32,
    pub pad: f32,
    pub align: Align,
    pub lines: Vec<Line>,
}

impl Col {
    /// The width available to text (what its lines must be wrapped to).
    pub fn inner(width: f32, pad: f32) -> f32 {
        (width - 2.0 * pad).max(1.0)
    }
}

/// Side-by-side columns as pieces: piece *i* holds line *i* of every column and is as tall
/// as the tallest of them. Baselines sit at the bottom of the piece, so lines of different
/// sizes in one piece share a bottom edge and never leave the piece.
pub fn zip(cols: &[Col]) -> Vec<Piece> {
    let n = cols.iter().map(|c| c.lines.len()).max().unwrap_or(0);
    let mut pieces = Vec::with_capacity(n);
    for i in 0..n {
        let height = cols.iter().filter_map(|c| c.lines.get(i)).map(Line::height).fold(0.0, f32::max);
        let mut piece = Piece { height, ops: Vec::new() };
        for col in cols {
            if let Some(line) = col.lines.get(i) {
                line_ops(&mut piece, col, line);
            }
        }
        pieces.push(piece);
    }
    pieces
}

fn line_ops(piece: &mut Piece, col: &Col, line: &Line) {
    let Some(tallest) = line.tallest() else { return };
    let inner = Col::inner(col.width, col.pad);
    let start = col.x
        + col.pad
        + match col.align {
            Align::Left => 0.0,
            Align::Right => (inner - line.width).max(0.0),
            Align::Center => ((inner - line.width) / 2.0).max(0.0),
        };
    let baseline = piece.height - tallest.baseline_from_bottom();
    for run in &line.runs {
        piece.ops.push(Op::Text {
            x: start + run.dx,
            y: baseline,
            style: run.style,
            text: run.text.clone(),
        });
    }
}

/// What the paginator lays out.
#[derive(Debug, Clone)]
pub enum Flow {
    /// Pieces kept on one page when they fit on one.
    Group(Vec<Piece>),
    /// A table: `intro` once, `header` on every page it is on, rows kept together.
    Table {
        intro: Vec<Piece>,
        header: Vec<Piece>,
        rows: Vec<Vec<Piece>>,
    },
    /// Vertical space (dropped at the top of a page).
    Gap(f32),
}

fn height(pieces: &[Piece]) -> f32 {
    pieces.iter().map(|p| p.height).sum()
}

/// Lays the flows out on pages. `running` is printed at the top of every page but the first.
/// Returns each page's operations in absolute page coordinates.
pub fn paginate(flows: &[Flow], running: &[Piece]) -> Vec<Vec<Op>> {
    let mut p = Paginator {
        pages: vec![Vec::new()],
        y: CONTENT_TOP,
        fresh_y: CONTENT_TOP,
        running,
    };
    for flow in flows {
        match flow {
            Flow::Gap(h) => {
                if !p.at_top() {
                    p.y += h;
                }
            }
            Flow::Group(pieces) => {
                let h = height(pieces);
                if !p.fits(h) && h <= p.capacity() && !p.at_top() {
                    p.new_page();
                }
                p.place_lines(pieces, &[]);
            }
            Flow::Table { intro, header, rows } => {
                let first = rows.first().map(|r| height(r)).unwrap_or(0.0);
                let first = if first <= p.capacity() - height(intro) - height(header) {
                    first
                } else {
                    rows.first().and_then(|r| r.first()).map(|x| x.height).unwrap_or(0.0)
                };
                if !p.fits(height(intro) + height(header) + first) && !p.at_top() {
                    p.new_page();
                }
                p.place_lines(intro, &[]);
                p.place_lines(header, &[]);
                let room = p.capacity() - height(header);
                for row in rows {
                    let h = height(row);
                    if !p.fits(h) && h <= room && !p.at_top() {
                        p.new_page();
                        p.place_all(header);
                        p.fresh_y = p.y;
                    }
                    p.place_lines(row, header);
                }
            }
        }
    }
    p.pages
}

struct Paginator<'a> {
    pages: Vec<Vec<Op>>,
    y: f32,
    /// Where the content of the current page (after a running or repeated header) begins.
    fresh_y: f32,
    running: &'a [Piece],
}

impl Paginator<'_> {
    fn at_top(&self) -> bool {
        self.y <= self.fresh_y + 0.01
    }

    fn fits(&self, h: f32) -> bool {
        self.y + h <= CONTENT_BOTTOM + 0.01
    }

    /// The height a fresh page offers.
    fn capacity(&self) -> f32 {
        CONTENT_BOTTOM - CONTENT_TOP - height(self.running)
    }

    fn new_page(&mut self) {
        self.pages.push(Vec::new());
        self.y = CONTENT_TOP;
        let running = self.running;
        self.place_all(running);
        self.fresh_y = self.y;
    }

    fn place_all(&mut self, pieces: &[Piece]) {
        for piece in pieces {
            self.place(piece);
        }
    }

    fn place(&mut self, piece: &Piece) {
        let (dx, dy) = (MARGIN, self.y);
        if let Some(page) = self.pages.last_mut() {
            page.extend(piece.ops.iter().map(|op| op.translated(dx, dy)));
        }
        self.y += piece.height;
    }

    /// Places pieces one after another, breaking the page between them when one does not fit
    /// (never twice in a row: a piece taller than a page is placed on a fresh page as it is).
    fn place_lines(&mut self, pieces: &[Piece], repeat: &[Piece]) {
        for piece in pieces {
            if !self.fits(piece.height) && !self.at_top() {
                self.new_page();
                self.place_all(repeat);
                self.fresh_y = self.y;
            }
            self.place(piece);
        }
    }
}

/// The bottom edge of the area pieces may occupy (the footer starts below it).
pub fn content_bottom() -> f32 {
    CONTENT_BOTTOM
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{FontKind, Run};

    fn line_piece(h: f32, tag: &str) -> Piece {
        Piece {
            height: h,
            ops: vec![Op::Text {
                x: 0.0,
                y: h,
                style: Style::new(FontKind::Regular, 8.0, Rgb(0, 0, 0)),
                text: tag.into(),
            }],
        }
    }

    fn texts(page: &[Op]) -> Vec<String> {
        page.iter()
            .filter_map(|o| match o {
                Op::Text { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn table_rows_never_cross_the_bottom_and_the_header_repeats() {
        let rows: Vec<Vec<Piece>> = (0..300)
            .map(|i| vec![line_piece(9.0, &format!("r{i}a")), line_piece(9.0, &format!("r{i}b"))])
            .collect();
        let flows = [
            Flow::Group(vec![line_piece(100.0, "cabecera")]),
            Flow::Table {
                intro: vec![line_piece(12.0, "CONCEPTOS")],
                header: vec![line_piece(14.0, "encabezado")],
                rows,
            },
        ];
        let pages = paginate(&flows, &[line_piece(10.0, "corrido")]);
        assert!(pages.len() > 5);
        for (n, page) in pages.iter().enumerate() {
            let t = texts(page);
            assert!(t.iter().any(|s| s == "encabezado"), "page {n}");
            assert_eq!(t.iter().any(|s| s == "corrido"), n > 0, "page {n}");
            for op in page {
                if let Op::Text { y, .. } = op {
                    assert!(*y <= content_bottom() + 0.01 && *y >= MARGIN, "page {n}: {y}");
                }
            }
            // A row's two lines are on the same page.
            for s in &t {
                if let Some(stem) = s.strip_suffix('a').filter(|x| x.starts_with('r')) {
                    assert!(t.contains(&format!("{stem}b")), "row {stem} split on page {n}");
                }
            }
        }
        let all: Vec<String> = pages.iter().flat_map(|p| texts(p)).collect();
        assert_eq!(all.iter().filter(|s| s.starts_with('r')).count(), 600);
    }

    #[test]
    fn a_row_taller_than_a_page_flows_line_by_line_without_looping() {
        let tall: Vec<Piece> = (0..500).map(|i| line_piece(9.0, &format!("l{i}"))).collect();
        let flows = [Flow::Table {
            intro: vec![],
            header: vec![line_piece(14.0, "h")],
            rows: vec![tall, vec![line_piece(500.0, "enorme")]],
        }];
        let pages = paginate(&flows, &[]);
        let all: Vec<String> = pages.iter().flat_map(|p| texts(p)).collect();
        assert_eq!(all.iter().filter(|s| s.starts_with('l')).count(), 500);
        assert!(all.contains(&"enorme".to_string()));
        assert!(pages.len() >= 7);
    }

    #[test]
    fn zip_aligns_right_columns_to_their_edge() {
        let style = Style::new(FontKind::Regular, 8.0, Rgb(0, 0, 0));
        let line = Line {
            runs: vec![Run {
                dx: 0.0,
                text: "1,160.00".into(),
                style,
            }],
            width: 30.0,
        };
        let pieces = zip(&[Col {
            x: 100.0,
            width: 60.0,
            pad: 3.0,
            align: Align::Right,
            lines: vec![line],
        }]);
        match &pieces[0].ops[0] {
            Op::Text { x, .. } => assert!((x - (100.0 + 3.0 + 24.0)).abs() < 0.01, "{x}"),
            other => panic!("{other:?}"),
        }
    }
}
