package pagoda

import (
	"errors"
	"math"
	"regexp"
	"testing"
)

func l2(v []float32) float64 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	return math.Sqrt(sum)
}

// embed is EmbedText of storyPrompt, failing the test on an error.
func embed(t *testing.T, e *Engine, pooling Pooling, normalize EmbeddingNormalize) []float32 {
	t.Helper()
	v, err := e.EmbedText(storyPrompt, pooling, normalize)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A text's embedding has the model's hidden size and unit L2 norm by default (the model's
// pooling being the last token's), and the same prompt as token ids gives the same vector.
func TestEmbeddingHasTheHiddenSizeAndUnitNorm(t *testing.T) {
	s := newStack(t)
	info, err := s.model.Info()
	if err != nil {
		t.Fatal(err)
	}
	v := embed(t, s.engine, PoolingModel, EmbeddingNormalizeModel)
	if int64(len(v)) != info.HiddenSize || math.Abs(l2(v)-1) > 1e-4 {
		t.Fatalf("%d floats of norm %g, want %d of norm 1", len(v), l2(v), info.HiddenSize)
	}
	if last := embed(t, s.engine, PoolingLast, EmbeddingNormalizeL2); !equalValues(last, v) {
		t.Errorf("last pooling %v differs from the model's %v", last[:4], v[:4])
	}
	tok, err := s.model.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	ids, err := tok.Encode(storyPrompt, TokenizeAddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	fromIDs, err := s.engine.EmbedTokens(ids, PoolingModel, EmbeddingNormalizeModel)
	if err != nil || !equalValues(fromIDs, v) {
		t.Errorf("token ids: %v (%v), want %v", fromIDs, err, v)
	}
}

// Mean and last pooling give different vectors; without normalization the vector is the
// normalized one scaled by its own length, which is not 1.
func TestEmbeddingPoolingAndNormalization(t *testing.T) {
	s := newStack(t)
	last := embed(t, s.engine, PoolingLast, EmbeddingNormalizeModel)
	mean := embed(t, s.engine, PoolingMean, EmbeddingNormalizeModel)
	var diff float64
	for i := range mean {
		diff = math.Max(diff, math.Abs(float64(mean[i]-last[i])))
	}
	if len(mean) != len(last) || math.Abs(l2(mean)-1) > 1e-4 || diff < 1e-3 {
		t.Errorf("mean %v (norm %g) vs last %v: largest difference %g", mean[:4], l2(mean), last[:4], diff)
	}
	for _, pooling := range []Pooling{PoolingLast, PoolingMean} {
		unit := embed(t, s.engine, pooling, EmbeddingNormalizeL2)
		raw := embed(t, s.engine, pooling, EmbeddingNormalizeNone)
		n := l2(raw)
		if math.Abs(n-1) < 1e-3 {
			t.Errorf("pooling %d: the unnormalized vector has norm %g", pooling, n)
		}
		for i := range raw {
			if math.Abs(float64(raw[i])/n-float64(unit[i])) > 1e-4 {
				t.Fatalf("pooling %d, entry %d: %g / %g is not %g", pooling, i, raw[i], n, unit[i])
			}
		}
	}
}

// The one output of an embedding request carries the vector and no tokens; a generating
// request's outputs carry none.
func TestEmbeddingOutput(t *testing.T) {
	s := newStack(t)
	o := DefaultRequestOptions()
	o.Flags |= RequestEmbed
	o.Pooling = PoolingMean
	st, err := s.engine.StreamText(storyPrompt, &o)
	if err != nil {
		t.Fatal(err)
	}
	_, outs := collect(t, st)
	want := embed(t, s.engine, PoolingMean, EmbeddingNormalizeModel)
	if len(outs) != 1 || !outs[0].RequestFinished || outs[0].FinishReason != FinishStopToken ||
		len(outs[0].TokenIDs) != 0 || !equalValues(outs[0].Embedding, want) {
		t.Fatalf("outputs %+v, want one finished output carrying %v", outs, want[:4])
	}
	st, err = s.engine.StreamText(storyPrompt, greedy(3))
	if err != nil {
		t.Fatal(err)
	}
	if _, outs = collect(t, st); len(outs) == 0 {
		t.Fatal("no output")
	}
	for _, o := range outs {
		if o.Embedding != nil {
			t.Errorf("a generating request's output carries an embedding: %+v", o)
		}
	}
}

// What an embedding request cannot take is refused at submit, the message naming the field,
// and pooling or normalization without the flag is refused too.
func TestEmbeddingRefusals(t *testing.T) {
	s := newStack(t)
	cases := []struct {
		field string
		set   func(*RequestOptions)
	}{
		{"n", func(o *RequestOptions) { o.N = 2 }},
		{"constraint_kind", func(o *RequestOptions) { o.Constraint = RegexConstraint("[a-z]+") }},
		{"stop_strings", func(o *RequestOptions) { o.StopStrings = []string{"."} }},
	}
	for _, c := range cases {
		o := DefaultRequestOptions()
		o.Flags |= RequestEmbed
		c.set(&o)
		_, err := s.engine.SubmitText(storyPrompt, &o)
		var pe *Error
		// The field as a word: "n" alone, not a letter of another.
		if !errors.As(err, &pe) || pe.Status != StatusInvalidArgument ||
			!regexp.MustCompile(`\b`+c.field+`\b`).MatchString(pe.Message) {
			t.Errorf("%s: %v, want StatusInvalidArgument naming the field", c.field, err)
		}
	}
	o := DefaultRequestOptions()
	o.Pooling = PoolingMean
	if _, err := s.engine.SubmitText(storyPrompt, &o); !errors.Is(err, StatusInvalidArgument) ||
		!regexp.MustCompile(`\bpooling\b`).MatchString(err.Error()) {
		t.Errorf("pooling without RequestEmbed: %v", err)
	}
	if work, err := s.engine.HasWork(); err != nil || work {
		t.Errorf("HasWork() = %v, %v after refused submits", work, err)
	}
}
