//! The data set's vocabulary in English and Russian: the twelve measures of `macrodata` as a
//! typed [`Measure`] (the allow-list every SQL column comes from), a bilingual glossary of
//! them and of the data set's general terms (what `concept` questions are answered from), the
//! phrases users call them by, and the economic terms and countries the data set does *not*
//! have (so a question about them becomes a clear plan error, not a wrong query).
//!
//! Phrases are folded words ([`crate::lang::fold`]); a word ending in `*` matches any word it
//! starts (Russian stems: `безработиц*` is `безработица`, `безработицы`, `безработицей`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::lang::Lang;

/// A measure of the data set: one numeric column of `macrodata`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Measure {
    /// Real gross domestic product.
    Realgdp,
    /// Real personal consumption expenditures.
    Realcons,
    /// Real gross private domestic investment.
    Realinv,
    /// Real federal consumption expenditures and gross investment.
    Realgovt,
    /// Real private disposable income.
    Realdpi,
    /// Consumer price index.
    Cpi,
    /// M1 money stock.
    M1,
    /// 3-month treasury bill rate.
    Tbilrate,
    /// Unemployment rate.
    Unemp,
    /// Population.
    Pop,
    /// Inflation rate.
    Infl,
    /// Real interest rate.
    Realint,
}

impl Measure {
    /// Every measure, in the CSV's column order.
    pub const ALL: [Measure; 12] = [
        Measure::Realgdp,
        Measure::Realcons,
        Measure::Realinv,
        Measure::Realgovt,
        Measure::Realdpi,
        Measure::Cpi,
        Measure::M1,
        Measure::Tbilrate,
        Measure::Unemp,
        Measure::Pop,
        Measure::Infl,
        Measure::Realint,
    ];

    /// The SQL column: the only way a column name reaches a query.
    pub fn column(self) -> &'static str {
        match self {
            Measure::Realgdp => "realgdp",
            Measure::Realcons => "realcons",
            Measure::Realinv => "realinv",
            Measure::Realgovt => "realgovt",
            Measure::Realdpi => "realdpi",
            Measure::Cpi => "cpi",
            Measure::M1 => "m1",
            Measure::Tbilrate => "tbilrate",
            Measure::Unemp => "unemp",
            Measure::Pop => "pop",
            Measure::Infl => "infl",
            Measure::Realint => "realint",
        }
    }

    /// The measure whose column is `name` (exactly, case-insensitive).
    pub fn from_column(name: &str) -> Option<Measure> {
        let name = name.trim().to_ascii_lowercase();
        Measure::ALL.into_iter().find(|m| m.column() == name)
    }

    /// Its glossary entry.
    pub fn term(self) -> &'static Term {
        // GLOSSARY lists the measures first, in declaration order (a unit test checks it).
        &GLOSSARY[self as usize]
    }

    /// Its name in `lang`, for sentences ("unemployment rate", "уровень безработицы").
    pub fn name(self, lang: Lang) -> &'static str {
        self.term().text(lang).name
    }

    /// Its unit in `lang`, short ("%", "bn 2005 $").
    pub fn unit(self, lang: Lang) -> &'static str {
        self.term().text(lang).unit
    }

    /// Whether values are percentages (then answers write `5.80 %`).
    pub fn is_percent(self) -> bool {
        matches!(
            self,
            Measure::Tbilrate | Measure::Unemp | Measure::Infl | Measure::Realint
        )
    }
}

/// A glossary entry's text in one language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TermText {
    /// The name used in answers, in the nominative ("unemployment rate").
    pub name: &'static str,
    /// The full title of the glossary entry.
    pub title: &'static str,
    /// The short unit ("%", "bn 2005 $"; empty for general terms).
    pub unit: &'static str,
    /// What it means, a sentence or two.
    pub definition: &'static str,
}

/// A glossary entry: a measure of the data set or one of its general terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term {
    /// A stable key: the column name, or a word for general terms (`saar`, `chained`).
    pub key: &'static str,
    /// The measure it names, when it names one.
    pub measure: Option<Measure>,
    /// English text.
    pub en: TermText,
    /// Russian text.
    pub ru: TermText,
    /// What English speakers call it (folded phrases, `*` = word prefix).
    pub phrases_en: &'static [&'static str],
    /// What Russian speakers call it.
    pub phrases_ru: &'static [&'static str],
}

