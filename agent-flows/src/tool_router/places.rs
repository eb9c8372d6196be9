//! Where a question asks about: places (cities, countries, IANA zones) in English, Spanish and
//! Russian, resolved to IANA time zones, in the order mentioned.
//!
//! The gazetteer has every zone of the bundled tz database under its own city name
//! (`America/New_York` is "new york", `Asia/Kolkata` "kolkata") and its full name, plus
//! hand-written aliases: the major cities that are not zone names (Beijing, Mumbai, San
//! Francisco...), countries, and the Spanish and Russian names of big cities (Nueva York,
//! Londres, Tokio; Лондон, Нью-Йорк). Russian names are matched by stem, since Russian
//! inflects them ("в Лондоне", "в Москве"). A place after "in"/"en"/"в" that matches nothing
//! is reported as unknown, so the flow can say so instead of guessing.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::lang::words;

/// A place found in a question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The words as the user wrote them (case kept), e.g. "Nueva York".
    pub written: String,
    /// The IANA zone, e.g. `America/New_York`.
    pub zone: String,
}

/// What [`extract`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Places {
    /// Known places, in the order mentioned (a zone mentioned twice is listed once).
    pub known: Vec<Place>,
    /// Names after a locative ("in X", "en X", "в X") that match no place.
    pub unknown: Vec<String>,
}

