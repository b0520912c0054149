package pagoda

// The headers come from the source tree; the library's folder comes from CGO_LDFLAGS (-L, and
// an rpath or LD_LIBRARY_PATH at run time), which CMake sets for the tests and examples.

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: -lpagoda
*/
import "C"
