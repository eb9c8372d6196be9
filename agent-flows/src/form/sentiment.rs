//! A lexicon-based sentiment scorer for Spanish and English, in the manner of VADER: each word
//! of a valence lexicon scores from -4 to +4; intensifiers ("muy", "really") strengthen the
//! next opinion word and diminishers ("un poco", "slightly") soften it; a negator within the
//! three words before flips and dampens it ("no es bueno", "not happy"); after "pero" / "but"
//! the clause weighs more than before it; exclamation marks and words in capitals (in a message
//! that is not all capitals) add emphasis. The sum is normalised to a compound score in
//! [-1, 1]: `sum / sqrt(sum² + 15)`.
//!
//! It reads folded words ([`crate::lang::words`]), so accents do not matter. It is the
//! `sentiment` escalation policy's scorer: a frustrated user ("esto es horrible, estoy harto")
//! scores well below -0.5, a correction ("no, eso está mal") stays mild.

use crate::lang::{fold, words};

/// Word valences. Multi-word entries match consecutive words.
const LEXICON: &[(&str, f64)] = &[
    // Spanish, negative.
    ("horrible", -3.0),
    ("terrible", -3.0),
    ("pesimo", -3.0),
    ("pesima", -3.0),
    ("fatal", -2.5),
    ("asco", -3.0),
    ("asqueroso", -3.0),
    ("basura", -3.0),
    ("mierda", -3.5),
    ("porqueria", -3.0),
    ("inutil", -3.0),
    ("inutiles", -3.0),
    ("estupido", -3.0),
    ("estupida", -3.0),
    ("idiota", -3.0),
    ("ridiculo", -2.5),
    ("ridicula", -2.5),
    ("odio", -3.0),
    ("odiar", -3.0),
    ("harto", -3.0),
    ("harta", -3.0),
    ("hartos", -3.0),
    ("frustrado", -2.5),
    ("frustrada", -2.5),
    ("frustrante", -2.5),
    ("enfadado", -2.5),
    ("enfadada", -2.5),
    ("enojado", -2.5),
    ("enojada", -2.5),
    ("furioso", -3.0),
    ("furiosa", -3.0),
    ("molesto", -2.0),
    ("molesta", -2.0),
    ("cansado", -1.5),
    ("cansada", -1.5),
    ("decepcionado", -2.5),
    ("decepcionada", -2.5),
    ("decepcion", -2.5),
    ("desastre", -3.0),
    ("malo", -2.0),
    ("mala", -2.0),
    ("peor", -2.5),
    ("lento", -1.5),
    ("absurdo", -2.5),
    ("verguenza", -2.5),
    ("queja", -2.0),
    ("joder", -2.5),
    ("maldita", -2.5),
    ("maldito", -2.5),
    ("no funciona", -2.0),
    ("no sirve", -2.5),
    ("no entiendes", -2.0),
    ("mal", -1.0),
    ("problema", -1.0),
    ("triste", -2.0),
    // Spanish, positive.
    ("gracias", 2.0),
    ("genial", 3.0),
    ("perfecto", 3.0),
    ("perfecta", 3.0),
    ("excelente", 3.0),
    ("estupendo", 3.0),
    ("maravilloso", 3.0),
    ("fantastico", 3.0),
    ("encanta", 3.0),
    ("feliz", 2.5),
    ("contento", 2.0),
    ("contenta", 2.0),
    ("amable", 2.0),
    ("util", 2.0),
    ("bueno", 1.5),
    ("buena", 1.5),
    ("bien", 1.0),
    ("rapido", 1.0),
    ("facil", 1.5),
    // English, negative.
    ("horrible", -3.0),
    ("terrible", -3.0),
    ("awful", -3.0),
    ("worst", -3.0),
    ("garbage", -3.0),
    ("trash", -3.0),
    ("crap", -3.0),
    ("shit", -3.5),
    ("sucks", -3.0),
    ("useless", -3.0),
    ("stupid", -3.0),
    ("idiot", -3.0),
    ("dumb", -2.5),
    ("ridiculous", -2.5),
    ("hate", -3.0),
    ("fed up", -3.0),
    ("sick of", -3.0),
    ("tired of", -2.5),
    ("frustrated", -2.5),
    ("frustrating", -2.5),
    ("angry", -2.5),
    ("furious", -3.0),
    ("annoyed", -2.0),
    ("annoying", -2.0),
    ("upset", -2.0),
    ("disappointed", -2.5),
    ("disappointing", -2.5),
    ("disaster", -3.0),
    ("pathetic", -3.0),
    ("bad", -2.0),
    ("worse", -2.5),
    ("slow", -1.5),
    ("damn", -2.5),
    ("wtf", -3.0),
    ("doesn't work", -2.0),
    ("not working", -2.0),
    ("broken", -2.0),
    ("wrong", -1.0),
    ("problem", -1.0),
    ("sad", -2.0),
    ("ugh", -1.5),
    // English, positive.
    ("thanks", 2.0),
    ("thank", 2.0),
    ("great", 3.0),
    ("perfect", 3.0),
    ("excellent", 3.0),
    ("awesome", 3.0),
    ("wonderful", 3.0),
    ("fantastic", 3.0),
    ("love", 3.0),
    ("happy", 2.5),
    ("glad", 2.0),
    ("kind", 2.0),
    ("helpful", 2.0),
    ("good", 1.5),
    ("nice", 2.0),
    ("fine", 1.0),
    ("easy", 1.5),
    ("fast", 1.0),
];

