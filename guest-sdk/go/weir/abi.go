//go:build wasip1

// Package weir: hand-written canonical-ABI bindings for world
// weir:transform/record-transformer@0.2.0 for the stock Go toolchain
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared).
package weir

import (
	"structs"
	"unsafe"
)

// ---------------------------------------------------------------- memory
// Every block handed to the host (cabi_realloc results, return areas, output
// lists) must stay reachable from Go, or the GC would reuse it: `live` pins
// them (Go's collector never moves an object, so a pinned block stays put).
var live = map[uintptr]any{}

func alloc(size uint32) unsafe.Pointer {
	if size == 0 {
		return nil
	}
	b := make([]uint64, (size+7)/8) // 8-aligned: covers every WIT alignment
	p := unsafe.Pointer(&b[0])
	live[uintptr(p)] = b
	return p
}

func free(p uint32) { delete(live, uintptr(p)) }

// Export arguments are lowered into argArena. The host calls
// cabi_export_realloc while the instance may not call out, and a Go
// allocation there can start a garbage collection that reads the clock (a
// WASI import), which would trap. The arena only grows inside export calls,
// where calling out is allowed (argReset), to the largest demand seen.
var argArena = make([]uint64, 2<<20) // 16 MiB
var argUsed, argWanted uintptr

func argAlloc(size, align uint32) unsafe.Pointer {
	base := uintptr(unsafe.Pointer(&argArena[0]))
	a := uintptr(max(align, 1))
	p := (base + argUsed + a - 1) &^ (a - 1)
	end := p + uintptr(size) - base
	argWanted = max(argWanted, end)
	if end > uintptr(len(argArena))*8 {
		return nil
	}
	argUsed = end
	return unsafe.Pointer(p)
}

// argReset ends a call's use of the arena (its input is no longer read).
func argReset() {
	argUsed = 0
	if argWanted > uintptr(len(argArena))*8 {
		argArena = make([]uint64, argWanted/8*2)
	}
}

//go:wasmexport cabi_export_realloc
func cabiRealloc(old unsafe.Pointer, oldSize, align, newSize uint32) unsafe.Pointer {
	if newSize == 0 {
		return unsafe.Pointer(uintptr(align))
	}
	if old == nil {
		if p := argAlloc(newSize, align); p != nil {
			return p
		}
	}
	// Larger than the arena so far (it grows after this call).
	p := alloc(newSize)
	if old != nil {
		copy(unsafe.Slice((*byte)(p), newSize), unsafe.Slice((*byte)(old), min(oldSize, newSize)))
		delete(live, uintptr(old))
	}
	return p
}

// ---------------------------------------------------------------- canonical layouts
type list struct {
	_   structs.HostLayout
	Ptr uint32
	Len uint32
}

type batchABI struct { // 84 bytes
	_                                          structs.HostLayout
	Partition                                  uint32
	Values, ValueEnds, HasValue, Keys, KeyEnds list
	HasKey, Headers, HeaderEnds                list
	Timestamps, Offsets                        list
}

type outputBatchABI struct { // 104 bytes
	_                                          structs.HostLayout
	Values, ValueEnds, HasValue, Keys, KeyEnds list
	HasKey, Headers, HeaderEnds, Timestamps    list
	Origins, Outputs, Routes, Rejected         list
}

type resultABI[T any] struct {
	_     structs.HostLayout
	IsErr uint8
	_     [3]uint8
	Val   T // payload at offset 4 (all payloads here are 4-aligned)
}

type badRecordABI struct {
	_      structs.HostLayout
	Index  uint32
	Reason list
}

type headerABI struct {
	_           structs.HostLayout
	Name, Value list
}

type optListABI struct { // option<list<u8>> / option<string>: 12 bytes
	_      structs.HostLayout
	IsSome uint8
	_      [3]uint8
	Val    list
}

type optS64ABI struct { // 16 bytes, align 8
	_      structs.HostLayout
	IsSome uint8
	_      [7]uint8
	Val    int64
}

type outputRecordABI struct { // 64 bytes, align 8
	_         structs.HostLayout
	Output    optListABI
	Key       optListABI
	Value     optListABI
	Headers   list
	Timestamp optS64ABI
}

// record-error: tag 0 bad-record(string), 1 broken(string).
type recordErrorABI struct {
	_   structs.HostLayout
	Tag uint8
	_   [3]uint8
	Msg list
}

// batch-error: tag 0 bad-record(bad-record), 1 broken(string) (payload at 4).
type batchErrorABI struct { // 16 bytes
	_       structs.HostLayout
	Tag     uint8
	_       [3]uint8
	Payload badRecordABI // broken's string overlays its first 8 bytes' place at offset 4
}

// compile-time layout checks
var _ = [1]struct{}{}[unsafe.Sizeof(batchABI{})-84]
var _ = [1]struct{}{}[unsafe.Sizeof(outputBatchABI{})-104]
var _ = [1]struct{}{}[unsafe.Sizeof(resultABI[outputBatchABI]{})-108]
var _ = [1]struct{}{}[unsafe.Sizeof(batchErrorABI{})-16]
var _ = [1]struct{}{}[unsafe.Sizeof(outputRecordABI{})-64]
var _ = [1]struct{}{}[unsafe.Offsetof(outputRecordABI{}.Timestamp)-48]