/// Aliases: folded name (words separated by spaces) -> zone. Russian entries ending in `*`
/// match any word starting with the stem.
const ALIASES: &[(&str, &str)] = &[
    // Time standards.
    ("utc", "UTC"),
    ("gmt", "UTC"),
    ("greenwich", "Europe/London"),
    // Major cities that are not zone names.
    ("beijing", "Asia/Shanghai"),
    ("peking", "Asia/Shanghai"),
    ("pekin", "Asia/Shanghai"),
    ("guangzhou", "Asia/Shanghai"),
    ("shenzhen", "Asia/Shanghai"),
    ("mumbai", "Asia/Kolkata"),
    ("bombay", "Asia/Kolkata"),
    ("delhi", "Asia/Kolkata"),
    ("new delhi", "Asia/Kolkata"),
    ("nueva delhi", "Asia/Kolkata"),
    ("bangalore", "Asia/Kolkata"),
    ("bengaluru", "Asia/Kolkata"),
    ("chennai", "Asia/Kolkata"),
    ("hyderabad", "Asia/Kolkata"),
    ("osaka", "Asia/Tokyo"),
    ("kyoto", "Asia/Tokyo"),
    ("san francisco", "America/Los_Angeles"),
    ("seattle", "America/Los_Angeles"),
    ("las vegas", "America/Los_Angeles"),
    ("san diego", "America/Los_Angeles"),
    ("portland", "America/Los_Angeles"),
    ("silicon valley", "America/Los_Angeles"),
    ("washington", "America/New_York"),
    ("boston", "America/New_York"),
    ("miami", "America/New_York"),
    ("atlanta", "America/New_York"),
    ("philadelphia", "America/New_York"),
    ("filadelfia", "America/New_York"),
    ("new jersey", "America/New_York"),
    ("houston", "America/Chicago"),
    ("dallas", "America/Chicago"),
    ("austin", "America/Chicago"),
    ("san antonio", "America/Chicago"),
    ("new orleans", "America/Chicago"),
    ("nueva orleans", "America/Chicago"),
    ("minneapolis", "America/Chicago"),
    ("salt lake city", "America/Denver"),
    ("montreal", "America/Toronto"),
    ("ottawa", "America/Toronto"),
    ("quebec", "America/Toronto"),
    ("calgary", "America/Edmonton"),
    ("rio de janeiro", "America/Sao_Paulo"),
    ("rio", "America/Sao_Paulo"),
    ("brasilia", "America/Sao_Paulo"),
    ("guadalajara", "America/Mexico_City"),
    ("puebla", "America/Mexico_City"),
    ("ciudad de mexico", "America/Mexico_City"),
    ("mexico city", "America/Mexico_City"),
    ("cdmx", "America/Mexico_City"),
    ("medellin", "America/Bogota"),
    ("cali", "America/Bogota"),
    ("quito", "America/Guayaquil"),
    ("san jose", "America/Costa_Rica"),
    ("san juan", "America/Puerto_Rico"),
    ("la habana", "America/Havana"),
    ("habana", "America/Havana"),
    ("barcelona", "Europe/Madrid"),
    ("sevilla", "Europe/Madrid"),
    ("seville", "Europe/Madrid"),
    ("valencia", "Europe/Madrid"),
    ("bilbao", "Europe/Madrid"),
    ("malaga", "Europe/Madrid"),
    ("zaragoza", "Europe/Madrid"),
    ("granada", "Europe/Madrid"),
    ("santiago de compostela", "Europe/Madrid"),
    ("palma", "Europe/Madrid"),
    ("las palmas", "Atlantic/Canary"),
    ("tenerife", "Atlantic/Canary"),
    ("canarias", "Atlantic/Canary"),
    ("canary islands", "Atlantic/Canary"),
    ("islas canarias", "Atlantic/Canary"),
    ("porto", "Europe/Lisbon"),
    ("oporto", "Europe/Lisbon"),
    ("munich", "Europe/Berlin"),
    ("frankfurt", "Europe/Berlin"),
    ("hamburg", "Europe/Berlin"),
    ("cologne", "Europe/Berlin"),
    ("colonia", "Europe/Berlin"),
    ("milan", "Europe/Rome"),
    ("milano", "Europe/Rome"),
    ("napoles", "Europe/Rome"),
    ("naples", "Europe/Rome"),
    ("florence", "Europe/Rome"),
    ("florencia", "Europe/Rome"),
    ("venice", "Europe/Rome"),
    ("venecia", "Europe/Rome"),
    ("geneva", "Europe/Zurich"),
    ("ginebra", "Europe/Zurich"),
    ("bern", "Europe/Zurich"),
    ("berna", "Europe/Zurich"),
    ("manchester", "Europe/London"),
    ("edinburgh", "Europe/London"),
    ("edimburgo", "Europe/London"),
    ("liverpool", "Europe/London"),
    ("marseille", "Europe/Paris"),
    ("marsella", "Europe/Paris"),
    ("lyon", "Europe/Paris"),
    ("the hague", "Europe/Amsterdam"),
    ("rotterdam", "Europe/Amsterdam"),
    ("saint petersburg", "Europe/Moscow"),
    ("st petersburg", "Europe/Moscow"),
    ("san petersburgo", "Europe/Moscow"),
    ("ankara", "Europe/Istanbul"),
    ("estambul", "Europe/Istanbul"),
    ("tel aviv", "Asia/Jerusalem"),
    ("abu dhabi", "Asia/Dubai"),
    ("doha", "Asia/Qatar"),
    ("mecca", "Asia/Riyadh"),
    ("la meca", "Asia/Riyadh"),
    ("ho chi minh city", "Asia/Ho_Chi_Minh"),
    ("saigon", "Asia/Ho_Chi_Minh"),
    ("hanoi", "Asia/Bangkok"),
    ("melbourne", "Australia/Melbourne"),
    ("canberra", "Australia/Sydney"),
    ("cape town", "Africa/Johannesburg"),
    ("ciudad del cabo", "Africa/Johannesburg"),
    ("pretoria", "Africa/Johannesburg"),
    ("el cairo", "Africa/Cairo"),
    ("marrakech", "Africa/Casablanca"),
    ("rabat", "Africa/Casablanca"),
    // Spanish names.
    ("nueva york", "America/New_York"),
    ("londres", "Europe/London"),
    ("tokio", "Asia/Tokyo"),
    ("paris", "Europe/Paris"),
    ("berlin", "Europe/Berlin"),
    ("roma", "Europe/Rome"),
    ("moscu", "Europe/Moscow"),
    ("lisboa", "Europe/Lisbon"),
    ("bruselas", "Europe/Brussels"),
    ("amsterdam", "Europe/Amsterdam"),
    ("atenas", "Europe/Athens"),
    ("viena", "Europe/Vienna"),
    ("varsovia", "Europe/Warsaw"),
    ("praga", "Europe/Prague"),
    ("estocolmo", "Europe/Stockholm"),
    ("copenhague", "Europe/Copenhagen"),
    ("dublin", "Europe/Dublin"),
    ("kiev", "Europe/Kyiv"),
    ("shanghai", "Asia/Shanghai"),
    ("hong kong", "Asia/Hong_Kong"),
    ("seul", "Asia/Seoul"),
    ("singapur", "Asia/Singapore"),
    ("bangkok", "Asia/Bangkok"),
    ("yakarta", "Asia/Jakarta"),
    ("manila", "Asia/Manila"),
    ("dubai", "Asia/Dubai"),
    ("teheran", "Asia/Tehran"),
    ("jerusalen", "Asia/Jerusalem"),
    ("sidney", "Australia/Sydney"),
    ("nueva zelanda", "Pacific/Auckland"),
    ("los angeles", "America/Los_Angeles"),
    ("chicago", "America/Chicago"),
    ("toronto", "America/Toronto"),
    ("bogota", "America/Bogota"),
    ("lima", "America/Lima"),
    ("caracas", "America/Caracas"),
    ("santiago de chile", "America/Santiago"),
    ("buenos aires", "America/Argentina/Buenos_Aires"),
    ("montevideo", "America/Montevideo"),
    ("asuncion", "America/Asuncion"),
    ("sao paulo", "America/Sao_Paulo"),
    ("san pablo", "America/Sao_Paulo"),
    ("ciudad de guatemala", "America/Guatemala"),
    ("ciudad de panama", "America/Panama"),
    ("santo domingo", "America/Santo_Domingo"),
    ("johannesburgo", "Africa/Johannesburg"),
    ("nairobi", "Africa/Nairobi"),
    ("lagos", "Africa/Lagos"),
    // Countries (English and Spanish names), by their capital's zone.
    ("spain", "Europe/Madrid"),
    ("espana", "Europe/Madrid"),
    ("france", "Europe/Paris"),
    ("francia", "Europe/Paris"),
    ("germany", "Europe/Berlin"),
    ("alemania", "Europe/Berlin"),
    ("italy", "Europe/Rome"),
    ("italia", "Europe/Rome"),
    ("united kingdom", "Europe/London"),
    ("uk", "Europe/London"),
    ("england", "Europe/London"),
    ("inglaterra", "Europe/London"),
    ("reino unido", "Europe/London"),
    ("ireland", "Europe/Dublin"),
    ("irlanda", "Europe/Dublin"),
    ("portugal", "Europe/Lisbon"),
    ("netherlands", "Europe/Amsterdam"),
    ("holanda", "Europe/Amsterdam"),
    ("paises bajos", "Europe/Amsterdam"),
    ("belgium", "Europe/Brussels"),
    ("belgica", "Europe/Brussels"),
    ("switzerland", "Europe/Zurich"),
    ("suiza", "Europe/Zurich"),
    ("austria", "Europe/Vienna"),
    ("poland", "Europe/Warsaw"),
    ("polonia", "Europe/Warsaw"),
    ("greece", "Europe/Athens"),
    ("grecia", "Europe/Athens"),
    ("sweden", "Europe/Stockholm"),
    ("suecia", "Europe/Stockholm"),
    ("norway", "Europe/Oslo"),
    ("noruega", "Europe/Oslo"),
    ("finland", "Europe/Helsinki"),
    ("finlandia", "Europe/Helsinki"),
    ("ukraine", "Europe/Kyiv"),
    ("ucrania", "Europe/Kyiv"),
    ("turkey", "Europe/Istanbul"),
    ("turquia", "Europe/Istanbul"),
    ("japan", "Asia/Tokyo"),
    ("japon", "Asia/Tokyo"),
    ("china", "Asia/Shanghai"),
    ("india", "Asia/Kolkata"),
    ("korea", "Asia/Seoul"),
    ("south korea", "Asia/Seoul"),
    ("corea", "Asia/Seoul"),
    ("corea del sur", "Asia/Seoul"),
    ("thailand", "Asia/Bangkok"),
    ("tailandia", "Asia/Bangkok"),
    ("vietnam", "Asia/Ho_Chi_Minh"),
    ("philippines", "Asia/Manila"),
    ("filipinas", "Asia/Manila"),
    ("indonesia", "Asia/Jakarta"),
    ("israel", "Asia/Jerusalem"),
    ("egypt", "Africa/Cairo"),
    ("egipto", "Africa/Cairo"),
    ("morocco", "Africa/Casablanca"),
    ("marruecos", "Africa/Casablanca"),
    ("south africa", "Africa/Johannesburg"),
    ("sudafrica", "Africa/Johannesburg"),
    ("kenya", "Africa/Nairobi"),
    ("nigeria", "Africa/Lagos"),
    ("argentina", "America/Argentina/Buenos_Aires"),
    ("chile", "America/Santiago"),
    ("colombia", "America/Bogota"),
    ("peru", "America/Lima"),
    ("venezuela", "America/Caracas"),
    ("ecuador", "America/Guayaquil"),
    ("uruguay", "America/Montevideo"),
    ("paraguay", "America/Asuncion"),
    ("bolivia", "America/La_Paz"),
    ("cuba", "America/Havana"),
    ("mexico", "America/Mexico_City"),
    ("new zealand", "Pacific/Auckland"),
    ("iceland", "Atlantic/Reykjavik"),
    ("islandia", "Atlantic/Reykjavik"),
    // Russian names, by stem.
    ("москв*", "Europe/Moscow"),
    ("лондон*", "Europe/London"),
    ("париж*", "Europe/Paris"),
    ("берлин*", "Europe/Berlin"),
    ("мадрид*", "Europe/Madrid"),
    ("токио", "Asia/Tokyo"),
    ("пекин*", "Asia/Shanghai"),
    ("шанха*", "Asia/Shanghai"),
    ("нью йорк*", "America/New_York"),
    ("вашингтон*", "America/New_York"),
    ("чикаго", "America/Chicago"),
    ("лос анджелес*", "America/Los_Angeles"),
    ("сан франциско", "America/Los_Angeles"),
    ("торонто", "America/Toronto"),
    ("мехико", "America/Mexico_City"),
    ("буэнос айрес*", "America/Argentina/Buenos_Aires"),
    ("сидне*", "Australia/Sydney"),
    ("мельбурн*", "Australia/Melbourne"),
    ("дели", "Asia/Kolkata"),
    ("мумба*", "Asia/Kolkata"),
    ("дуба*", "Asia/Dubai"),
    ("стамбул*", "Europe/Istanbul"),
    ("рим", "Europe/Rome"),
    ("риме", "Europe/Rome"),
    ("вена", "Europe/Vienna"),
    ("вене", "Europe/Vienna"),
    ("праг*", "Europe/Prague"),
    ("варшав*", "Europe/Warsaw"),
    ("киев*", "Europe/Kyiv"),
    ("минск*", "Europe/Minsk"),
    ("рига", "Europe/Riga"),
    ("риге", "Europe/Riga"),
    ("таллин*", "Europe/Tallinn"),
    ("вильнюс*", "Europe/Vilnius"),
    ("хельсинки", "Europe/Helsinki"),
    ("стокгольм*", "Europe/Stockholm"),
    ("амстердам*", "Europe/Amsterdam"),
    ("брюссел*", "Europe/Brussels"),
    ("лиссабон*", "Europe/Lisbon"),
    ("афин*", "Europe/Athens"),
    ("санкт петербург*", "Europe/Moscow"),
    ("петербург*", "Europe/Moscow"),
    ("питер*", "Europe/Moscow"),
    ("калининград*", "Europe/Kaliningrad"),
    ("самар*", "Europe/Samara"),
    ("екатеринбург*", "Asia/Yekaterinburg"),
    ("новосибирск*", "Asia/Novosibirsk"),
    ("омск*", "Asia/Omsk"),
    ("красноярск*", "Asia/Krasnoyarsk"),
    ("иркутск*", "Asia/Irkutsk"),
    ("якутск*", "Asia/Yakutsk"),
    ("владивосток*", "Asia/Vladivostok"),
    ("магадан*", "Asia/Magadan"),
    ("камчатк*", "Asia/Kamchatka"),
    ("сеул*", "Asia/Seoul"),
    ("сингапур*", "Asia/Singapore"),
    ("бангкок*", "Asia/Bangkok"),
    ("гонконг*", "Asia/Hong_Kong"),
    ("тегеран*", "Asia/Tehran"),
    ("каир*", "Africa/Cairo"),
    ("россии", "Europe/Moscow"),
    ("япони*", "Asia/Tokyo"),
    ("кита*", "Asia/Shanghai"),
    ("китае", "Asia/Shanghai"),
    ("франци*", "Europe/Paris"),
    ("германи*", "Europe/Berlin"),
    ("испани*", "Europe/Madrid"),
    ("итали*", "Europe/Rome"),
    ("англия", "Europe/London"),
    ("англии", "Europe/London"),
];

