//! Expectations: one comparison between two arithmetic expressions of
//! figures and numbers, absolute or relative to another layer:
//!
//! ```text
//! expectation := sum (">=" | "<=" | ">" | "<") sum
//! sum         := product (("+" | "-") product)*
//! product     := unary (("*" | "/") unary)*
//! unary       := "-" unary | NUMBER ["%"] | NAME | "(" sum ")"
//! NAME        := layer "." figure      (network.brw_write_gib_s)
//! ```
//!
//! A tiny recursive-descent parser of our own: the grammar is four
//! rules, and its errors name the character where the text went wrong,
//! which a general expression crate would not word for this use.
//!
//! ```
//! use iolab_qualify::expr::Expectation;
//! let e = Expectation::parse("data.write >= 80% * network.brw_write").unwrap();
//! assert_eq!(e.names(), ["data.write", "network.brw_write"]);
//! let v = e.eval(&|n: &str| Ok(if n == "data.write" { 0.9 } else { 1.0 })).unwrap();
//! assert!(v.holds && (v.right - 0.8).abs() < 1e-12);
//! ```

use serde::Serialize;

/// An expectation that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("'{text}': at character {}: {msg}", at + 1)]
pub struct ExprError {
    /// The expectation as written.
    pub text: String,
    /// Where (a character index) it went wrong.
    pub at: usize,
    /// What was expected there.
    pub msg: String,
}

/// The comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Cmp {
    /// `>=`
    Ge,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `<`
    Lt,
}

impl Cmp {
    fn holds(self, l: f64, r: f64) -> bool {
        match self {
            Cmp::Ge => l >= r,
            Cmp::Le => l <= r,
            Cmp::Gt => l > r,
            Cmp::Lt => l < r,
        }
    }

    /// How it is written.
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Ge => ">=",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Lt => "<",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Num(f64),
    Name(String),
    Neg(Box<Expr>),
    Bin(Box<Expr>, char, Box<Expr>),
}

/// A parsed expectation.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// As written.
    pub text: String,
    left: Expr,
    /// The comparison.
    pub cmp: Cmp,
    right: Expr,
}

/// Both sides' values and whether the comparison holds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Evaluated {
    /// The left side's value.
    pub left: f64,
    /// The right side's value.
    pub right: f64,
    /// Whether it holds.
    pub holds: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Name(String),
    Sym(&'static str),
}

/// Where a token failed: its index and what is wrong.
type LexError = (usize, String);

fn lex(text: &str) -> Result<Vec<(usize, Tok)>, ExprError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        let tok = if c.is_whitespace() {
            i += 1;
            continue;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            number(&chars, &mut i)
        } else if c.is_ascii_alphabetic() || c == '_' {
            name(&chars, &mut i)
        } else {
            symbol(&chars, &mut i)
        };
        let tok = tok.map_err(|(at, msg)| ExprError {
            text: text.to_string(),
            at,
            msg,
        })?;
        out.push((start, tok));
    }
    Ok(out)
}

/// A number at `i` (digits, a fraction, an exponent, `%`).
fn number(chars: &[char], i: &mut usize) -> Result<Tok, LexError> {
    let start = *i;
    let digits = |i: &mut usize, dot: bool| {
        while *i < chars.len() && (chars[*i].is_ascii_digit() || (dot && chars[*i] == '.')) {
            *i += 1;
        }
    };
    digits(i, true);
    if matches!(chars.get(*i), Some('e' | 'E')) {
        let sign = usize::from(matches!(chars.get(*i + 1), Some('+' | '-')));
        if chars.get(*i + 1 + sign).is_some_and(char::is_ascii_digit) {
            *i += 1 + sign;
            digits(i, false);
        }
    }
    let s: String = chars[start..*i].iter().collect();
    let mut v: f64 = s.parse().map_err(|_| (start, "not a number".to_string()))?;
    if chars.get(*i) == Some(&'%') {
        v /= 100.0;
        *i += 1;
    }
    if chars
        .get(*i)
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_')
    {
        return Err((
            *i,
            "a number runs into a name (write 0.8 * network.ping)".into(),
        ));
    }
    Ok(Tok::Num(v))
}

/// A figure's name at `i`: `layer.figure`.
fn name(chars: &[char], i: &mut usize) -> Result<Tok, LexError> {
    let start = *i;
    while *i < chars.len()
        && (chars[*i].is_ascii_alphanumeric() || chars[*i] == '_' || chars[*i] == '.')
    {
        *i += 1;
    }
    let name: String = chars[start..*i].iter().collect();
    let parts: Vec<&str> = name.split('.').collect();
    if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
        return Err((
            start,
            format!("'{name}' is not a figure: write layer.figure (network.ping, data.write)"),
        ));
    }
    Ok(Tok::Name(name.to_ascii_lowercase()))
}

