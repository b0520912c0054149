package pagoda

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"unsafe"
)

// pagodaGoLogitsProcessor is what C calls for a request with a LogitsProcessor (through
// pagoda_go_logits_processor, logits_processor.go): it finds the func by its handle and runs
// it on the row. A non-zero return ends the request; a panic must not unwind into C, so it is
// recovered and ends the request too.
//
//export pagodaGoLogitsProcessor
func pagodaGoLogitsProcessor(handle C.uintptr_t, requestID C.uint64_t, sequenceIndex C.int32_t,
	tokenIDs *C.int32_t, nTokens C.size_t, nPromptTokens C.size_t, logits *C.float,
	nLogits C.size_t) (stop C.int32_t) {
	lp := cgo.Handle(handle).Value().(*liveProcessor)
	defer func() {
		if r := recover(); r != nil {
			lp.fail(fmt.Errorf("panicked: %v", r))
			stop = 1
		}
	}()
	// Views of the C arrays, valid during the call (as the LogitsProcessor doc says).
	tokens := unsafe.Slice((*int32)(unsafe.Pointer(tokenIDs)), int(nTokens))
	row := unsafe.Slice((*float32)(unsafe.Pointer(logits)), int(nLogits))
	if err := lp.fn(uint64(requestID), int(sequenceIndex), tokens, int(nPromptTokens), row); err != nil {
		lp.fail(err)
		return 1
	}
	return 0
}
