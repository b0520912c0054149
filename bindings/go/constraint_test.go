package pagoda

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// constrained streams storyPrompt under c and returns its text and how it finished.
func constrained(t *testing.T, e *Engine, c Constraint, seed uint64) (string, FinishReason) {
	t.Helper()
	o := DefaultRequestOptions()
	o.MaxTokens = 256
	o.Temperature = 1
	o.Seed = seed
	o.Constraint = c
	st, err := e.StreamText(storyPrompt, &o)
	if err != nil {
		t.Fatal(err)
	}
	text, outs := collect(t, st)
	return text, outs[len(outs)-1].FinishReason
}

// Every output of a regex constraint is a full match under Go's regexp.
func TestRegexConstraintMatchesInFull(t *testing.T) {
	s := newStack(t)
	const pattern = `[0-9]{3}-[a-z]{2,4}`
	full := regexp.MustCompile(`^(?:` + pattern + `)$`)
	for seed := uint64(0); seed < 4; seed++ {
		text, finish := constrained(t, s.engine, RegexConstraint(pattern), seed)
		if !full.MatchString(text) || finish != FinishStopToken {
			t.Errorf("seed %d: %q (finish %v) is not a full match of %s", seed, text, finish, pattern)
		}
	}
}

// A JSON Schema's outputs parse as JSON objects with the required keys, in the schema's order.
func TestJSONSchemaConstraintGivesTheRequiredKeys(t *testing.T) {
	s := newStack(t)
	const schema = `{"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
		"age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name", "age"]}`
	for seed := uint64(0); seed < 3; seed++ {
		text, finish := constrained(t, s.engine, JSONSchemaConstraint(schema), seed)
		var v struct {
			Name *string
			Age  *int
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || dec.More() || finish != FinishStopToken {
			t.Errorf("seed %d: %q (finish %v): %v", seed, text, finish, err)
			continue
		}
		if v.Name == nil || v.Age == nil || utf8.RuneCountInString(*v.Name) > 8 || *v.Age < 0 || *v.Age > 120 {
			t.Errorf("seed %d: %q misses a required key or breaks a bound", seed, text)
		}
		if strings.Index(text, `"name"`) > strings.Index(text, `"age"`) {
			t.Errorf("seed %d: %q is not in the schema's order", seed, text)
		}
	}
	// Any object: stories260K writes a story into its first key, so only the start is sure.
	o := greedy(8)
	o.Constraint = JSONObjectConstraint()
	st, err := s.engine.StreamText(storyPrompt, o)
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := collect(t, st); !strings.HasPrefix(text, "{") {
		t.Errorf("JSON object: %q", text)
	}
}

// A grammar that does not compile is refused at submit, the message naming the fault; the
// constraint round-trips through the C struct.
func TestBadGrammarIsRefusedWithTheReason(t *testing.T) {
	s := newStack(t)
	o := DefaultRequestOptions()
	o.Constraint = GrammarConstraint(`root ::= "a" missing`)
	_, err := s.engine.SubmitText(storyPrompt, &o)
	var perr *Error
	if !errors.As(err, &perr) || perr.Status != StatusInvalidArgument ||
		!strings.Contains(perr.Message, "'missing' is not defined") {
		t.Fatalf("undefined rule: %v, want StatusInvalidArgument naming 'missing'", err)
	}
	o.Constraint = RegexConstraint("a\x00b")
	if _, err := s.engine.SubmitText(storyPrompt, &o); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("a NUL byte: %v, want StatusInvalidArgument", err)
	}
	o.Constraint = RegexConstraint("[a-z]+")
	o.BeamWidth = 2
	if _, err := s.engine.SubmitText(storyPrompt, &o); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("beam search with a constraint: %v, want StatusInvalidArgument", err)
	}
	if busy, err := s.engine.HasWork(); busy || err != nil {
		t.Fatalf("after refused requests: work %v, %v", busy, err)
	}
	for _, c := range []Constraint{{}, JSONObjectConstraint(), JSONSchemaConstraint(`{"type": "integer"}`)} {
		o := DefaultRequestOptions()
		o.Constraint = c
		if got := roundTripRequestOptions(o); !equalValues(got, o) {
			t.Errorf("constraint %+v came back as %+v", c, got.Constraint)
		}
	}
	if DefaultRequestOptions().Constraint != (Constraint{}) {
		t.Error("the default has a constraint")
	}
}