impl Term {
    /// The text in `lang` (English for anything but Russian).
    pub fn text(&'static self, lang: Lang) -> &'static TermText {
        match lang {
            Lang::Ru => &self.ru,
            _ => &self.en,
        }
    }

    /// Every phrase, English then Russian.
    pub fn phrases(&'static self) -> impl Iterator<Item = &'static str> {
        self.phrases_en
            .iter()
            .chain(self.phrases_ru.iter())
            .copied()
    }
}

/// The glossary entry with `key`.
pub fn term(key: &str) -> Option<&'static Term> {
    GLOSSARY.iter().find(|t| t.key == key)
}

/// The glossary: the twelve measures (in [`Measure::ALL`]'s order), then general terms.
pub static GLOSSARY: &[Term] = &[
    Term {
        key: "realgdp",
        measure: Some(Measure::Realgdp),
        en: TermText {
            name: "real GDP",
            title: "real gross domestic product (GDP)",
            unit: "bn 2005 $",
            definition: "the value of all final goods and services produced in the United States in a quarter, in chained 2005 dollars (inflation taken out), at a seasonally adjusted annual rate; billions of dollars",
        },
        ru: TermText {
            name: "реальный ВВП",
            title: "реальный валовой внутренний продукт (ВВП)",
            unit: "млрд долл. 2005 г.",
            definition: "стоимость всех конечных товаров и услуг, произведённых в США за квартал, в цепных долларах 2005 года (без учёта инфляции), в годовом исчислении с поправкой на сезонность; миллиарды долларов",
        },
        phrases_en: &[
            "realgdp",
            "gdp",
            "gross domestic product",
            "domestic product",
            "economic output",
            "output",
            "economy",
            "economic",
        ],
        phrases_ru: &[
            "ввп",
            "валов* внутрен* продукт*",
            "внутрен* продукт*",
            "валов* продукт*",
            "экономик*",
            "экономическ*",
            "выпуск*",
        ],
    },
    Term {
        key: "realcons",
        measure: Some(Measure::Realcons),
        en: TermText {
            name: "real personal consumption",
            title: "real personal consumption expenditures",
            unit: "bn 2005 $",
            definition: "what households spend on goods and services, in chained 2005 dollars, at a seasonally adjusted annual rate; billions of dollars",
        },
        ru: TermText {
            name: "реальное личное потребление",
            title: "реальные личные потребительские расходы",
            unit: "млрд долл. 2005 г.",
            definition: "траты домохозяйств на товары и услуги в цепных долларах 2005 года, в годовом исчислении с поправкой на сезонность; миллиарды долларов",
        },
        phrases_en: &[
            "realcons",
            "consumption",
            "personal consumption",
            "consumption expenditure*",
            "consumer spending",
            "household spending",
            "personal spending",
        ],
        phrases_ru: &[
            "потреблени*",
            "потребительск* расход*",
            "личн* потреблени*",
            "расход* домохозяйств*",
            "расход* населени*",
            "потребительск* трат*",
        ],
    },
    Term {
        key: "realinv",
        measure: Some(Measure::Realinv),
        en: TermText {
            name: "real private investment",
            title: "real gross private domestic investment",
            unit: "bn 2005 $",
            definition: "what businesses spend on equipment, software and buildings, plus housing construction and the change in inventories, in chained 2005 dollars, at a seasonally adjusted annual rate; billions of dollars",
        },
        ru: TermText {
            name: "реальные частные инвестиции",
            title: "реальные валовые частные внутренние инвестиции",
            unit: "млрд долл. 2005 г.",
            definition: "вложения компаний в оборудование, программы и здания, жилищное строительство и изменение запасов, в цепных долларах 2005 года, в годовом исчислении с поправкой на сезонность; миллиарды долларов",
        },
        phrases_en: &[
            "realinv",
            "investment*",
            "private investment*",
            "business investment*",
            "capital spending",
        ],
        phrases_ru: &[
            "инвестиц*",
            "капиталовложени*",
            "частн* инвестиц*",
            "вложени*",
        ],
    },
    Term {
        key: "realgovt",
        measure: Some(Measure::Realgovt),
        en: TermText {
            name: "real federal government spending",
            title: "real federal consumption expenditures and gross investment",
            unit: "bn 2005 $",
            definition: "what the federal government spends on goods, services and investment (not transfers such as pensions), in chained 2005 dollars, at a seasonally adjusted annual rate; billions of dollars",
        },
        ru: TermText {
            name: "реальные федеральные госрасходы",
            title: "реальные расходы и инвестиции федерального правительства",
            unit: "млрд долл. 2005 г.",
            definition: "траты федерального правительства на товары, услуги и инвестиции (без трансфертов вроде пенсий) в цепных долларах 2005 года, в годовом исчислении с поправкой на сезонность; миллиарды долларов",
        },
        phrases_en: &[
            "realgovt",
            "government spending",
            "government expenditure*",
            "government consumption",
            "government investment*",
            "federal spending",
            "federal expenditure*",
            "federal government spending",
            "public spending",
            "government purchases",
        ],
        phrases_ru: &[
            "госрасход*",
            "государственн* расход*",
            "расход* государств*",
            "расход* правительств*",
            "расход* федеральн* правительств*",
            "федеральн* расход*",
            "правительственн* расход*",
            "государственн* закупк*",
        ],
    },
    Term {
        key: "realdpi",
        measure: Some(Measure::Realdpi),
        en: TermText {
            name: "real disposable income",
            title: "real private disposable income",
            unit: "bn 2005 $",
            definition: "personal income after taxes, what households can spend or save, in chained 2005 dollars, at a seasonally adjusted annual rate; billions of dollars",
        },
        ru: TermText {
            name: "реальный располагаемый доход",
            title: "реальный частный располагаемый доход",
            unit: "млрд долл. 2005 г.",
            definition: "личные доходы после налогов, то есть то, что домохозяйства могут потратить или сберечь, в цепных долларах 2005 года, в годовом исчислении с поправкой на сезонность; миллиарды долларов",
        },
        phrases_en: &[
            "realdpi",
            "disposable income",
            "personal income",
            "household income",
            "income*",
            "after tax income",
        ],
        phrases_ru: &[
            "располагаем* доход*",
            "доход* населени*",
            "личн* доход*",
            "доход* домохозяйств*",
            "доход*",
        ],
    },
    Term {
        key: "cpi",
        measure: Some(Measure::Cpi),
        en: TermText {
            name: "consumer price index",
            title: "consumer price index (CPI) for all urban consumers",
            unit: "(1982-84 = 100)",
            definition: "the price level of a basket of goods and services that urban consumers buy, at the end of the quarter, seasonally adjusted, with 1982-84 = 100 (200 means prices twice those of 1982-84)",
        },
        ru: TermText {
            name: "индекс потребительских цен",
            title: "индекс потребительских цен (ИПЦ) для городских потребителей",
            unit: "(1982-84 = 100)",
            definition: "уровень цен корзины товаров и услуг, которые покупают городские потребители, на конец квартала, с поправкой на сезонность, 1982-84 = 100 (200 означает цены вдвое выше, чем в 1982-84 годах)",
        },
        phrases_en: &[
            "cpi",
            "consumer price index",
            "consumer prices",
            "price index",
            "price level",
            "prices",
            "cost of living",
        ],
        phrases_ru: &[
            "ипц",
            "индекс* потребительск* цен*",
            "потребительск* цен*",
            "индекс* цен*",
            "уровен* цен*",
            "цен*",
            "стоимост* жизни",
        ],
    },
    Term {
        key: "m1",
        measure: Some(Measure::M1),
        en: TermText {
            name: "M1 money stock",
            title: "M1 money stock",
            unit: "bn $",
            definition: "currency in circulation plus demand and other checkable deposits, at the end of the quarter, seasonally adjusted, in billions of current (nominal) dollars",
        },
        ru: TermText {
            name: "денежная масса M1",
            title: "денежная масса M1",
            unit: "млрд долл.",
            definition: "наличные деньги в обращении плюс депозиты до востребования и другие чековые счета на конец квартала, с поправкой на сезонность, в миллиардах текущих (номинальных) долларов",
        },
        phrases_en: &[
            "m1",
            "money stock",
            "money supply",
            "quantity of money",
            "narrow money",
        ],
        phrases_ru: &[
            "м1",
            "денежн* масс*",
            "денежн* предложени*",
            "денежн* агрегат*",
            "количеств* денег",
        ],
    },
    Term {
        key: "tbilrate",
        measure: Some(Measure::Tbilrate),
        en: TermText {
            name: "3-month treasury bill rate",
            title: "3-month treasury bill rate",
            unit: "%",
            definition: "the yield of 3-month US government bills on the secondary market, the quarter's average of monthly rates, percent a year; the short-term nominal interest rate of the data set",
        },
        ru: TermText {
            name: "ставка 3-месячных казначейских векселей",
            title: "ставка 3-месячных казначейских векселей",
            unit: "%",
            definition: "доходность 3-месячных векселей правительства США на вторичном рынке, среднее за квартал из месячных ставок, процентов годовых; краткосрочная номинальная процентная ставка в этих данных",
        },
        phrases_en: &[
            "tbilrate",
            "treasury bill*",
            "treasury bill rate*",
            "3 month treasury bill*",
            "three month treasury bill*",
            "3 month bill*",
            "3 month t bill*",
            "3 month rate*",
            "t bill*",
            "tbill*",
            "treasury rate*",
            "treasury yield*",
            "bill rate*",
            "interest rate*",
            "nominal interest rate*",
            "short term interest rate*",
            "short term rate*",
        ],
        phrases_ru: &[
            "казначейск* вексел*",
            "3 месячн* казначейск* вексел*",
            "трехмесячн* казначейск* вексел*",
            "ставк* казначейск*",
            "ставк* по казначейск* вексел*",
            "доходност* казначейск*",
            "процентн* ставк*",
            "ставк* процент*",
            "номинальн* ставк*",
            "номинальн* процентн* ставк*",
            "краткосрочн* ставк*",
        ],
    },
    Term {
        key: "unemp",
        measure: Some(Measure::Unemp),
        en: TermText {
            name: "unemployment rate",
            title: "unemployment rate",
            unit: "%",
            definition: "the share of the labour force without a job and looking for one, percent, seasonally adjusted (Bureau of Labor Statistics)",
        },
        ru: TermText {
            name: "уровень безработицы",
            title: "уровень безработицы",
            unit: "%",
            definition: "доля рабочей силы без работы, которая ищет работу, в процентах, с поправкой на сезонность (Бюро статистики труда США)",
        },
        phrases_en: &[
            "unemp",
            "unemployment",
            "unemployment rate*",
            "jobless*",
            "jobless rate*",
            "unemployed",
        ],
        phrases_ru: &["безработиц*", "безработн*", "уров* безработиц*"],
    },
    Term {
        key: "pop",
        measure: Some(Measure::Pop),
        en: TermText {
            name: "population",
            title: "population",
            unit: "million",
            definition: "the total US population, all ages, including the armed forces overseas, at the end of the quarter, millions of people",
        },
        ru: TermText {
            name: "численность населения",
            title: "численность населения",
            unit: "млн чел.",
            definition: "всё население США, всех возрастов, включая военнослужащих за рубежом, на конец квартала, миллионов человек",
        },
        phrases_en: &[
            "pop",
            "population",
            "number of people",
            "number of inhabitants",
            "inhabitants",
            "residents",
        ],
        phrases_ru: &[
            "населени*",
            "численност* населени*",
            "численност*",
            "жител*",
            "количеств* людей",
        ],
    },
    Term {
        key: "infl",
        measure: Some(Measure::Infl),
        en: TermText {
            name: "inflation rate",
            title: "inflation rate",
            unit: "%",
            definition: "how fast consumer prices rise: the change of the consumer price index from the previous quarter, annualised, ln(CPI / previous CPI) x 400, percent",
        },
        ru: TermText {
            name: "инфляция",
            title: "уровень инфляции",
            unit: "%",
            definition: "скорость роста потребительских цен: изменение индекса потребительских цен к предыдущему кварталу в годовом исчислении, ln(ИПЦ / ИПЦ прошлого квартала) x 400, в процентах",
        },
        phrases_en: &["infl", "inflation*", "inflation rate*", "price growth"],
        phrases_ru: &["инфляци*", "уров* инфляци*", "темп* инфляци*", "рост* цен*"],
    },
    Term {
        key: "realint",
        measure: Some(Measure::Realint),
        en: TermText {
            name: "real interest rate",
            title: "real interest rate",
            unit: "%",
            definition: "the 3-month treasury bill rate minus inflation, percent; negative when prices rise faster than the nominal rate",
        },
        ru: TermText {
            name: "реальная процентная ставка",
            title: "реальная процентная ставка",
            unit: "%",
            definition: "ставка 3-месячных казначейских векселей минус инфляция, в процентах; отрицательна, когда цены растут быстрее номинальной ставки",
        },
        phrases_en: &[
            "realint",
            "real interest rate*",
            "real rate*",
            "real interest",
            "real yield*",
        ],
        phrases_ru: &[
            "реальн* процентн* ставк*",
            "реальн* ставк*",
            "реальн* ставк* процент*",
            "реальн* доходност*",
        ],
    },
    Term {
        key: "saar",
        measure: None,
        en: TermText {
            name: "seasonally adjusted annual rate",
            title: "seasonally adjusted annual rate (SAAR)",
            unit: "",
            definition: "a quarter's flow multiplied up to a yearly pace and corrected for regular seasonal swings (holidays, harvests, weather), so quarters compare with each other and with yearly figures; the data set's GDP, consumption, investment, government spending and income are given this way",
        },
        ru: TermText {
            name: "годовой темп с поправкой на сезонность",
            title: "годовой темп с поправкой на сезонность (SAAR)",
            unit: "",
            definition: "квартальный показатель, пересчитанный в годовое выражение и очищенный от регулярных сезонных колебаний (праздники, урожай, погода), чтобы кварталы можно было сравнивать между собой и с годовыми цифрами; так даны ВВП, потребление, инвестиции, госрасходы и доходы в этих данных",
        },
        phrases_en: &[
            "saar",
            "seasonally adjusted",
            "seasonal adjustment",
            "seasonally adjusted annual rate",
            "annual rate",
            "annualized",
            "annualised",
        ],
        phrases_ru: &[
            "сезонн* корректировк*",
            "поправк* на сезонност*",
            "сезонност*",
            "годов* темп*",
            "годов* исчислени*",
        ],
    },
    Term {
        key: "chained",
        measure: None,
        en: TermText {
            name: "chained 2005 dollars",
            title: "chained 2005 dollars (real values)",
            unit: "",
            definition: "real, inflation-adjusted values expressed in the prices of 2005, built by chaining year-to-year price changes, so that volumes compare across years; the data set's real series (names starting with real) are in them",
        },
        ru: TermText {
            name: "цепные доллары 2005 года",
            title: "цепные доллары 2005 года (реальные величины)",
            unit: "",
            definition: "реальные, очищенные от инфляции величины в ценах 2005 года, построенные сцеплением годовых изменений цен, чтобы объёмы можно было сравнивать между годами; в них даны реальные ряды этих данных (названия начинаются с real)",
        },
        phrases_en: &[
            "chained dollar*",
            "chained 2005 dollar*",
            "chain weighted",
            "real terms",
            "real value*",
            "constant dollar*",
            "constant prices",
        ],
        phrases_ru: &[
            "цепн* доллар*",
            "цепн* индекс*",
            "сопоставим* цен*",
            "постоянн* цен*",
            "реальн* выражени*",
            "реальн* величин*",
        ],
    },
];

/// An economic quantity the data set does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Missing {
    /// Its name in English.
    pub en: &'static str,
    /// Its name in Russian.
    pub ru: &'static str,
    /// What users call it.
    pub phrases: &'static [&'static str],
}

