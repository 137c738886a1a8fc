//! Search in a catalog by code prefix or by words, accent- and case-insensitive.
//!
//! Each catalog gets, on its first search, an inverted index: the sorted vocabulary of its
//! normalized words (see [`normalize`]) with, per word, the entries whose description has it and
//! the entries whose similar words (c_ClaveProdServ's "Palabras similares") have it. A query
//! word matches every vocabulary word it is a prefix of: a contiguous range of the sorted
//! vocabulary, found by binary search. Matches are bitsets over the entries, intersected word by
//! word, so a query costs a few postings lists and never a scan of the descriptions.
//!
//! Ranking: the entry whose code is the query (case-insensitive), then entries whose code
//! starts with it (in code order), then entries whose description has every query word, then
//! entries whose description and similar words together have every query word; within each of
//! the last two, shorter descriptions first, then code order.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::data::{self, Catalogo, Entry};

/// The searchable form of `text`: lowercase words without accents or other diacritics, each
/// separated by one space; punctuation separates words. `"TORTÍLLA, de maíz"` → `"tortilla de maiz"`.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for_each_word(text, |w| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    });
    out
}

/// Base letter of the Latin letters with diacritics Spanish (and SAT's catalogs) use.
fn base_letter(c: char) -> char {
    match c {
        'À'..='Å' | 'à'..='å' | 'Ā'..='ą' => 'a',
        'Ç' | 'ç' | 'Ć'..='č' => 'c',
        'È'..='Ë' | 'è'..='ë' | 'Ē'..='ě' => 'e',
        'Ì'..='Ï' | 'ì'..='ï' | 'Ĩ'..='ı' => 'i',
        'Ñ' | 'ñ' | 'Ń'..='ň' => 'n',
        'Ò'..='Ö' | 'Ø' | 'ò'..='ö' | 'ø' | 'Ō'..='ő' => 'o',
        'Ù'..='Ü' | 'ù'..='ü' | 'Ũ'..='ų' => 'u',
        'Ý' | 'ý' | 'ÿ' => 'y',
        c => c,
    }
}

/// Calls `f` with every normalized word of `text`.
fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    for c in text.chars() {
        // Combining diacritical marks (a decomposed "í") belong to the word and are dropped.
        if ('\u{300}'..='\u{36f}').contains(&c) {
            continue;
        }
        for l in base_letter(c).to_lowercase() {
            if l.is_alphanumeric() {
                word.push(base_letter(l));
            } else if !word.is_empty() {
                f(&word);
                word.clear();
            }
        }
    }
    if !word.is_empty() {
        f(&word);
    }
}

/// A set of entries of one catalog.
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, i: u32) {
        self.0[i as usize / 64] |= 1 << (i % 64);
    }
    fn and(&mut self, other: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= b;
        }
    }
    fn and_not(&mut self, other: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= !b;
        }
    }
    fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(k, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some(k as u32 * 64 + b)
            })
        })
    }
}

/// The entries whose description has a word, and those whose similar words (only) have it.
type Postings = (Vec<u32>, Vec<u32>);

struct Index {
    /// Entries ordered by their code in uppercase (codes are ASCII; a few c_ClaveUnidad codes
    /// are mixed-case, and codes are unique ignoring case).
    by_code: Vec<u32>,
    /// Distinct normalized words, sorted.
    words: Vec<Box<str>>,
    /// Per word: the entries whose description has it (ascending).
    in_descripcion: Vec<Box<[u32]>>,
    /// Per word: the entries whose similar words, but not description, have it (ascending).
    in_similares: Vec<Box<[u32]>>,
    /// Per entry: length of its description in characters (saturated), for ranking.
    desc_len: Vec<u16>,
}

impl Index {
    fn build(c: Catalogo) -> Index {
        let n = data::len(c);
        let mut postings: HashMap<String, Postings> = HashMap::new();
        let mut desc_len = Vec::with_capacity(n);
        for i in 0..n {
            let id = i as u32;
            let (descripcion, similares) = data::searchable(c, i);
            desc_len.push(u16::try_from(descripcion.chars().count()).unwrap_or(u16::MAX));
            for_each_word(descripcion, |w| {
                let p = &mut postings.entry_ref(w).0;
                if p.last() != Some(&id) {
                    p.push(id);
                }
            });
            for_each_word(similares, |w| {
                let (d, s) = postings.entry_ref(w);
                if d.last() != Some(&id) && s.last() != Some(&id) {
                    s.push(id);
                }
            });
        }
        let mut sorted: Vec<(String, Postings)> = postings.into_iter().collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut by_code: Vec<u32> = (0..n as u32).collect();
        by_code.sort_by(|&a, &b| upper(data::code_at(c, a as usize)).cmp(upper(data::code_at(c, b as usize))));
        let mut index = Index {
            by_code,
            words: vec![],
            in_descripcion: vec![],
            in_similares: vec![],
            desc_len,
        };
        for (w, (d, s)) in sorted {
            index.words.push(w.into());
            index.in_descripcion.push(d.into());
            index.in_similares.push(s.into());
        }
        index
    }