/// Words that strengthen the next opinion word.
const INTENSIFIERS: &[&str] = &[
    "muy",
    "super",
    "realmente",
    "totalmente",
    "completamente",
    "absolutamente",
    "demasiado",
    "tan",
    "tanto",
    "extremadamente",
    "very",
    "really",
    "so",
    "totally",
    "completely",
    "absolutely",
    "extremely",
    "too",
    "incredibly",
    "utterly",
];

/// Words that soften the next opinion word.
const DIMINISHERS: &[&str] = &[
    "poco",
    "algo",
    "ligeramente",
    "slightly",
    "somewhat",
    "little",
    "kinda",
    "bit",
];

/// Words that negate an opinion word within the next three words.
const NEGATORS: &[&str] = &[
    "no", "nunca", "jamas", "ni", "tampoco", "not", "never", "don't", "dont", "isn't", "isnt",
    "wasn't", "aren't", "ain't", "doesn't", "didn't", "without", "sin",
];

/// Words after which a clause weighs more (and the clause before, less).
const CONTRASTS: &[&str] = &["pero", "sino", "aunque", "but", "however", "although"];

/// The compound sentiment of `text`, from -1 (very negative) to 1 (very positive); 0 when no
/// opinion word shows.
pub fn score(text: &str) -> f64 {
    let tokens = words(text);
    let raw: Vec<&str> = text.split_whitespace().collect();
    let shouting = raw.iter().any(|w| is_caps(w))
        && !raw
            .iter()
            .all(|w| is_caps(w) || !w.chars().any(char::is_alphabetic));
    let caps: Vec<String> = raw
        .iter()
        .filter(|w| shouting && is_caps(w))
        .flat_map(|w| words(w))
        .collect();
    let contrast_at = tokens.iter().position(|w| CONTRASTS.contains(&w.as_str()));

    let mut sum = 0.0;
    let mut i = 0;
    while i < tokens.len() {
        let Some((len, valence)) = entry_at(&tokens, i) else {
            i += 1;
            continue;
        };
        let mut v = valence;
        if let Some(prev) = i.checked_sub(1).map(|p| tokens[p].as_str()) {
            if INTENSIFIERS.contains(&prev) {
                v *= 1.3;
            } else if DIMINISHERS.contains(&prev) {
                v *= 0.6;
            }
        }
        // "no funciona" is an entry of its own: its own "no" does not negate it.
        let negated = (i.saturating_sub(3)..i).any(|p| NEGATORS.contains(&tokens[p].as_str()));
        if negated {
            v *= -0.6;
        }
        if caps.iter().any(|c| *c == tokens[i]) {
            v += 0.7 * v.signum();
        }
        match contrast_at {
            Some(at) if i < at => v *= 0.5,
            Some(_) => v *= 1.5,
            None => {}
        }
        sum += v;
        i += len;
    }
    if sum != 0.0 {
        let bangs = text.chars().filter(|c| *c == '!').count().min(4) as f64;
        sum += 0.29 * bangs * sum.signum();
    }
    sum / (sum * sum + 15.0).sqrt()
}

/// The lexicon entry starting at word `i`: (words it spans, valence); the longest wins.
fn entry_at(tokens: &[String], i: usize) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    for (phrase, valence) in LEXICON {
        let parts: Vec<String> = fold(phrase).split(' ').map(str::to_owned).collect();
        if tokens.len() >= i + parts.len()
            && tokens[i..i + parts.len()] == parts[..]
            && best.is_none_or(|(len, _)| parts.len() > len)
        {
            best = Some((parts.len(), *valence));
        }
    }
    best
}

fn is_caps(word: &str) -> bool {
    let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
    letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frustration_scores_low_in_both_languages() {
        for text in [
            "Esto es horrible, estoy harto",
            "Este formulario es una basura",
            "Estoy muy frustrado",
            "This is useless and I hate it",
            "I'm so fed up with this",
            "this is the worst, TERRIBLE service",
        ] {
            let s = score(text);
            assert!(s < -0.5, "{text}: {s}");
        }
    }

    #[test]
    fn ordinary_answers_and_corrections_stay_neutral_or_mild() {
        for text in [
            "Mi nombre es Juan",
            "juan@ejemplo.com",
            "No, mi email es juan.nuevo@ejemplo.com",
            "Eso está mal, es Pedro",
            "That's wrong, it should be John",
            "my phone is +34 600 123 456",
            "¿Cómo está el clima?",
        ] {
            let s = score(text);
            assert!(s > -0.5, "{text}: {s}");
        }
        assert_eq!(score("juan@ejemplo.com"), 0.0);
    }

    #[test]
    fn positive_messages_score_high() {
        assert!(score("¡Genial, muchas gracias!") > 0.5);
        assert!(score("Great, thanks a lot!") > 0.5);
    }

    #[test]
    fn negation_flips_and_dampens() {
        assert!(score("no es bueno") < 0.0);
        assert!(score("not happy") < 0.0);
        assert!(score("not bad") > 0.0);
        assert!(score("no estoy contento").abs() < score("estoy contento"));
    }

    #[test]
    fn intensity_contrast_and_emphasis_matter() {
        assert!(score("very bad") < score("bad"));
        assert!(score("a bit bad") > score("bad"));
        assert!(score("bad!!!") < score("bad"));
        assert!(score("this is BAD") < score("this is bad"));
        // After "but" counts more: mostly positive.
        assert!(score("it was slow but the staff were great") > 0.0);
        assert!(score("el personal es genial pero el servicio es horrible") < 0.0);
    }
}
