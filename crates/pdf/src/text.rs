//! Fonts and text: the embedded DejaVu faces, glyph lookup, measuring and line wrapping.
//!
//! Owns everything that turns a string into positioned glyphs. Measuring and drawing use the
//! same glyph ids and advances (from the font's `cmap` and `hmtx`, read with `skrifa`), so a
//! line that was wrapped to fit a width is drawn exactly that wide. Spanish needs no shaping:
//! every letter it uses (á é í ó ú ü ñ, « » ¿ ¡ € $) is a precomposed glyph in DejaVu.
//!
//! Wrapping is greedy over words (runs of non-whitespace); a word wider than the line (a
//! base64 sello, a hostile 10 000-character "word") is broken between characters. Whitespace
//! runs collapse to one space, as XML attribute values already do.

use krilla::text::{Font, GlyphId, KrillaGlyph};
use skrifa::instance::{LocationRef, Size};
use skrifa::metrics::GlyphMetrics;
use skrifa::{FontRef, MetadataProvider};

use crate::PdfError;

static REGULAR: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
static BOLD: &[u8] = include_bytes!("../fonts/DejaVuSans-Bold.ttf");
static MONO: &[u8] = include_bytes!("../fonts/DejaVuSansMono.ttf");

/// Line height as a multiple of the font size. DejaVu's ascent + descent is 1.164 em, so lines
/// set at 1.3 em never touch.
pub const LEADING: f32 = 1.3;
/// DejaVu's hhea descender, in em.
const DESCENT: f32 = 0.236;

/// Which embedded face.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FontKind {
    Regular,
    Bold,
    Mono,
}

/// An sRGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// How a piece of text looks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Style {
    pub font: FontKind,
    pub size: f32,
    pub color: Rgb,
}

impl Style {
    pub const fn new(font: FontKind, size: f32, color: Rgb) -> Style {
        Style { font, size, color }
    }

    /// The height of one line in this style.
    pub fn line_height(&self) -> f32 {
        self.size * LEADING
    }

    /// Distance from the bottom of a line box of this style to its baseline.
    pub fn baseline_from_bottom(&self) -> f32 {
        self.size * (DESCENT + (LEADING - 1.164) / 2.0)
    }
}

/// One embedded face: the PDF font and its metrics.
pub struct Face {
    pub pdf: Font,
    charmap: skrifa::charmap::Charmap<'static>,
    metrics: GlyphMetrics<'static>,
    units_per_em: f32,
}

impl Face {
    fn load(data: &'static [u8], name: &'static str) -> Result<Face, PdfError> {
        let font = FontRef::new(data).map_err(|_| PdfError::Font(name))?;
        let units_per_em = f32::from(font.metrics(Size::unscaled(), LocationRef::default()).units_per_em);
        if units_per_em <= 0.0 {
            return Err(PdfError::Font(name));
        }
        let pdf = Font::new(data.into(), 0).ok_or(PdfError::Font(name))?;
        Ok(Face {
            pdf,
            charmap: font.charmap(),
            metrics: font.glyph_metrics(Size::unscaled(), LocationRef::default()),
            units_per_em,
        })
    }

    /// Glyph id and advance (in em) of a character; `.notdef` for characters the font lacks.
    fn glyph(&self, c: char) -> (GlyphId, f32) {
        let gid = self.charmap.map(c).unwrap_or_default();
        let advance = self.metrics.advance_width(gid).unwrap_or(0.0) / self.units_per_em;
        (GlyphId::new(gid.to_u32()), advance)
    }

    /// Width of `text` at `size`.
    pub fn width(&self, text: &str, size: f32) -> f32 {
        text.chars().map(|c| self.glyph(c).1).sum::<f32>() * size
    }

    /// The glyphs of `text`, each with its byte range (for the PDF's text extraction).
    pub fn glyphs(&self, text: &str) -> Vec<KrillaGlyph> {
        text.char_indices()
            .map(|(i, c)| {
                let (gid, advance) = self.glyph(c);
                KrillaGlyph::new(gid, advance, 0.0, 0.0, 0.0, i..i + c.len_utf8(), None)
            })
            .collect()
    }
}

/// The three faces every document uses.
pub struct Fonts {
    pub regular: Face,
    pub bold: Face,
    pub mono: Face,
}

impl Fonts {
    pub fn load() -> Result<Fonts, PdfError> {
        Ok(Fonts {
            regular: Face::load(REGULAR, "DejaVuSans.ttf")?,
            bold: Face::load(BOLD, "DejaVuSans-Bold.ttf")?,
            mono: Face::load(MONO, "DejaVuSansMono.ttf")?,
        })
    }

    pub fn face(&self, kind: FontKind) -> &Face {
        match kind {
            FontKind::Regular => &self.regular,
            FontKind::Bold => &self.bold,
            FontKind::Mono => &self.mono,
        }
    }

    pub fn width(&self, style: &Style, text: &str) -> f32 {
        self.face(style.font).width(text, style.size)
    }
}

/// A piece of text in one style, as input to [`wrap`].
#[derive(Debug, Clone)]
pub struct Span {
    pub text: String,
    pub style: Style,
}

