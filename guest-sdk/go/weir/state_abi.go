//go:build wasip1

package weir

import (
	"structs"
	"unsafe"
)

// The canonical-ABI side of keyed state, timers and clocks (state.go), and
// the timer-handler export. The linker keeps an import only when the guest
// calls it, so a guest that uses no state does not import it and stays
// stateless.

//go:wasmimport weir:transform/state@0.2.0 get
func wasmStateGet(key unsafe.Pointer, n uint32, ret unsafe.Pointer)

//go:wasmimport weir:transform/state@0.2.0 put
func wasmStatePut(key unsafe.Pointer, n uint32, value unsafe.Pointer, m uint32)

//go:wasmimport weir:transform/state@0.2.0 delete
func wasmStateDelete(key unsafe.Pointer, n uint32)

//go:wasmimport weir:transform/state@0.2.0 scan-prefix
func wasmStateScanPrefix(prefix unsafe.Pointer, n uint32, hasAfter uint32, after unsafe.Pointer, m uint32,
	limit uint32, ret unsafe.Pointer)

//go:wasmimport weir:transform/state@0.2.0 scan
func wasmStateScan(start unsafe.Pointer, n uint32, hasEnd uint32, end unsafe.Pointer, m uint32,
	limit uint32, ret unsafe.Pointer)

//go:wasmimport weir:transform/context@0.2.0 source
func wasmSource(ret unsafe.Pointer)

//go:wasmimport weir:transform/context@0.2.0 event-time
func wasmEventTime() uint32

//go:wasmimport weir:transform/timers@0.2.0 register
func wasmTimerRegister(domain uint32, key unsafe.Pointer, n uint32, at int64)

//go:wasmimport weir:transform/timers@0.2.0 delete
func wasmTimerDelete(domain uint32, key unsafe.Pointer, n uint32, at int64)

//go:wasmimport weir:transform/context@0.2.0 watermark
func wasmWatermark(ret unsafe.Pointer)

//go:wasmimport weir:transform/context@0.2.0 processing-time
func wasmProcessingTime() int64

//go:wasmimport weir:transform/context@0.2.0 query-output-mode
func wasmOutputMode() uint32

// The host lowers a value state.get returns through cabi_import_realloc,
// while the instance may not call out: the same arena as export arguments.
//
//go:wasmexport cabi_import_realloc
func cabiImportRealloc(old unsafe.Pointer, oldSize, align, newSize uint32) unsafe.Pointer {
	return cabiRealloc(old, oldSize, align, newSize)
}

var getRet optListABI

func hostStateGet(key []byte) ([]byte, bool) {
	mark := argUsed
	wasmStateGet(unsafe.Pointer(unsafe.SliceData(key)), uint32(len(key)), unsafe.Pointer(&getRet))
	if getRet.IsSome == 0 {
		return nil, false
	}
	v := append([]byte{}, view[byte](getRet.Val)...)
	freeList(getRet.Val)
	argUsed = mark // the value's room in the arena
	return v, true
}

type entryABI struct {
	_          structs.HostLayout
	Key, Value list
}

var scanRet list

func hostStateScanPrefix(prefix, after []byte, hasAfter bool, limit uint32) []Entry {
	mark := argUsed
	some := uint32(0)
	if hasAfter {
		some = 1
	}
	wasmStateScanPrefix(unsafe.Pointer(unsafe.SliceData(prefix)), uint32(len(prefix)), some,
		unsafe.Pointer(unsafe.SliceData(after)), uint32(len(after)), limit, unsafe.Pointer(&scanRet))
	return scanned(mark)
}

// scanned copies the entries a scan wrote to scanRet out of the arena
// and gives their room back (to mark).
func scanned(mark uintptr) []Entry {
	entries := view[entryABI](scanRet)
	out := make([]Entry, len(entries))
	for i, e := range entries {
		out[i] = Entry{append([]byte{}, view[byte](e.Key)...), append([]byte{}, view[byte](e.Value)...)}
		freeList(e.Key)
		freeList(e.Value)
	}
	freeList(scanRet)
	argUsed = mark // the entries' room in the arena
	return out
}

func hostStateScan(start, end []byte, limit uint32) []Entry {
	mark := argUsed
	wasmStateScan(unsafe.Pointer(unsafe.SliceData(start)), uint32(len(start)), 1,
		unsafe.Pointer(unsafe.SliceData(end)), uint32(len(end)), limit, unsafe.Pointer(&scanRet))
	return scanned(mark)
}

var sourceRet optListABI

func hostSource() (string, bool) {
	mark := argUsed
	wasmSource(unsafe.Pointer(&sourceRet))
	if sourceRet.IsSome == 0 {
		return "", false
	}
	s := string(view[byte](sourceRet.Val))
	freeList(sourceRet.Val)
	argUsed = mark // the name's room in the arena
	return s, true
}

func hostEventTime() bool { return wasmEventTime() != 0 }

func hostStatePut(key, value []byte) {
	wasmStatePut(unsafe.Pointer(unsafe.SliceData(key)), uint32(len(key)),
		unsafe.Pointer(unsafe.SliceData(value)), uint32(len(value)))
}

func hostStateDelete(key []byte) {
	wasmStateDelete(unsafe.Pointer(unsafe.SliceData(key)), uint32(len(key)))
}

func domain(eventTime bool) uint32 {
	if eventTime {
		return 0
	}
	return 1
}

func hostTimerRegister(eventTime bool, key []byte, at int64) {
	wasmTimerRegister(domain(eventTime), unsafe.Pointer(unsafe.SliceData(key)), uint32(len(key)), at)
}

func hostTimerDelete(eventTime bool, key []byte, at int64) {
	wasmTimerDelete(domain(eventTime), unsafe.Pointer(unsafe.SliceData(key)), uint32(len(key)), at)
}

var watermarkRet optS64ABI

func hostWatermark() (int64, bool) {
	wasmWatermark(unsafe.Pointer(&watermarkRet))
	return watermarkRet.Val, watermarkRet.IsSome != 0
}

func hostProcessingTime() int64 { return wasmProcessingTime() }

func hostOutputMode() OutputMode { return OutputMode(wasmOutputMode()) }

//go:wasmexport weir:transform/timer-handler@0.2.0#on-timers
func exportOnTimers(keysPtr, keysLen, endsPtr, endsLen, timesPtr, timesLen, domainsPtr, domainsLen uint32) unsafe.Pointer {
	keys := view[byte](list{Ptr: keysPtr, Len: keysLen})
	ends := view[uint32](list{Ptr: endsPtr, Len: endsLen})
	times := view[int64](list{Ptr: timesPtr, Len: timesLen})
	domains := view[uint8](list{Ptr: domainsPtr, Len: domainsLen})
	eventTime := make([]bool, len(domains))
	for i, d := range domains {
		eventTime[i] = d == 0
	}
	out, err := runTimers(keys, ends, times, eventTime)
	argReset()
	return lowerBatchResult(out, err)
}

//go:wasmexport cabi_post_weir:transform/timer-handler@0.2.0#on-timers
func postOnTimers(r *resultABI[outputBatchABI]) { postProcessBatch(r) }

// firstOffset is where Run numbers its records (RunFrom, natively, moves it).
func firstOffset() int64 { return 0 }
