package pagoda

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A missing model file fails with the library's status and its message, which names the file.
func TestMissingModelFile(t *testing.T) {
	const path = "/nonexistent/pagoda-go-test/missing.gguf"
	_, err := OpenModel(path)
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("want a *pagoda.Error, got %T %v", err, err)
	}
	if perr.Status != StatusNotFound || !errors.Is(err, StatusNotFound) {
		t.Fatalf("status %v, want PAGODA_ERR_NOT_FOUND", perr.Status)
	}
	if !strings.Contains(perr.Message, path) {
		t.Fatalf("message %q does not name the file", perr.Message)
	}
	if !strings.Contains(err.Error(), perr.Message) || !strings.Contains(err.Error(), "PAGODA_ERR_NOT_FOUND") {
		t.Fatalf("Error() = %q: want the message and the status", err.Error())
	}

	// The background loader reports the same failure from Finish.
	_, err = LoadModel(context.Background(), path, 0, nil)
	if !errors.As(err, &perr) || perr.Status != StatusNotFound || !strings.Contains(perr.Message, path) {
		t.Fatalf("LoadModel: %v", err)
	}
}

// Messages are read on the thread that failed: many goroutines failing at once each get their
// own call's message, never another's.
func TestErrorMessagesPerCall(t *testing.T) {
	done := make(chan error)
	for i := 0; i < 8; i++ {
		go func(i int) {
			path := "/nonexistent/pagoda-go-test/" + strings.Repeat("x", i+1) + ".gguf"
			for k := 0; k < 20; k++ {
				_, err := OpenModel(path)
				var perr *Error
				if !errors.As(err, &perr) || !strings.Contains(perr.Message, path) {
					done <- errors.New("wrong message for " + path + ": " + err.Error())
					return
				}
			}
			done <- nil
		}(i)
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// Bad request options are refused at submit with the field named.
func TestBadRequestOptions(t *testing.T) {
	s := newStack(t)
	o := DefaultRequestOptions()
	o.TopP = 2
	_, err := s.engine.SubmitText(storyPrompt, &o)
	var perr *Error
	if !errors.As(err, &perr) || perr.Status != StatusInvalidArgument || !strings.Contains(perr.Message, "top_p") {
		t.Fatalf("want INVALID_ARGUMENT naming top_p, got %v", err)
	}
	if _, err := s.engine.SubmitTokens(nil, nil); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("empty prompt: %v", err)
	}
	if _, err := s.engine.SubmitTokens([]int32{1 << 30}, nil); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("id outside the vocabulary: %v", err)
	}
}

// A string with a NUL byte cannot reach C whole: it is refused, not cut.
func TestNULInStringRefused(t *testing.T) {
	_, err := OpenModel(modelPath(t) + "\x00ignored")
	if !errors.Is(err, StatusInvalidArgument) || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("want INVALID_ARGUMENT about a NUL byte, got %v", err)
	}
	s := newStack(t)
	o := DefaultRequestOptions()
	o.StopStrings = []string{"a\x00b"}
	if _, err := s.engine.SubmitText(storyPrompt, &o); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("stop string with NUL: %v", err)
	}
}