/// Zone leaves that are common words in the flows' languages, or abbreviations: not matched
/// on their own (the full zone name still is).
const NOT_PLACES: &[&str] = &[
    "central",
    "eastern",
    "western",
    "pacific",
    "mountain",
    "east",
    "west",
    "north",
    "south",
    "universal",
    "zulu",
    "knox",
    "center",
    "wake",
    "easter",
    "christmas",
    "reunion",
    "victoria",
    "regina",
    "navajo",
    "stanley",
    "current",
    "general",
    "samoa",
    "hawaii",
    "michigan",
    "alaska",
    "arizona",
    "aleutian",
    "yukon",
    "atlantic",
    "newfoundland",
    "saskatchewan",
    "continental",
    "acre",
    "lord howe",
    "queensland",
    "tasmania",
    "yancowinna",
    "canberra",
    "act",
    "nsw",
    "la rioja",
    "salta",
    "casey",
    "davis",
    "mawson",
    "palmer",
    "rothera",
    "troll",
    "vostok",
    "macquarie",
    "syowa",
    "dumont durville",
    "mcmurdo",
    "south pole",
    "jan mayen",
    "chatham",
    "johnston",
    "midway",
    "truk",
    "yap",
    "norfolk",
    "marengo",
    "monticello",
    "tell city",
    "vevay",
    "vincennes",
    "winamac",
    "petersburg",
    "new salem",
    "beulah",
    "creston",
    "dawson",
    "nome",
    "thule",
    "resolute",
    "eucla",
    "currie",
    "lindeman",
    "broken hill",
    "universal",
];