impl Missing {
    /// Its name in `lang`.
    pub fn name(&self, lang: Lang) -> &'static str {
        match lang {
            Lang::Ru => self.ru,
            _ => self.en,
        }
    }
}

/// Quantities people ask an economic data set for that `macrodata` does not hold.
pub static MISSING: &[Missing] = &[
    Missing {
        en: "gold price",
        ru: "цена золота",
        phrases: &[
            "gold",
            "gold price*",
            "price of gold",
            "золот*",
            "цен* золот*",
        ],
    },
    Missing {
        en: "oil price",
        ru: "цена нефти",
        phrases: &[
            "oil",
            "oil price*",
            "price of oil",
            "crude",
            "brent",
            "нефт*",
            "цен* нефт*",
        ],
    },
    Missing {
        en: "stock market",
        ru: "фондовый рынок",
        phrases: &[
            "stock*",
            "stock market",
            "shares",
            "equities",
            "s p 500",
            "dow jones",
            "dow",
            "nasdaq",
            "акци*",
            "фондов* рын*",
            "биржев* индекс*",
            "бирж*",
            "доу джонс*",
        ],
    },
    Missing {
        en: "exports",
        ru: "экспорт",
        phrases: &["export*", "экспорт*"],
    },
    Missing {
        en: "imports",
        ru: "импорт",
        phrases: &["import*", "импорт*"],
    },
    Missing {
        en: "trade balance",
        ru: "торговый баланс",
        phrases: &[
            "trade balance",
            "trade deficit",
            "trade surplus",
            "торгов* баланс*",
            "сальдо торговл*",
            "торгов* дефицит*",
        ],
    },
    Missing {
        en: "exchange rate",
        ru: "обменный курс",
        phrases: &[
            "exchange rate*",
            "dollar rate",
            "euro",
            "yen",
            "курс*",
            "обменн* курс*",
            "курс* доллар*",
            "евро",
            "рубл*",
        ],
    },
    Missing {
        en: "house prices",
        ru: "цены на жильё",
        phrases: &[
            "house price*",
            "home price*",
            "housing price*",
            "real estate",
            "rent*",
            "цен* на жиль*",
            "жиль*",
            "недвижимост*",
            "аренд*",
            "квартир*",
        ],
    },
    Missing {
        en: "wages",
        ru: "зарплаты",
        phrases: &[
            "wage*",
            "salar*",
            "earnings",
            "pay",
            "minimum wage",
            "зарплат*",
            "заработн* плат*",
            "оклад*",
        ],
    },
    Missing {
        en: "government debt",
        ru: "государственный долг",
        phrases: &[
            "debt",
            "national debt",
            "public debt",
            "government debt",
            "долг",
            "долга",
            "долгу",
            "долгом",
            "долги",
            "долгов",
            "госдолг*",
            "государственн* долг*",
        ],
    },
    Missing {
        en: "budget deficit",
        ru: "дефицит бюджета",
        phrases: &[
            "deficit",
            "budget*",
            "budget deficit",
            "fiscal deficit",
            "дефицит*",
            "бюджет*",
            "дефицит* бюджет*",
        ],
    },
    Missing {
        en: "taxes",
        ru: "налоги",
        phrases: &["tax*", "taxation", "налог*"],
    },
    Missing {
        en: "interest rate of the Fed (federal funds rate)",
        ru: "ставка ФРС",
        phrases: &[
            "fed funds",
            "federal funds rate",
            "fed rate",
            "key rate",
            "policy rate",
            "ставк* фрс",
            "ключев* ставк*",
            "учетн* ставк*",
        ],
    },
    Missing {
        en: "bitcoin",
        ru: "биткоин",
        phrases: &[
            "bitcoin*",
            "crypto*",
            "биткоин*",
            "биткойн*",
            "криптовалют*",
        ],
    },
    Missing {
        en: "birth rate",
        ru: "рождаемость",
        phrases: &[
            "birth rate*",
            "births",
            "fertility",
            "life expectancy",
            "рождаемост*",
            "смертност*",
            "продолжительност* жизн*",
        ],
    },
];

