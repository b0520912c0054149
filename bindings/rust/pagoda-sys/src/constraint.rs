//! constraint.h: the kinds of constraint a request's output may be held to (a grammar, a regular
//! expression, a JSON Schema, any JSON object).

/// `pagoda_constraint_kind_t` (`pagoda_request_options_t::constraint_kind`).
pub type pagoda_constraint_kind_t = i32;
pub const PAGODA_CONSTRAINT_NONE: pagoda_constraint_kind_t = 0;
/// GBNF text, as llama.cpp defines it.
pub const PAGODA_CONSTRAINT_GRAMMAR: pagoda_constraint_kind_t = 1;
/// A regular expression the whole output must match.
pub const PAGODA_CONSTRAINT_REGEX: pagoda_constraint_kind_t = 2;
/// A JSON Schema's JSON text.
pub const PAGODA_CONSTRAINT_JSON_SCHEMA: pagoda_constraint_kind_t = 3;
/// Any JSON object; the text is not read.
pub const PAGODA_CONSTRAINT_JSON_OBJECT: pagoda_constraint_kind_t = 4;