struct Gazetteer {
    /// Folded phrase -> zone.
    exact: HashMap<String, String>,
    /// Russian stems: (folded words, last one a stem) -> zone.
    stems: Vec<(Vec<String>, String)>,
    /// The longest phrase, in words.
    longest: usize,
}

static GAZETTEER: LazyLock<Gazetteer> = LazyLock::new(|| {
    let mut exact = HashMap::new();
    for name in jiff::tz::db().available() {
        let name = name.as_str();
        let Some((_, leaf)) = name.rsplit_once('/') else {
            // Top-level names are legacy aliases or codes (`Japan`, `GB`, `EST5EDT`).
            continue;
        };
        exact.insert(
            words(&name.replace(['/', '_', '-'], " ")).join(" "),
            name.to_owned(),
        );
        let legacy = [
            "Etc/", "SystemV/", "US/", "Canada/", "Brazil/", "Chile/", "Mexico/",
        ]
        .iter()
        .any(|prefix| name.starts_with(prefix));
        let code = leaf.chars().all(|c| !c.is_alphabetic() || c.is_uppercase());
        let leaf = words(&leaf.replace(['_', '-'], " ")).join(" ");
        if !legacy && !code && !leaf.is_empty() && !NOT_PLACES.contains(&leaf.as_str()) {
            exact.entry(leaf).or_insert_with(|| name.to_owned());
        }
    }
    let mut stems = Vec::new();
    for (alias, zone) in ALIASES {
        if let Some(stem) = alias.strip_suffix('*') {
            stems.push((words(stem), (*zone).to_owned()));
        } else {
            exact.insert(words(alias).join(" "), (*zone).to_owned());
        }
    }
    let longest = exact
        .keys()
        .map(|k| k.split(' ').count())
        .chain(stems.iter().map(|(w, _)| w.len()))
        .max()
        .unwrap_or(1);
    Gazetteer {
        exact,
        stems,
        longest,
    }
});

