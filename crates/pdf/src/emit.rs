//! Writing the laid-out pages as PDF with krilla.
//!
//! Owns the translation of [`Op`]s into PDF content: text as embedded, subsetted DejaVu
//! (krilla writes a CID font with a ToUnicode map, so the text can be searched, copied and
//! extracted), rectangles and QR modules as filled vector paths, the sandbox mark as rotated
//! translucent outlines, the emisor's logo as an image (PNG or JPEG, decoded by krilla). Document metadata (title, language `es-MX`, creator) is set; no clock is
//! read, so the same XML always gives the same bytes.

use krilla::color::rgb;
use krilla::geom::{PathBuilder, Point, Rect, Transform};
use krilla::metadata::Metadata;
use krilla::num::NormalizedF32;
use krilla::page::PageSettings;
use krilla::paint::{Fill, FillRule};
use krilla::surface::Surface;
use krilla::Document;

use crate::layout::{Op, QrMatrix, PAGE_HEIGHT, PAGE_WIDTH};
use crate::text::{FontKind, Fonts, Rgb};
use crate::PdfError;

/// Opacity of the sandbox mark.
const WATERMARK_OPACITY: f32 = 0.18;
const WATERMARK_COLOR: Rgb = Rgb(0xc0, 0x1c, 0x28);

/// The PDF bytes of the pages.
pub fn pdf(pages: &[Vec<Op>], fonts: &Fonts, title: &str) -> Result<Vec<u8>, PdfError> {
    let mut document = Document::new();
    document.set_metadata(
        Metadata::new()
            .title(title.to_string())
            .language("es-MX".to_string())
            .creator("Timbra".to_string()),
    );
    let settings = PageSettings::from_wh(PAGE_WIDTH, PAGE_HEIGHT).ok_or_else(|| PdfError::Pdf("tamaño de página inválido".into()))?;
    for ops in pages {
        let mut page = document.start_page_with(settings.clone());
        let mut surface = page.surface();
        for op in ops {
            draw(&mut surface, fonts, op);
        }
        surface.finish();
        page.finish();
    }
    document.finish().map_err(|e| PdfError::Pdf(format!("{e:?}")))
}

fn fill(color: Rgb, opacity: f32) -> Fill {
    Fill {
        paint: rgb::Color::new(color.0, color.1, color.2).into(),
        opacity: NormalizedF32::new(opacity).unwrap_or(NormalizedF32::ONE),
        rule: FillRule::NonZero,
    }
}

fn finite(values: &[f32]) -> bool {
    values.iter().all(|v| v.is_finite())
}

fn draw(surface: &mut Surface<'_>, fonts: &Fonts, op: &Op) {
    match op {
        Op::Text { x, y, style, text } => {
            if text.is_empty() || !finite(&[*x, *y, style.size]) {
                return;
            }
            let face = fonts.face(style.font);
            surface.set_fill(Some(fill(style.color, 1.0)));
            surface.set_stroke(None);
            surface.draw_glyphs(
                Point::from_xy(*x, *y),
                &face.glyphs(text),
                face.pdf.clone(),
                text,
                style.size,
                false,
            );
        }
        Op::Rect {
            x,
            y,
            width,
            height,
            fill: color,
        } => {
            let Some(rect) = Rect::from_xywh(*x, *y, *width, *height) else {
                return;
            };
            let mut pb = PathBuilder::new();
            pb.push_rect(rect);
            if let Some(path) = pb.finish() {
                surface.set_fill(Some(fill(*color, 1.0)));
                surface.set_stroke(None);
                surface.draw_path(&path);
            }
        }
        Op::Qr { x, y, size, code } => qr(surface, *x, *y, *size, code),
        Op::Image { x, y, width, height, logo } => {
            let (Some(image), Some(size)) = (logo.image(), krilla::geom::Size::from_wh(*width, *height)) else {
                return;
            };
            surface.push_transform(&Transform::from_translate(*x, *y));
            surface.draw_image(image, size);
            surface.pop();
        }
        Op::Watermark { text } => watermark(surface, fonts, text),
    }
}

/// Dark modules as one path, horizontal runs merged.
fn qr(surface: &mut Surface<'_>, x: f32, y: f32, size: f32, code: &QrMatrix) {
    if code.width == 0 {
        return;
    }
    let m = size / code.width as f32;
    let mut pb = PathBuilder::new();
    for (row, cells) in code.dark.chunks(code.width).enumerate() {
        let mut col = 0;
        while col < cells.len() {
            if !cells[col] {
                col += 1;
                continue;
            }
            let start = col;
            while col < cells.len() && cells[col] {
                col += 1;
            }
            if let Some(r) = Rect::from_xywh(x + start as f32 * m, y + row as f32 * m, (col - start) as f32 * m, m) {
                pb.push_rect(r);
            }
        }
    }
    if let Some(path) = pb.finish() {
        surface.set_fill(Some(fill(Rgb(0, 0, 0), 1.0)));
        surface.set_stroke(None);
        surface.draw_path(&path);
    }
}

/// Large translucent text along the page's diagonal, bottom-left to top-right.
fn watermark(surface: &mut Surface<'_>, fonts: &Fonts, text: &str) {
    let face = fonts.face(FontKind::Bold);
    let angle = (PAGE_HEIGHT / PAGE_WIDTH).atan().to_degrees();
    let diagonal = PAGE_WIDTH.hypot(PAGE_HEIGHT);
    let unit = face.width(text, 1.0);
    if unit <= 0.0 {
        return;
    }
    let size = (diagonal * 0.72 / unit).min(72.0);
    let (cx, cy) = (PAGE_WIDTH / 2.0, PAGE_HEIGHT / 2.0);
    surface.push_transform(&Transform::from_rotate_at(-angle, cx, cy));
    surface.set_fill(Some(fill(WATERMARK_COLOR, WATERMARK_OPACITY)));
    surface.set_stroke(None);
    let start = Point::from_xy(cx - unit * size / 2.0, cy + size * 0.35);
    // Outlined: drawn as shapes, so the mark does not scatter letters through the extracted
    // text; the footer carries it as text.
    surface.draw_glyphs(start, &face.glyphs(text), face.pdf.clone(), text, size, true);
    surface.pop();
}
