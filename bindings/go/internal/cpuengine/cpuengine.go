// Package cpuengine opens the engine the binding's commands stream from: a model served on
// cpu:0 with the default cache and engine options.
package cpuengine

import "pagoda.dev/pagoda"

// Open serves the model at path on cpu:0. Only the engine is returned: it keeps the model, the
// mesh and the cache alive (engine.h), so their handles are closed here, and closing the engine
// releases everything.
func Open(path string) (*pagoda.Engine, error) {
	model, err := pagoda.OpenModel(path)
	if err != nil {
		return nil, err
	}
	defer model.Close()
	mesh, err := pagoda.NewMesh(nil)
	if err != nil {
		return nil, err
	}
	defer mesh.Close()
	cache, err := pagoda.NewKVCache(model, mesh, nil, nil)
	if err != nil {
		return nil, err
	}
	defer cache.Close()
	return pagoda.NewEngine(model, mesh, nil, cache, nil)
}