/// A country or region other than the United States (the data set covers only the US).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Country {
    /// Its name in English.
    pub en: &'static str,
    /// Its name in Russian.
    pub ru: &'static str,
    /// What users call it.
    pub phrases: &'static [&'static str],
}

impl Country {
    /// Its name in `lang`.
    pub fn name(&self, lang: Lang) -> &'static str {
        match lang {
            Lang::Ru => self.ru,
            _ => self.en,
        }
    }
}

/// Places a user may ask about that the data set does not cover.
pub static COUNTRIES: &[Country] = &[
    Country {
        en: "Germany",
        ru: "Германия",
        phrases: &["germany", "german", "германи*", "немецк*", "фрг"],
    },
    Country {
        en: "Russia",
        ru: "Россия",
        phrases: &["russia", "russian", "росси*", "рф"],
    },
    Country {
        en: "China",
        ru: "Китай",
        phrases: &["china", "chinese", "кита*"],
    },
    Country {
        en: "Japan",
        ru: "Япония",
        phrases: &["japan", "japanese", "япони*"],
    },
    Country {
        en: "France",
        ru: "Франция",
        phrases: &["france", "french", "франци*", "французск*"],
    },
    Country {
        en: "the United Kingdom",
        ru: "Великобритания",
        phrases: &[
            "uk",
            "united kingdom",
            "britain",
            "british",
            "england",
            "британи*",
            "великобритани*",
            "англи*",
        ],
    },
    Country {
        en: "Canada",
        ru: "Канада",
        phrases: &["canada", "canadian", "канад*"],
    },
    Country {
        en: "Mexico",
        ru: "Мексика",
        phrases: &["mexico", "mexican", "мексик*"],
    },
    Country {
        en: "India",
        ru: "Индия",
        phrases: &["india", "indian", "инди*"],
    },
    Country {
        en: "Brazil",
        ru: "Бразилия",
        phrases: &["brazil", "brazilian", "бразили*"],
    },
    Country {
        en: "Italy",
        ru: "Италия",
        phrases: &["italy", "italian", "итали*"],
    },
    Country {
        en: "Spain",
        ru: "Испания",
        phrases: &["spain", "spanish", "испани*"],
    },
    Country {
        en: "the euro area",
        ru: "еврозона",
        phrases: &[
            "europe",
            "european",
            "eurozone",
            "euro area",
            "eu",
            "европ*",
            "еврозон*",
            "ес",
        ],
    },
    Country {
        en: "the world",
        ru: "мир",
        phrases: &["world", "global", "worldwide", "мир*", "мирово*"],
    },
];

