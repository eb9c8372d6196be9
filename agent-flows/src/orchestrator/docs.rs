//! The bundled document corpus and its search engine: the `doc_search` tool's backend.
//!
//! The corpus is the documentation of the macro data set (`agent-flows/data/orchestrator/`,
//! written for this repository; see its `SOURCE.md`), compiled into the binary. Search is
//! Okapi BM25 over lightly stemmed English words, titles counting three times. Queries may be
//! in Spanish or Russian: their words go through a small translation lexicon of the domain
//! (desempleo, безработица -> unemployment) before matching; words it does not know and that
//! are not English are dropped rather than matched by accident.
//!
//! A document must hold at least half of the query's weight (each term weighs its inverse
//! document frequency; a term no document has weighs the most) to be a hit, so a query about
//! "joblessness rate" does not return every document that says "rate". What the
//! engine does not do is guess synonyms: "joblessness" finds nothing, and re-planning with
//! other words is the planner's job.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::lexicon::{is_stop_word, word_matches};
use crate::lang::words;

/// The bundled documents: file name (the id) and text.
pub const DOCUMENTS: &[(&str, &str)] = &[
    (
        "dataset",
        include_str!("../../data/orchestrator/docs/dataset.md"),
    ),
    (
        "realgdp",
        include_str!("../../data/orchestrator/docs/realgdp.md"),
    ),
    (
        "realcons",
        include_str!("../../data/orchestrator/docs/realcons.md"),
    ),
    (
        "realinv",
        include_str!("../../data/orchestrator/docs/realinv.md"),
    ),
    (
        "realgovt",
        include_str!("../../data/orchestrator/docs/realgovt.md"),
    ),
    (
        "realdpi",
        include_str!("../../data/orchestrator/docs/realdpi.md"),
    ),
    ("cpi", include_str!("../../data/orchestrator/docs/cpi.md")),
    ("infl", include_str!("../../data/orchestrator/docs/infl.md")),
    ("m1", include_str!("../../data/orchestrator/docs/m1.md")),
    (
        "tbilrate",
        include_str!("../../data/orchestrator/docs/tbilrate.md"),
    ),
    (
        "realint",
        include_str!("../../data/orchestrator/docs/realint.md"),
    ),
    (
        "unemp",
        include_str!("../../data/orchestrator/docs/unemp.md"),
    ),
    ("pop", include_str!("../../data/orchestrator/docs/pop.md")),
    (
        "recessions",
        include_str!("../../data/orchestrator/docs/recessions.md"),
    ),
    (
        "glossary",
        include_str!("../../data/orchestrator/docs/glossary.md"),
    ),
    (
        "querying",
        include_str!("../../data/orchestrator/docs/querying.md"),
    ),
];

