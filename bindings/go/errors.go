package pagoda

/*
#include "pagoda/status.h"
*/
import "C"

import (
	"runtime"
)

// Status is a pagoda_status_t: the outcome of a C call. Values are the header's and stable.
type Status int32

// The statuses of status.h.
const (
	StatusOK              Status = C.PAGODA_OK
	StatusInvalidArgument Status = C.PAGODA_ERR_INVALID_ARGUMENT
	StatusOutOfMemory     Status = C.PAGODA_ERR_OUT_OF_MEMORY
	StatusNotFound        Status = C.PAGODA_ERR_NOT_FOUND
	StatusIO              Status = C.PAGODA_ERR_IO
	StatusFormat          Status = C.PAGODA_ERR_FORMAT
	StatusUnsupported     Status = C.PAGODA_ERR_UNSUPPORTED
	StatusABIMismatch     Status = C.PAGODA_ERR_ABI_MISMATCH
	StatusNotAPlugin      Status = C.PAGODA_ERR_NOT_A_PLUGIN
	StatusBackend         Status = C.PAGODA_ERR_BACKEND
	StatusInvalidHandle   Status = C.PAGODA_ERR_INVALID_HANDLE
	StatusAlreadyExists   Status = C.PAGODA_ERR_ALREADY_EXISTS
	StatusCancelled       Status = C.PAGODA_ERR_CANCELLED
	StatusEmpty           Status = C.PAGODA_ERR_EMPTY
	StatusInternal        Status = C.PAGODA_ERR_INTERNAL
)

// String gives the code's name, such as "PAGODA_ERR_FORMAT" ("PAGODA_ERR_UNKNOWN" for a value
// the library does not know).
func (s Status) String() string {
	return C.GoString(C.pagoda_status_string(C.pagoda_status_t(s)))
}

// Error makes a Status usable as the target of errors.Is: errors.Is(err, pagoda.StatusNotFound)
// holds for an *Error of that status.
func (s Status) Error() string { return s.String() }

// Error is a failed call: the status it returned and the library's message about it.
// Use errors.As(err, &perr) to read them, or errors.Is(err, pagoda.StatusX) to test the status.
type Error struct {
	Status  Status
	Message string // pagoda_last_error_message(), read on the thread that made the call
	cause   error  // what a Go callback returned, when one caused the failure (a LogitsProcessor)
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "pagoda: " + e.Status.String()
	}
	return "pagoda: " + e.Message + " (" + e.Status.String() + ")"
}

// Is matches a Status target of the same value.
func (e *Error) Is(target error) bool {
	s, ok := target.(Status)
	return ok && s == e.Status
}

// Unwrap is the error a LogitsProcessor returned, when it ended the request; nil otherwise.
func (e *Error) Unwrap() error { return e.cause }

// call runs one fallible C call and, when it fails, reads the message on the same OS thread.
// pagoda_last_error_message() is thread-local, and Go may move a goroutine to another thread
// between two cgo calls: the lock keeps both calls on one thread.
func call(f func() C.pagoda_status_t) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if s := f(); s != C.PAGODA_OK {
		return lastError(s)
	}
	return nil
}

// lastError is the error of status s; the caller holds the thread that made the failing call.
func lastError(s C.pagoda_status_t) error {
	return &Error{Status: Status(s), Message: C.GoString(C.pagoda_last_error_message())}
}

// errClosed is what a method of a closed handle returns, without reaching C.
func errClosed(kind string) error {
	return &Error{Status: StatusInvalidHandle, Message: "the " + kind + " is closed"}
}

// errArgument is a Go-side argument check, reported with the status C would give.
func errArgument(msg string) error {
	return &Error{Status: StatusInvalidArgument, Message: msg}
}
