//! The rule language of the approval policy: a condition over a tool
//! call's arguments (and the server's own reading of the customer, the
//! `$` variables), parsed once at start-up and evaluated on every call.
//!
//! ```text
//! expr    := or
//! or      := and (("or" | "||") and)*
//! and     := unary (("and" | "&&") unary)*
//! unary   := ("not" | "!") unary | "(" expr ")" | "always" | "true" | "false" | test
//! test    := path ("==" | "!=" | "<" | "<=" | ">" | ">=") value
//!          | path ["not"] "in" "[" value ("," value)* "]"
//!          | path ["not"] "contains" value
//!          | path                                  (present and not null/false/"")
//! path    := name ("." name)*  |  "$" name         (category, order.id, $customer, $channel)
//! value   := number | 'text' | "text" | bare-word | true | false | null
//! ```
//!
//! Text compares trimmed and case-insensitively; numbers compare as numbers
//! (a numeric string counts as its number); an ordering test on something
//! that is not a number is false. `in` on a list (`$customer in [a, b]`) is
//! true when any of its items is in the list.

use std::fmt;

use serde_json::Value;

/// A literal of a rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    Num(f64),
    Text(String),
    Bool(bool),
    Null,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Where a test reads its value: an argument (by path) or a server variable.
#[derive(Debug, Clone, PartialEq)]
pub enum Path {
    Arg(Vec<String>),
    Var(String),
}

/// A parsed condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Const(bool),
    Not(Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Cmp(Path, Op, Lit),
    In(Path, Vec<Lit>),
    Contains(Path, Lit),
    Present(Path),
}

/// Why a condition does not parse: what was wrong and where (1-based column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at column {})", self.message, self.column)
    }
}

impl std::error::Error for ParseError {}

/// The server variables a rule may read.
pub const VARIABLES: [&str; 3] = ["intent", "customer", "channel"];

/// The values of the server variables for one call.
pub trait Variables {
    fn var(&self, name: &str) -> Value;
}