/// What a text names of the vocabulary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lookup {
    /// Glossary terms, in order of mention.
    pub terms: Vec<&'static Term>,
    /// Quantities the data set lacks, in order of mention.
    pub missing: Vec<&'static Missing>,
}

/// The glossary terms and missing quantities `text` names (longest phrases first), in
/// English or Russian.
pub fn lookup(text: &str) -> Lookup {
    #[derive(Clone, Copy)]
    enum Entry {
        Term(&'static Term),
        Missing(&'static Missing),
    }
    let mut phrases: Vec<(&str, Entry)> = Vec::new();
    for term in GLOSSARY {
        phrases.extend(term.phrases().map(|p| (p, Entry::Term(term))));
    }
    for missing in MISSING {
        phrases.extend(
            missing
                .phrases
                .iter()
                .map(|p| (*p, Entry::Missing(missing))),
        );
    }
    let tokens = super::tokens::tokenize(text);
    let mut used = vec![false; tokens.len()];
    let mut out = Lookup::default();
    for hit in super::tokens::find_all(&tokens, &mut used, &phrases) {
        match hit.value {
            Entry::Term(t) if !out.terms.iter().any(|k| k.key == t.key) => out.terms.push(t),
            Entry::Missing(m) if !out.missing.contains(&m) => out.missing.push(m),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_measure_has_its_entry_in_order() {
        for (i, measure) in Measure::ALL.into_iter().enumerate() {
            assert_eq!(GLOSSARY[i].measure, Some(measure));
            assert_eq!(GLOSSARY[i].key, measure.column());
            assert_eq!(measure.term().key, measure.column());
            assert_eq!(Measure::from_column(measure.column()), Some(measure));
        }
        assert_eq!(Measure::from_column(" UNEMP "), Some(Measure::Unemp));
        assert_eq!(Measure::from_column("unemp; drop table"), None);
    }

    #[test]
    fn measures_are_the_data_sets_columns() {
        let columns: Vec<&str> = crate::dataset::COLUMNS
            .iter()
            .map(|c| c.name)
            .filter(|n| !matches!(*n, "year" | "quarter"))
            .collect();
        let ours: Vec<&str> = Measure::ALL.iter().map(|m| m.column()).collect();
        assert_eq!(columns, ours);
    }

    #[test]
    fn texts_exist_in_both_languages() {
        for term in GLOSSARY {
            for lang in [Lang::En, Lang::Ru] {
                let text = term.text(lang);
                assert!(!text.name.is_empty() && !text.definition.is_empty());
            }
            assert!(term.phrases().count() >= 2, "{}", term.key);
        }
        assert_eq!(Measure::Unemp.name(Lang::Ru), "уровень безработицы");
        assert_eq!(Measure::Realgdp.unit(Lang::En), "bn 2005 $");
    }

    #[test]
    fn lookup_finds_terms_in_both_languages() {
        let keys = |text: &str| -> Vec<&str> { lookup(text).terms.iter().map(|t| t.key).collect() };
        assert_eq!(keys("What is the consumer price index?"), ["cpi"]);
        assert_eq!(keys("Что такое реальная процентная ставка?"), ["realint"]);
        assert_eq!(keys("безработица и инфляция"), ["unemp", "infl"]);
        assert_eq!(keys("seasonally adjusted annual rate"), ["saar"]);
        assert_eq!(lookup("цена золота").missing[0].en, "gold price");
        assert!(lookup("hello there").terms.is_empty());
    }
}
