package pagoda

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// kernelChoiceEngine makes an engine on cpu:0 over model with opts and its own KV cache (a
// cache serves one engine at a time), both closed at the test's end.
func kernelChoiceEngine(t *testing.T, model *Model, mesh *Mesh, opts EngineOptions) (*Engine, error) {
	t.Helper()
	cache, err := NewKVCache(model, mesh, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cache.Close)
	e, err := NewEngine(model, mesh, nil, cache, &opts)
	if err == nil {
		t.Cleanup(e.Close)
	}
	return e, err
}

// An engine measuring its kernels reports a choice per product shape and power-of-two row
// count up to its token budget, and writes them to the file it names; an engine reading that
// file reports the same choices; one on the rules reports none; a missing file, or a path C
// would cut, is refused.
func TestKernelChoices(t *testing.T) {
	model, err := OpenModel(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(model.Close)
	mesh, err := NewMesh(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mesh.Close)
	file := filepath.Join(t.TempDir(), "choices.json")

	opts := DefaultEngineOptions()
	opts.MaxNumBatchedTokens = 4
	opts.KernelChoice = KernelChoiceMeasure
	opts.KernelChoicesFile = file
	e, err := kernelChoiceEngine(t, model, mesh, opts)
	if err != nil {
		t.Fatal(err)
	}
	measured, err := e.KernelChoices()
	if err != nil {
		t.Fatal(err)
	}
	if len(measured) == 0 {
		t.Fatal("KernelChoiceMeasure: no kernel choice")
	}
	variants := map[string]bool{"rules": true, "gemv": true, "gemv_int8": true, "sgemm": true}
	for _, c := range measured {
		if !variants[c.Variant] || c.M < 1 || c.M > 4 || c.M&(c.M-1) != 0 || c.N <= 0 || c.K <= 0 ||
			c.Device == "" || c.WDType == 0 || c.Seconds <= 0 || c.RulesSeconds <= 0 {
			t.Errorf("unexpected choice %+v", c)
		}
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the measured choices were not written: %v", err)
	}
	e.Close()

	opts.KernelChoice = KernelChoiceFile
	e, err = kernelChoiceEngine(t, model, mesh, opts)
	if err != nil {
		t.Fatal(err)
	}
	read, err := e.KernelChoices()
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != len(measured) {
		t.Fatalf("%d choices read back, %d measured", len(read), len(measured))
	}
	for i, c := range read {
		m := measured[i]
		if c.Device != m.Device || c.N != m.N || c.K != m.K || c.M != m.M || c.Variant != m.Variant {
			t.Errorf("choice %d read back as %+v, measured %+v", i, c, m)
		}
	}

	opts.KernelChoice = KernelChoiceRules
	if e, err = kernelChoiceEngine(t, model, mesh, opts); err != nil {
		t.Fatal(err)
	}
	if rules, err := e.KernelChoices(); err != nil || len(rules) != 0 {
		t.Fatalf("KernelChoiceRules: %d choices (%v), want none", len(rules), err)
	}

	opts.KernelChoice = KernelChoiceFile
	opts.KernelChoicesFile = filepath.Join(t.TempDir(), "missing.json")
	if _, err := kernelChoiceEngine(t, model, mesh, opts); !errors.Is(err, StatusNotFound) {
		t.Fatalf("a missing choices file: %v, want StatusNotFound", err)
	}
	opts.KernelChoicesFile = "a\x00b.json"
	if _, err := kernelChoiceEngine(t, model, mesh, opts); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("a path holding a NUL byte: %v, want StatusInvalidArgument", err)
	}
}
