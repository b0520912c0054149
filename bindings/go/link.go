package pagoda

// The headers' and the library's folders come from pkg-config's pagoda.pc: an installed one
// (`cmake --install` writes <prefix>/lib/pkgconfig/pagoda.pc; point PKG_CONFIG_PATH there), or
// the build tree's, which CMake generates for the in-tree tests (CMakeLists.txt). The .pc file
// carries no run path: the host adds one (CGO_LDFLAGS="-Wl,-rpath,<libdir>") or sets
// LD_LIBRARY_PATH when the library is outside the loader's default folders (see README.md).

/*
#cgo pkg-config: pagoda
*/
import "C"
