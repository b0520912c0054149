package pagoda

import (
	"errors"
	"testing"
)

// Handles closed in the "wrong" order: the cache, the model and the mesh before the engine,
// mid-stream. The engine keeps what it needs alive (engine.h), so the stream runs to its end,
// and nothing crashes (the suite also runs under ASan).
func TestCloseCacheBeforeEngine(t *testing.T) {
	s := newStack(t)
	stream := startStory(t, s.engine, greedy(24))
	defer stream.Close()
	text := stream.Output().Text
	s.cache.Close()
	s.model.Close()
	s.mesh.Close()
	for stream.Next() {
		text += stream.Output().Text
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text == "" {
		t.Fatal("no text")
	}
	// A closed handle refuses calls in Go, without reaching C.
	if _, err := s.cache.Stats(); !errors.Is(err, StatusInvalidHandle) {
		t.Fatalf("stats of a closed cache: %v", err)
	}
	if _, err := s.model.Info(); !errors.Is(err, StatusInvalidHandle) {
		t.Fatalf("info of a closed model: %v", err)
	}
	if _, err := NewKVCache(s.model, s.mesh, nil, nil); !errors.Is(err, StatusInvalidHandle) {
		t.Fatalf("a cache from closed handles: %v", err)
	}
	if _, err := NewEngine(s.model, s.mesh, nil, nil, nil); !errors.Is(err, StatusInvalidHandle) {
		t.Fatalf("an engine without a cache: %v", err)
	}
	s.engine.Close()
	s.engine.Close() // twice is harmless
	if _, err := s.engine.SubmitText(storyPrompt, nil); !errors.Is(err, StatusInvalidHandle) {
		t.Fatalf("submit to a closed engine: %v", err)
	}
	if stream.Next() {
		t.Fatal("a stream of a closed engine went on")
	}
}

// Closing an engine with a request in flight, then its stream: the stream reports the closed
// engine instead of reaching freed memory.
func TestCloseEngineMidStream(t *testing.T) {
	s := newStack(t)
	stream := startStory(t, s.engine, greedyAll(50))
	s.engine.Close()
	if stream.Next() {
		t.Fatal("stream went on after its engine closed")
	}
	if !errors.Is(stream.Err(), StatusInvalidHandle) {
		t.Fatalf("stream error %v, want INVALID_HANDLE", stream.Err())
	}
	if err := stream.Close(); !errors.Is(err, StatusInvalidHandle) {
		t.Fatalf("closing the stream of a closed engine: %v", err)
	}
	// The cache can serve a new engine once the first is gone.
	e2, err := NewEngine(s.model, s.mesh, nil, s.cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	st, err := e2.StreamText(storyPrompt, greedy(4))
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := collect(t, st); text == "" {
		t.Fatal("no text from the second engine")
	}
}

// A cache serves one engine at a time: the library refuses a second, with its message.
func TestCacheServesOneEngine(t *testing.T) {
	s := newStack(t)
	_, err := NewEngine(s.model, s.mesh, nil, s.cache, nil)
	var perr *Error
	if !errors.As(err, &perr) || perr.Status != StatusInvalidArgument || perr.Message == "" {
		t.Fatalf("second engine on one cache: %v", err)
	}
}
