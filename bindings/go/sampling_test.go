package pagoda

import (
	"math"
	"strings"
	"testing"
)

// n = 2 sampled sequences: each output names its sequence, every sequence ends, and the
// request's last output comes once, at the end. The same seed draws the same text.
func TestSeveralSequences(t *testing.T) {
	s := newStack(t)
	o := DefaultRequestOptions()
	o.N = 2
	o.MaxTokens = 24
	o.Seed = 7
	run := func() map[int32]string {
		st, err := s.engine.StreamText(storyPrompt, &o)
		if err != nil {
			t.Fatal(err)
		}
		_, outs := collect(t, st)
		texts := map[int32]string{}
		ended := map[int32]bool{}
		for i, out := range outs {
			texts[out.SequenceIndex] += out.Text
			if out.FinishReason != FinishNone {
				ended[out.SequenceIndex] = true
			}
			if out.RequestFinished != (i == len(outs)-1) {
				t.Fatalf("output %d of %d: request_finished %v", i, len(outs), out.RequestFinished)
			}
		}
		if len(texts) != 2 || !ended[0] || !ended[1] {
			t.Fatalf("sequences %v, ended %v; want 0 and 1, both ended", texts, ended)
		}
		return texts
	}
	first, second := run(), run()
	if first[0] != second[0] || first[1] != second[1] {
		t.Fatalf("same seed, different text:\n%q\n%q", first, second)
	}
}

// Beam search returns the n best beams, ranked, each with its cumulative log-probability.
func TestBeamSearch(t *testing.T) {
	s := newStack(t)
	o := greedy(16)
	o.BeamWidth = 3
	o.N = 2
	st, err := s.engine.StreamText(storyPrompt, o)
	if err != nil {
		t.Fatal(err)
	}
	_, outs := collect(t, st)
	final := map[int32]Output{}
	for _, out := range outs {
		if out.FinishReason != FinishNone {
			final[out.SequenceIndex] = out
		}
	}
	if len(final) != 2 {
		t.Fatalf("%d beams ended, want 2", len(final))
	}
	// Ranked by score: cumulative log-probability / length (length_penalty 1).
	score := func(o Output) float64 { return float64(o.CumulativeLogprob) / float64(o.NGenerated) }
	if final[0].CumulativeLogprob >= 0 || score(final[0]) < score(final[1]) {
		t.Fatalf("beam 0 (%v over %d) should outscore beam 1 (%v over %d)", final[0].CumulativeLogprob,
			final[0].NGenerated, final[1].CumulativeLogprob, final[1].NGenerated)
	}
}

// Log-probabilities of generated and prompt tokens come as asked: one per token, the top-n
// most likely first, the chosen token's among them under greedy decoding.
func TestLogprobs(t *testing.T) {
	s := newStack(t)
	o := greedy(8)
	o.Logprobs = 3
	o.PromptLogprobs = 2
	st, err := s.engine.StreamText(storyPrompt, o)
	if err != nil {
		t.Fatal(err)
	}
	_, outs := collect(t, st)
	first := outs[0]
	if len(first.PromptLogprobs) != first.NPromptTokens || !math.IsNaN(float64(first.PromptLogprobs[0])) {
		t.Fatalf("prompt logprobs %v for %d prompt tokens", first.PromptLogprobs, first.NPromptTokens)
	}
	if len(first.PromptTopLogprobs) != first.NPromptTokens || len(first.PromptTopLogprobs[1]) != 2 {
		t.Fatalf("prompt top logprobs %v", first.PromptTopLogprobs)
	}
	for _, out := range outs {
		if len(out.Logprobs) != len(out.TokenIDs) || len(out.TopLogprobs) != len(out.TokenIDs) {
			t.Fatalf("%d logprobs, %d top rows for %d tokens", len(out.Logprobs), len(out.TopLogprobs), len(out.TokenIDs))
		}
		for k, id := range out.TokenIDs {
			top := out.TopLogprobs[k]
			if len(top) != 3 || top[0].TokenID != id || top[0].Logprob < top[1].Logprob || out.Logprobs[k] > 0 {
				t.Fatalf("token %d: logprob %v, top %v", id, out.Logprobs[k], top)
			}
		}
	}
}