/// Spanish and Russian words of the domain (folded; `*` matches by prefix) -> English terms.
const TRANSLATIONS: &[(&str, &str)] = &[
    // Spanish
    ("desempleo", "unemployment"),
    ("paro", "unemployment"),
    ("desempleados", "unemployed"),
    ("empleo", "employment"),
    ("trabajo", "job work"),
    ("inflacion", "inflation"),
    ("deflacion", "deflation"),
    ("precio*", "price"),
    ("indice", "index"),
    ("consumidor*", "consumer"),
    ("consumo", "consumption"),
    ("inversion*", "investment"),
    ("gobierno", "government"),
    ("federal", "federal"),
    ("gasto*", "spending"),
    ("renta", "income"),
    ("ingreso*", "income"),
    ("disponible", "disposable"),
    ("impuesto*", "tax"),
    ("ahorro", "saving"),
    ("poblacion", "population"),
    ("habitantes", "population"),
    ("dinero", "money"),
    ("monetaria", "money"),
    ("masa", "stock"),
    ("oferta", "supply"),
    ("tipo*", "rate"),
    ("tasa*", "rate"),
    ("interes", "interest"),
    ("letra*", "bill"),
    ("tesoro", "treasury"),
    ("recesion*", "recession"),
    ("crisis", "crisis"),
    ("crisis financiera", "financial crisis"),
    ("gran", "great"),
    ("datos", "data"),
    ("fuente*", "source"),
    ("trimestre*", "quarter"),
    ("trimestral*", "quarterly"),
    ("pib", "gdp"),
    ("ipc", "cpi"),
    ("producto", "product"),
    ("interior", "domestic"),
    ("interno", "domestic"),
    ("bruto", "gross"),
    ("real", "real"),
    ("reales", "real"),
    ("nominal*", "nominal"),
    ("salario*", "wage"),
    ("sueldo*", "wage"),
    ("petroleo", "oil"),
    ("vivienda", "housing"),
    ("dolares", "dollar"),
    ("encadenados", "chained"),
    ("ajustad*", "adjusted"),
    ("estacional*", "seasonally"),
    ("definicion", "definition"),
    ("mide", "measure"),
    ("calcula", "compute"),
    ("banco", "bank"),
    ("estados unidos", ""),
    ("ee uu", ""),
    ("eeuu", ""),
    ("united states", ""),
    ("usa", ""),
    ("america", ""),
    ("american", ""),
    ("сша", ""),
    ("американск*", ""),
    ("reserva", "reserve"),
    // Russian
    ("безработиц*", "unemployment"),
    ("безработн*", "unemployed"),
    ("занятост*", "employment"),
    ("работ*", "job work"),
    ("инфляци*", "inflation"),
    ("дефляци*", "deflation"),
    ("цен*", "price"),
    ("индекс*", "index"),
    ("потребител*", "consumer"),
    ("потреблени*", "consumption"),
    ("инвестиц*", "investment"),
    ("правительств*", "government"),
    ("государств*", "government"),
    ("федеральн*", "federal"),
    ("расход*", "spending"),
    ("доход*", "income"),
    ("располагаем*", "disposable"),
    ("налог*", "tax"),
    ("сбережени*", "saving"),
    ("населени*", "population"),
    ("деньг*", "money"),
    ("денежн*", "money"),
    ("масс*", "stock"),
    ("предложени*", "supply"),
    ("ставк*", "rate"),
    ("процентн*", "interest"),
    ("казначейск*", "treasury"),
    ("вексел*", "bill"),
    ("рецесси*", "recession"),
    ("спад*", "recession"),
    ("кризис*", "crisis"),
    ("велик*", "great"),
    ("данн*", "data"),
    ("источник*", "source"),
    ("квартал*", "quarter"),
    ("ввп", "gdp"),
    ("валов*", "gross"),
    ("внутрен*", "domestic"),
    ("продукт*", "product"),
    ("реальн*", "real"),
    ("номинальн*", "nominal"),
    ("зарплат*", "wage"),
    ("заработн*", "wage"),
    ("нефт*", "oil"),
    ("жиль*", "housing"),
    ("доллар*", "dollar"),
    ("сезонн*", "seasonally"),
    ("определени*", "definition"),
    ("измеря*", "measure"),
    ("рассчитыва*", "compute"),
    ("банк*", "bank"),
    ("резерв*", "reserve"),
    ("ипц", "cpi"),
    ("м1", "m1"),
];

/// A hit of a search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocHit {
    /// The document's id (its file name).
    pub id: String,
    /// Its title.
    pub title: String,
    /// BM25 score, rounded to two decimals.
    pub score: f64,
    /// The sentences that match best.
    pub snippet: String,
}

struct Doc {
    id: String,
    title: String,
    sentences: Vec<String>,
    /// Term -> frequency (title terms count three times).
    terms: BTreeMap<String, u32>,
    length: u32,
}

/// The indexed corpus.
pub struct Corpus {
    docs: Vec<Doc>,
    /// Term -> number of documents that contain it.
    df: BTreeMap<String, u32>,
    average_length: f64,
}

impl std::fmt::Debug for Corpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Corpus")
            .field("documents", &self.docs.len())
            .field("terms", &self.df.len())
            .finish()
    }
}

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// A light English stemmer: plurals, `-ing`, `-ed` and a final `e` come off, so "rates",
/// "rate" and "rated" meet, as do "measured" and "measure".
pub fn stem(word: &str) -> String {
    let mut w = word.trim_end_matches("'s").to_owned();
    if w.chars().count() <= 3 || !w.is_ascii() {
        return w;
    }
    if let Some(base) = w.strip_suffix("ies").filter(|b| b.len() >= 2) {
        w = format!("{base}y");
    } else if ["sses", "xes", "ches", "shes"]
        .iter()
        .any(|s| w.ends_with(s))
    {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.truncate(w.len() - 1);
    }
    if let Some(base) = w.strip_suffix("ing").filter(|b| b.len() >= 3) {
        w = base.to_owned();
    } else if let Some(base) = w.strip_suffix("ed").filter(|b| b.len() >= 3) {
        w = base.to_owned();
    }
    if w.len() > 3 && w.ends_with('e') {
        w.truncate(w.len() - 1);
    }
    w
}

