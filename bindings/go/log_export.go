package pagoda

/*
#include <stdint.h>
*/
import "C"

import (
	"fmt"
	"os"
)

// pagodaGoLog is what the library's log sink calls (through pagoda_go_log, log.go): it hands
// the line to the func of SetLogCallback. A panic must not unwind into C: it is recovered and
// reported on standard error, and the call that logged goes on.
//
//export pagodaGoLog
func pagodaGoLog(level C.int32_t, message *C.char) {
	fn := logFn.Load()
	if fn == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "pagoda: the log callback panicked; the panic is ignored: %v\n", r)
		}
	}()
	(*fn)(LogLevel(level), C.GoString(message))
}