// Stop strings and stop token ids end the request with the matching reason.
func TestStops(t *testing.T) {
	s := newStack(t)
	ref, err := s.engine.StreamText(storyPrompt, greedy(64))
	if err != nil {
		t.Fatal(err)
	}
	full, outs := collect(t, ref)

	o := greedy(64)
	o.StopStrings = []string{"girl"}
	st, err := s.engine.StreamText(storyPrompt, o)
	if err != nil {
		t.Fatal(err)
	}
	text, stopped := collect(t, st)
	if stopped[len(stopped)-1].FinishReason != FinishStopString || strings.Contains(text, "girl") ||
		!strings.HasPrefix(full, text) {
		t.Fatalf("stop string: %q (%v); full text %q", text, stopped[len(stopped)-1].FinishReason, full)
	}

	o = greedy(64)
	o.StopTokenIDs = []int32{outs[3].TokenIDs[0]}
	st, err = s.engine.StreamText(storyPrompt, o)
	if err != nil {
		t.Fatal(err)
	}
	_, stopped = collect(t, st)
	last := stopped[len(stopped)-1]
	if last.FinishReason != FinishStopToken || last.NGenerated > 4 {
		t.Fatalf("stop token: reason %v after %d tokens", last.FinishReason, last.NGenerated)
	}
}

// Every option set in Go reaches the C struct and comes back: none is accepted and dropped.
func TestOptionsRoundTrip(t *testing.T) {
	ro := RequestOptions{Flags: RequestIgnoreEOS | RequestNoSpecialTokens, MaxTokens: 11,
		Temperature: 0.5, TopK: 3, TopP: 0.7, MinP: 0.1, RepetitionPenalty: 1.1,
		PresencePenalty: 0.2, FrequencyPenalty: 0.3, Seed: 99, StopTokenIDs: []int32{4, 5},
		StopStrings: []string{"a", "bc"}, Logprobs: 2, PromptLogprobs: 1, N: 3, BestOf: 4,
		BeamWidth: 5, LengthPenalty: 0.8, EarlyStopping: true, Priority: -2}
	if got := roundTripRequestOptions(ro); !equalValues(got, ro) {
		t.Fatalf("request options\n got %+v\nwant %+v", got, ro)
	}
	po := PlanOptions{Objective: PlanThroughput, MicroBatches: 2, Stages: 3, TensorParallel: 4,
		Device: "h100", CostFile: "c.json", MeshShape: "1x4", StepTokens: 5, ContextTokens: 6,
		KVTokens: 7, PromptTokens: 8, Granularity: 9, EpsilonSeconds: 0.5, ExpertParallel: 2}
	if got := roundTripPlanOptions(po); got != po {
		t.Fatalf("plan options\n got %+v\nwant %+v", got, po)
	}
	ko := KVCacheOptions{BlockSize: 8, DType: DTypeF16, NumBlocks: 3, MemoryBytes: 4, SwapBytes: 5, PrefixCaching: false}
	if got := roundTripKVCacheOptions(ko); got != ko {
		t.Fatalf("cache options\n got %+v\nwant %+v", got, ko)
	}
	eo := EngineOptions{MaxNumSeqs: 3, MaxNumBatchedTokens: 4, Preemption: PreemptSwap,
		KVReservation: KVContiguous, DecodeGraphs: DecodeGraphsOff, DeviceSampling: DeviceSamplingOff,
		ActivationDType: DTypeBF16, PipelineMicroBatches: 6, QuantizedMatmul: QuantizedMatmulExact,
		KernelChoicesFile: "choices.json", KernelChoice: KernelChoiceMeasure}
	if got := roundTripEngineOptions(eo); got != eo {
		t.Fatalf("engine options\n got %+v\nwant %+v", got, eo)
	}
	so := SimulateOptions{RatePerModel: 2, TotalRate: 3, CV: 4, SLOSeconds: 5, DurationSeconds: 6,
		Seed: 7, OverheadSeconds: 8, RejectLate: false}
	if got := roundTripSimulateOptions(so); got != so {
		t.Fatalf("simulate options\n got %+v\nwant %+v", got, so)
	}
}
