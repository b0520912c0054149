package pagoda

/*
#include "pagoda/version.h"
#include "pagoda/log.h"
#include "pagoda/dtype.h"
*/
import "C"

import "fmt"

// The version of the headers this package was compiled against.
const (
	HeaderVersionMajor  = C.PAGODA_VERSION_MAJOR
	HeaderVersionMinor  = C.PAGODA_VERSION_MINOR
	HeaderVersionPatch  = C.PAGODA_VERSION_PATCH
	HeaderVersionNumber = HeaderVersionMajor*10000 + HeaderVersionMinor*100 + HeaderVersionPatch
)

// Version is the running library's version, such as "0.1.0".
func Version() string { return C.GoString(C.pagoda_version()) }

// VersionNumber is the running library's major·10000 + minor·100 + patch.
func VersionNumber() int32 { return int32(C.pagoda_version_number()) }

// CheckVersion fails when the running library's major version is not the headers': the ABI
// this package was compiled for would then not be the library's.
func CheckVersion() error {
	if n := VersionNumber(); n/10000 != HeaderVersionMajor {
		return &Error{Status: StatusABIMismatch, Message: fmt.Sprintf(
			"libpagoda %s does not match the headers this package was built with (%d.%d.%d)",
			Version(), HeaderVersionMajor, HeaderVersionMinor, HeaderVersionPatch)}
	}
	return nil
}

// LogLevel is a pagoda_log_level_t: the least severe log line that is written.
type LogLevel int32

// The levels of log.h.
const (
	LogDebug LogLevel = C.PAGODA_LOG_DEBUG
	LogInfo  LogLevel = C.PAGODA_LOG_INFO
	LogWarn  LogLevel = C.PAGODA_LOG_WARN
	LogError LogLevel = C.PAGODA_LOG_ERROR
	LogOff   LogLevel = C.PAGODA_LOG_OFF
)

// SetLogLevel sets the least severe level that the library logs, to standard error or to the
// func of SetLogCallback.
func SetLogLevel(level LogLevel) error {
	return call(func() C.pagoda_status_t { return C.pagoda_log_set_level(C.pagoda_log_level_t(level)) })
}

// GetLogLevel is the level set by SetLogLevel, or the one PAGODA_LOG_LEVEL gave.
func GetLogLevel() LogLevel { return LogLevel(C.pagoda_log_get_level()) }

// DType is a pagoda_dtype_t: an element type of weights and caches.
type DType int32

// The element types of dtype.h.
const (
	DTypeInvalid DType = C.PAGODA_DTYPE_INVALID
	DTypeF32     DType = C.PAGODA_DTYPE_F32
	DTypeF16     DType = C.PAGODA_DTYPE_F16
	DTypeBF16    DType = C.PAGODA_DTYPE_BF16
	DTypeI32     DType = C.PAGODA_DTYPE_I32
	DTypeI64     DType = C.PAGODA_DTYPE_I64
	DTypeI8      DType = C.PAGODA_DTYPE_I8
	DTypeU8      DType = C.PAGODA_DTYPE_U8
	// GGUF's quantized block types: weights only, with no size per element (see Block).
	DTypeQ8_0 DType = C.PAGODA_DTYPE_Q8_0
	DTypeQ4_0 DType = C.PAGODA_DTYPE_Q4_0
	DTypeQ4_K DType = C.PAGODA_DTYPE_Q4_K
	DTypeQ5_K DType = C.PAGODA_DTYPE_Q5_K
	DTypeQ6_K DType = C.PAGODA_DTYPE_Q6_K
)

// String is the type's lower-case name, such as "bf16" ("invalid" for unknown values).
func (d DType) String() string { return C.GoString(C.pagoda_dtype_name(C.pagoda_dtype_t(d))) }

// Size is the bytes per element (0 for DTypeInvalid, the block types and unknown values).
func (d DType) Size() int { return int(C.pagoda_dtype_size(C.pagoda_dtype_t(d))) }

// Block is the values per block and bytes per block: 1 and Size() for the plain types, 32 or 256
// values sharing their scales for the quantized ones; ok is false for unknown values.
func (d DType) Block() (values int64, bytes int, ok bool) {
	var v C.int64_t
	var b C.size_t
	ok = C.pagoda_dtype_block(C.pagoda_dtype_t(d), &v, &b) == C.PAGODA_OK
	return int64(v), int(b), ok
}
