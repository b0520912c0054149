package pagoda

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestMesh(t *testing.T) {
	m, err := NewMesh(&MeshOptions{Devices: "cpu:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if n, err := m.DeviceCount(); err != nil || n != 1 {
		t.Fatalf("device count %d (%v)", n, err)
	}
	if name, err := m.DeviceName(0); err != nil || name != "cpu:0" {
		t.Fatalf("device name %q (%v)", name, err)
	}
	if _, err := m.DeviceName(1); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("device 1 of 1: %v", err)
	}
	_, err = NewMesh(&MeshOptions{Devices: "nosuch:0"})
	var perr *Error
	if !errors.As(err, &perr) || perr.Status != StatusNotFound || !strings.Contains(perr.Message, "cpu") {
		t.Fatalf("unknown backend: %v (the message should list the loaded ones)", err)
	}
	if _, err := NewMesh(&MeshOptions{Devices: "cpu:0", Axes: "tp=2"}); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("axes that do not fit: %v", err)
	}
}

// A mesh in one process, its world given explicitly, and a rank outside its world. (Meshes over
// several processes are tested by the C suite; no second process is started here.)
func TestMeshWorld(t *testing.T) {
	m, err := NewMesh(&MeshOptions{Rank: 0, WorldSize: 1, TimeoutMs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if rank, size, err := m.World(); err != nil || rank != 0 || size != 1 {
		t.Fatalf("world (%d, %d) (%v), want (0, 1)", rank, size, err)
	}
	if name, err := m.DeviceName(0); err != nil || name != "cpu:0" {
		t.Fatalf("device name %q (%v)", name, err)
	}
	m.Close()
	if _, _, err := m.World(); !errors.Is(err, StatusInvalidHandle) {
		t.Fatalf("world of a closed mesh: %v", err)
	}
	_, err = NewMesh(&MeshOptions{Rank: 2, WorldSize: 2})
	var perr *Error
	if !errors.As(err, &perr) || perr.Status != StatusInvalidArgument || !strings.Contains(perr.Message, "out of range") {
		t.Fatalf("rank 2 of 2: %v", err)
	}
	if _, err := NewMesh(&MeshOptions{TimeoutMs: -1}); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("a negative timeout: %v", err)
	}
}

// A plan made by the planner, written as JSON and read back, lays out the cache and the engine.
func TestPlanServesEngine(t *testing.T) {
	model, err := OpenModel(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	mesh, err := NewMesh(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mesh.Close()
	plan, err := NewPlan(model, mesh, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	text, err := plan.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]interface{}
	if err := json.Unmarshal([]byte(text), &doc); err != nil || doc["format"] != "pagoda-plan" {
		t.Fatalf("plan JSON %q (%v)", text, err)
	}
	again, err := PlanFromJSON(text)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	sum, err := again.Summary()
	if err != nil || sum.NStages != 1 || sum.LatencySeconds <= 0 {
		t.Fatalf("summary %+v (%v)", sum, err)
	}
	stage, err := again.Stage(0)
	if err != nil || stage.FirstLayer != 0 || stage.EndLayer != 5 || !stage.HasEmbedding || !stage.HasHead ||
		stage.ExpertParallel != 1 {
		t.Fatalf("stage %+v (%v)", stage, err)
	}
	if _, err := again.Stage(1); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("stage 1 of 1: %v", err)
	}

	ko := DefaultKVCacheOptions()
	ko.NumBlocks = 64
	ko.BlockSize = 8
	cache, err := NewKVCache(model, mesh, again, &ko)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	eo := DefaultEngineOptions()
	eo.MaxNumSeqs = 4
	engine, err := NewEngine(model, mesh, again, cache, &eo)
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	st, err := engine.StreamText(storyPrompt, greedy(8))
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := collect(t, st); text == "" {
		t.Fatal("no text")
	}
	ks, err := cache.Stats()
	if err != nil || ks.BlocksTotal != 64 || ks.BlockSize != 8 || ks.BlocksUsed != 0 {
		t.Fatalf("cache stats %+v (%v)", ks, err)
	}
	if n, err := engine.DeviceCount(); err != nil || n != 1 {
		t.Fatalf("engine devices %d (%v)", n, err)
	}
	ds, err := engine.DeviceStats(0)
	// The bundled model is dense: one expert group, no expert weights.
	if err != nil || ds.Device != "cpu:0" || ds.EndLayer != 5 || ds.WeightBytes == 0 ||
		ds.EPRank != 0 || ds.EPSize != 1 || ds.ExpertWeightBytes != 0 {
		t.Fatalf("device stats %+v (%v)", ds, err)
	}
	m, err := engine.Metrics()
	if err != nil || m.GenerationTokens != 8 || m.TimeToFirstToken.Count != 1 || len(m.TimeToFirstToken.UpperBounds) == 0 {
		t.Fatalf("metrics %+v (%v)", m, err)
	}
}

// A plan sliced for a long prompt has slices adding up to it; bad options are named.
func TestPlanSlicesAndErrors(t *testing.T) {
	model, err := OpenModel(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	o := DefaultPlanOptions()
	o.MeshShape = "1x2"
	o.PromptTokens = 256
	plan, err := NewPlan(model, nil, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	sum, err := plan.Summary()
	if err != nil || sum.NSlices == 0 {
		t.Fatalf("summary %+v (%v)", sum, err)
	}
	var total int64
	for i := 0; i < sum.NSlices; i++ {
		n, err := plan.SliceLength(i)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != 256 {
		t.Fatalf("slices add up to %d, want 256", total)
	}
	if _, err := plan.SliceLength(sum.NSlices); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("slice past the end: %v", err)
	}

	o.PromptTokens = 100 // not a multiple of the granularity
	_, err = NewPlan(model, nil, &o)
	var perr *Error
	if !errors.As(err, &perr) || perr.Status != StatusInvalidArgument || !strings.Contains(perr.Message, "granularity") {
		t.Fatalf("bad prompt length: %v", err)
	}
	if _, err := PlanFromJSON(`{"format": "pagoda-plan"}`); !errors.Is(err, StatusFormat) {
		t.Fatalf("malformed plan: %v", err)
	}
}

func TestPlacementSimulate(t *testing.T) {
	placement := `{"models": [{"name": "a", "slo": 2.0}],
	  "groups": [{"devices": [0], "pipeline": 1, "tensor": 1,
	              "replicas": [{"model": "a", "stage_seconds": [0.1]}]}]}`
	o := DefaultSimulateOptions()
	o.DurationSeconds = 100
	o.RatePerModel = 2
	out, err := PlacementSimulate(placement, &o)
	if err != nil {
		t.Fatal(err)
	}
	var result struct {
		Requests      int     `json:"requests"`
		SLOAttainment float64 `json:"slo_attainment"`
	}
	if err := json.Unmarshal([]byte(out), &result); err != nil || result.Requests < 100 || result.SLOAttainment <= 0 {
		t.Fatalf("result %s (%v)", out, err)
	}
	if _, err := PlacementSimulate(`{"models": 3}`, nil); !errors.Is(err, StatusFormat) {
		t.Fatalf("malformed placement: %v", err)
	}
	if _, err := PlacementSearch(`{"cluster": {}}`, nil); err == nil {
		t.Fatal("a search without models succeeded")
	}
}

func TestProfileCosts(t *testing.T) {
	costs := filepath.Join(t.TempDir(), "costs.json")
	o := DefaultCostProfileOptions()
	if o.MaxTokens <= 0 || o.Beside != "" {
		t.Fatalf("defaults %+v", o)
	}
	o.MaxTokens, o.Granularity, o.Grid, o.Repeats = 16, 8, 2, 1
	entry, err := ProfileCosts(modelPath(t), "cpu:0", &o, costs)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Device string    `json:"device"`
		Times  []float64 `json:"no_context_seconds"`
	}
	if err := json.Unmarshal([]byte(entry), &got); err != nil || !strings.HasPrefix(got.Device, "cpu:0 ") || len(got.Times) != 2 {
		t.Fatalf("entry %s (%v)", entry, err)
	}
	o.Beside = "cpu:0"
	if _, err := ProfileCosts(modelPath(t), "cpu:0", &o, costs); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("timed beside itself: %v", err)
	}
}

func TestProfileLinks(t *testing.T) {
	o := DefaultLinkProfileOptions()
	if o.MinBytes != 4096 || o.MaxBytes != 8<<20 || o.Repeats != 10 {
		t.Fatalf("defaults %+v", o)
	}
	mesh, err := NewMesh(nil) // cpu:0 alone
	if err != nil {
		t.Fatal(err)
	}
	defer mesh.Close()
	if _, err := ProfileLinks(mesh, &o, ""); !errors.Is(err, StatusUnsupported) ||
		!strings.Contains(err.Error(), "no link to time") {
		t.Fatalf("one device: %v", err)
	}
	o.MinBytes = 6
	if _, err := ProfileLinks(mesh, &o, ""); !errors.Is(err, StatusInvalidArgument) ||
		!strings.Contains(err.Error(), "min_bytes") {
		t.Fatalf("min_bytes 6: %v", err)
	}
}

func TestBackends(t *testing.T) {
	if _, err := DiscoverBackends(); err != nil {
		t.Fatal(err)
	}
	cpu, err := FindBackend("cpu")
	if err != nil {
		t.Fatal(err)
	}
	if cpu.Name() != "cpu" || cpu.Description() == "" || !strings.HasSuffix(cpu.Path(), "libpagoda-backend-cpu.so") {
		t.Fatalf("cpu backend: %q %q %q", cpu.Name(), cpu.Description(), cpu.Path())
	}
	all, err := Backends()
	if err != nil || len(all) == 0 {
		t.Fatalf("backends %v (%v)", all, err)
	}
	n, err := cpu.DeviceCount()
	if err != nil || n < 1 {
		t.Fatalf("cpu devices %d (%v)", n, err)
	}
	info, err := cpu.DeviceInfo(0)
	if err != nil || info.Kind != DeviceCPU || info.TotalMemory == 0 || info.Arch == "" {
		t.Fatalf("device info %+v (%v)", info, err)
	}
	if _, err := cpu.DeviceInfo(n); !errors.Is(err, StatusNotFound) {
		t.Fatalf("device past the end: %v", err)
	}
	_, err = FindBackend("nosuch")
	var perr *Error
	if !errors.As(err, &perr) || perr.Status != StatusNotFound || !strings.Contains(perr.Message, "cpu") {
		t.Fatalf("unknown backend: %v", err)
	}
	if _, err := LoadBackend("/nonexistent/libpagoda-backend-x.so", ""); !errors.Is(err, StatusNotFound) {
		t.Fatalf("missing plugin: %v", err)
	}
	if _, err := DiscoverBackendsIn(""); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("empty search path: %v", err)
	}
	if _, err := SkippedBackends(); err != nil {
		t.Fatal(err)
	}
}

func TestVersionAndLogLevel(t *testing.T) {
	if Version() == "" || VersionNumber()/10000 != HeaderVersionMajor {
		t.Fatalf("version %q %d", Version(), VersionNumber())
	}
	old := GetLogLevel()
	defer SetLogLevel(old)
	if err := SetLogLevel(LogOff); err != nil || GetLogLevel() != LogOff {
		t.Fatalf("set level: %v", err)
	}
	if err := SetLogLevel(LogLevel(42)); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("level 42: %v", err)
	}
	if DTypeBF16.String() != "bf16" || DTypeF16.Size() != 2 || DType(99).String() != "invalid" || DType(99).Size() != 0 {
		t.Fatalf("dtype %q %d", DTypeBF16.String(), DTypeF16.Size())
	}
	if StatusFormat.String() != "PAGODA_ERR_FORMAT" || Status(99).String() != "PAGODA_ERR_UNKNOWN" {
		t.Fatalf("status names %q %q", StatusFormat.String(), Status(99).String())
	}
}