/// Words that introduce a place: "in Tokyo", "en Tokio", "в Токио".
const LOCATIVES: &[&str] = &["in", "en", "в", "во"];

/// Words that end a place name ("Tokio y Londres", "Tokyo and London").
const STOPS: &[&str] = &[
    "y",
    "e",
    "and",
    "or",
    "o",
    "и",
    "или",
    "now",
    "ahora",
    "сейчас",
    "right",
    "today",
    "hoy",
    "please",
    "por",
    "favor",
    "пожалуйста",
    "time",
    "hora",
    "es",
    "is",
];

/// Finds the places a question mentions; see the module docs.
pub fn extract(text: &str) -> Places {
    let gazetteer = &*GAZETTEER;
    let original: Vec<&str> = raw_words(text);
    let folded = words(text);
    // `raw_words` and `words` split the same way; fall back to folded words if not.
    let shown = |from: usize, to: usize| -> String {
        if original.len() == folded.len() {
            original[from..to].join(" ")
        } else {
            folded[from..to].join(" ")
        }
    };
    let mut found = Places::default();
    let mut i = 0;
    while i < folded.len() {
        if let Some((len, zone)) = lookup(gazetteer, &folded[i..]) {
            if !found.known.iter().any(|p| p.zone == zone) {
                found.known.push(Place {
                    written: shown(i, i + len),
                    zone,
                });
            }
            i += len;
            continue;
        }
        // An unknown name after a locative: capitalised words (or Cyrillic ones).
        if LOCATIVES.contains(&folded[i].as_str()) && i + 1 < folded.len() {
            let start = i + 1;
            let mut end = start;
            while end < folded.len()
                && end - start < 4
                && !STOPS.contains(&folded[end].as_str())
                && lookup(gazetteer, &folded[end..]).is_none()
                && looks_like_a_name(original.get(end).copied().unwrap_or(""))
            {
                end += 1;
            }
            if end > start {
                found.unknown.push(shown(start, end));
                i = end;
                continue;
            }
        }
        i += 1;
    }
    found
}