/// `1982q4` as `1982` and `q4`, so a year finds the quarters written with it.
fn split_quarter(word: String) -> Vec<String> {
    // Checked as bytes: a word of other letters (`große`) has no char boundary at 4 to cut.
    let bytes = word.as_bytes();
    let is_year_quarter =
        bytes.len() == 6 && bytes[..4].iter().all(u8::is_ascii_digit) && bytes[4] == b'q';
    match word.split_at_checked(4) {
        Some((year, quarter)) if is_year_quarter => vec![year.to_owned(), quarter.to_owned()],
        _ => vec![word],
    }
}

/// The index terms of English `text`: words, stop words out, stemmed.
fn index_terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .flat_map(split_quarter)
        .filter(|w| !is_stop_word(w))
        .map(|w| stem(&w))
        .collect()
}

/// The English terms of a query in any of the three languages (see the module docs).
pub fn query_terms(query: &str) -> Vec<String> {
    let words: Vec<String> = words(query).into_iter().flat_map(split_quarter).collect();
    let mut terms = Vec::new();
    let mut i = 0;
    while i < words.len() {
        // A two-word translation first ("crisis financiera").
        if let Some(next) = words.get(i + 1) {
            let pair = format!("{} {}", words[i], next);
            if let Some((_, english)) = TRANSLATIONS.iter().find(|(p, _)| *p == pair) {
                terms.extend(english.split(' ').filter(|t| !t.is_empty()).map(stem));
                i += 2;
                continue;
            }
        }
        let word = &words[i];
        i += 1;
        if is_stop_word(word) {
            continue;
        }
        if let Some((_, english)) = TRANSLATIONS
            .iter()
            .find(|(pattern, _)| !pattern.contains(' ') && word_matches(word, pattern))
        {
            terms.extend(english.split(' ').filter(|t| !t.is_empty()).map(stem));
        } else if word.is_ascii() {
            terms.push(stem(word));
        }
    }
    let mut seen = BTreeSet::new();
    terms.retain(|t| seen.insert(t.clone()));
    terms
}

/// Words whose full stop is an abbreviation's.
const ABBREVIATIONS: &[&str] = &[
    "St", "Mr", "Mrs", "Dr", "e.g", "i.e", "U.S", "vs", "No", "Jan", "Feb", "Dec",
];

/// Splits a paragraph into sentences (after `.`, `!`, `?` followed by a space and a capital
/// letter or a digit; list items are sentences of their own).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim().trim_start_matches("- ").trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let chars: Vec<char> = line.chars().collect();
        let mut start = 0;
        for i in 0..chars.len() {
            // "St. Louis", "e.g. GDP": a full stop after an abbreviation ends no sentence.
            let word_before: String = chars[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_alphabetic() || **c == '.')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let abbreviation = ABBREVIATIONS.contains(&word_before.as_str());
            let end_mark = matches!(chars[i], '.' | '!' | '?') && !abbreviation;
            let next_starts = chars.get(i + 1) == Some(&' ')
                && chars
                    .get(i + 2)
                    .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
            if end_mark && next_starts {
                out.push(
                    chars[start..=i]
                        .iter()
                        .collect::<String>()
                        .trim()
                        .to_owned(),
                );
                start = i + 2;
            }
        }
        let rest: String = chars[start.min(chars.len())..].iter().collect();
        if !rest.trim().is_empty() {
            out.push(rest.trim().to_owned());
        }
    }
    out
}

impl Corpus {
    /// The bundled corpus, indexed.
    pub fn bundled() -> Corpus {
        Corpus::new(DOCUMENTS.iter().map(|(id, text)| (*id, *text)))
    }