// ---------------------------------------------------------------- helpers
func view[T any](l list) []T { // zero-copy view of a host-written list; valid during the call
	if l.Len == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(uintptr(l.Ptr))), l.Len)
}

func put[T any](s []T) list { // hand a Go slice to the host as is, pinned until post-return
	if len(s) == 0 {
		return list{}
	}
	p := unsafe.Pointer(unsafe.SliceData(s))
	live[uintptr(p)] = s
	return list{Ptr: uint32(uintptr(p)), Len: uint32(len(s))}
}

func putString(s string) list { return put([]byte(s)) }

func putBools(s []bool) list { // bool is one byte 0/1 in both Go and the canonical ABI
	return put(s)
}

func freeList(l list) {
	if l.Len != 0 {
		free(l.Ptr)
	}
}

// ---------------------------------------------------------------- imports
//
//go:wasmimport weir:transform/log@0.2.0 log
func wasmLog(level uint32, msg string)

//go:wasmimport weir:transform/metrics@0.2.0 counter-add
func wasmCounterAdd(name string, delta uint64)

//go:wasmimport weir:transform/metrics@0.2.0 gauge-set
func wasmGaugeSet(name string, value float64)

func hostLog(level Level, msg string)          { wasmLog(uint32(level), msg) }
func hostCounterAdd(name string, delta uint64) { wasmCounterAdd(name, delta) }
func hostGaugeSet(name string, value float64)  { wasmGaugeSet(name, value) }

// ---------------------------------------------------------------- exports
var retBatch *resultABI[outputBatchABI]

//go:wasmexport weir:transform/transform@0.2.0#init
func exportInit(ptr, n uint32) unsafe.Pointer {
	pairs := view[[2]list](list{Ptr: ptr, Len: n})
	cfg := make([][2]string, len(pairs))
	for i, kv := range pairs {
		cfg[i] = [2]string{string(view[byte](kv[0])), string(view[byte](kv[1]))}
		freeList(kv[0])
		freeList(kv[1])
	}
	freeList(list{Ptr: ptr, Len: n})
	argReset()
	r := (*resultABI[list])(alloc(12))
	if err := impl.Init(cfg); err != nil {
		r.IsErr = 1
		r.Val = putString(err.Error())
	}
	return unsafe.Pointer(r)
}

//go:wasmexport cabi_post_weir:transform/transform@0.2.0#init
func postInit(r *resultABI[list]) {
	if r.IsErr != 0 {
		freeList(r.Val)
	}
	free(uint32(uintptr(unsafe.Pointer(r))))
}

func getHeaders(l list) []Header { // copies: the input is freed after the call
	var hs []Header
	for _, h := range view[headerABI](l) {
		hs = append(hs, Header{Name: string(view[byte](h.Name)), Value: append([]byte(nil), view[byte](h.Value)...)})
	}
	return hs
}

func freeHeaders(l list) {
	for _, h := range view[headerABI](l) {
		freeList(h.Name)
		freeList(h.Value)
	}
	freeList(l)
}

func putHeaders(hs []Header) list {
	if len(hs) == 0 {
		return list{}
	}
	a := make([]headerABI, len(hs))
	for i, h := range hs {
		a[i] = headerABI{Name: putString(h.Name), Value: put(h.Value)}
	}
	return put(a)
}

//go:wasmexport weir:transform/transform@0.2.0#process-batch
func exportProcessBatch(p *batchABI) unsafe.Pointer {
	in := &Batch{
		Partition: p.Partition, Values: view[byte](p.Values), ValueEnds: view[uint32](p.ValueEnds),
		HasValue: view[bool](p.HasValue),
		Keys:     view[byte](p.Keys), KeyEnds: view[uint32](p.KeyEnds), HasKey: view[bool](p.HasKey),
		Headers: getHeaders(p.Headers), HeaderEnds: view[uint32](p.HeaderEnds),
		Timestamps: view[int64](p.Timestamps), Offsets: view[int64](p.Offsets),
	}
	out, err := impl.ProcessBatch(in)
	freeHeaders(p.Headers)
	for _, l := range []list{p.Values, p.ValueEnds, p.HasValue, p.Keys, p.KeyEnds, p.HasKey, p.HeaderEnds, p.Timestamps, p.Offsets} {
		freeList(l)
	}
	free(uint32(uintptr(unsafe.Pointer(p))))
	argReset()
	return lowerBatchResult(out, err)
}

