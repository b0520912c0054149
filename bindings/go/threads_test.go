package pagoda

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// Two goroutines, on two OS threads, each stream their own request from one engine at once (submit, poll and the
// binding's serialised step are safe from any thread, engine.h), while a third reads the
// statistics. Each gets its own request's text: the same as when it runs alone.
func TestTwoGoroutinesStream(t *testing.T) {
	s := newStack(t)
	prompts := []string{storyPrompt, "The little dog"}
	opts := greedyAll(48) // both run all their steps together
	want := make([]string, len(prompts))
	for i, p := range prompts {
		st, err := s.engine.StreamText(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		want[i], _ = collect(t, st)
	}

	before, err := s.engine.Stats()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(prompts))
	errs := make([]error, len(prompts)+1)
	var wg, submitted sync.WaitGroup
	stop := make(chan struct{})
	submitted.Add(len(prompts))
	for i, p := range prompts {
		wg.Add(1)
		go func(i int, p string) {
			defer wg.Done()
			// Each goroutine on its own OS thread: two threads of C, not just two goroutines.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			st, err := s.engine.StreamText(p, opts)
			submitted.Done()
			if err != nil {
				errs[i] = err
				return
			}
			defer st.Close()
			// Both requests are in before either steps, so they share the steps' batches.
			submitted.Wait()
			for st.Next() {
				o := st.Output()
				if o.RequestID != st.ID() {
					errs[i] = fmt.Errorf("stream %d read request %d's output", st.ID(), o.RequestID)
					return
				}
				got[i] += o.Text
			}
			errs[i] = st.Err()
		}(i, p)
	}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.engine.Stats(); err != nil {
				errs[len(prompts)] = err
				return
			}
			if _, err := s.cache.Stats(); err != nil {
				errs[len(prompts)] = err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("goroutine %d: %v", i, err)
		}
	}
	for i := range prompts {
		if got[i] != want[i] {
			t.Fatalf("prompt %q in parallel gave\n%q\nalone\n%q", prompts[i], got[i], want[i])
		}
	}
	after, err := s.engine.Stats()
	if err != nil {
		t.Fatal(err)
	}
	steps, batched := after.Steps-before.Steps, after.BatchedSequences-before.BatchedSequences
	if batched != 2*steps {
		t.Fatalf("%d sequences over %d steps: the requests did not run together", batched, steps)
	}
}

// A tokenizer is immutable: encoding and decoding from many goroutines at once is allowed and
// gives the same ids.
func TestTokenizerFromGoroutines(t *testing.T) {
	s := newStack(t)
	tok, err := s.model.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	want, err := tok.Encode(storyPrompt, TokenizeAddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 50; k++ {
				ids, err := tok.Encode(storyPrompt, TokenizeAddSpecial)
				if err != nil {
					errs <- err
					return
				}
				if fmt.Sprint(ids) != fmt.Sprint(want) {
					errs <- fmt.Errorf("ids %v, want %v", ids, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
