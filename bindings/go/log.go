package pagoda

/*
#include <stdint.h>
#include "pagoda/log.h"

// Defined in Go (log_export.go, whose preamble may hold no C definitions).
extern void pagodaGoLog(int32_t level, char *message);

// Whether this thread is inside the Go log callback: set around the call into Go, so that
// SetLogCallback, run from inside the callback (on the same thread, where cgo keeps the
// callback's goroutine), can refuse instead of changing the sink under the call delivering to it.
static _Thread_local int pagoda_go_in_log;

// The C sink every Go callback goes through; the library holds its log lock around it, so
// calls never overlap.
static void pagoda_go_log(void *user, pagoda_log_level_t level, const char *message) {
	(void)user;
	pagoda_go_in_log = 1;
	pagodaGoLog((int32_t)level, (char *)message);
	pagoda_go_in_log = 0;
}

static void pagoda_go_set_log_sink(int on) {
	pagoda_log_set_callback(on ? pagoda_go_log : NULL, NULL);
}

static int pagoda_go_inside_log(void) { return pagoda_go_in_log; }
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// LogCallback receives one of the library's log lines: its level (never LogOff) and the line,
// without a trailing newline.
type LogCallback func(level LogLevel, message string)

var (
	logSetMu sync.Mutex                  // one SetLogCallback at a time
	logFn    atomic.Pointer[LogCallback] // what pagodaGoLog calls; nil: drop the line
)

// SetLogCallback sends the library's log lines to fn instead of standard error; nil goes back
// to standard error ("pagoda <level>: <message>" lines). Lines below the level of SetLogLevel
// never reach it.
//
// fn runs on whichever thread logs, the library's own threads included (a goroutine of
// Go's making, as for any call from C), one line at a time: calls never overlap, and the
// library waits while one runs, so fn should be quick. It may call other functions of this
// package; the lines they log are dropped rather than delivered inside fn. It must not call
// SetLogCallback, which then fails with StatusInvalidArgument. A panic in fn is recovered,
// reported on standard error and otherwise ignored.
//
// When SetLogCallback returns, no call of the previous callback is running or will start.
// Safe from any goroutine.
func SetLogCallback(fn LogCallback) error {
	// The check reads a C thread-local: the goroutine must stay on this thread until the
	// library's sink is changed (which is also where a running callback is waited out).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if C.pagoda_go_inside_log() != 0 {
		return errArgument("SetLogCallback cannot be called from inside the log callback")
	}
	logSetMu.Lock()
	defer logSetMu.Unlock()
	if fn == nil {
		// The sink goes first: once it is reset, no call into Go is running or will start.
		C.pagoda_go_set_log_sink(0)
		logFn.Store(nil)
		return nil
	}
	logFn.Store(&fn)
	// Setting the sink takes the library's log lock, so it also waits for a call of the
	// previous func that loaded it before the store.
	C.pagoda_go_set_log_sink(1)
	return nil
}
