package pagoda

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// Aborting mid-stream ends the request early; its last output says so.
func TestAbortMidStream(t *testing.T) {
	s := newStack(t)
	stream, err := s.engine.StreamText(storyPrompt, greedyAll(200))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var outs []Output
	for stream.Next() {
		outs = append(outs, stream.Output())
		if len(outs) == 5 {
			if err := stream.Abort(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	last := outs[len(outs)-1]
	if last.FinishReason != FinishAborted || !last.RequestFinished {
		t.Fatalf("last output: reason %v, finished %v; want aborted", last.FinishReason, last.RequestFinished)
	}
	if last.NGenerated >= 200 || last.NGenerated < 5 {
		t.Fatalf("%d tokens generated: the abort did not end it early", last.NGenerated)
	}
	if work, err := s.engine.HasWork(); err != nil || work {
		t.Fatalf("engine still has work after the abort (%v)", err)
	}
	// The request is gone: aborting it again is NOT_FOUND in C, and a no-op for the stream.
	if err := s.engine.Abort(stream.ID()); !errors.Is(err, StatusNotFound) {
		t.Fatalf("second abort: %v", err)
	}
	if err := stream.Abort(); err != nil {
		t.Fatal(err)
	}
	m, err := s.engine.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.RequestsFinishedAborted != 1 {
		t.Fatalf("metrics count %d aborted requests, want 1", m.RequestsFinishedAborted)
	}
}

// Closing a stream early aborts its request and drops what it still had to say; the engine
// serves the next request as usual.
func TestStreamCloseEarly(t *testing.T) {
	s := newStack(t)
	stream := startStory(t, s.engine, greedyAll(100))
	if err := stream.Close(); err != nil {
		t.Fatal(err)
	}
	if stream.Next() {
		t.Fatal("a closed stream went on")
	}
	next, err := s.engine.StreamText(storyPrompt, greedy(8))
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := collect(t, next); text == "" {
		t.Fatal("no text after a closed stream")
	}
	// The dropped outputs went nowhere else.
	if _, ok, err := s.engine.Poll(); ok || err != nil {
		t.Fatalf("Poll after the streams: ok %v, err %v; want nothing", ok, err)
	}
}

// The low-level loop (submit, step, poll) works as in C, for requests without a Stream.
func TestStepPollLoop(t *testing.T) {
	s := newStack(t)
	id, err := s.engine.SubmitText(storyPrompt, greedy(16))
	if err != nil {
		t.Fatal(err)
	}
	var text string
	finished := false
	for {
		work, err := s.engine.HasWork()
		if err != nil {
			t.Fatal(err)
		}
		if !work {
			break
		}
		if err := s.engine.Step(); err != nil {
			t.Fatal(err)
		}
		for {
			o, ok, err := s.engine.Poll()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if o.RequestID != id {
				t.Fatalf("output of request %d, want %d", o.RequestID, id)
			}
			text += o.Text
			finished = o.RequestFinished
		}
	}
	if !finished || text == "" {
		t.Fatalf("finished %v, text %q", finished, text)
	}
	st, err := s.engine.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.GeneratedTokens != 16 || st.RequestsFinished != 1 || st.Steps < 16 {
		t.Fatalf("stats %+v", st)
	}
}

// A stream dropped unread is aborted by its finalizer, and its outputs go nowhere.
func TestDroppedStreamAborted(t *testing.T) {
	s := newStack(t)
	startStory(t, s.engine, greedyAll(1000)) // dropped: neither read further nor closed
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		work, err := s.engine.HasWork()
		if err != nil {
			t.Fatal(err)
		}
		if !work {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dropped stream's request still runs")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out, ok, err := s.engine.Poll(); ok || err != nil {
		t.Fatalf("Poll gave the dropped stream's output %+v (%v)", out, err)
	}
}