    /// A corpus of `(id, markdown)` documents; the first `# ` line is the title.
    pub fn new<'a>(documents: impl IntoIterator<Item = (&'a str, &'a str)>) -> Corpus {
        let mut docs = Vec::new();
        let mut df: BTreeMap<String, u32> = BTreeMap::new();
        for (id, text) in documents {
            let title = text
                .lines()
                .find_map(|l| l.strip_prefix("# "))
                .unwrap_or(id)
                .trim()
                .to_owned();
            let body: String = text
                .lines()
                .filter(|l| !l.starts_with("# "))
                .collect::<Vec<_>>()
                .join("\n");
            let mut terms: BTreeMap<String, u32> = BTreeMap::new();
            for term in index_terms(&body) {
                *terms.entry(term).or_default() += 1;
            }
            for term in index_terms(&title) {
                *terms.entry(term).or_default() += 3;
            }
            let length = terms.values().sum();
            for term in terms.keys() {
                *df.entry(term.clone()).or_default() += 1;
            }
            docs.push(Doc {
                id: id.to_owned(),
                title,
                sentences: sentences(&body),
                terms,
                length,
            });
        }
        let average_length = if docs.is_empty() {
            1.0
        } else {
            docs.iter().map(|d| f64::from(d.length)).sum::<f64>() / docs.len() as f64
        };
        Corpus {
            docs,
            df,
            average_length,
        }
    }

    /// How many documents it holds.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The document with this id: title and text.
    pub fn document(&self, id: &str) -> Option<(&str, String)> {
        self.docs
            .iter()
            .find(|d| d.id == id)
            .map(|d| (d.title.as_str(), d.sentences.join(" ")))
    }

    /// The best `limit` hits for `query`, best first (empty when nothing matches enough).
    pub fn search(&self, query: &str, limit: usize) -> Vec<DocHit> {
        let terms = query_terms(query);
        if terms.is_empty() {
            return Vec::new();
        }
        let n = self.docs.len() as f64;
        let idf = |term: &String| -> f64 {
            let df = f64::from(self.df.get(term).copied().unwrap_or(0));
            ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
        };
        // A hit must hold terms worth at least half of the query's weight (rare terms weigh
        // more; a term no document has weighs the most).
        let total: f64 = terms.iter().map(idf).sum();
        let mut hits: Vec<(f64, &Doc)> = self
            .docs
            .iter()
            .filter_map(|doc| {
                let matched: f64 = terms
                    .iter()
                    .filter(|t| doc.terms.contains_key(*t))
                    .map(idf)
                    .sum();
                if matched <= 0.0 || matched < total / 2.0 {
                    return None;
                }
                let norm = 1.0 - B + B * f64::from(doc.length) / self.average_length.max(1.0);
                let score: f64 = terms
                    .iter()
                    .filter_map(|t| {
                        let tf = f64::from(*doc.terms.get(t)?);
                        Some(idf(t) * tf * (K1 + 1.0) / (tf + K1 * norm))
                    })
                    .sum();
                Some((score, doc))
            })
            .collect();
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
        hits.into_iter()
            .take(limit)
            .map(|(score, doc)| DocHit {
                id: doc.id.clone(),
                title: doc.title.clone(),
                score: (score * 100.0).round() / 100.0,
                snippet: snippet(doc, &terms, &idf),
            })
            .collect()
    }
}

