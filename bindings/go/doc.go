// Package pagoda is the Go binding of libpagoda, the embeddable LLM serving library: open a
// model, build a mesh of devices, a plan, a paged KV cache and an engine, then submit requests
// and stream their outputs.
//
//	model, err := pagoda.OpenModel("stories260K.gguf")
//	mesh, err := pagoda.NewMesh(nil)                       // cpu:0
//	cache, err := pagoda.NewKVCache(model, mesh, nil, nil)
//	engine, err := pagoda.NewEngine(model, mesh, nil, cache, nil)
//	stream, err := engine.StreamText("Once upon a time", &opts)
//	for stream.Next() { fmt.Print(stream.Output().Text) }
//	err = stream.Err()
//
// Handles (Model, Tokenizer, Mesh, Plan, KVCache, Engine, ModelLoader) are released with Close,
// which may be called twice; a finalizer closes a forgotten one, which the C lifetime rules
// allow (an engine keeps the model, mesh and cache it uses alive, so any order is safe). A call
// on a closed handle fails with StatusInvalidHandle without reaching C, and Close waits for the
// calls running on its handle.
//
// Errors are *Error values carrying the C status and pagoda_last_error_message(), which the
// binding reads on the OS thread that made the failing call (the message is thread-local and
// goroutines move between threads). Test a status with errors.Is(err, pagoda.StatusNotFound),
// read both with errors.As.
//
// Threads: every method is safe from any goroutine, as the C headers declare their functions
// safe from any thread (a model, tokenizer, mesh or plan never changes once made; an engine
// takes submit, abort, poll and statistics from any thread). The engine's step runs one at a
// time, which the binding ensures itself.
//
// Go is called from C in two places, neither of which has a polled alternative: a request's
// LogitsProcessor, which runs inside the engine's step, reached through a cgo.Handle (no Go
// pointer is handed to C), and the log sink of SetLogCallback, which runs on whichever thread
// logs, library threads included; the panics of both are recovered. Otherwise progress is
// polled (LoadModel), outputs are polled (Engine.Poll, Stream), and the other C callbacks
// (model progress, engine outputs, the mesh's bootstrap broadcast) are not offered.
//
// Building: cgo finds libpagoda through pkg-config (`#cgo pkg-config: pagoda`): set
// PKG_CONFIG_PATH to the pkgconfig folder of an installed Pagoda (cmake --install writes
// <prefix>/lib/pkgconfig/pagoda.pc). pagoda.pc gives no run path: add one with
// CGO_LDFLAGS="-Wl,-rpath,<libdir>", or set LD_LIBRARY_PATH, when the library is outside the
// loader's folders.
package pagoda
