//! Constrained decoding (constraint.h): what a request's output must match.

use crate::cstr::to_c;
use crate::error::Result;
use pagoda_sys as sys;
use std::ffi::CString;

/// What a request's output must match; the library compiles it at submit and masks every step's
/// logits with it, ending the sequence with [`FinishReason::StopToken`](crate::FinishReason)
/// when nothing more may follow. A text that does not compile fails the submit with
/// `Status::InvalidArgument` and a message naming the construct and where it is
/// (`constraint.h` describes each language's subset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Constraint {
    /// A grammar in GBNF (llama.cpp's format); the rule `root` is the start.
    Grammar(String),
    /// A regular expression the whole output must match.
    Regex(String),
    /// A JSON Schema's JSON text; its `properties` are written in the text's order.
    JsonSchema(String),
    /// Any JSON object.
    JsonObject,
}

impl Constraint {
    /// The `pagoda_constraint_kind_t` of this constraint.
    pub fn kind(&self) -> sys::pagoda_constraint_kind_t {
        match self {
            Constraint::Grammar(_) => sys::PAGODA_CONSTRAINT_GRAMMAR,
            Constraint::Regex(_) => sys::PAGODA_CONSTRAINT_REGEX,
            Constraint::JsonSchema(_) => sys::PAGODA_CONSTRAINT_JSON_SCHEMA,
            Constraint::JsonObject => sys::PAGODA_CONSTRAINT_JSON_OBJECT,
        }
    }

    /// The text the library compiles; `None` for `JsonObject`, which has none.
    pub fn text(&self) -> Option<&str> {
        match self {
            Constraint::Grammar(t) | Constraint::Regex(t) | Constraint::JsonSchema(t) => Some(t),
            Constraint::JsonObject => None,
        }
    }

    /// The text as C reads it (the caller keeps it until submit returns: the library copies it).
    pub(crate) fn text_to_c(&self) -> Result<Option<CString>> {
        self.text().map(|t| to_c("the constraint", t)).transpose()
    }
}
