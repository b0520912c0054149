package pagoda

import (
	"context"
	"errors"
	"testing"
	"unicode/utf8"
)

func TestModelInfoAndPath(t *testing.T) {
	m, err := OpenModel(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	// stories260K: a Llama of 5 layers, 64 wide, 512 tokens.
	if info.Architecture != "llama" || info.NLayers != 5 || info.HiddenSize != 64 || info.VocabSize != 512 {
		t.Fatalf("info %+v", info)
	}
	if path, err := m.Path(); err != nil || path != modelPath(t) {
		t.Fatalf("path %q (%v), want %q", path, err, modelPath(t))
	}
	m.Close()
	m.Close()
}

// The background loader reports progress up to 1 and hands over a working model; a cancelled
// context cancels a load (or returns the model, if the load had ended first).
func TestLoadModelProgress(t *testing.T) {
	var seen []float32
	m, err := LoadModel(context.Background(), modelPath(t), 0, func(f float32) { seen = append(seen, f) })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(seen) == 0 || seen[len(seen)-1] != 1 {
		t.Fatalf("progress %v: want it to end at 1", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("progress went back: %v", seen)
		}
	}
	if _, err := m.Info(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m2, err := LoadModel(ctx, modelPath(t), 0, nil)
	if err == nil {
		m2.Close() // the load won the race: it had ended before the cancel was seen
	} else if !errors.Is(err, StatusCancelled) {
		t.Fatalf("cancelled load: %v", err)
	}

	l, err := StartModelLoad(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	l.Close() // abandoned: cancelled, joined and released
	if _, err := l.Finish(); !errors.Is(err, StatusInvalidHandle) {
		t.Fatalf("finish after close: %v", err)
	}
}

func TestTokenizer(t *testing.T) {
	m, err := OpenModel(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	m.Close() // the tokenizer outlives its model (tokenizer.h)
	info, err := tok.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.VocabSize != 512 || info.BOSTokenID < 0 || info.Model != "spm" {
		t.Fatalf("info %+v", info)
	}
	ids, err := tok.Encode(storyPrompt, TokenizeAddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) < 2 || ids[0] != info.BOSTokenID {
		t.Fatalf("ids %v: want BOS first", ids)
	}
	text, err := tok.Decode(ids, DetokenizeSkipSpecial)
	if err != nil || text != storyPrompt {
		t.Fatalf("decode: %q (%v), want %q", text, err, storyPrompt)
	}
	var pieces []byte
	for _, id := range ids[1:] {
		p, err := tok.TokenPiece(id)
		if err != nil {
			t.Fatal(err)
		}
		pieces = append(pieces, p...)
	}
	if !utf8.Valid(pieces) || len(pieces) < len(storyPrompt) {
		t.Fatalf("pieces %q", pieces)
	}
	if _, err := tok.TokenPiece(1 << 20); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("piece of an id outside the vocabulary: %v", err)
	}
	if _, err := tok.Decode([]int32{-1}, 0); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("decode of -1: %v", err)
	}
	// stories260K carries no chat template: the library says so.
	if _, err := tok.ApplyChatTemplate(`[{"role": "user", "content": "hi"}]`, nil); !errors.Is(err, StatusUnsupported) {
		t.Fatalf("chat template: %v", err)
	}
	out, err := tok.ApplyChatTemplate(`[{"role": "user", "content": "hi"}]`,
		&ChatTemplateOptions{ChatTemplate: "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}",
			AddGenerationPrompt: true})
	if err != nil || out != "<user>hi<assistant>" {
		t.Fatalf("given template: %q (%v)", out, err)
	}
}

func TestOpenTokenizerMissing(t *testing.T) {
	_, err := OpenTokenizer("/nonexistent/tokenizer.json")
	var perr *Error
	if !errors.As(err, &perr) || perr.Status != StatusNotFound || perr.Message == "" {
		t.Fatalf("%v", err)
	}
}