/// An operator, a comparison or a parenthesis at `i`.
fn symbol(chars: &[char], i: &mut usize) -> Result<Tok, LexError> {
    let two: String = chars[*i..(*i + 2).min(chars.len())].iter().collect();
    let sym = match (two.as_str(), chars[*i]) {
        (">=", _) => ">=",
        ("<=", _) => "<=",
        ("==", _) | ("!=", _) => {
            return Err((
                *i,
                "compare with >=, <=, > or < (measured figures are never exactly equal)".into(),
            ))
        }
        (_, '>') => ">",
        (_, '<') => "<",
        (_, '+') => "+",
        (_, '-') => "-",
        (_, '*') => "*",
        (_, '/') => "/",
        (_, '(') => "(",
        (_, ')') => ")",
        (_, c) => return Err((*i, format!("'{c}' is not part of an expectation"))),
    };
    *i += sym.len();
    Ok(Tok::Sym(sym))
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<(usize, Tok)>,
    pos: usize,
}

impl Parser<'_> {
    fn at(&self) -> usize {
        self.toks
            .get(self.pos)
            .map_or(self.text.chars().count(), |t| t.0)
    }

    fn fail<T>(&self, msg: &str) -> Result<T, ExprError> {
        Err(ExprError {
            text: self.text.to_string(),
            at: self.at(),
            msg: msg.to_string(),
        })
    }

    fn sym(&mut self, options: &[&'static str]) -> Option<&'static str> {
        match self.toks.get(self.pos) {
            Some((_, Tok::Sym(s))) if options.contains(s) => {
                self.pos += 1;
                Some(s)
            }
            _ => None,
        }
    }

    fn sum(&mut self) -> Result<Expr, ExprError> {
        let mut e = self.product()?;
        while let Some(op) = self.sym(&["+", "-"]) {
            e = Expr::Bin(
                Box::new(e),
                op.chars().next().unwrap_or('+'),
                Box::new(self.product()?),
            );
        }
        Ok(e)
    }

    fn product(&mut self) -> Result<Expr, ExprError> {
        let mut e = self.unary()?;
        while let Some(op) = self.sym(&["*", "/"]) {
            let at = self.pos;
            let divisor = self.unary()?;
            // A constant divisor of 0 can never be judged: refused now,
            // not after the whole qualification has run.
            if op == "/" && constant(&divisor) == Some(0.0) {
                self.pos = at;
                return self.fail("division by zero: this divisor is a constant 0");
            }
            e = Expr::Bin(
                Box::new(e),
                op.chars().next().unwrap_or('*'),
                Box::new(divisor),
            );
        }
        Ok(e)
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        if self.sym(&["-"]).is_some() {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        if self.sym(&["("]).is_some() {
            let e = self.sum()?;
            return match self.sym(&[")"]) {
                Some(_) => Ok(e),
                None => self.fail("')' expected"),
            };
        }
        let tok = self.toks.get(self.pos).map(|t| t.1.clone());
        match tok {
            Some(Tok::Num(v)) => {
                self.pos += 1;
                Ok(Expr::Num(v))
            }
            Some(Tok::Name(n)) => {
                self.pos += 1;
                Ok(Expr::Name(n))
            }
            _ => self.fail("a figure (layer.figure), a number or '(' expected"),
        }
    }
}

fn names<'a>(e: &'a Expr, out: &mut Vec<&'a str>) {
    match e {
        Expr::Num(_) => {}
        Expr::Name(n) => {
            if !out.contains(&n.as_str()) {
                out.push(n);
            }
        }
        Expr::Neg(x) => names(x, out),
        Expr::Bin(a, _, b) => {
            names(a, out);
            names(b, out);
        }
    }
}

/// The value of an expression that names no figure (None when it names
/// one; a constant that itself divides by 0 was refused when read).
fn constant(e: &Expr) -> Option<f64> {
    value(e, &|_| Err(String::new())).ok()
}

fn value(
    e: &Expr,
    lookup: &dyn Fn(&str) -> Result<f64, String>,
) -> Result<f64, crate::QualifyError> {
    Ok(match e {
        Expr::Num(v) => *v,
        Expr::Name(n) => lookup(n).map_err(crate::QualifyError::Lookup)?,
        Expr::Neg(x) => -value(x, lookup)?,
        Expr::Bin(a, op, b) => {
            let (a, b) = (value(a, lookup)?, value(b, lookup)?);
            match op {
                '+' => a + b,
                '-' => a - b,
                '*' => a * b,
                _ if b == 0.0 => return Err(crate::QualifyError::DivisionByZero),
                _ => a / b,
            }
        }
    })
}

impl Expectation {
    /// Reads an expectation.
    pub fn parse(text: &str) -> Result<Expectation, ExprError> {
        let mut p = Parser {
            text,
            toks: lex(text)?,
            pos: 0,
        };
        if p.toks.is_empty() {
            return p.fail("empty: write a comparison such as network.ping >= 10000");
        }
        let left = p.sum()?;
        let cmp = match p.sym(&[">=", "<=", ">", "<"]) {
            Some(">=") => Cmp::Ge,
            Some("<=") => Cmp::Le,
            Some(">") => Cmp::Gt,
            Some(_) => Cmp::Lt,
            None => return p.fail("a comparison (>=, <=, >, <) expected"),
        };
        let right = p.sum()?;
        if p.pos < p.toks.len() {
            return p.fail("nothing more expected after the comparison's right side");
        }
        let e = Expectation {
            text: text.to_string(),
            left,
            cmp,
            right,
        };
        if e.names().is_empty() {
            return Err(ExprError {
                text: text.to_string(),
                at: 0,
                msg: "it names no figure".into(),
            });
        }
        Ok(e)
    }

    /// The figures it names, in order, once each.
    pub fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        names(&self.left, &mut out);
        names(&self.right, &mut out);
        out
    }

    /// Its sides' values through `lookup` (a figure's value by name).
    pub fn eval(
        &self,
        lookup: &dyn Fn(&str) -> Result<f64, String>,
    ) -> Result<Evaluated, crate::QualifyError> {
        let (left, right) = (value(&self.left, lookup)?, value(&self.right, lookup)?);
        Ok(Evaluated {
            left,
            right,
            holds: self.cmp.holds(left, right),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(text: &str) -> Evaluated {
        let figures = |n: &str| match n {
            "a.x" => Ok(10.0),
            "b.y" => Ok(4.0),
            _ => Err(format!("no {n}")),
        };
        Expectation::parse(text).unwrap().eval(&figures).unwrap()
    }

    #[test]
    fn arithmetic_follows_the_usual_precedence() {
        assert_eq!(eval("a.x >= 2 + 3 * b.y").right, 14.0);
        assert_eq!(eval("a.x >= (2 + 3) * b.y").right, 20.0);
        assert_eq!(eval("a.x >= -b.y - -1").right, -3.0);
        assert_eq!(eval("a.x / b.y > 2.4").left, 2.5);
        assert_eq!(eval("a.x < 1e1 * 50%").right, 5.0);
        assert!(eval("A.X >= 10").holds);
        assert!(!eval("a.x > 10").holds);
        assert!(eval("b.y <= .5 * a.x").holds);
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = |t: &str| Expectation::parse(t).unwrap_err();
        let x = e("data.write >= 0.8 *");
        assert_eq!(x.at, 19);
        assert!(x.to_string().contains("at character 20"), "{x}");
        assert!(x.msg.contains("expected"));
        assert!(e("data.write").msg.contains("comparison"));
        assert!(e("data.write == 1").msg.contains(">="));
        assert!(e("write >= 1").msg.contains("layer.figure"));
        assert!(e("a.b >= 1 1").msg.contains("nothing more"));
        assert!(e("a.b >= (1").msg.contains("')'"));
        assert!(e("a.b >= 0.8network.x").msg.contains("runs into"));
        assert!(e("1 >= 2").msg.contains("names no figure"));
        assert!(e("").msg.contains("empty"));
        assert!(e("a.b >= 1 $").msg.contains("'$'"));
    }

    #[test]
    fn a_constant_divisor_of_zero_is_refused_when_read() {
        for (text, at) in [
            ("data.write > data.read / 0", 25),
            ("a.b >= 1 / (2 - 2) * a.b", 11),
            ("a.b >= a.b / -0e5", 13),
            ("a.b / (0 * 7) < 1", 6),
        ] {
            let e = Expectation::parse(text).unwrap_err();
            assert!(e.msg.contains("division by zero"), "{text}: {e}");
            assert_eq!(e.at, at, "{text}: {e}");
        }
        assert!(Expectation::parse("a.b >= 1 / (a.b - 2)").is_ok());
        assert!(Expectation::parse("a.b >= 0 / 2 * a.b").is_ok());
    }

    #[test]
    fn evaluation_errors_are_values_not_panics() {
        let p = Expectation::parse("a.b >= 1 / (a.b - a.b)").unwrap();
        assert_eq!(
            p.eval(&|_| Ok(1.0)).unwrap_err().to_string(),
            "division by zero"
        );
        assert_eq!(
            p.eval(&|n| Err(format!("no {n}"))).unwrap_err().to_string(),
            "no a.b"
        );
    }
}
