package pagoda

import (
	"os/exec"
	"strings"
	"testing"
)

const storyPrompt = "Once upon a time"

// The binding's greedy text is the one `pagoda generate` prints for the same model and prompt.
func TestGreedyTextMatchesCLI(t *testing.T) {
	cli := toolPath(t, "PAGODA_CLI")
	cmd := exec.Command(cli, "generate", "--model", modelPath(t), "--prompt", storyPrompt,
		"--temperature", "0", "--max-tokens", "64")
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", cli, err)
	}

	s := newStack(t)
	stream, err := s.engine.StreamText(storyPrompt, greedy(64))
	if err != nil {
		t.Fatal(err)
	}
	text, outs := collect(t, stream)
	// The command prints the prompt, the pieces as they come, then a newline.
	if got := storyPrompt + text + "\n"; got != string(want) {
		t.Fatalf("binding text differs from pagoda generate:\n got: %q\nwant: %q", got, want)
	}
	last := outs[len(outs)-1]
	if !last.RequestFinished || last.FinishReason != FinishLength || last.NGenerated != 64 {
		t.Fatalf("last output: finished %v, reason %v, %d generated; want length after 64",
			last.RequestFinished, last.FinishReason, last.NGenerated)
	}
	ids := 0
	for _, o := range outs {
		ids += len(o.TokenIDs)
	}
	if ids != 64 {
		t.Fatalf("%d token ids streamed, want 64", ids)
	}
}

// A prompt of ids (the tokenizer's encoding of the text) gives the same text as the text.
func TestSubmitTokensMatchesText(t *testing.T) {
	s := newStack(t)
	tok, err := s.model.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	ids, err := tok.Encode(storyPrompt, TokenizeAddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	byText, err := s.engine.StreamText(storyPrompt, greedy(32))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := collect(t, byText)
	byIDs, err := s.engine.StreamTokens(ids, greedy(32))
	if err != nil {
		t.Fatal(err)
	}
	got, outs := collect(t, byIDs)
	if got != want || want == "" {
		t.Fatalf("ids gave %q, text gave %q", got, want)
	}
	if outs[0].NPromptTokens != len(ids) {
		t.Fatalf("n_prompt_tokens %d, want %d", outs[0].NPromptTokens, len(ids))
	}
	if strings.Contains(got, "\x00") {
		t.Fatal("NUL in text")
	}
}
