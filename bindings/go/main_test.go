package pagoda

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The suite runs against the library CMake built; CMake passes these paths (see
// CMakeLists.txt). By hand, `go test` finds the bundled model in the source tree and skips the
// checks whose tools are not named, unless PAGODA_TEST_STRICT=1 (as under CTest) makes them fail.

func TestMain(m *testing.M) {
	if err := CheckVersion(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// toolPath is the path in environment variable name, skipping (or failing, when strict) the
// test without it.
func toolPath(t *testing.T, name string) string {
	t.Helper()
	p := os.Getenv(name)
	if p == "" {
		if os.Getenv("PAGODA_TEST_STRICT") == "1" {
			t.Fatalf("%s is not set", name)
		}
		t.Skipf("%s is not set", name)
	}
	return p
}

func modelPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PAGODA_TEST_MODEL"); p != "" {
		return p
	}
	p, err := filepath.Abs("../../tests/fixtures/models/stories260K/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stack is a model served by an engine on cpu:0, closed at the test's end.
type stack struct {
	model  *Model
	mesh   *Mesh
	cache  *KVCache
	engine *Engine
}

func newStack(t *testing.T) *stack {
	t.Helper()
	return newStackOn(t, nil)
}

// newStackOn is newStack over the mesh of meshOptions (nil: cpu:0 in this process).
func newStackOn(t *testing.T, meshOptions *MeshOptions) *stack {
	t.Helper()
	s := &stack{}
	var err error
	if s.model, err = OpenModel(modelPath(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.model.Close)
	if s.mesh, err = NewMesh(meshOptions); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.mesh.Close)
	if s.cache, err = NewKVCache(s.model, s.mesh, nil, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.cache.Close)
	if s.engine, err = NewEngine(s.model, s.mesh, nil, s.cache, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.engine.Close)
	return s
}

// greedy are request options for greedy decoding of n tokens.
func greedy(n int32) *RequestOptions {
	o := DefaultRequestOptions()
	o.Temperature = 0
	o.MaxTokens = n
	return &o
}

// greedyAll is greedy(n) ignoring end-of-sequence: the request runs its n steps unless ended.
func greedyAll(n int32) *RequestOptions {
	o := greedy(n)
	o.Flags |= RequestIgnoreEOS
	return o
}

// startStory streams storyPrompt with opts and reads the stream's first output.
func startStory(t *testing.T, e *Engine, opts *RequestOptions) *Stream {
	t.Helper()
	st, err := e.StreamText(storyPrompt, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Next() {
		t.Fatal(st.Err())
	}
	return st
}

// collect reads a stream to its end and returns its text.
func collect(t *testing.T, s *Stream) (string, []Output) {
	t.Helper()
	defer s.Close()
	var text string
	var outs []Output
	for s.Next() {
		o := s.Output()
		text += o.Text
		outs = append(outs, o)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return text, outs
}

// equalValues compares two values by their printed form (structs holding slices).
func equalValues(a, b interface{}) bool { return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b) }