// lowerBatchResult is the canonical-ABI form of a process-batch or
// on-timers result, in a block the post-return function frees.
func lowerBatchResult(out *OutputBatch, err error) unsafe.Pointer {
	r := (*resultABI[outputBatchABI])(alloc(108))
	if err != nil {
		r.IsErr = 1
		e := (*batchErrorABI)(unsafe.Pointer(&r.Val))
		if bad, ok := err.(*BadRecordError); ok {
			e.Payload = badRecordABI{Index: bad.Index, Reason: putString(bad.Reason)}
		} else {
			e.Tag = 1
			*(*list)(unsafe.Pointer(&e.Payload)) = putString(err.Error())
		}
		return unsafe.Pointer(r)
	}
	o := &r.Val
	o.Values, o.ValueEnds, o.HasValue = put(out.Values), put(out.ValueEnds), putBools(out.HasValue)
	o.Keys, o.KeyEnds, o.HasKey = put(out.Keys), put(out.KeyEnds), putBools(out.HasKey)
	o.Headers, o.HeaderEnds = putHeaders(out.Headers), put(out.HeaderEnds)
	o.Timestamps, o.Origins, o.Routes = put(out.Timestamps), put(out.Origins), put(out.Routes)
	outs := make([]list, len(out.Outputs))
	for i, s := range out.Outputs {
		outs[i] = putString(s)
	}
	o.Outputs = put(outs)
	rej := make([]badRecordABI, len(out.Rejected))
	for i, b := range out.Rejected {
		rej[i] = badRecordABI{Index: b.Index, Reason: putString(b.Reason)}
	}
	o.Rejected = put(rej)
	return unsafe.Pointer(r)
}

//go:wasmexport cabi_post_weir:transform/transform@0.2.0#process-batch
func postProcessBatch(r *resultABI[outputBatchABI]) {
	if r.IsErr != 0 {
		e := (*batchErrorABI)(unsafe.Pointer(&r.Val))
		if e.Tag == 0 {
			freeList(e.Payload.Reason)
		} else {
			freeList(*(*list)(unsafe.Pointer(&e.Payload)))
		}
	} else {
		o := &r.Val
		for _, s := range view[list](o.Outputs) {
			freeList(s)
		}
		for _, b := range view[badRecordABI](o.Rejected) {
			freeList(b.Reason)
		}
		freeHeaders(o.Headers)
		for _, l := range []list{o.Values, o.ValueEnds, o.HasValue, o.Keys, o.KeyEnds, o.HasKey, o.HeaderEnds, o.Timestamps, o.Origins, o.Outputs, o.Routes, o.Rejected} {
			freeList(l)
		}
	}
	free(uint32(uintptr(unsafe.Pointer(r))))
}

//go:wasmexport weir:transform/record-transform@0.2.0#process-record
func exportProcessRecord(keyIsSome, keyPtr, keyLen, valIsSome, valPtr, valLen, hdrPtr, hdrLen uint32,
	timestamp int64, partition uint32, offset int64) unsafe.Pointer {
	in := &Record{HasKey: keyIsSome != 0, Key: view[byte](list{Ptr: keyPtr, Len: keyLen}),
		HasValue: valIsSome != 0, Value: view[byte](list{Ptr: valPtr, Len: valLen}),
		Headers:   getHeaders(list{Ptr: hdrPtr, Len: hdrLen}),
		Timestamp: timestamp, Partition: partition, Offset: offset}
	out, rerr := impl.ProcessRecord(in)
	if keyIsSome != 0 {
		freeList(list{Ptr: keyPtr, Len: keyLen})
	}
	if valIsSome != 0 {
		freeList(list{Ptr: valPtr, Len: valLen})
	}
	freeHeaders(list{Ptr: hdrPtr, Len: hdrLen})
	argReset()

	r := (*resultABI[list])(alloc(16))
	if rerr != nil {
		r.IsErr = 1
		e := (*recordErrorABI)(unsafe.Pointer(&r.Val))
		if rerr.Broken {
			e.Tag = 1
		}
		e.Msg = putString(rerr.Msg)
		return unsafe.Pointer(r)
	}
	recs := make([]outputRecordABI, len(out))
	for i, o := range out {
		a := &recs[i]
		if o.Output != nil {
			a.Output = optListABI{IsSome: 1, Val: putString(*o.Output)}
		}
		if o.HasKey {
			a.Key = optListABI{IsSome: 1, Val: put(o.Key)}
		}
		if o.HasValue {
			a.Value = optListABI{IsSome: 1, Val: put(o.Value)}
		}
		a.Headers = putHeaders(o.Headers)
		if o.HasTimestamp {
			a.Timestamp = optS64ABI{IsSome: 1, Val: o.Timestamp}
		}
	}
	r.Val = put(recs)
	return unsafe.Pointer(r)
}

//go:wasmexport cabi_post_weir:transform/record-transform@0.2.0#process-record
func postProcessRecord(r *resultABI[list]) {
	if r.IsErr != 0 {
		freeList((*recordErrorABI)(unsafe.Pointer(&r.Val)).Msg)
	} else {
		for _, a := range view[outputRecordABI](r.Val) {
			if a.Output.IsSome != 0 {
				freeList(a.Output.Val)
			}
			if a.Key.IsSome != 0 {
				freeList(a.Key.Val)
			}
			if a.Value.IsSome != 0 {
				freeList(a.Value.Val)
			}
			freeHeaders(a.Headers)
		}
		freeList(r.Val)
	}
	free(uint32(uintptr(unsafe.Pointer(r))))
}

// LiveBlocks reports how many pinned blocks exist (leak check in tests).
func LiveBlocks() int { return len(live) }