/// The longest place starting at `words[0]`: its length in words and its zone.
fn lookup(gazetteer: &Gazetteer, words: &[String]) -> Option<(usize, String)> {
    let max = gazetteer.longest.min(words.len());
    for len in (1..=max).rev() {
        let phrase = words[..len].join(" ");
        if let Some(zone) = gazetteer.exact.get(&phrase) {
            return Some((len, zone.clone()));
        }
        for (stem, zone) in &gazetteer.stems {
            if stem.len() == len
                && stem[..len - 1] == words[..len - 1]
                && words[len - 1].starts_with(stem[len - 1].as_str())
            {
                return Some((len, zone.clone()));
            }
        }
    }
    None
}

/// Whether a word as written could be (part of) a place name: capitalised Latin, or Cyrillic
/// (Russian questions are often all lower case).
fn looks_like_a_name(word: &str) -> bool {
    word.chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || ('\u{0400}'..='\u{04FF}').contains(&c))
}

/// The words of `text` as written (same split as [`words`], case and accents kept).
fn raw_words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(at, c)) in chars.iter().enumerate() {
        let inner_apostrophe = matches!(c, '\'' | '’' | '‘' | '`')
            && start.is_some()
            && chars.get(k + 1).is_some_and(|(_, n)| n.is_alphanumeric());
        if c.is_alphanumeric() || inner_apostrophe {
            start.get_or_insert(at);
        } else if let Some(s) = start.take() {
            out.push(&text[s..at]);
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

/// A readable name for a zone: its city, underscores as spaces (`America/New_York` -> "New
/// York"); `UTC` stays.
pub fn zone_city(zone: &str) -> String {
    zone.rsplit('/').next().unwrap_or(zone).replace('_', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones(text: &str) -> Vec<String> {
        extract(text).known.into_iter().map(|p| p.zone).collect()
    }

    #[test]
    fn finds_cities_in_three_languages_in_order() {
        assert_eq!(
            zones("¿Qué hora es en Tokio y Londres?"),
            ["Asia/Tokyo", "Europe/London"]
        );
        assert_eq!(zones("what time is it in New York?"), ["America/New_York"]);
        assert_eq!(
            zones("Который час в Лондоне и в Москве?"),
            ["Europe/London", "Europe/Moscow"]
        );
        assert_eq!(
            zones("time in Kolkata, São Paulo and Nueva York"),
            ["Asia/Kolkata", "America/Sao_Paulo", "America/New_York"]
        );
    }

    #[test]
    fn any_iana_zone_by_name_or_city() {
        assert_eq!(
            zones("hora en America/Argentina/Ushuaia"),
            ["America/Argentina/Ushuaia"]
        );
        assert_eq!(zones("time in Ulaanbaatar"), ["Asia/Ulaanbaatar"]);
        assert_eq!(zones("what time is it in UTC"), ["UTC"]);
        assert_eq!(
            zones("time in Beijing and Mumbai"),
            ["Asia/Shanghai", "Asia/Kolkata"]
        );
    }

    #[test]
    fn common_words_are_not_places() {
        assert!(zones("what is the central question at easter?").is_empty());
        assert!(zones("hello, how are you?").is_empty());
        assert!(zones("¿Qué tal estás?").is_empty());
    }

    #[test]
    fn unknown_names_after_a_locative_are_reported() {
        let found = extract("What time is it in Atlantis?");
        assert!(found.known.is_empty());
        assert_eq!(found.unknown, ["Atlantis"]);
        let found = extract("¿Qué hora es en Tokio y en Narnia?");
        assert_eq!(found.known[0].written, "Tokio");
        assert_eq!(found.unknown, ["Narnia"]);
    }

    #[test]
    fn readable_zone_names() {
        assert_eq!(zone_city("America/New_York"), "New York");
        assert_eq!(zone_city("UTC"), "UTC");
    }
}