impl Variables for () {
    fn var(&self, _: &str) -> Value {
        Value::Null
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Var(String),
    Num(f64),
    Text(String),
    Op(Op),
    Bang,
    AndAnd,
    OrOr,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
}

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, ParseError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |column: usize, message: String| ParseError { column, message };
    while i < chars.len() {
        let c = chars[i];
        let col = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        let (tok, len) = match (c, two.as_str()) {
            (_, "==") => (Tok::Op(Op::Eq), 2),
            (_, "!=") => (Tok::Op(Op::Ne), 2),
            (_, "<=") => (Tok::Op(Op::Le), 2),
            (_, ">=") => (Tok::Op(Op::Ge), 2),
            (_, "&&") => (Tok::AndAnd, 2),
            (_, "||") => (Tok::OrOr, 2),
            ('<', _) => (Tok::Op(Op::Lt), 1),
            ('>', _) => (Tok::Op(Op::Gt), 1),
            ('!', _) => (Tok::Bang, 1),
            ('(', _) => (Tok::LParen, 1),
            (')', _) => (Tok::RParen, 1),
            ('[', _) => (Tok::LBracket, 1),
            (']', _) => (Tok::RBracket, 1),
            (',', _) => (Tok::Comma, 1),
            ('=', _) => return Err(err(col, "`=` is not an operator; write `==`".into())),
            ('\'' | '"', _) => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&d| d == c)
                    .ok_or_else(|| err(col, "the quoted text is not closed".into()))?;
                let text: String = chars[i + 1..i + 1 + end].iter().collect();
                (Tok::Text(text), end + 2)
            }
            ('$', _) => {
                let name: String = chars[i + 1..]
                    .iter()
                    .take_while(|&&d| d.is_alphanumeric() || d == '_')
                    .collect();
                if !VARIABLES.contains(&name.as_str()) {
                    return Err(err(
                        col,
                        format!(
                            "unknown variable `${name}` (known: {})",
                            VARIABLES.map(|v| format!("${v}")).join(", ")
                        ),
                    ));
                }
                let len = name.chars().count() + 1;
                (Tok::Var(name), len)
            }
            _ if c.is_ascii_digit()
                || (c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) =>
            {
                let text: String = std::iter::once(c)
                    .chain(chars[i + 1..].iter().copied().take_while(|&d| word_char(d)))
                    .collect();
                match text.parse::<f64>() {
                    Ok(n) if n.is_finite() => (Tok::Num(n), text.chars().count()),
                    // Not a number (ORD-123 starts with a letter; 12ab is a word).
                    _ => (Tok::Word(text.clone()), text.chars().count()),
                }
            }
            _ if word_char(c) => {
                let text: String = chars[i..]
                    .iter()
                    .copied()
                    .take_while(|&d| word_char(d))
                    .collect();
                let len = text.chars().count();
                (Tok::Word(text), len)
            }
            _ => return Err(err(col, format!("unexpected character {c:?}"))),
        };
        out.push((tok, col));
        i += len;
    }
    Ok(out)
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    at: usize,
    end_col: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|(t, _)| t)
    }

    fn col(&self) -> usize {
        self.toks.get(self.at).map_or(self.end_col, |(_, c)| *c)
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError {
            column: self.col(),
            message: message.into(),
        })
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(x)) if x.eq_ignore_ascii_case(w))
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.at).map(|(t, _)| t.clone());
        self.at += 1;
        t
    }

    fn or(&mut self) -> Result<Expr, ParseError> {
        let mut items = vec![self.and()?];
        while self.is_word("or") || self.peek() == Some(&Tok::OrOr) {
            self.at += 1;
            items.push(self.and()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::Or(items)
        })
    }

    fn and(&mut self) -> Result<Expr, ParseError> {
        let mut items = vec![self.unary()?];
        while self.is_word("and") || self.peek() == Some(&Tok::AndAnd) {
            self.at += 1;
            items.push(self.unary()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::And(items)
        })
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        if self.is_word("not") || self.peek() == Some(&Tok::Bang) {
            self.at += 1;
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        match self.peek() {
            Some(Tok::LParen) => {
                self.at += 1;
                let e = self.or()?;
                if self.next() != Some(Tok::RParen) {
                    self.at -= 1;
                    return self.fail("expected `)`");
                }
                Ok(e)
            }
            Some(Tok::Word(w))
                if w.eq_ignore_ascii_case("always") || w.eq_ignore_ascii_case("true") =>
            {
                self.at += 1;
                Ok(Expr::Const(true))
            }
            Some(Tok::Word(w)) if w.eq_ignore_ascii_case("false") => {
                self.at += 1;
                Ok(Expr::Const(false))
            }
            Some(Tok::Word(w)) if is_keyword(w) => {
                self.fail(format!("expected a condition, found `{w}`"))
            }
            Some(Tok::Word(_) | Tok::Var(_)) => self.test(),
            Some(_) => self.fail("expected a condition"),
            None => self.fail("expected a condition, found the end"),
        }
    }

    fn test(&mut self) -> Result<Expr, ParseError> {
        let path = match self.next() {
            Some(Tok::Var(v)) => Path::Var(v),
            Some(Tok::Word(w)) => {
                let parts: Vec<String> = w.split('.').map(str::to_owned).collect();
                if parts.iter().any(|p| p.is_empty()) {
                    self.at -= 1;
                    return self.fail(format!("`{w}` is not an argument name"));
                }
                Path::Arg(parts)
            }
            _ => return self.fail("expected an argument name"),
        };
        let negated = if self.is_word("not") {
            self.at += 1;
            if !(self.is_word("in") || self.is_word("contains")) {
                return self.fail("expected `in` or `contains` after `not`");
            }
            true
        } else {
            false
        };
        let test = match self.peek() {
            Some(Tok::Op(op)) => {
                let op = *op;
                self.at += 1;
                Expr::Cmp(path, op, self.value()?)
            }
            Some(Tok::Word(w)) if w.eq_ignore_ascii_case("in") => {
                self.at += 1;
                Expr::In(path, self.list()?)
            }
            Some(Tok::Word(w)) if w.eq_ignore_ascii_case("contains") => {
                self.at += 1;
                Expr::Contains(path, self.value()?)
            }
            _ => Expr::Present(path),
        };
        Ok(if negated {
            Expr::Not(Box::new(test))
        } else {
            test
        })
    }

    fn list(&mut self) -> Result<Vec<Lit>, ParseError> {
        if self.next() != Some(Tok::LBracket) {
            self.at -= 1;
            return self.fail("expected `[` to start the list");
        }
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(&Tok::RBracket) && items.is_empty() {
                return self.fail("the list is empty");
            }
            items.push(self.value()?);
            match self.next() {
                Some(Tok::Comma) => continue,
                Some(Tok::RBracket) => return Ok(items),
                _ => {
                    self.at -= 1;
                    return self.fail("expected `,` or `]`");
                }
            }
        }
    }

    fn value(&mut self) -> Result<Lit, ParseError> {
        match self.next() {
            Some(Tok::Num(n)) => Ok(Lit::Num(n)),
            Some(Tok::Text(t)) => Ok(Lit::Text(t)),
            Some(Tok::Word(w)) => Ok(match w.to_ascii_lowercase().as_str() {
                "true" => Lit::Bool(true),
                "false" => Lit::Bool(false),
                "null" => Lit::Null,
                k if is_keyword(k) => {
                    self.at -= 1;
                    return self.fail(format!("expected a value, found `{w}`"));
                }
                _ => Lit::Text(w),
            }),
            None => self.fail("expected a value, found the end"),
            Some(_) => {
                self.at -= 1;
                self.fail("expected a value")
            }
        }
    }
}