/// The sentence of `doc` that holds the most query terms (rare terms weigh more), and the
/// one that holds the most of the rest, in document order (at most ~400 characters).
fn snippet(doc: &Doc, terms: &[String], idf: &dyn Fn(&String) -> f64) -> String {
    let stems: Vec<BTreeSet<String>> = doc
        .sentences
        .iter()
        .map(|s| index_terms(s).into_iter().collect())
        .collect();
    let weight = |i: usize, wanted: &[&String]| -> f64 {
        wanted
            .iter()
            .filter(|t| stems[i].contains(**t))
            .map(|t| idf(t))
            .sum()
    };
    let all: Vec<&String> = terms.iter().collect();
    let best_of = |wanted: &[&String], skip: Option<usize>| -> Option<usize> {
        (0..doc.sentences.len())
            .filter(|i| Some(*i) != skip)
            .map(|i| (i, weight(i, wanted)))
            .filter(|(_, w)| *w > 0.0)
            .max_by(|(i, a), (j, b)| a.total_cmp(b).then_with(|| j.cmp(i)))
            .map(|(i, _)| i)
    };
    let Some(first) = best_of(&all, None).or((!doc.sentences.is_empty()).then_some(0)) else {
        return String::new();
    };
    let rest: Vec<&String> = all
        .iter()
        .copied()
        .filter(|t| !stems[first].contains(*t))
        .collect();
    let mut chosen = vec![first];
    if let Some(second) = best_of(&rest, Some(first)) {
        let length = doc.sentences[first].chars().count() + doc.sentences[second].chars().count();
        if length < 400 {
            chosen.push(second);
        }
    }
    chosen.sort_unstable();
    let mut text = doc.sentences[chosen[0]].clone();
    if let Some(&second) = chosen.get(1) {
        text.push_str(if second == chosen[0] + 1 {
            " "
        } else {
            " … "
        });
        text.push_str(&doc.sentences[second]);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(hits: &[DocHit]) -> Vec<&str> {
        hits.iter().map(|h| h.id.as_str()).collect()
    }

    #[test]
    fn stems_meet() {
        for (a, b) in [
            ("rates", "rate"),
            ("measured", "measure"),
            ("recessions", "recession"),
            ("prices", "price"),
            ("economies", "economy"),
            ("spending", "spend"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
        assert_eq!(stem("gdp"), "gdp");
        assert_eq!(stem("status"), "status");
    }

    #[test]
    fn every_document_has_a_title_and_sentences() {
        let corpus = Corpus::bundled();
        assert_eq!(corpus.len(), DOCUMENTS.len());
        for (id, _) in DOCUMENTS {
            let (title, text) = corpus.document(id).expect(id);
            assert!(!title.is_empty() && text.len() > 100, "{id}");
        }
    }

    #[test]
    fn finds_the_right_document_in_three_languages() {
        let corpus = Corpus::bundled();
        for (query, expected) in [
            ("unemployment rate definition", "unemp"),
            ("What is M1?", "m1"),
            ("money supply", "m1"),
            ("Great Recession", "recessions"),
            ("treasury bill", "tbilrate"),
            ("chained dollars", "glossary"),
            ("desempleo", "unemp"),
            ("¿qué es la inflación?", "infl"),
            ("recesiones de Estados Unidos", "recessions"),
            ("безработица", "unemp"),
            ("что такое инфляция", "infl"),
            ("индекс потребительских цен", "cpi"),
        ] {
            let hits = corpus.search(query, 3);
            assert_eq!(
                hits.first().map(|h| h.id.as_str()),
                Some(expected),
                "{query}: {:?}",
                ids(&hits)
            );
            assert!(!hits[0].snippet.is_empty());
        }
    }

    #[test]
    fn unknown_words_find_nothing() {
        let corpus = Corpus::bundled();
        assert!(corpus.search("joblessness", 3).is_empty());
        assert!(corpus.search("the of and", 3).is_empty());
        assert!(corpus.search("", 3).is_empty());
        assert!(corpus.search("квантовая гравитация", 3).is_empty());
        // Half of the weight must match: a common word is not enough.
        assert!(corpus.search("joblessness rate", 3).is_empty());
        assert!(corpus.search("joblessness wage rate", 3).is_empty());
    }

    #[test]
    fn abbreviations_end_no_sentence() {
        assert_eq!(
            sentences("It is from the Federal Reserve Bank of St. Louis. Next one."),
            [
                "It is from the Federal Reserve Bank of St. Louis.",
                "Next one."
            ]
        );
    }

    #[test]
    fn snippets_show_the_matching_sentence() {
        let corpus = Corpus::bundled();
        let hits = corpus.search("highest unemployment 1982", 1);
        assert_eq!(ids(&hits), ["unemp"]);
        assert!(
            hits[0].snippet.contains("10.7 percent"),
            "{}",
            hits[0].snippet
        );
        // A definition and the peak: two sentences, each for part of the query.
        let hits = corpus.search("highest unemployment rate", 1);
        assert!(
            hits[0].snippet.starts_with("The unemployment rate is"),
            "{}",
            hits[0].snippet
        );
        assert!(
            hits[0].snippet.contains(" … The highest is 10.7 percent"),
            "{}",
            hits[0].snippet
        );
    }

    #[test]
    fn translations_cover_phrases() {
        assert_eq!(query_terms("crisis financiera"), ["financial", "crisis"]);
        assert_eq!(query_terms("recesiones de Estados Unidos"), ["recession"]);
        assert_eq!(query_terms("desempleo en 2008"), ["unemployment", "2008"]);
        assert_eq!(query_terms("жёсткая безработица"), ["unemployment"]);
    }
}
