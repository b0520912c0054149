package pagoda

import (
	"errors"
	"testing"
)

// tokensOf runs storyPrompt with o and returns every generated token id.
func tokensOf(t *testing.T, e *Engine, o *RequestOptions) []int32 {
	t.Helper()
	st, err := e.StreamText(storyPrompt, o)
	if err != nil {
		t.Fatal(err)
	}
	_, outs := collect(t, st)
	var ids []int32
	for _, out := range outs {
		ids = append(ids, out.TokenIDs...)
	}
	return ids
}

// A +100 bias forces its token; allowed ids bound what is drawn; the controls round-trip.
func TestLogitBiasAndAllowedIDs(t *testing.T) {
	s := newStack(t)
	o := DefaultRequestOptions()
	o.MaxTokens = 8
	o.Flags |= RequestIgnoreEOS
	o.LogitBias = []LogitBias{{300, 100}, {1, -100}}
	for i, id := range tokensOf(t, s.engine, &o) {
		if id != 300 {
			t.Fatalf("token %d is %d, not the biased 300", i, id)
		}
	}
	o.LogitBias = nil
	o.AllowedTokenIDs = []int32{100, 200, 201, 350}
	o.MaxTokens = 16
	for i, id := range tokensOf(t, s.engine, &o) {
		if id != 100 && id != 200 && id != 201 && id != 350 {
			t.Fatalf("token %d is %d, not an allowed id", i, id)
		}
	}
	o.LogitBias = []LogitBias{{7, -2.5}}
	o.BadWords = [][]int32{{1, 2}, {3}}
	o.MinTokens = 4
	if got := roundTripRequestOptions(o); !equalValues(got, o) {
		t.Fatalf("request options\n got %+v\nwant %+v", got, o)
	}
	o.LogitBias = []LogitBias{{7, 101}}
	if _, err := s.engine.SubmitText(storyPrompt, &o); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("a bias of 101: %v, want StatusInvalidArgument", err)
	}
}

// RequestFreshSeed draws a seed per request; a fixed seed (the default 0 included) repeats.
func TestFreshSeed(t *testing.T) {
	s := newStack(t)
	o := DefaultRequestOptions()
	o.MaxTokens = 32
	o.Temperature = 1
	o.Flags |= RequestIgnoreEOS
	o.Seed = 11
	if a, b := tokensOf(t, s.engine, &o), tokensOf(t, s.engine, &o); !equalValues(a, b) {
		t.Fatalf("seed 11 drew %v, then %v", a, b)
	}
	o.Flags |= RequestFreshSeed
	if a, b := tokensOf(t, s.engine, &o), tokensOf(t, s.engine, &o); equalValues(a, b) {
		t.Fatalf("two fresh seeds drew the same %v", a)
	}
}