fn is_keyword(w: &str) -> bool {
    ["and", "or", "not", "in", "contains"]
        .iter()
        .any(|k| w.eq_ignore_ascii_case(k))
}

/// Parses a condition.
pub fn parse(src: &str) -> Result<Expr, ParseError> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        at: 0,
        end_col: src.chars().count() + 1,
    };
    let e = p.or()?;
    if p.at < p.toks.len() {
        return p.fail("unexpected text after the condition (missing `and`/`or`?)");
    }
    Ok(e)
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|n| n.is_finite()),
        _ => None,
    }
}

fn equals(v: &Value, lit: &Lit) -> bool {
    match lit {
        Lit::Null => v.is_null(),
        Lit::Bool(b) => v.as_bool() == Some(*b),
        Lit::Num(n) => number(v).is_some_and(|x| x == *n),
        Lit::Text(t) => match v {
            Value::String(s) => s.trim().to_lowercase() == t.trim().to_lowercase(),
            Value::Number(_) => t.trim().parse::<f64>().ok() == number(v),
            Value::Bool(b) => t.eq_ignore_ascii_case(if *b { "true" } else { "false" }),
            _ => false,
        },
    }
}

impl Expr {
    /// Whether the condition holds for `args` (a call's arguments) and the
    /// server's variables.
    pub fn eval(&self, args: &Value, vars: &dyn Variables) -> bool {
        let get = |p: &Path| -> Value {
            match p {
                Path::Var(name) => vars.var(name),
                Path::Arg(parts) => {
                    let mut v = args;
                    for part in parts {
                        match v.get(part) {
                            Some(next) => v = next,
                            None => return Value::Null,
                        }
                    }
                    v.clone()
                }
            }
        };
        match self {
            Expr::Const(b) => *b,
            Expr::Not(e) => !e.eval(args, vars),
            Expr::And(items) => items.iter().all(|e| e.eval(args, vars)),
            Expr::Or(items) => items.iter().any(|e| e.eval(args, vars)),
            Expr::Cmp(path, op, lit) => {
                let v = get(path);
                match op {
                    Op::Eq => equals(&v, lit),
                    Op::Ne => !equals(&v, lit),
                    _ => {
                        let (Some(x), Lit::Num(n)) = (number(&v), lit) else {
                            return false;
                        };
                        match op {
                            Op::Lt => x < *n,
                            Op::Le => x <= *n,
                            Op::Gt => x > *n,
                            _ => x >= *n,
                        }
                    }
                }
            }
            Expr::In(path, list) => match get(path) {
                Value::Array(items) => items.iter().any(|v| list.iter().any(|l| equals(v, l))),
                v => list.iter().any(|l| equals(&v, l)),
            },
            Expr::Contains(path, lit) => match (get(path), lit) {
                (Value::Array(items), lit) => items.iter().any(|v| equals(v, lit)),
                (Value::String(s), Lit::Text(t)) => s.to_lowercase().contains(&t.to_lowercase()),
                (Value::String(s), Lit::Num(n)) => s.contains(&n.to_string()),
                _ => false,
            },
            Expr::Present(path) => match get(path) {
                Value::Null | Value::Bool(false) => false,
                Value::String(s) => !s.trim().is_empty(),
                Value::Array(a) => !a.is_empty(),
                _ => true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    struct Vars;
    impl Variables for Vars {
        fn var(&self, name: &str) -> Value {
            match name {
                "customer" => json!(["complaint", "order"]),
                "intent" => json!("complaint"),
                "channel" => json!("customer"),
                _ => Value::Null,
            }
        }
    }

    fn holds(rule: &str, args: Value) -> bool {
        parse(rule).unwrap().eval(&args, &Vars)
    }

    #[test]
    fn every_operator() {
        let a = json!({"category": " Refund ", "amount": 60, "text": "Parcel LOST", "tags": ["vip"], "n": "7", "flag": true, "order": {"id": "ORD-1"}});
        assert!(holds("category == refund", a.clone()));
        assert!(holds("category == 'REFUND'", a.clone()));
        assert!(!holds("category != refund", a.clone()));
        assert!(holds("category != complaint", a.clone()));
        assert!(holds("amount > 50", a.clone()));
        assert!(!holds("amount > 60", a.clone()));
        assert!(holds("amount >= 60", a.clone()));
        assert!(holds("amount < 60.5", a.clone()));
        assert!(holds("amount <= 60", a.clone()));
        assert!(!holds("amount < 60", a.clone()));
        assert!(
            holds("n == 7 and n < 8", a.clone()),
            "a numeric string is its number"
        );
        assert!(!holds("category > 5", a.clone()), "no order on text");
        assert!(holds("category in [complaint, refund]", a.clone()));
        assert!(!holds("category not in [complaint, refund]", a.clone()));
        assert!(holds("category not in [inquiry]", a.clone()));
        assert!(holds("text contains lost", a.clone()));
        assert!(holds("text not contains found", a.clone()));
        assert!(holds("tags contains VIP", a.clone()));
        assert!(holds("order.id == ORD-1", a.clone()));
        assert!(holds("flag == true && !(amount > 100)", a.clone()));
        assert!(holds("missing == null", a.clone()));
        assert!(holds("missing != 3", a.clone()));
        assert!(!holds("missing > 3", a.clone()));
        assert!(holds("order", a.clone()));
        assert!(!holds("missing", a.clone()));
        assert!(holds("category == inquiry or amount > 50", a.clone()));
        assert!(!holds("category == inquiry and amount > 50", a.clone()));
        assert!(holds("not category == inquiry", a.clone()));
        assert!(holds("always", a.clone()));
        assert!(!holds("false", a.clone()));
        assert!(holds("$customer in [refund, complaint]", a.clone()));
        assert!(holds("$customer contains order", a.clone()));
        assert!(!holds("$customer in [refund]", a.clone()));
        assert!(holds("$channel == customer and order", a.clone()));
        assert!(!holds("$channel == console", a.clone()));
        assert!(holds("$intent == complaint", a));
    }

    #[test]
    fn parse_errors_say_what_and_where() {
        for (rule, what) in [
            ("category = refund", "`=` is not an operator"),
            ("category in complaint", "expected `[`"),
            ("category in []", "the list is empty"),
            ("category in [a b]", "expected `,` or `]`"),
            ("amount >", "expected a value, found the end"),
            ("(amount > 1", "expected `)`"),
            ("amount > 1 category", "unexpected text"),
            ("$mood == happy", "unknown variable `$mood`"),
            ("'open", "not closed"),
            ("and", "expected a condition"),
            ("", "found the end"),
            ("a # b", "unexpected character"),
            ("x not == 1", "expected `in` or `contains`"),
        ] {
            let e = parse(rule).unwrap_err();
            assert!(e.to_string().contains(what), "{rule}: {e}");
        }
        assert_eq!(parse("amount >").unwrap_err().column, 9);
    }
}
