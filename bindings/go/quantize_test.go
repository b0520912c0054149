package pagoda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The block types report their blocks, and no per-element size.
func TestDTypeBlocks(t *testing.T) {
	for _, c := range []struct {
		d      DType
		values int64
		bytes  int
	}{{DTypeF16, 1, 2}, {DTypeQ8_0, 32, 34}, {DTypeQ4_0, 32, 18}, {DTypeQ4_K, 256, 144},
		{DTypeQ5_K, 256, 176}, {DTypeQ6_K, 256, 210}} {
		v, b, ok := c.d.Block()
		if !ok || v != c.values || b != c.bytes {
			t.Errorf("%v.Block() = %d, %d, %v; want %d, %d", c.d, v, b, ok, c.values, c.bytes)
		}
	}
	if DTypeQ4_K.Size() != 0 || DTypeQ4_K.String() != "q4_k" {
		t.Errorf("q4_k: Size %d, String %q", DTypeQ4_K.Size(), DTypeQ4_K.String())
	}
	if _, _, ok := DType(99).Block(); ok {
		t.Error("DType(99).Block() succeeded")
	}
}

// The bundled model rewritten in Q8_0: the stats add up, the file opens and generates; the
// library's errors come back with their status and message.
func TestQuantize(t *testing.T) {
	out := filepath.Join(t.TempDir(), "q8.gguf")
	opts := DefaultQuantizeOptions()
	if opts.Type != QuantQ4KM || opts.Threads != 0 {
		t.Fatalf("defaults %+v", opts)
	}
	opts.Type = QuantQ8_0
	stats, err := Quantize(modelPath(t), out, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats.Types) != 1 || stats.Types[0].Name != "Q8_0" || stats.Types[0].GGMLType != 8 ||
		stats.Types[0].Tensors == 0 || stats.Types[0].RelativeRMSE <= 0 || stats.Types[0].RelativeRMSE > 0.01 {
		t.Fatalf("stats %+v", stats)
	}
	if fi, err := os.Stat(out); err != nil || uint64(fi.Size()) != stats.OutputBytes {
		t.Fatalf("file %v (%v), stats say %d bytes", fi, err, stats.OutputBytes)
	}
	m, err := OpenModel(out)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()

	_, err = Quantize(out, out+".again", nil)
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusUnsupported || !strings.Contains(e.Message, "already Q8_0") {
		t.Fatalf("requantizing: %v", err)
	}
	if _, err := Quantize("/nonexistent/m.gguf", out, nil); !errors.Is(err, StatusNotFound) {
		t.Fatalf("missing input: %v", err)
	}
	bad := QuantizeOptions{Type: 42}
	if _, err := Quantize(modelPath(t), out, &bad); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("bad type: %v", err)
	}
}
