package pagoda

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// A Go func as a request's logits processor: it sees the prompt and the tokens so far, its
// changes to the row decide the tokens, an error or a panic cancels the request, and the
// engine lets go of it once the request is over.

const keptToken = 300

// processorCall is what the processor saw on one call (copies: the slices are C memory).
type processorCall struct {
	requestID     uint64
	sequenceIndex int
	prompt        []int32
	generated     []int32
	nLogits       int
}

func TestLogitsProcessorDecidesEveryToken(t *testing.T) {
	s := newStack(t)
	var calls []processorCall
	o := DefaultRequestOptions()
	o.MaxTokens = 8
	o.Flags |= RequestIgnoreEOS
	o.Seed = 5 // sampled at temperature 1: without the processor the tokens would vary
	o.LogitsProcessor = func(id uint64, seq int, tokens []int32, nPrompt int, logits []float32) error {
		calls = append(calls, processorCall{id, seq, append([]int32(nil), tokens[:nPrompt]...),
			append([]int32(nil), tokens[nPrompt:]...), len(logits)})
		for i := range logits {
			if i != keptToken {
				logits[i] = float32(math.Inf(-1))
			}
		}
		return nil
	}
	st, err := s.engine.StreamText(storyPrompt, &o)
	if err != nil {
		t.Fatal(err)
	}
	_, outs := collect(t, st)
	var ids []int32
	for _, out := range outs {
		ids = append(ids, out.TokenIDs...)
	}
	if len(ids) != 8 {
		t.Fatalf("generated %v, want 8 tokens", ids)
	}
	for _, id := range ids {
		if id != keptToken {
			t.Fatalf("generated %v, want only %d", ids, keptToken)
		}
	}

	tok, err := s.model.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	prompt, err := tok.Encode(storyPrompt, TokenizeAddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 8 {
		t.Fatalf("%d calls, want one per generated token (8)", len(calls))
	}
	for i, c := range calls {
		if c.requestID != st.ID() || c.sequenceIndex != 0 || !equalValues(c.prompt, prompt) ||
			len(c.generated) != i || c.nLogits != 512 {
			t.Fatalf("call %d saw %+v; want request %d, sequence 0, prompt %v, %d generated, 512 logits",
				i, c, st.ID(), prompt, i)
		}
		for _, id := range c.generated {
			if id != keptToken {
				t.Fatalf("call %d: generated so far %v", i, c.generated)
			}
		}
	}
	if n := processorsLive(s.engine); n != 0 {
		t.Fatalf("%d processors kept after the request's last output", n)
	}
}

// failingRequest submits a greedy request whose processor fails on call failAt with fail, and
// returns its outputs, read with Poll.
func failingRequest(t *testing.T, failAt int, fail func() error) []Output {
	s := newStack(t)
	o := *greedyAll(16)
	calls := 0
	o.LogitsProcessor = func(uint64, int, []int32, int, []float32) error {
		if calls++; calls == failAt {
			return fail()
		}
		return nil
	}
	id, err := s.engine.SubmitText(storyPrompt, &o)
	if err != nil {
		t.Fatal(err)
	}
	var outs []Output
	for {
		out, ok, err := s.engine.Poll()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if err := s.engine.Step(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if out.RequestID != id {
			t.Fatalf("an output of request %d", out.RequestID)
		}
		outs = append(outs, out)
		if out.RequestFinished {
			break
		}
	}
	if n := processorsLive(s.engine); n != 0 {
		t.Fatalf("%d processors kept after the request's last output", n)
	}
	return outs
}

// checkCancelled checks that outs end in a cancellation whose message holds reason, after
// `generated` tokens.
func checkCancelled(t *testing.T, outs []Output, generated int, reason string) error {
	t.Helper()
	last := outs[len(outs)-1]
	if last.FinishReason != FinishError || !errors.Is(last.Err, StatusCancelled) ||
		!strings.Contains(last.Err.Error(), reason) {
		t.Fatalf("last output: %v, %v; want FinishError, StatusCancelled and %q",
			last.FinishReason, last.Err, reason)
	}
	n := 0
	for _, out := range outs {
		n += len(out.TokenIDs)
	}
	if n != generated {
		t.Fatalf("%d tokens before the failing call, want %d", n, generated)
	}
	return last.Err
}

var errNoThird = errors.New("no third token")

func TestLogitsProcessorErrorCancels(t *testing.T) {
	outs := failingRequest(t, 3, func() error { return errNoThird })
	if err := checkCancelled(t, outs, 2, "returned 1: no third token"); !errors.Is(err, errNoThird) {
		t.Fatalf("%v does not wrap the processor's error", err)
	}
}

func TestLogitsProcessorPanicCancels(t *testing.T) {
	outs := failingRequest(t, 1, func() error { panic("processor bug") })
	checkCancelled(t, outs, 0, "returned 1: panicked: processor bug")
}

// Close releases the processor of a request still running; a refused submit keeps none.
func TestLogitsProcessorReleasedByClose(t *testing.T) {
	s := newStack(t)
	o := greedyAll(64)
	o.LogitsProcessor = func(uint64, int, []int32, int, []float32) error { return nil }
	if _, err := s.engine.SubmitText(storyPrompt, o); err != nil {
		t.Fatal(err)
	}
	if err := s.engine.Step(); err != nil {
		t.Fatal(err)
	}
	bad := *o
	bad.LogitBias = []LogitBias{{7, 101}}
	if _, err := s.engine.SubmitText(storyPrompt, &bad); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("a bias of 101: %v, want StatusInvalidArgument", err)
	}
	if n := processorsLive(s.engine); n != 1 {
		t.Fatalf("%d processors kept for one running request", n)
	}
	s.engine.Close()
	if n := processorsLive(s.engine); n != 0 {
		t.Fatalf("%d processors kept after Close", n)
	}
}

func processorsLive(e *Engine) int {
	e.r.mu.Lock()
	defer e.r.mu.Unlock()
	return len(e.r.processors)
}
