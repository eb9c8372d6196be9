//! `calculator`: evaluates arithmetic expressions with a small hand-written recursive-descent
//! parser — `+ - * / % ^`, parentheses, unary minus and plus, decimals.
//!
//! Grammar (lowest precedence first; `^` is right-associative and binds tighter than unary
//! minus, so `-2^2` is `-4` and `2^-1` is `0.5`):
//!
//! ```text
//! expr    = term (("+" | "-") term)*
//! term    = unary (("*" | "/" | "%") unary)*
//! unary   = ("-" | "+") unary | power
//! power   = primary ("^" unary)?
//! primary = number | "(" expr ")"
//! number  = digits ["." digits] | "." digits
//! ```
//!
//! Every error — bad syntax, division by zero, overflow — is a [`ToolError::Expression`] with
//! the 1-based character position it is about. Nesting is limited, so no input can overflow
//! the stack.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::tool::Tool;

/// How deeply parentheses and unary operators may nest.
const MAX_DEPTH: usize = 200;

/// The arguments of [`Calculator`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CalculatorArgs {
    /// An arithmetic expression with numbers, `+ - * / % ^` and parentheses, e.g. `(2 + 3) * 4.5`.
    pub expression: String,
}

/// The `calculator` tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Calculator;

impl Tool for Calculator {
    type Args = CalculatorArgs;
    type Output = Value;
    type Error = ToolError;

    fn name(&self) -> &str {
        "calculator"
    }

    fn description(&self) -> &str {
        "Evaluates an arithmetic expression exactly as written: + - * / % (remainder) ^ (power), \
         parentheses, unary minus and decimals. Returns the number."
    }

    async fn call(&self, args: CalculatorArgs) -> Result<Value, ToolError> {
        evaluate(&args.expression).map(number_value)
    }
}

