package pagoda

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// logLine is one line a test's callback received.
type logLine struct {
	level   LogLevel
	message string
}

// logRecorder keeps the lines its callback receives; the callback may run on any thread.
type logRecorder struct {
	mu    sync.Mutex
	lines []logLine
}

func (r *logRecorder) callback(level LogLevel, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, logLine{level, message})
}

func (r *logRecorder) taken() []logLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := r.lines
	r.lines = nil
	return lines
}

// withLogLevel sets the level for one test and, at its end, clears the callback and puts the
// level back (CTest runs the suite at PAGODA_LOG_LEVEL=error).
func withLogLevel(t *testing.T, level LogLevel) {
	t.Helper()
	old := GetLogLevel()
	if err := SetLogLevel(level); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := SetLogCallback(nil); err != nil {
			t.Error(err)
		}
		SetLogLevel(old)
	})
}

// searchMissingFolder logs "backend search: skipping folder ..." at LogDebug, every time.
func searchMissingFolder(t *testing.T) string {
	t.Helper()
	folder := filepath.Join(t.TempDir(), "missing")
	if _, err := DiscoverBackendsIn(folder); err != nil {
		t.Fatal(err)
	}
	return folder
}

// searchBrokenPlugin logs the skipped plugin at LogWarn (once per path: a fresh folder each time).
func searchBrokenPlugin(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "libpagoda-backend-broken.so")
	if err := os.WriteFile(path, []byte("\x7fELF broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DiscoverBackendsIn(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	return path
}

func hasLine(lines []logLine, level LogLevel, part string) bool {
	for _, l := range lines {
		if l.level == level && strings.Contains(l.message, part) {
			return true
		}
	}
	return false
}

// Lines at and above the level set reach the callback, with their level; lines below it do not.
func TestLogCallbackReceivesLinesAtTheLevelSet(t *testing.T) {
	withLogLevel(t, LogDebug)
	var r logRecorder
	if err := SetLogCallback(r.callback); err != nil {
		t.Fatal(err)
	}
	folder := searchMissingFolder(t)
	if lines := r.taken(); !hasLine(lines, LogDebug, "skipping folder "+folder) {
		t.Fatalf("no debug line about %s: %q", folder, lines)
	}
	path := searchBrokenPlugin(t)
	if lines := r.taken(); !hasLine(lines, LogWarn, path) {
		t.Fatalf("no warning about %s: %q", path, lines)
	}

	if err := SetLogLevel(LogInfo); err != nil {
		t.Fatal(err)
	}
	searchMissingFolder(t)
	if lines := r.taken(); len(lines) != 0 {
		t.Fatalf("debug lines at level info: %q", lines)
	}
	if err := SetLogLevel(LogError); err != nil || GetLogLevel() != LogError {
		t.Fatalf("level %v (%v), want error", GetLogLevel(), err)
	}
	searchBrokenPlugin(t)
	if lines := r.taken(); len(lines) != 0 {
		t.Fatalf("a warning at level error: %q", lines)
	}
}

// nil goes back to standard error; a new callback replaces the old one at once.
func TestLogCallbackClearedAndReplaced(t *testing.T) {
	withLogLevel(t, LogDebug)
	var first, second logRecorder
	if err := SetLogCallback(first.callback); err != nil {
		t.Fatal(err)
	}
	if err := SetLogCallback(second.callback); err != nil {
		t.Fatal(err)
	}
	searchMissingFolder(t)
	if lines := first.taken(); len(lines) != 0 {
		t.Fatalf("the replaced callback got %q", lines)
	}
	if lines := second.taken(); len(lines) == 0 {
		t.Fatal("the new callback got nothing")
	}
	if err := SetLogCallback(nil); err != nil {
		t.Fatal(err)
	}
	// Back on standard error: silence it for the test's output, and see the callback gets nothing.
	if err := SetLogLevel(LogOff); err != nil {
		t.Fatal(err)
	}
	searchMissingFolder(t)
	searchBrokenPlugin(t)
	if lines := second.taken(); len(lines) != 0 {
		t.Fatalf("a cleared callback got %q", lines)
	}
}

// Lines logged on several threads at once each reach the callback, one call at a time.
func TestLogCallbackFromManyThreads(t *testing.T) {
	withLogLevel(t, LogDebug)
	var inside, overlaps, calls atomic.Int32
	if err := SetLogCallback(func(LogLevel, string) {
		if inside.Add(1) != 1 {
			overlaps.Add(1)
		}
		calls.Add(1)
		runtime.Gosched()
		inside.Add(-1)
	}); err != nil {
		t.Fatal(err)
	}
	const goroutines, rounds = 4, 25
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // each on a thread of its own
			defer runtime.UnlockOSThread()
			for i := 0; i < rounds; i++ {
				if _, err := DiscoverBackendsIn("/nonexistent/pagoda-go-log-test"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if calls.Load() != goroutines*rounds || overlaps.Load() != 0 {
		t.Fatalf("%d calls (want %d), %d overlapping", calls.Load(), goroutines*rounds, overlaps.Load())
	}
}

// Inside the callback, SetLogCallback fails instead of changing the sink under the call.
func TestSetLogCallbackFromInsideIsRefused(t *testing.T) {
	withLogLevel(t, LogDebug)
	var mu sync.Mutex
	var errs []error
	if err := SetLogCallback(func(LogLevel, string) {
		err := SetLogCallback(nil)
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	searchMissingFolder(t)
	mu.Lock()
	defer mu.Unlock()
	if len(errs) == 0 {
		t.Fatal("the callback was not called")
	}
	var perr *Error
	if !errors.As(errs[0], &perr) || perr.Status != StatusInvalidArgument ||
		!strings.Contains(perr.Message, "inside the log callback") {
		t.Fatalf("SetLogCallback inside the callback: %v", errs[0])
	}
}

// A panic in the callback is reported on standard error and goes no further: the call that
// logged returns normally.
func TestLogCallbackPanicIsContained(t *testing.T) {
	withLogLevel(t, LogDebug)
	if err := SetLogCallback(func(LogLevel, string) { panic("a broken log sink") }); err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	read, write, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	os.Stderr = write
	searchMissingFolder(t)
	os.Stderr = stderr
	write.Close()
	said, _ := io.ReadAll(read)
	read.Close()
	if !strings.Contains(string(said), "the log callback panicked") ||
		!strings.Contains(string(said), "a broken log sink") {
		t.Fatalf("standard error said %q", said)
	}
	m, err := OpenModel(modelPath(t)) // the library still works
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}