    /// The vocabulary words that start with `prefix`.
    fn range(&self, prefix: &str) -> std::ops::Range<usize> {
        let lo = self.words.partition_point(|w| &**w < prefix);
        let hi = lo + self.words[lo..].partition_point(|w| w.starts_with(prefix));
        lo..hi
    }

    /// (entries whose description has every word, entries whose description or similar words
    /// have every word). `words` is not empty.
    fn matches(&self, words: &[String]) -> (Bits, Bits) {
        let n = self.desc_len.len();
        let mut all_desc: Option<Bits> = None;
        let mut all_any: Option<Bits> = None;
        for q in words {
            let (mut d, mut a) = (Bits::new(n), Bits::new(n));
            for k in self.range(q) {
                for &i in self.in_descripcion[k].iter() {
                    d.set(i);
                    a.set(i);
                }
                for &i in self.in_similares[k].iter() {
                    a.set(i);
                }
            }
            match (&mut all_desc, &mut all_any) {
                (Some(ad), Some(aa)) => {
                    ad.and(&d);
                    aa.and(&a);
                }
                _ => {
                    all_desc = Some(d);
                    all_any = Some(a);
                }
            }
            if all_any.as_ref().is_some_and(Bits::is_empty) {
                break;
            }
        }
        (all_desc.unwrap_or_else(|| Bits::new(n)), all_any.unwrap_or_else(|| Bits::new(n)))
    }
}

fn upper(code: &str) -> impl Iterator<Item = u8> + '_ {
    code.bytes().map(|b| b.to_ascii_uppercase())
}

/// `HashMap::entry` without allocating a key for words already present.
trait EntryRef {
    fn entry_ref(&mut self, w: &str) -> &mut Postings;
}

impl EntryRef for HashMap<String, Postings> {
    fn entry_ref(&mut self, w: &str) -> &mut Postings {
        if !self.contains_key(w) {
            self.insert(w.to_string(), Default::default());
        }
        self.get_mut(w).expect("just inserted")
    }
}

fn index(c: Catalogo) -> &'static Index {
    static INDEXES: [OnceLock<Index>; Catalogo::ALL.len()] = [const { OnceLock::new() }; Catalogo::ALL.len()];
    INDEXES[c.index()].get_or_init(|| Index::build(c))
}

/// Up to `limit` entries of `catalogo` matching `text`, best first: by code (exact, then
/// prefix) or by words (every word of `text` must start a word of the description or, ranked
/// after, of the description and similar words together), accent- and case-insensitive.
/// An empty `text` lists the catalog in code order.
pub fn search(catalogo: Catalogo, text: &str, limit: usize) -> Vec<Entry> {
    let mut out: Vec<u32> = Vec::new();
    if limit == 0 {
        return Vec::new();
    }
    let ix = index(catalogo);
    let code = text.trim().to_ascii_uppercase();
    // Code tiers: exact, then prefix; the exact code sorts first among those it prefixes.
    if !code.chars().any(char::is_whitespace) {
        let code_of = |k: usize| data::code_at(catalogo, ix.by_code[k] as usize);
        let mut k = ix
            .by_code
            .partition_point(|&i| upper(data::code_at(catalogo, i as usize)).lt(code.bytes()));
        while k < ix.by_code.len() && out.len() < limit && code_of(k).get(..code.len()).is_some_and(|p| p.eq_ignore_ascii_case(&code)) {
            out.push(ix.by_code[k]);
            k += 1;
        }
    }
    let mut words: Vec<String> = Vec::new();
    for_each_word(text, |w| {
        if !words.iter().any(|x| x == w) {
            words.push(w.to_string());
        }
    });
    if out.len() < limit && !words.is_empty() {
        let (desc, mut any) = ix.matches(&words);
        any.and_not(&desc);
        let by_code = out.len();
        for tier in [desc, any] {
            let need = limit - out.len();
            if need == 0 {
                break;
            }
            let mut hits: Vec<(u16, u32)> = tier
                .iter()
                .filter(|i| !out[..by_code].contains(i))
                .map(|i| (ix.desc_len[i as usize], i))
                .collect();
            if hits.len() > need {
                hits.select_nth_unstable(need);
                hits.truncate(need);
            }
            hits.sort_unstable();
            out.extend(hits.into_iter().map(|(_, i)| i));
        }
    }
    out.into_iter().filter_map(|i| data::nth(catalogo, i as usize)).collect()
}