impl Span {
    pub fn new(text: impl Into<String>, style: Style) -> Span {
        Span { text: text.into(), style }
    }
}

/// A run of one style inside a wrapped line, `dx` from the line's start.
#[derive(Debug, Clone)]
pub struct Run {
    pub dx: f32,
    pub text: String,
    pub style: Style,
}

/// One wrapped line.
#[derive(Debug, Clone, Default)]
pub struct Line {
    pub runs: Vec<Run>,
    pub width: f32,
}

impl Line {
    /// The tallest style in the line (sets its height and baseline).
    pub fn tallest(&self) -> Option<Style> {
        self.runs.iter().map(|r| r.style).reduce(|a, b| if b.size > a.size { b } else { a })
    }

    pub fn height(&self) -> f32 {
        self.tallest().map(|s| s.line_height()).unwrap_or(0.0)
    }

    fn push(&mut self, fonts: &Fonts, text: &str, style: Style) {
        let w = fonts.width(&style, text);
        match self.runs.last_mut() {
            Some(last) if last.style == style => last.text.push_str(text),
            _ => self.runs.push(Run {
                dx: self.width,
                text: text.to_string(),
                style,
            }),
        }
        self.width += w;
    }

    fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }
}

/// Wraps styled spans into lines at most `width` wide. Spans join without an added space
/// (put the space in the text); empty input gives no lines.
pub fn wrap(fonts: &Fonts, spans: &[Span], width: f32) -> Vec<Line> {
    let width = width.max(1.0);
    let mut lines = Vec::new();
    let mut line = Line::default();
    // A pending space between words, in the style of the text before it.
    let mut space: Option<Style> = None;
    for span in spans {
        let style = span.style;
        let mut rest = span.text.as_str();
        while !rest.is_empty() {
            let ws = rest.len() - rest.trim_start().len();
            if ws > 0 {
                if !line.is_empty() {
                    space = Some(space.unwrap_or(style));
                }
                rest = &rest[ws..];
                continue;
            }
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let word = &rest[..end];
            rest = &rest[end..];
            let word_w = fonts.width(&style, word);
            let space_w = space.map(|s| fonts.width(&s, " ")).unwrap_or(0.0);
            if !line.is_empty() && line.width + space_w + word_w > width {
                lines.push(std::mem::take(&mut line));
                space = None;
            }
            if let Some(s) = space.take() {
                line.push(fonts, " ", s);
            }
            if word_w <= width - line.width {
                line.push(fonts, word, style);
                continue;
            }
            // A word wider than a line: break it between characters.
            for c in word.chars() {
                let mut buf = [0u8; 4];
                let ch = c.encode_utf8(&mut buf);
                let cw = fonts.width(&style, ch);
                if !line.is_empty() && line.width + cw > width {
                    lines.push(std::mem::take(&mut line));
                }
                line.push(fonts, ch, style);
            }
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Style = Style::new(FontKind::Regular, 8.0, Rgb(0, 0, 0));

    fn text(line: &Line) -> String {
        line.runs.iter().map(|r| r.text.as_str()).collect()
    }

    #[test]
    fn lines_never_exceed_the_width_and_keep_every_character() {
        let fonts = Fonts::load().expect("fonts");
        let input = "Café de olla «orgánico» con piloncillo, 1 € y $ 20.00 — ñandú   ".repeat(20) + &"A".repeat(500);
        for width in [1.0, 10.0, 37.5, 120.0, 500.0] {
            let lines = wrap(&fonts, &[Span::new(input.clone(), S)], width);
            for l in &lines {
                // Only a line of one character may be wider than the width.
                assert!(
                    l.width <= width + 0.01 || text(l).chars().count() == 1,
                    "{width}: {} > {width}",
                    l.width
                );
                assert!((l.width - fonts.width(&S, &text(l))).abs() < 0.01);
            }
            let joined: String = lines.iter().map(text).collect::<Vec<_>>().join("");
            let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
            assert_eq!(squeeze(&joined), squeeze(&input), "{width}");
        }
    }

    #[test]
    fn styled_spans_share_lines_and_spaces_between_them() {
        let fonts = Fonts::load().expect("fonts");
        let bold = Style::new(FontKind::Bold, 8.0, Rgb(0, 0, 0));
        let lines = wrap(&fonts, &[Span::new("RFC: ", bold), Span::new("EKU9003173C9", S)], 500.0);
        assert_eq!(lines.len(), 1);
        assert_eq!(text(&lines[0]), "RFC: EKU9003173C9");
        assert_eq!(lines[0].runs.len(), 2);
        assert!(wrap(&fonts, &[Span::new("   ", S)], 100.0).is_empty());
    }

    #[test]
    fn spanish_letters_are_in_the_font() {
        let fonts = Fonts::load().expect("fonts");
        for c in "áéíóúüñÁÉÍÓÚÜÑ«»¿¡€$".chars() {
            for kind in [FontKind::Regular, FontKind::Bold, FontKind::Mono] {
                assert_ne!(fonts.face(kind).glyph(c).0, GlyphId::new(0), "{c} in {kind:?}");
            }
        }
    }
}
