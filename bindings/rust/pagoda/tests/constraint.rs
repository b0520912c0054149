//! Constrained decoding through the binding: a regex whose outputs match in full, a JSON Schema
//! whose outputs parse with the required keys, and a grammar refused with the library's reason.
//! The standard library has neither a regex engine nor a JSON parser, so the test carries small
//! checkers of its own for exactly what it asks for.

mod common;

use pagoda::{Constraint, Engine, FinishReason, Output, RequestOptions, Status};

const PROMPT: &str = "Once upon a time";

/// Runs one request to its end; its text and how it finished.
fn run(engine: &Engine, options: &RequestOptions) -> (String, Option<FinishReason>) {
    engine.submit_text(PROMPT, options).unwrap();
    let outputs = engine.outputs().collect::<pagoda::Result<Vec<Output>>>().expect("generating");
    let text = outputs.iter().map(|o| o.text.as_str()).collect();
    (text, outputs.last().and_then(|o| o.finish_reason))
}

fn constrained(constraint: Constraint, seed: u64) -> RequestOptions {
    RequestOptions {
        max_tokens: 256,
        temperature: 1.0,
        seed: Some(seed),
        constraint: Some(constraint),
        ..RequestOptions::default()
    }
}

/// A full match of `[0-9]{3}-[a-z]{2,4}`.
fn is_code(text: &str) -> bool {
    let b = text.as_bytes();
    (6..=8).contains(&b.len())
        && b[..3].iter().all(u8::is_ascii_digit)
        && b[3] == b'-'
        && b[4..].iter().all(u8::is_ascii_lowercase)
}

#[test]
fn a_regex_constraint_matches_in_full() {
    let s = common::stack();
    for seed in 0..4 {
        let (text, finish) =
            run(&s.engine, &constrained(Constraint::Regex("[0-9]{3}-[a-z]{2,4}".into()), seed));
        assert!(is_code(&text), "seed {seed}: {text:?} is not a full match");
        assert_eq!(finish, Some(FinishReason::StopToken), "seed {seed}: {text:?}");
    }
    assert!(is_code("123-ab") && is_code("007-abcd") && !is_code("12-ab") && !is_code("123-abcde"));
}

#[test]
fn a_json_schema_constraint_gives_json_with_the_required_keys() {
    let s = common::stack();
    let schema = r#"{"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name", "age"]}"#;
    for seed in 0..3 {
        let (text, finish) = run(&s.engine, &constrained(Constraint::JsonSchema(schema.into()), seed));
        assert_eq!(finish, Some(FinishReason::StopToken), "seed {seed}: {text:?}");
        let members = match json::parse(&text) {
            Some(json::Value::Object(members)) => members,
            other => panic!("seed {seed}: {text:?} is not a JSON object: {other:?}"),
        };
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["name", "age"], "seed {seed}: {text:?}");
        assert!(matches!(members[0].1, json::Value::String(ref v) if v.chars().count() <= 8), "{text:?}");
        assert!(
            matches!(members[1].1, json::Value::Number(n) if (0.0..=120.0).contains(&n) && n.fract() == 0.0),
            "{text:?}"
        );
    }
    // Any object: stories260K writes a story into its first key, so only the start is sure.
    let object = RequestOptions { max_tokens: 8, ..constrained(Constraint::JsonObject, 5) };
    let (text, _) = run(&s.engine, &object);
    assert!(text.starts_with('{'), "{text:?}");
}

