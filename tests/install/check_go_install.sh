#!/usr/bin/env bash
# The Go binding used as another module uses it: libpagoda installed by `cmake --install` into a
# scratch prefix, a new module (example.com/storyhost) requiring pagoda.dev/pagoda from a copy of
# bindings/go, and cgo finding the library through the installed pagoda.pc alone
# (PKG_CONFIG_PATH; no CGO_CFLAGS, no CGO_LDFLAGS, no LD_LIBRARY_PATH from the caller). The
# host then generates the main job's story text (the pagoda command's, from the same install):
#   1. built with pkg-config's flags only, run with LD_LIBRARY_PATH=<libdir> (pagoda.pc gives
#      no run path, like the installed C host of check_install.sh);
#   2. built with CGO_LDFLAGS="-Wl,-rpath,<libdir>", run with nothing set.
# Each run must load libpagoda and the CPU backend from the installed lib folder.
# Offline: GOPROXY=off and the module comes from a local replace, so nothing is downloaded.
# Usage: check_go_install.sh <build-dir> <work-dir> <source-dir> <go> <go-cache-dir>
set -euo pipefail
build=$1 work=$2 src=$3 go=$4 cache=$5
unset PAGODA_LIBRARY PAGODA_BACKEND_PATH LD_LIBRARY_PATH PKG_CONFIG_PATH PKG_CONFIG_LIBDIR \
      CGO_CFLAGS CGO_CPPFLAGS CGO_LDFLAGS GOROOT
export PAGODA_LOG_LEVEL=error
# The caches the binding's CTest cases use (bindings/go/CMakeLists.txt); the scratch module
# sits inside this repository's build folder, whose VCS is not the host's.
export GOCACHE=$cache/build GOPATH=$cache/path GOPROXY=off GOFLAGS="-mod=mod -buildvcs=false" \
       GOWORK=off CGO_ENABLED=1
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
model=$src/tests/fixtures/models/stories260K/stories260K.gguf
module=$(sed -n 's/^module //p' "$src/bindings/go/go.mod")

echo "== cmake --install into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
pc=$(find "$work/prefix" -name pagoda.pc)
[[ -n $pc ]] || fail "no pagoda.pc installed"
libdir=$(dirname "$(dirname "$pc")")
! grep -q rpath "$pc" || fail "the installed pagoda.pc carries a run path: $(grep rpath "$pc")"
want=$("$work/prefix/bin/pagoda" generate --model "$model" --prompt "Once upon a time" --temperature 0 \
       --max-tokens 24 2> "$work/pagoda.err")
echo "the pagoda command: $want"

echo "== a new module requiring $module (a copy of bindings/go)"
cp -r "$src/bindings/go" "$work/go"
mkdir "$work/storyhost"
cd "$work/storyhost"
"$go" mod init example.com/storyhost > "$work/mod.log" 2>&1 || { cat "$work/mod.log"; fail "go mod init"; }
"$go" mod edit -require="$module@v0.0.0" -replace="$module=$work/go"
cat > main.go <<'GO'
// Command storyhost greedily generates 24 tokens after "Once upon a time" and prints the prompt
// and the text; on standard error, the files libpagoda and its CPU backend were loaded from.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"pagoda.dev/pagoda"
)

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "storyhost:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	if err := pagoda.CheckVersion(); err != nil {
		return err
	}
	model, err := pagoda.OpenModel(path)
	if err != nil {
		return err
	}
	defer model.Close()
	mesh, err := pagoda.NewMesh(nil)
	if err != nil {
		return err
	}
	defer mesh.Close()
	cache, err := pagoda.NewKVCache(model, mesh, nil, nil)
	if err != nil {
		return err
	}
	defer cache.Close()
	engine, err := pagoda.NewEngine(model, mesh, nil, cache, nil)
	if err != nil {
		return err
	}
	defer engine.Close()
	opts := pagoda.DefaultRequestOptions()
	opts.Temperature = 0
	opts.MaxTokens = 24
	stream, err := engine.StreamText("Once upon a time", &opts)
	if err != nil {
		return err
	}
	defer stream.Close()
	text := "Once upon a time"
	for stream.Next() {
		text += stream.Output().Text
	}
	if err := stream.Err(); err != nil {
		return err
	}
	fmt.Println(text)
	cpu, err := pagoda.FindBackend("cpu")
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "backend", cpu.Path())
	return printLibrary()
}

// printLibrary names the libpagoda this process mapped.
func printLibrary() error {
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer maps.Close()
	lines := bufio.NewScanner(maps)
	for lines.Scan() {
		if f := strings.Fields(lines.Text()); len(f) == 6 && strings.Contains(f[5], "/libpagoda.so") {
			fmt.Fprintln(os.Stderr, "library", f[5])
			return nil
		}
	}
	return fmt.Errorf("libpagoda is not mapped")
}
GO

# story <name> <how it runs>: builds nothing; runs ./<name> and checks its text and libraries.
story() {
    local name=$1; shift
    local got
    got=$(env "$@" "./$name" "$model" 2> "$work/$name.err") || { cat "$work/$name.err"; fail "$name: generating"; }
    [[ $got == "$want" ]] || fail "$name generated '$got'"
    grep -qx "library $libdir/libpagoda.so.*" "$work/$name.err" || fail "$name loaded $(cat "$work/$name.err"), not $libdir's"
    grep -qx "backend $libdir/libpagoda-backend-cpu.so" "$work/$name.err" ||
        fail "$name's CPU backend: $(cat "$work/$name.err"), not $libdir's"
}

echo "== go build with PKG_CONFIG_PATH=$libdir/pkgconfig only; run with LD_LIBRARY_PATH"
PKG_CONFIG_PATH=$libdir/pkgconfig "$go" build -o storyhost-plain . > "$work/build-plain.log" 2>&1 ||
    { cat "$work/build-plain.log"; fail "go build"; }
# Nothing but pkg-config's flags reached the link: no run path from the binding or pagoda.pc.
! readelf -d storyhost-plain | grep -E "RPATH|RUNPATH" || fail "storyhost-plain carries a run path"
story storyhost-plain LD_LIBRARY_PATH="$libdir"
echo "PASS: go build against the installed pagoda.pc: the story, with $(tr '\n' ' ' < "$work/storyhost-plain.err")"

echo "== go build with CGO_LDFLAGS=-Wl,-rpath,$libdir; run with nothing set"
PKG_CONFIG_PATH=$libdir/pkgconfig CGO_LDFLAGS="-Wl,-rpath,$libdir" "$go" build -o storyhost-rpath . \
    > "$work/build-rpath.log" 2>&1 || { cat "$work/build-rpath.log"; fail "go build (rpath)"; }
story storyhost-rpath
echo "PASS: go build with the host's run path: the story, with $(tr '\n' ' ' < "$work/storyhost-rpath.err")"