/// A number as JSON: integral values within ±2^53 as integers (`14`, not `14.0`).
fn number_value(x: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if x.fract() == 0.0 && x.abs() <= EXACT {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

/// Evaluates `expression` (see the module docs for the grammar).
///
/// ```
/// use agent_tools::builtin::evaluate;
///
/// assert_eq!(evaluate("2 * (3 + 4) - 2^3").unwrap(), 6.0);
/// assert_eq!(evaluate("-2^2").unwrap(), -4.0);
/// let error = evaluate("1 + 2 / (3 - 3)").unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "cannot evaluate `1 + 2 / (3 - 3)`: division by zero at position 7; fix the expression and call again"
/// );
/// ```
pub fn evaluate(expression: &str) -> Result<f64, ToolError> {
    let tokens = lex(expression)?;
    let mut parser = Parser {
        expression,
        tokens,
        next: 0,
        depth: 0,
    };
    if parser.tokens.is_empty() {
        return Err(parser.error(1, "the expression is empty"));
    }
    let value = parser.expr()?;
    if let Some(token) = parser.peek() {
        let message = match token.kind {
            Kind::Close => "unmatched `)`".to_owned(),
            _ => format!("expected an operator, found {}", token.describe()),
        };
        return Err(parser.error(token.position, message));
    }
    // `-0` reads oddly in an answer.
    Ok(if value == 0.0 { 0.0 } else { value })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Number(f64),
    Op(char),
    Open,
    Close,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    /// 1-based character position.
    position: usize,
}

impl Token {
    fn describe(&self) -> String {
        match self.kind {
            Kind::Number(n) => format!("the number {n}"),
            Kind::Op(op) => format!("`{op}`"),
            Kind::Open => "`(`".to_owned(),
            Kind::Close => "`)`".to_owned(),
        }
    }
}

fn expression_error(expression: &str, position: usize, message: impl Into<String>) -> ToolError {
    ToolError::Expression {
        expression: expression.to_owned(),
        position,
        message: message.into(),
    }
}

fn lex(expression: &str) -> Result<Vec<Token>, ToolError> {
    let chars: Vec<char> = expression.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let position = i + 1;
        let kind = match c {
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '+' | '-' | '*' | '/' | '%' | '^' => Kind::Op(c),
            '(' => Kind::Open,
            ')' => Kind::Close,
            '0'..='9' | '.' => {
                let start = i;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
                if i < chars.len() && chars[i] == '.' {
                    i += 1;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                let text: String = chars[start..i].iter().collect();
                let number = match text.as_str() {
                    "." => None,
                    _ => text.parse::<f64>().ok(),
                };
                let Some(number) = number else {
                    return Err(expression_error(
                        expression,
                        position,
                        format!("`{text}` is not a number"),
                    ));
                };
                // Past f64's range a number parses as infinity: an error, as for a result.
                if number.is_infinite() {
                    return Err(expression_error(
                        expression,
                        position,
                        "the number is too large",
                    ));
                }
                tokens.push(Token {
                    kind: Kind::Number(number),
                    position,
                });
                continue;
            }
            other => {
                return Err(expression_error(
                    expression,
                    position,
                    format!(
                        "unexpected character `{other}` (only numbers, + - * / % ^ and parentheses are allowed)"
                    ),
                ));
            }
        };
        tokens.push(Token { kind, position });
        i += 1;
    }
    Ok(tokens)
}

struct Parser<'a> {
    expression: &'a str,
    tokens: Vec<Token>,
    next: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, position: usize, message: impl Into<String>) -> ToolError {
        expression_error(self.expression, position, message)
    }

    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.next).copied()
    }

    /// The position just past the last character.
    fn end(&self) -> usize {
        self.expression.chars().count() + 1
    }

    fn eat_op(&mut self, ops: &[char]) -> Option<(char, usize)> {
        match self.peek() {
            Some(Token {
                kind: Kind::Op(op),
                position,
            }) if ops.contains(&op) => {
                self.next += 1;
                Some((op, position))
            }
            _ => None,
        }
    }

    fn enter(&mut self, position: usize) -> Result<(), ToolError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(
                position,
                format!("the expression nests more than {MAX_DEPTH} levels deep"),
            ));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<f64, ToolError> {
        let mut value = self.term()?;
        while let Some((op, position)) = self.eat_op(&['+', '-']) {
            let rhs = self.term()?;
            value = self.checked(if op == '+' { value + rhs } else { value - rhs }, position)?;
        }
        Ok(value)
    }

    fn term(&mut self) -> Result<f64, ToolError> {
        let mut value = self.unary()?;
        while let Some((op, position)) = self.eat_op(&['*', '/', '%']) {
            let rhs = self.unary()?;
            let result = match op {
                '*' => value * rhs,
                '/' if rhs == 0.0 => return Err(self.error(position, "division by zero")),
                '/' => value / rhs,
                _ if rhs == 0.0 => return Err(self.error(position, "remainder by zero")),
                _ => value % rhs,
            };
            value = self.checked(result, position)?;
        }
        Ok(value)
    }

    fn unary(&mut self) -> Result<f64, ToolError> {
        if let Some((op, position)) = self.eat_op(&['-', '+']) {
            self.enter(position)?;
            let value = self.unary()?;
            self.depth -= 1;
            return Ok(if op == '-' { -value } else { value });
        }
        self.power()
    }

    fn power(&mut self) -> Result<f64, ToolError> {
        let base = self.primary()?;
        if let Some((_, position)) = self.eat_op(&['^']) {
            self.enter(position)?;
            let exponent = self.unary()?;
            self.depth -= 1;
            return self.checked(base.powf(exponent), position);
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<f64, ToolError> {
        let Some(token) = self.peek() else {
            return Err(self.error(
                self.end(),
                "expected a number or `(`, found the end of the expression",
            ));
        };
        match token.kind {
            Kind::Number(n) => {
                self.next += 1;
                Ok(n)
            }
            Kind::Open => {
                self.next += 1;
                self.enter(token.position)?;
                let value = self.expr()?;
                self.depth -= 1;
                match self.peek() {
                    Some(Token {
                        kind: Kind::Close, ..
                    }) => {
                        self.next += 1;
                        Ok(value)
                    }
                    Some(other) => Err(self.error(
                        other.position,
                        format!("expected `)` or an operator, found {}", other.describe()),
                    )),
                    None => Err(self.error(
                        self.end(),
                        format!("unclosed `(` (opened at position {})", token.position),
                    )),
                }
            }
            _ => Err(self.error(
                token.position,
                format!("expected a number or `(`, found {}", token.describe()),
            )),
        }
    }

    /// Rejects results that are not finite real numbers (overflow, `0^-1`, `(-8)^0.5`).
    fn checked(&self, value: f64, position: usize) -> Result<f64, ToolError> {
        if value.is_nan() {
            Err(self.error(position, "the result is not a real number"))
        } else if value.is_infinite() {
            Err(self.error(position, "the result is too large (or infinite)"))
        } else {
            Ok(value)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::DynTool;

    fn ok(expression: &str) -> f64 {
        evaluate(expression).unwrap_or_else(|e| panic!("{expression}: {e}"))
    }

    fn err(expression: &str) -> (usize, String) {
        match evaluate(expression) {
            Err(ToolError::Expression {
                position, message, ..
            }) => (position, message),
            other => panic!("{expression}: expected an expression error, got {other:?}"),
        }
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(ok("1 + 2 * 3"), 7.0);
        assert_eq!(ok("(1 + 2) * 3"), 9.0);
        assert_eq!(ok("10 - 4 - 3"), 3.0);
        assert_eq!(ok("100 / 10 / 5"), 2.0);
        assert_eq!(ok("2 ^ 3 ^ 2"), 512.0);
        assert_eq!(ok("-2 ^ 2"), -4.0);
        assert_eq!(ok("(-2) ^ 2"), 4.0);
        assert_eq!(ok("2 ^ -1"), 0.5);
        assert_eq!(ok("--3"), 3.0);
        assert_eq!(ok("+3 - -3"), 6.0);
        assert_eq!(ok("7 % 4 * 2"), 6.0);
        assert_eq!(ok("-7 % 4"), -3.0);
        assert_eq!(ok("2 * -3"), -6.0);
        assert_eq!(ok("((((1))))"), 1.0);
    }

    #[test]
    fn decimals_and_spaces() {
        assert_eq!(ok("0.1 + 0.2"), 0.1 + 0.2);
        assert_eq!(ok(".5 * 4"), 2.0);
        assert_eq!(ok("3. + 1"), 4.0);
        assert_eq!(ok("  12.25\t/ 0.5 "), 24.5);
        assert_eq!(ok("-0"), 0.0);
        assert!(ok("-0").is_sign_positive());
    }

    #[test]
    fn errors_carry_positions() {
        assert_eq!(err("1 / 0"), (3, "division by zero".into()));
        assert_eq!(err("5 % (2 - 2)"), (3, "remainder by zero".into()));
        assert_eq!(err(""), (1, "the expression is empty".into()));
        assert_eq!(err("   "), (1, "the expression is empty".into()));
        assert_eq!(
            err("1 +"),
            (
                4,
                "expected a number or `(`, found the end of the expression".into()
            )
        );
        assert_eq!(
            err("2 * * 3"),
            (5, "expected a number or `(`, found `*`".into())
        );
        assert_eq!(
            err("(1 + 2"),
            (7, "unclosed `(` (opened at position 1)".into())
        );
        assert_eq!(err("1 + 2)"), (6, "unmatched `)`".into()));
        assert_eq!(err("2 (3)"), (3, "expected an operator, found `(`".into()));
        assert_eq!(
            err("1.2.3"),
            (4, "expected an operator, found the number 0.3".into())
        );
        assert_eq!(err("."), (1, "`.` is not a number".into()));
        let (position, message) = err("2 x 3");
        assert_eq!(position, 3);
        assert!(message.starts_with("unexpected character `x`"), "{message}");
        assert_eq!(
            err("10 ^ 400"),
            (4, "the result is too large (or infinite)".into())
        );
        assert_eq!(
            err("(-8) ^ 0.5"),
            (6, "the result is not a real number".into())
        );
        assert_eq!(
            err("0 ^ -1"),
            (3, "the result is too large (or infinite)".into())
        );
        // A number past f64's range parses as infinity: refused, not returned.
        assert_eq!(
            err(&format!("1 + {}", "9".repeat(400))),
            (5, "the number is too large".into())
        );
        // Positions count characters, not bytes.
        assert_eq!(err("é").0, 1);
        assert_eq!(err("1 + é").0, 5);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        let (position, message) = err(&deep);
        assert_eq!(position, MAX_DEPTH + 1);
        assert!(message.contains("nests more than 200 levels"), "{message}");
        assert!(err(&"-".repeat(10_000)).1.contains("nests"));
        assert_eq!(ok(&format!("{}1{}", "(".repeat(150), ")".repeat(150))), 1.0);
    }

    #[tokio::test]
    async fn tool_returns_integers_as_integers() {
        let call = |e: &str| DynTool::call(&Calculator, json!({ "expression": e }));
        assert_eq!(call("2 * (3 + 4)").await.unwrap(), json!(14));
        assert_eq!(call("1 / 4").await.unwrap(), json!(0.25));
        assert_eq!(
            call("2 ^ 60").await.unwrap(),
            json!(1_152_921_504_606_846_976.0)
        );
        let error = call("1/0").await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "tool `calculator` failed: cannot evaluate `1/0`: division by zero at position 2; fix the expression and call again"
        );
    }
}