#[test]
fn a_bad_grammar_is_refused_with_the_reason() {
    let s = common::stack();
    let options = constrained(Constraint::Grammar(r#"root ::= "a" missing"#.into()), 0);
    let err = s.engine.submit_text(PROMPT, &options).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("'missing' is not defined"), "{}", err.message());
    let nul = constrained(Constraint::Regex("a\0b".into()), 0);
    assert_eq!(s.engine.submit_text(PROMPT, &nul).unwrap_err().status(), Status::InvalidArgument);
    let beams = RequestOptions { beam_width: 2, ..constrained(Constraint::Regex("[a-z]+".into()), 0) };
    assert!(s.engine.submit_text(PROMPT, &beams).is_err());
    assert!(!s.engine.has_work().unwrap());
}

/// A strict JSON reader (RFC 8259), enough to check what the schema asked for.
mod json {
    // Every value is read whole; the tests look into objects, strings and numbers only.
    #[allow(dead_code)]
    #[derive(Debug)]
    pub enum Value {
        Null,
        Bool(bool),
        Number(f64),
        String(String),
        Array(Vec<Value>),
        Object(Vec<(String, Value)>),
    }

    /// The value `text` holds, whole (with nothing but whitespace around it), or `None`.
    pub fn parse(text: &str) -> Option<Value> {
        let mut p = Parser { s: text.as_bytes(), at: 0 };
        let v = p.value()?;
        p.space();
        if p.at == p.s.len() {
            Some(v)
        } else {
            None
        }
    }

    struct Parser<'a> {
        s: &'a [u8],
        at: usize,
    }

    impl<'a> Parser<'a> {
        fn peek(&self) -> Option<u8> {
            self.s.get(self.at).copied()
        }

        fn space(&mut self) {
            while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
                self.at += 1;
            }
        }

        fn eat(&mut self, word: &str) -> Option<()> {
            if self.s[self.at..].starts_with(word.as_bytes()) {
                self.at += word.len();
                Some(())
            } else {
                None
            }
        }

        fn value(&mut self) -> Option<Value> {
            self.space();
            match self.peek()? {
                b'n' => self.eat("null").map(|_| Value::Null),
                b't' => self.eat("true").map(|_| Value::Bool(true)),
                b'f' => self.eat("false").map(|_| Value::Bool(false)),
                b'"' => self.string().map(Value::String),
                b'[' => self.list(b']', |p| p.value()).map(Value::Array),
                b'{' => self
                    .list(b'}', |p| {
                        p.space();
                        let key = p.string()?;
                        p.space();
                        p.eat(":")?;
                        Some((key, p.value()?))
                    })
                    .map(Value::Object),
                _ => self.number().map(Value::Number),
            }
        }

        /// `[` or `{` items separated by commas up to `close`.
        fn list<T>(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
            self.at += 1;
            let mut items = Vec::new();
            self.space();
            if self.peek() == Some(close) {
                self.at += 1;
                return Some(items);
            }
            loop {
                items.push(item(self)?);
                self.space();
                match self.peek()? {
                    b',' => self.at += 1,
                    c if c == close => {
                        self.at += 1;
                        return Some(items);
                    }
                    _ => return None,
                }
            }
        }

        fn string(&mut self) -> Option<String> {
            self.eat("\"")?;
            let mut out = Vec::new();
            loop {
                let c = self.peek()?;
                self.at += 1;
                match c {
                    b'"' => return String::from_utf8(out).ok(),
                    b'\\' => {
                        let e = self.peek()?;
                        self.at += 1;
                        let ch = match e {
                            b'"' => '"',
                            b'\\' => '\\',
                            b'/' => '/',
                            b'b' => '\u{8}',
                            b'f' => '\u{c}',
                            b'n' => '\n',
                            b'r' => '\r',
                            b't' => '\t',
                            b'u' => self.unicode_escape()?,
                            _ => return None,
                        };
                        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                    0..=0x1f => return None,
                    _ => out.push(c),
                }
            }
        }

        /// The code point of `\uXXXX` (a surrogate pair taking two), after the `u`.
        fn unicode_escape(&mut self) -> Option<char> {
            let hex = |p: &mut Self| -> Option<u32> {
                let digits = std::str::from_utf8(p.s.get(p.at..p.at + 4)?).ok()?;
                p.at += 4;
                u32::from_str_radix(digits, 16).ok()
            };
            let first = hex(self)?;
            if (0xd800..0xdc00).contains(&first) {
                self.eat("\\u")?;
                let low = hex(self)?;
                if !(0xdc00..0xe000).contains(&low) {
                    return None;
                }
                return char::from_u32(0x10000 + ((first - 0xd800) << 10) + (low - 0xdc00));
            }
            char::from_u32(first)
        }

        fn number(&mut self) -> Option<f64> {
            let start = self.at;
            let digits = |p: &mut Self| {
                let from = p.at;
                while matches!(p.peek(), Some(b'0'..=b'9')) {
                    p.at += 1;
                }
                p.at > from
            };
            let _ = self.eat("-");
            if self.eat("0").is_none() && !digits(self) {
                return None;
            }
            if self.eat(".").is_some() && !digits(self) {
                return None;
            }
            if matches!(self.peek(), Some(b'e' | b'E')) {
                self.at += 1;
                if matches!(self.peek(), Some(b'+' | b'-')) {
                    self.at += 1;
                }
                if !digits(self) {
                    return None;
                }
            }
            std::str::from_utf8(&self.s[start..self.at]).ok()?.parse().ok()
        }
    }
}
